// Probes: the soak's well-behaved clients, timed. Each kind runs on a thread
// of its own, one attempt at a time, starting every `interval` (or as soon
// as the previous attempt ended, when that took longer):
//   "https: GET /readyz"       a new TLS connection, GET /readyz with
//                              Connection: close, the whole answer ("HTTP
//                              200" is what a healthy msgqd says);
//   "mysql: login + select 1"  a new MySQL-protocol connection over TLS as
//                              `user` with `token` as the password,
//                              `select 1`, quit ("ok");
//   "grpc: ListTables"         on one TLS channel kept open, with `token`
//                              ("OK").
// Every attempt is bounded by `timeout`; its outcome and its time (failed
// attempts included) go to an Outcomes.
//
// Thread-safe. Start() once; Stop() (also the destructor) joins.
#ifndef MSGQ_TOOLS_CHAOS_PROBES_H_
#define MSGQ_TOOLS_CHAOS_PROBES_H_

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

class Probes {
 public:
  struct Options {
    int https_port = 0, mysql_port = 0, grpc_port = 0;
    std::string ca_file;
    std::string user = "worker";
    std::string token;
    absl::Duration interval = absl::Milliseconds(200);
    absl::Duration timeout = absl::Seconds(10);
  };
  struct KindReport {
    std::string name;
    OutcomeSummary summary;
  };

  explicit Probes(Options options) : options_(std::move(options)) {}
  ~Probes() { Stop(); }

  // INVALID_ARGUMENT when the CA file cannot be loaded.
  absl::Status Start();
  void Stop();
  std::vector<KindReport> Reports() const;

 private:
  struct Kind {
    std::string name;
    Outcomes outcomes;
  };
  template <typename F>
  void Loop(Kind* kind, F attempt);

  const Options options_;
  std::unique_ptr<TlsClientContext> tls_;
  SocketRegistry sockets_;
  absl::Notification stop_;
  std::vector<std::unique_ptr<Kind>> kinds_;
  std::vector<std::thread> threads_;
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_PROBES_H_
