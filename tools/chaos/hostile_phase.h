// The hostile soak's phases around the fault plan (--hostile): the normal
// clients timed alone (calm), then while the hostile clients (hostile.h)
// work every port, with msgqd's CPU and RSS sampled (process_sampler.h)
// and the normal clients probed (probes.h); what each measured goes into
// the SoakReport.
//
// Not thread-safe: the campaign's thread calls it.
#ifndef MSGQ_TOOLS_CHAOS_HOSTILE_PHASE_H_
#define MSGQ_TOOLS_CHAOS_HOSTILE_PHASE_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tools/chaos/cluster.h"
#include "tools/chaos/hostile.h"
#include "tools/chaos/probes.h"
#include "tools/chaos/process_sampler.h"
#include "tools/chaos/soak_report.h"

namespace msgq::chaos {

class HostilePhase {
 public:
  struct Options {
    absl::Duration calm;
    Probes::Options probes;
    ProcessSampler::Options sampler;
    Hostile::Options attack;
  };

  explicit HostilePhase(Options options) : options_(std::move(options)) {}

  // The calm phase (blocks for options.calm; soak->calm_s, calm,
  // calm_msgqd), then starts the sampler, the probes and the hostile
  // clients. An error when the probes or the hostile clients cannot start.
  absl::Status Start(const Cluster& cluster, SoakReport* soak);

  // Until `end`: restarts msgqd if it exited (a violation), logs msgqd's
  // peaks each minute from `start`. Then stops the hostile clients and
  // fills soak->hostile, under_attack, msgqd and hostile_s.
  void Finish(Cluster& cluster, absl::Time start, absl::Time end,
              SoakReport* soak);

  // msgqd's samples (after Start).
  const ProcessSampler& sampler() const { return *sampler_; }

 private:
  const Options options_;
  std::unique_ptr<ProcessSampler> sampler_;
  std::unique_ptr<Probes> probes_;
  std::unique_ptr<Hostile> attack_;
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_HOSTILE_PHASE_H_
