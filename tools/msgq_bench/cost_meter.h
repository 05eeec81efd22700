// CostMeter: what one phase cost, from MySQL's global status counters and
// /proc of msgqd, mariadbd and the bench itself.
//
// Not thread-safe: Begin() then End() from one thread; the admin connection
// is the caller's and is used only inside those calls.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_COST_METER_H_
#define MSGQ_TOOLS_MSGQ_BENCH_COST_METER_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/proc_stats.h"
#include "tools/msgq_bench/status_counters.h"

namespace msgq::bench {

struct PhaseCost {
  StatusCounters mysql;  // delta over the phase
  double wall_s = 0;
  // -1 when the process is not ours to measure.
  double msgqd_cpu_s = -1;
  int64_t msgqd_peak_rss_kib = -1;  // VmHWM, reset at Begin when allowed
  bool msgqd_peak_reset = false;    // false: the peak is since msgqd started
  double mariadbd_cpu_s = -1;
  double bench_cpu_s = 0;
};

// Copies `cost` into bench.json's message, with every counter also per
// delivered message (0 when `delivered` is 0), plus "statements" (Com_select
// + Com_insert + Com_update + Com_delete) and "questions".
void FillCost(const PhaseCost& cost, int64_t delivered, pb::Cost* out);

class CostMeter {
 public:
  // A pid of 0 means "not measurable".
  CostMeter(MysqlConnection* admin, pid_t msgqd_pid, pid_t mariadbd_pid);

  absl::Status Begin();
  absl::StatusOr<PhaseCost> End();

 private:
  MysqlConnection* const admin_;
  const pid_t msgqd_pid_;
  const pid_t mariadbd_pid_;
  StatusCounters counters_;
  ProcSample msgqd_;
  ProcSample mariadbd_;
  ProcSample self_;
  bool peak_reset_ = false;
  int64_t start_ns_ = 0;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_COST_METER_H_
