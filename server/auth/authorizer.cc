#include "server/auth/authorizer.h"

#include <utility>

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
  absl::MutexLock lock(&refresh_mu_);
  absl::Status error;
  if (tokens_ != nullptr) {
    switch (tokens_->Refresh(&error)) {
      case RefreshResult::kReloaded:
        LogInfo("reloaded ", tokens_->path(), ": ",
                tokens_->Current()->entries().size(), " tokens");
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
        break;
      case RefreshResult::kFailed:
        LogError("keeping the previous policy: ", error.message());
        break;
      case RefreshResult::kUnchanged:
        break;
    }
  }
}

absl::StatusOr<std::string> Authorizer::Authenticate(
    std::optional<absl::string_view> authorization,
    absl::Span<const std::string> peer_identities) const {
  if (!required()) return std::string();
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
    std::optional<std::string> principal = tokens_->Current()->Find(value);
    if (!principal.has_value()) {
      return absl::UnauthenticatedError(
          absl::StrCat(kUnauthenticated, ": unknown bearer token"));
    }
    return *std::move(principal);
  }
  if (options_.client_certificates && !peer_identities.empty()) {
    return peer_identities.front();
  }
  return absl::UnauthenticatedError(absl::StrCat(
      kUnauthenticated, ": send 'authorization: Bearer <token>'",
      options_.client_certificates ? " or a client certificate" : ""));
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
