#include "tools/msgq_bench/sampler.h"

#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

Sampler::Sampler(absl::Duration interval, Probe probe)
    : interval_(interval), probe_(std::move(probe)) {}

Sampler::~Sampler() { Stop(); }

void Sampler::Start() {
  samples_.push_back(Sample{NowNs(), probe_()});
  thread_ = std::thread([this] { Run(); });
}

void Sampler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  samples_.push_back(Sample{NowNs(), probe_()});
}

void Sampler::Run() {
  const int64_t interval_ns = absl::ToInt64Nanoseconds(interval_);
  int64_t next = samples_.front().t_ns + interval_ns;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopped = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      const absl::Duration wait = absl::Nanoseconds(next - NowNs());
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped), wait)) return;
    }
    samples_.push_back(Sample{NowNs(), probe_()});
    next += interval_ns;
  }
}

}  // namespace msgq::bench
