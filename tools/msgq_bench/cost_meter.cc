#include "tools/msgq_bench/cost_meter.h"

#include <unistd.h>

#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

void FillCost(const PhaseCost& c, int64_t delivered, pb::Cost* out) {
  auto per_msg = [delivered](int64_t v) {
    return delivered > 0
               ? static_cast<double>(v) / static_cast<double>(delivered)
               : 0;
  };
  out->set_wall_s(c.wall_s);
  out->set_msgqd_cpu_s(c.msgqd_cpu_s);
  out->set_msgqd_peak_rss_mib(
      c.msgqd_peak_rss_kib < 0 ? -1.0 : c.msgqd_peak_rss_kib / 1024.0);
  out->set_msgqd_peak_rss_is_phase_only(c.msgqd_peak_reset);
  out->set_mariadbd_cpu_s(c.mariadbd_cpu_s);
  out->set_bench_cpu_s(c.bench_cpu_s);
  auto& per_message = *out->mutable_per_message();
  const StatusCounters& m = c.mysql;
  per_message["statements"] =
      per_msg(m.Get("Com_select") + m.Get("Com_insert") + m.Get("Com_update") +
              m.Get("Com_delete"));
  per_message["questions"] = per_msg(m.Get("Questions"));
  for (const auto& [name, v] : m.values) {
    (*out->mutable_mysql_delta())[name] = static_cast<double>(v);
    if (name != "Questions") per_message[name] = per_msg(v);
  }
}

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
