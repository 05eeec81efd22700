// The campaign's faults: every fault once per count, shuffled, spread evenly
// over the fault phase (each within +-30% of its slot), each logged with
// how long the cluster took to come back. Three faults the cluster did not
// come back from end the plan with a violation.
//
// Not thread-safe: one thread runs the plan.
#ifndef MSGQ_TOOLS_CHAOS_FAULT_PLAN_H_
#define MSGQ_TOOLS_CHAOS_FAULT_PLAN_H_

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tools/chaos/cluster.h"
#include "tools/chaos/ledger.h"

namespace msgq::chaos {

class FaultPlan {
 public:
  struct Options {
    int msgqd_kills = 0;
    int mariadb_restarts = 0;  // clean stops and kill -9, alternating
    int sigstops = 0;
    int dump_kills = 0;
    int host_crashes = 0;
    int table_reloads = 0;
    double ack_wait_s = 2;  // a SIGSTOP lasts 0.2 to 1.2 ack waits
    // The ALTER TABLE of a reload that sets vt_batch_size to `batch`.
    std::function<std::string(int batch)> alter;
  };

  // Shuffles the plan with `rng`, which the faults then draw from.
  FaultPlan(Options options, std::mt19937_64* rng);

  // Runs the faults from `start` over `duration` (returns about when the
  // last is done; violations go to `ledger`).
  void Run(Cluster& cluster, Ledger& ledger, absl::Time start,
           absl::Duration duration);

  // Binlog dump KILLs that found no dump connection.
  int dumps_missing() const { return dumps_missing_; }

 private:
  enum Kind { kKill, kRestart, kStop, kDump, kCrash, kReload };
  // Runs one fault; sets `what` to its description.
  absl::Status RunOne(Kind kind, Cluster& cluster, std::string& what);

  const Options options_;
  std::mt19937_64* const rng_;
  std::uniform_real_distribution<double> u_{0, 1};
  std::vector<Kind> plan_;
  int restarts_done_ = 0;
  int reloads_done_ = 0;
  int dumps_missing_ = 0;
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_FAULT_PLAN_H_
