#include "server/auth/peer_directory.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace msgq::auth {

std::string PeerDirectory::NameOf(int grpc_fd) {
  return absl::StrCat("fd:", grpc_fd);
}

void PeerDirectory::Add(int grpc_fd, uint64_t serial, Peer peer) {
  absl::MutexLock lock(&mu_);
  entries_.insert_or_assign(NameOf(grpc_fd),
                            Entry{.serial = serial, .peer = std::move(peer)});
}

void PeerDirectory::Remove(int grpc_fd, uint64_t serial) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(NameOf(grpc_fd));
  if (it != entries_.end() && it->second.serial == serial) entries_.erase(it);
}

std::optional<Peer> PeerDirectory::Find(absl::string_view grpc_peer) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(grpc_peer);
  if (it == entries_.end()) return std::nullopt;
  return it->second.peer;
}

}  // namespace msgq::auth
