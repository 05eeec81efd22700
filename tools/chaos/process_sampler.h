// ProcessSampler: msgqd's CPU and memory once a second, from /proc: CPU as
// the share of one core used over each 1 s window (utime + stime of
// /proc/PID/stat), VmRSS and Threads of /proc/PID/status, and the open
// descriptors (/proc/PID/fd). The pid is read at every sample, so a
// restarted msgqd is followed (its first window starts at the restart).
//
// Thread-safe. Start() once; Stop() (also the destructor) joins.
#ifndef MSGQ_TOOLS_CHAOS_PROCESS_SAMPLER_H_
#define MSGQ_TOOLS_CHAOS_PROCESS_SAMPLER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace msgq::chaos {

struct ProcessSample {
  double at_s = 0;     // since Start()
  double cpu_pct = 0;  // % of one core over the window that ends here
  int64_t rss_kb = 0;
  int64_t threads = 0;
  int64_t fds = 0;
};

struct ProcessSummary {
  int64_t samples = 0;
  double cpu_peak_pct = 0, cpu_avg_pct = 0;
  // rss_start_kb: read at Start() (the first window's samples come a
  // second later).
  int64_t rss_start_kb = 0, rss_peak_kb = 0, rss_end_kb = 0;
  int64_t threads_peak = 0, fds_peak = 0;
};

// VmRSS of `pid` in kB; -1 when it cannot be read.
int64_t ReadRssKb(int pid);

class ProcessSampler {
 public:
  struct Options {
    std::function<int()> pid;  // 0: no process (the sample is skipped)
    absl::Duration interval = absl::Seconds(1);
  };

  explicit ProcessSampler(Options options) : options_(std::move(options)) {}
  ~ProcessSampler() { Stop(); }

  void Start();
  void Stop();
  ProcessSummary Summary() const;
  std::vector<ProcessSample> Samples() const;

 private:
  void Run();

  const Options options_;
  absl::Notification stop_;
  std::thread thread_;
  absl::Time start_;
  mutable absl::Mutex mu_;
  std::vector<ProcessSample> samples_ ABSL_GUARDED_BY(mu_);
  int64_t start_rss_kb_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_PROCESS_SAMPLER_H_
