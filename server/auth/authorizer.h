// Authorizer: who is calling (authentication) and may they (authorization),
// for every gRPC call and console request of msgqd.
//
// Authentication is required when a token file is given or client
// certificates are (mTLS). A caller is then known by
//   - the bearer token of its `authorization: Bearer <token>` header, looked
//     up in the token file (token_file.h): the token's principal; a header
//     with an unknown token is refused even when a certificate came too;
//   - else, with mTLS, its certificate's identity as gRPC reports it (the
//     subject alternative names if any, else the common name).
// Otherwise UNAUTHENTICATED "missing or invalid credentials" (the token is
// never echoed or logged). Without either, every caller is the anonymous
// principal "" and the header is ignored.
//
// Authorization follows the policy file (policy.h); without one, every
// authenticated caller may do everything (msgqd's open behaviour).
// Refused: PERMISSION_DENIED "permission denied: 'P' may not ACTION
// KEYSPACE.TABLE", naming nothing of the policy.
//
// Both files are re-read when they change (checked every
// reload_interval by a thread of the Authorizer's); a file that no longer
// parses (logged with file:line) or that group or others may write (logged
// with its mode) is refused and the previous version stays in force, each
// change logged once.
//
// Revocation: a reload that removes a token's line (or gives its digest to
// another principal) ends what that token opened; one that removes a grant
// ends what the grant allowed. Holders of open streams and sessions keep the
// Credential they logged in with, recheck it with StillAuthenticates and
// Authorize, and learn of reloads through AddReloadWatcher
// (stream_revocation.h does this for a stream).
//
// Per-principal stream limit: AcquireStream/ReleaseStream count the open
// MessageStreams of each principal (RESOURCE_EXHAUSTED beyond the limit).
//
// Thread-safety: every method may be called concurrently from any thread.
#ifndef MSGQ_SERVER_AUTH_AUTHORIZER_H_
#define MSGQ_SERVER_AUTH_AUTHORIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/auth/policy.h"
#include "server/auth/token_file.h"
#include "server/auth/watched_file.h"

namespace msgq::auth {

struct AuthOptions {
  // --auth_tokens_file; empty: no bearer tokens.
  std::string tokens_file;
  // --auth_policy_file; empty: everything is allowed.
  std::string policy_file;
  // mTLS is on: a verified client certificate's identity is a principal.
  bool client_certificates = false;
  // How often the files are checked for changes.
  absl::Duration reload_interval = absl::Seconds(1);
  // Open MessageStreams per principal; 0 = no limit.
  int max_streams_per_principal = 0;
};

class Authorizer {
 public:
  // Reads the files. INVALID_ARGUMENT: a file cannot be read or parsed
  // (FILE:LINE), or a policy without any way to authenticate (no token
  // file and no client certificates). FAILED_PRECONDITION "auth tokens
  // file PATH: mode 0666 lets group or others write it; chmod 600 it" (or
  // "auth policy file ..."): group or others may write a file.
  static absl::StatusOr<std::unique_ptr<Authorizer>> Create(
      AuthOptions options);
  ~Authorizer();  // stops the reload thread
  Authorizer(const Authorizer&) = delete;
  Authorizer& operator=(const Authorizer&) = delete;

  // Whether callers must present credentials.
  bool required() const {
    return tokens_ != nullptr || options_.client_certificates;
  }
  bool has_policy() const { return policy_ != nullptr; }
  // Whether bearer tokens are configured (--auth_tokens_file).
  bool has_tokens() const { return tokens_ != nullptr; }

  // How a caller was authenticated: its principal and, when a bearer token
  // made it, the token's digest (the token itself is not kept).
  struct Credential {
    std::string principal;
    std::optional<Digest> token;
  };

  // The caller's principal from its `authorization` header value (nullopt
  // when absent) and its verified certificate identities (empty without
  // mTLS). UNAUTHENTICATED as described above.
  absl::StatusOr<std::string> Authenticate(
      std::optional<absl::string_view> authorization,
      absl::Span<const std::string> peer_identities) const;
  // The same, with the token's digest.
  absl::StatusOr<Credential> AuthenticateCredential(
      std::optional<absl::string_view> authorization,
      absl::Span<const std::string> peer_identities) const;
  // OK while `credential` still authenticates its principal: its token's
  // digest is still in the tokens file, for the same principal. A
  // certificate's identity (no token) and open access stay valid.
  // UNAUTHENTICATED "credentials revoked: ..." otherwise.
  absl::Status StillAuthenticates(const Credential& credential) const;

  // Runs `on_reload` on the reload thread after every reload that changed
  // the tokens or the policy file (a refused change runs nothing). It must
  // not block. It may still run once just after RemoveReloadWatcher, so it
  // must hold what it uses (a weak_ptr, not a raw pointer).
  uint64_t AddReloadWatcher(std::function<void()> on_reload);
  void RemoveReloadWatcher(uint64_t id);

  // OK, or PERMISSION_DENIED naming the action and the table.
  absl::Status Authorize(absl::string_view principal, Action action,
                         absl::string_view keyspace,
                         absl::string_view table) const;
  // Whether `principal` may see the table in lists (any action on it).
  bool MayList(absl::string_view principal, absl::string_view keyspace,
               absl::string_view table) const;

  // Counts one more open stream of `principal`; RESOURCE_EXHAUSTED when it
  // already has max_streams_per_principal. Each OK is paired with one
  // ReleaseStream.
  absl::Status AcquireStream(const std::string& principal);
  void ReleaseStream(const std::string& principal);

  // One line for the startup log: what is configured (never a secret).
  std::string Describe() const;

  // Checks both files now (what the reload thread does every interval).
  void RefreshNow();

 private:
  explicit Authorizer(AuthOptions options) : options_(std::move(options)) {}
  void ReloadLoop();
  // Refreshes both files; true if either changed.
  bool RefreshFilesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(refresh_mu_);

  // Constant after Create.
  const AuthOptions options_;
  std::unique_ptr<WatchedFile<TokenTable>> tokens_;
  std::unique_ptr<WatchedFile<Policy>> policy_;

  absl::Mutex refresh_mu_;  // one RefreshNow at a time
  absl::Notification stop_;
  std::thread reload_thread_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> streams_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watcher_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<const std::function<void()>>>
      watchers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_AUTHORIZER_H_
