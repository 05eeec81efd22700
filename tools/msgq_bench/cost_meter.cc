#include "tools/msgq_bench/cost_meter.h"

#include <unistd.h>

#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

CostMeter::CostMeter(MysqlConnection* admin, pid_t msgqd_pid,
                     pid_t mariadbd_pid)
    : admin_(admin), msgqd_pid_(msgqd_pid), mariadbd_pid_(mariadbd_pid) {}

absl::Status CostMeter::Begin() {
  absl::StatusOr<StatusCounters> c = StatusCounters::Read(*admin_);
  if (!c.ok()) return c.status();
  counters_ = *std::move(c);
  if (msgqd_pid_ > 0) {
    peak_reset_ = ResetPeakRss(msgqd_pid_).ok();
    msgqd_ = ReadProc(msgqd_pid_).value_or(ProcSample{});
  }
  if (mariadbd_pid_ > 0) {
    mariadbd_ = ReadProc(mariadbd_pid_).value_or(ProcSample{});
  }
  self_ = ReadProc(getpid()).value_or(ProcSample{});
  start_ns_ = NowNs();
  return absl::OkStatus();
}

absl::StatusOr<PhaseCost> CostMeter::End() {
  PhaseCost cost;
  cost.wall_s = NsToSeconds(NowNs() - start_ns_);
  absl::StatusOr<StatusCounters> c = StatusCounters::Read(*admin_);
  if (!c.ok()) return c.status();
  cost.mysql = c->Minus(counters_);
  if (msgqd_pid_ > 0) {
    absl::StatusOr<ProcSample> s = ReadProc(msgqd_pid_);
    if (s.ok()) {
      cost.msgqd_cpu_s = s->cpu_s - msgqd_.cpu_s;
      cost.msgqd_peak_rss_kib = s->peak_rss_kib;
      cost.msgqd_peak_reset = peak_reset_;
    }
  }
  if (mariadbd_pid_ > 0) {
    absl::StatusOr<ProcSample> s = ReadProc(mariadbd_pid_);
    if (s.ok()) cost.mariadbd_cpu_s = s->cpu_s - mariadbd_.cpu_s;
  }
  absl::StatusOr<ProcSample> self = ReadProc(getpid());
  if (self.ok()) cost.bench_cpu_s = self->cpu_s - self_.cpu_s;
  return cost;
}

}  // namespace msgq::bench
