// Hostile: the hostile clients of the soak (msgq-chaos --hostile,
// docs/reliability.md#hostile-soak), all at once against msgqd's three ports
// on 127.0.0.1, each kind on a thread of its own (the 1 MiB statements on
// `big_query_threads`):
//
// Held kinds: `count` connections put in a bad state, held for `hold` (the
// state of each is checked every second: a server that closes one ends its
// hold), closed, then `gap`, and again. Each connection's outcome is what
// the server had done by the end of its hold ("open", "open, server sent
// data", "closed by server", "open when the soak ended" for a hold the end
// of the soak cut short, or why it could not be opened), and its time is
// how long it lived (from opened to closed or released; for one that could
// not be opened, how long that took):
//   https: TLS record header, then stall   the TLS handshake, then the
//                                          first 3 bytes of a record
//   https: silent after TLS handshake
//   grpc|https|mysql: silent TCP           connected, no byte sent
//   mysql: hog hoards connections          logged in (TLS, token), idle
//   mysql: idler's logged-in idle          the same as principal `idler`
// Request kinds: one request, its answer, then `interval`, and again. The
// outcome is the answer ("HTTP 200", "ERR 1095: ...", "PERMISSION_DENIED",
// "DEADLINE_EXCEEDED"...) and the time is how long it took:
//   https: 1 MiB POST /api/redrive form    id=1&id=1... with ops' token and
//                                          X-Msgq-Console: 1, on the decoy
//   https: Host: evil.example              GET /api/messages?payload=1 of
//                                          the decoy with ops' token
//   mysql: mallory KILLs worker's conn.    KILL [QUERY] of the ids `victims`
//                                          returns (the normal MySQL
//                                          clients), else of its own id - 1
//   mysql: 1 MiB COM_QUERY of '('          a new login as mallory each time
//   grpc: unknown bearer token             ListTables
//   grpc: mallory streams the soak table   MessageStream of `table`
//   grpc: 5 MiB MessageAck                 worker's token, on the decoy
//   grpc: streams opened and dropped       worker's MessageStream of the
//                                          decoy, cancelled at its header
//   grpc: calls to made-up method names    worker's token, a new name each
//                                          time (the metrics' labels stay
//                                          bounded)
//   grpc: HTTP/2 rapid reset               a new TLS connection from
//                                          127.0.0.3 (an address of its
//                                          own: the reset budget is per
//                                          address) sending HEADERS, an
//                                          empty DATA and RST_STREAM for
//                                          `rapid_reset_streams` streams
// Nothing is sent to the soak's message table but mallory's refused stream,
// so the Ledger stays exact; the decoy table gets no messages.
//
// Bounds: every connect, handshake, login, request and answer has a deadline
// (`timeout`, the form's `form_timeout`); each kind stops after `duration`,
// after `max_attempts`, or at Stop(), which waits up to 2 s for the kinds to
// finish their current step, then shuts down every socket still in use and
// joins. Thread-safe.
#ifndef MSGQ_TOOLS_CHAOS_HOSTILE_H_
#define MSGQ_TOOLS_CHAOS_HOSTILE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tools/chaos/latency.h"
#include "tools/chaos/net.h"

namespace msgq::chaos {

class Hostile {
 public:
  struct Options {
    int grpc_port = 0, https_port = 0, mysql_port = 0;
    std::string ca_file;
    std::string keyspace;
    std::string table;  // the soak's message table (mallory's target)
    std::string decoy;  // a table no producer writes
    std::string worker_token, idler_token, ops_token, mallory_token;
    std::string hog_token;
    // The normal MySQL clients' connection ids (mallory's KILL targets).
    std::function<std::vector<uint32_t>()> victims;

    absl::Duration duration = absl::Seconds(600);
    absl::Duration hold = absl::Seconds(15);
    absl::Duration gap = absl::Seconds(3);
    int mid_record = 8;  // https: record header then stall
    int silent_tls = 4;  // https: silent after the handshake
    int silent_tcp = 4;  // per port
    int hoard = 64;      // hog's logged-in MySQL connections
    int idle = 4;        // idler's logged-in MySQL connections
    int big_query_threads = 4;
    size_t big_query_bytes = (1 << 20) - 1;  // + the command byte: 1 MiB
    size_t form_bytes = 1 << 20;
    size_t huge_ack_bytes = 5 << 20;
    uint32_t rapid_reset_streams = 3000;
    // Pause after each request of a kind (the KILLs, the evil Host, the
    // forms, the 1 MiB statements...); the gRPC unknown tokens, made-up
    // method names and open-and-dropped streams go at a quarter of it.
    absl::Duration interval = absl::Milliseconds(400);
    absl::Duration timeout = absl::Seconds(15);
    absl::Duration form_timeout = absl::Seconds(75);
    int64_t max_attempts = 1000000;  // per kind
  };

  struct KindReport {
    std::string name;
    bool held = false;  // a held kind: time is how long each lived
    OutcomeSummary summary;
  };

  // A connection held in a bad state (hostile.cc).
  class Held;

  explicit Hostile(Options options);
  ~Hostile();

  // INVALID_ARGUMENT when the CA file cannot be loaded.
  absl::Status Start();
  void Stop();
  std::vector<KindReport> Reports() const;

 private:
  struct Kind;
  using Opener =
      std::function<absl::StatusOr<std::unique_ptr<Held>>(absl::Time deadline)>;
  using Request = std::function<std::string(absl::Time deadline)>;

  Kind* AddKind(const std::string& name, bool held);
  bool Running(const Kind& kind) const;
  // Sleeps `d` or until Stop(); false when stopping.
  bool Pause(absl::Duration d);
  void HoldLoop(Kind* kind, int count, Opener open);
  void RequestLoop(Kind* kind, absl::Duration interval, absl::Duration timeout,
                   Request request);
  void Spawn(std::function<void()> body);

  std::string Form(absl::Time deadline);
  std::string EvilHost(absl::Time deadline);
  std::string Kill(absl::Time deadline, uint64_t n);
  std::string BigQuery(absl::Time deadline);

  const Options options_;
  std::unique_ptr<TlsClientContext> tls_;
  SocketRegistry sockets_;
  absl::Notification stop_;
  absl::Time deadline_;
  std::vector<std::unique_ptr<Kind>> kinds_;
  std::vector<std::thread> threads_;
  std::atomic<int> running_{0};
  std::string big_query_;  // made once
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_HOSTILE_H_
