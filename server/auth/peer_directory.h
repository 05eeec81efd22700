// PeerDirectory: who is on each connection the gRPC front
// (server/grpc_front/grpc_front.h)
// hands to gRPC. gRPC sees those connections as plaintext over a socket
// pair, so its auth context has no certificate and its peer() is only
// "fd:N" (N: gRPC's end of the pair). The front records, under that name,
// the client's address and the identities of its verified certificate
// (tls::PeerIdentities), and removes the entry when the connection ends.
//
// A number N is reused only after gRPC closed its end, so no call can
// start on the old connection once a new one is recorded under N; each
// entry carries the front's serial of its connection so that a late
// Remove of the old connection does not remove the new one's entry.
//
// Thread-safety: thread-safe (gRPC's threads look up while the front's
// thread records and removes).
#ifndef MSGQ_SERVER_AUTH_PEER_DIRECTORY_H_
#define MSGQ_SERVER_AUTH_PEER_DIRECTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace msgq::auth {

struct Peer {
  // "127.0.0.1:51234", "[::1]:51234".
  std::string address;
  // Of the client's verified certificate, in gRPC's order; empty without
  // one (grpc_auth.h).
  std::vector<std::string> identities;
};

class PeerDirectory {
 public:
  // The name gRPC gives a connection made from fd `grpc_fd`.
  static std::string NameOf(int grpc_fd);

  void Add(int grpc_fd, uint64_t serial, Peer peer);
  // Removes the entry of `grpc_fd` when it is connection `serial`'s.
  void Remove(int grpc_fd, uint64_t serial);
  // The peer of a call whose ServerContext::peer() is `grpc_peer`; nullopt
  // when it is not one of the front's connections.
  std::optional<Peer> Find(absl::string_view grpc_peer) const;

 private:
  struct Entry {
    uint64_t serial;
    Peer peer;
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_PEER_DIRECTORY_H_
