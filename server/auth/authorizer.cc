#include "server/auth/authorizer.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace msgq::auth {
namespace {

constexpr absl::string_view kUnauthenticated = "missing or invalid credentials";

}  // namespace

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Create(
    AuthOptions options) {
  std::unique_ptr<Authorizer> a(new Authorizer(std::move(options)));
  const AuthOptions& o = a->options_;
  if (!o.tokens_file.empty()) {
    auto tokens = WatchedFile<TokenTable>::Open(
        "auth tokens file", o.tokens_file, &TokenTable::Parse);
    if (!tokens.ok()) return tokens.status();
    a->tokens_ = *std::move(tokens);
  }
  if (!o.policy_file.empty()) {
    if (!a->required()) {
      return absl::InvalidArgumentError(
          "--auth_policy_file needs a way to know callers: "
          "--auth_tokens_file or --tls_client_ca");
    }
    auto policy = WatchedFile<Policy>::Open("auth policy file", o.policy_file,
                                            &Policy::Parse);
    if (!policy.ok()) return policy.status();
    a->policy_ = *std::move(policy);
  }
  if ((a->tokens_ != nullptr || a->policy_ != nullptr) &&
      o.reload_interval > absl::ZeroDuration()) {
    a->reload_thread_ = std::thread([p = a.get()] { p->ReloadLoop(); });
  }
  return a;
}

Authorizer::~Authorizer() {
  stop_.Notify();
  if (reload_thread_.joinable()) reload_thread_.join();
}

void Authorizer::ReloadLoop() {
  while (!stop_.WaitForNotificationWithTimeout(options_.reload_interval)) {
    RefreshNow();
  }
}

void Authorizer::RefreshNow() {
  bool changed = false;
  {
    absl::MutexLock lock(&refresh_mu_);
    changed = RefreshFilesLocked();
  }
  if (!changed) return;
  std::vector<std::shared_ptr<const std::function<void()>>> watchers;
  {
    absl::MutexLock lock(&mu_);
    watchers.reserve(watchers_.size());
    for (const auto& [id, watcher] : watchers_) watchers.push_back(watcher);
  }
  for (const auto& watcher : watchers) (*watcher)();
}

uint64_t Authorizer::AddReloadWatcher(std::function<void()> on_reload) {
  auto watcher =
      std::make_shared<const std::function<void()>>(std::move(on_reload));
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_watcher_++;
  watchers_.emplace(id, std::move(watcher));
  return id;
}

void Authorizer::RemoveReloadWatcher(uint64_t id) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(id);
}

bool Authorizer::RefreshFilesLocked() {
  refresh_mu_.AssertHeld();
  bool changed = false;
  absl::Status error;
  if (tokens_ != nullptr) {
    switch (tokens_->Refresh(&error)) {
      case RefreshResult::kReloaded:
        LogInfo("reloaded ", tokens_->path(), ": ",
                tokens_->Current()->entries().size(), " tokens");
        changed = true;
        break;
      case RefreshResult::kFailed:
        LogError("keeping the previous tokens: ", error.message());
        break;
      case RefreshResult::kUnchanged:
        break;
    }
  }
  if (policy_ != nullptr) {
    switch (policy_->Refresh(&error)) {
      case RefreshResult::kReloaded:
        LogInfo("reloaded ", policy_->path(), ": ",
                policy_->Current()->grants().size(), " grants");
        changed = true;
        break;
      case RefreshResult::kFailed:
        LogError("keeping the previous policy: ", error.message());
        break;
      case RefreshResult::kUnchanged:
        break;
    }
  }
  return changed;
}

absl::StatusOr<std::string> Authorizer::Authenticate(
    std::optional<absl::string_view> authorization,
    absl::Span<const std::string> peer_identities) const {
  absl::StatusOr<Credential> credential =
      AuthenticateCredential(authorization, peer_identities);
  if (!credential.ok()) return credential.status();
  return std::move(credential->principal);
}

absl::StatusOr<Authorizer::Credential> Authorizer::AuthenticateCredential(
    std::optional<absl::string_view> authorization,
    absl::Span<const std::string> peer_identities) const {
  if (!required()) return Credential{};
  if (authorization.has_value() && tokens_ != nullptr) {
    absl::string_view value = absl::StripAsciiWhitespace(*authorization);
    constexpr absl::string_view kScheme = "bearer ";
    if (!absl::StartsWithIgnoreCase(value, kScheme)) {
      return absl::UnauthenticatedError(
          absl::StrCat(kUnauthenticated,
                       ": the authorization header must be 'Bearer "
                       "<token>'"));
    }
    value = absl::StripLeadingAsciiWhitespace(value.substr(kScheme.size()));
    const Digest digest = Sha256(value);
    std::optional<std::string> principal =
        tokens_->Current()->FindDigest(digest);
    if (!principal.has_value()) {
      return absl::UnauthenticatedError(
          absl::StrCat(kUnauthenticated, ": unknown bearer token"));
    }
    return Credential{*std::move(principal), digest};
  }
  if (options_.client_certificates && !peer_identities.empty()) {
    return Credential{peer_identities.front(), std::nullopt};
  }
  return absl::UnauthenticatedError(absl::StrCat(
      kUnauthenticated, ": send 'authorization: Bearer <token>'",
      options_.client_certificates ? " or a client certificate" : ""));
}

absl::Status Authorizer::StillAuthenticates(
    const Credential& credential) const {
  if (!credential.token.has_value() || tokens_ == nullptr) {
    return absl::OkStatus();
  }
  std::optional<std::string> principal =
      tokens_->Current()->FindDigest(*credential.token);
  if (principal.has_value() && *principal == credential.principal) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(
      absl::StrCat("credentials revoked: the bearer token of '",
                   credential.principal, "' is no longer in the tokens file"));
}

absl::Status Authorizer::Authorize(absl::string_view principal, Action action,
                                   absl::string_view keyspace,
                                   absl::string_view table) const {
  if (policy_ == nullptr ||
      policy_->Current()->Allows(principal, keyspace, table, action)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("permission denied: '", principal, "' may not ",
                   ActionName(action), " ", keyspace, ".", table));
}

bool Authorizer::MayList(absl::string_view principal,
                         absl::string_view keyspace,
                         absl::string_view table) const {
  return policy_ == nullptr ||
         policy_->Current()->AllowsAny(principal, keyspace, table);
}

absl::Status Authorizer::AcquireStream(const std::string& principal) {
  const int limit = options_.max_streams_per_principal;
  absl::MutexLock lock(&mu_);
  int& open = streams_[principal];
  if (limit > 0 && open >= limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat("'", principal, "' already has ", limit,
                     " open streams (--max_streams_per_principal)"));
  }
  ++open;
  return absl::OkStatus();
}

void Authorizer::ReleaseStream(const std::string& principal) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(principal);
  if (it == streams_.end()) return;
  if (--it->second <= 0) streams_.erase(it);
}

std::string Authorizer::Describe() const {
  std::string out = required() ? "authentication required (" : "open access";
  if (required()) {
    if (tokens_ != nullptr) {
      absl::StrAppend(&out, "bearer tokens from ", tokens_->path(), ": ",
                      tokens_->Current()->entries().size());
    }
    if (options_.client_certificates) {
      absl::StrAppend(&out, tokens_ != nullptr ? "; " : "",
                      "client certificates");
    }
    out += ")";
  }
  if (policy_ != nullptr) {
    absl::StrAppend(&out, ", policy from ", policy_->path(), ": ",
                    policy_->Current()->grants().size(), " grants");
  } else {
    out += ", no policy: every caller may do everything";
  }
  return out;
}

}  // namespace msgq::auth
