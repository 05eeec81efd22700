#include "tools/msgq_bench/series.h"

#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/proc_stats.h"

namespace msgq::bench {

std::vector<double> ProcessProbe(pid_t msgqd_pid) {
  if (msgqd_pid <= 0) return {0, 0};
  absl::StatusOr<ProcSample> s = ReadProc(msgqd_pid);
  if (!s.ok()) return {0, 0};
  return {static_cast<double>(s->rss_kib), s->cpu_s};
}

void AppendSeries(
    const std::string& phase, const std::vector<Sampler::Sample>& samples,
    int64_t phase_start_ns,
    const std::function<void(const std::vector<double>& prev,
                             const std::vector<double>& cur, double dt,
                             SeriesPoint& point)>& fill,
    std::vector<SeriesPoint>* out) {
  for (size_t i = 1; i < samples.size(); ++i) {
    const Sampler::Sample& prev = samples[i - 1];
    const Sampler::Sample& cur = samples[i];
    const double dt = NsToSeconds(cur.t_ns - prev.t_ns);
    if (dt <= 1e-3) continue;
    // The closing sample (taken when the phase ends) can make a sliver of an
    // interval whose rate is noise; fold it away unless it is all there is.
    if (i == samples.size() - 1 && i > 1 &&
        dt < 0.5 * NsToSeconds(prev.t_ns - samples[i - 2].t_ns)) {
      continue;
    }
    SeriesPoint p;
    p.phase = phase;
    p.t_s = NsToSeconds(cur.t_ns - phase_start_ns);
    p.dt_s = dt;
    const size_t n = cur.values.size();
    p.msgqd_rss_mib = cur.values[n - 2] / 1024.0;
    p.msgqd_cpu_pct = 100.0 * (cur.values[n - 1] - prev.values[n - 1]) / dt;
    fill(prev.values, cur.values, dt, p);
    out->push_back(std::move(p));
  }
}

}  // namespace msgq::bench
