// ResetBudget: how many HTTP/2 streams each client address may reset
// (RST_STREAM sent by the client), as a token bucket per address: `burst`
// resets at once, refilled at `per_second`. The gRPC front (grpc_front.h)
// takes a token for each RST_STREAM a client sends for a stream gRPC has
// not answered; when its address has
// none left, the connection is told GOAWAY (ENHANCE_YOUR_CALM) and closed.
// This bounds what an HTTP/2 "rapid reset" flood
// (CVE-2023-44487: open a stream, reset it at once, repeat) can make gRPC
// do: each reset stream still costs gRPC a call it starts and tears down,
// and reset streams do not count against SETTINGS_MAX_CONCURRENT_STREAMS.
//
// Addresses are ClientAddressKey (common/host_port.h): an IPv4 address,
// or the /64 of an IPv6 one. At most `max_addresses` are remembered; when
// a new one would exceed it, the full buckets are forgotten first (they
// hold nothing), then the least recently used.
//
// Thread-safety: none; the front's one loop thread owns it.
#ifndef MSGQ_SERVER_GRPC_FRONT_RESET_BUDGET_H_
#define MSGQ_SERVER_GRPC_FRONT_RESET_BUDGET_H_

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace msgq::grpc_front {

class ResetBudget {
 public:
  struct Options {
    int burst = 2000;
    double per_second = 200;
    size_t max_addresses = 4096;
    // Reads MonotonicNow(); must outlive the budget.
    Clock* clock = RealClock::Get();
  };

  explicit ResetBudget(Options options);

  // Takes one reset of `address`: false when its bucket is empty (the
  // reset is over budget; nothing is taken).
  bool Take(const std::string& address);

  // Tokens `address` has now (burst for an address never seen).
  double Tokens(const std::string& address);
  size_t addresses() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time updated;
  };
  // The bucket of `address`, refilled up to now; created full.
  Bucket& Refilled(const std::string& address);
  void MakeRoom();

  const Options options_;
  absl::flat_hash_map<std::string, Bucket> buckets_;
};

}  // namespace msgq::grpc_front

#endif  // MSGQ_SERVER_GRPC_FRONT_RESET_BUDGET_H_
