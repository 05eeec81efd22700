#include "server/auth/stream_revocation.h"

#include <atomic>
#include <utility>

namespace msgq::auth {

absl::Status MayKeepStreaming(const Authorizer* authorizer,
                              const Authorizer::Credential& credential,
                              const std::string& keyspace,
                              const std::string& table) {
  if (authorizer == nullptr || !authorizer->required()) {
    return absl::OkStatus();
  }
  if (absl::Status s = authorizer->StillAuthenticates(credential); !s.ok()) {
    return s;
  }
  return authorizer->Authorize(credential.principal, Action::kStream, keyspace,
                               table);
}

StreamRevocation::StreamRevocation(Authorizer* authorizer,
                                   Authorizer::Credential credential,
                                   std::string keyspace, std::string table,
                                   std::weak_ptr<Subscriber> stream)
    : authorizer_(authorizer) {
  if (authorizer_ == nullptr || !authorizer_->required()) return;
  auto closed = std::make_shared<std::atomic<bool>>(false);
  auto check = [authorizer, credential = std::move(credential),
                keyspace = std::move(keyspace), table = std::move(table),
                stream = std::move(stream), closed] {
    if (closed->load()) return;
    absl::Status s = MayKeepStreaming(authorizer, credential, keyspace, table);
    if (s.ok()) return;
    std::shared_ptr<Subscriber> open = stream.lock();
    if (open == nullptr || closed->exchange(true)) return;
    open->Close(std::move(s));
  };
  watcher_ = authorizer_->AddReloadWatcher(check);
  // A reload between the caller's own check and the watch.
  check();
}

StreamRevocation::~StreamRevocation() {
  if (watcher_ != 0) authorizer_->RemoveReloadWatcher(watcher_);
}

}  // namespace msgq::auth
