// Sampler: calls a probe every `interval` on a thread of its own and keeps
// what it returns, with the time since Start(), for the time series.
//
// Thread-safe. Start() once; Stop() (also in the destructor) takes one last
// sample and joins; samples() is valid after Stop().
#ifndef MSGQ_TOOLS_MSGQ_BENCH_SAMPLER_H_
#define MSGQ_TOOLS_MSGQ_BENCH_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace msgq::bench {

class Sampler {
 public:
  struct Sample {
    int64_t t_ns = 0;  // bench clock
    std::vector<double> values;
  };
  using Probe = std::function<std::vector<double>()>;

  Sampler(absl::Duration interval, Probe probe);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void Start();
  void Stop();
  const std::vector<Sample>& samples() const { return samples_; }

 private:
  void Run();

  const absl::Duration interval_;
  const Probe probe_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Sample> samples_;  // written by the thread, read after Stop
  std::thread thread_;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_SAMPLER_H_
