// Turning the Sampler's cumulative samples into per-interval rates.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_SERIES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_SERIES_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "tools/msgq_bench/results.h"
#include "tools/msgq_bench/sampler.h"

namespace msgq::bench {

// Probe values appended to every phase's own: msgqd's RSS (KiB) and CPU
// seconds (0 when msgqd is not ours).
std::vector<double> ProcessProbe(pid_t msgqd_pid);

// One SeriesPoint per interval between consecutive samples. `fill` sets the
// phase's own rates from the previous and current sample values and dt (s).
// The last two values of each sample must be ProcessProbe's.
void AppendSeries(
    const std::string& phase, const std::vector<Sampler::Sample>& samples,
    int64_t phase_start_ns,
    const std::function<void(const std::vector<double>& prev,
                             const std::vector<double>& cur, double dt,
                             SeriesPoint& point)>& fill,
    std::vector<SeriesPoint>* out);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_SERIES_H_
