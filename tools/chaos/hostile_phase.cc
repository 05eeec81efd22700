#include "tools/chaos/hostile_phase.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tools/chaos/campaign_log.h"

namespace msgq::chaos {

absl::Status HostilePhase::Start(const Cluster& cluster, SoakReport* soak) {
  soak->calm_s = absl::ToDoubleSeconds(options_.calm);
  Log(
      absl::StrFormat("hostile soak: grpc %s, https %s, mysql %s; %.0f s "
                      "of normal clients alone",
                      cluster.address(), cluster.http_address(),
                      cluster.mysql_protocol_address(), soak->calm_s));
  sampler_ = std::make_unique<ProcessSampler>(options_.sampler);
  sampler_->Start();
  probes_ = std::make_unique<Probes>(options_.probes);
  if (absl::Status s = probes_->Start(); !s.ok()) return s;
  absl::SleepFor(absl::Seconds(soak->calm_s));
  probes_->Stop();
  soak->calm = probes_->Reports();
  sampler_->Stop();
  soak->calm_msgqd = sampler_->Summary();

  Log(absl::StrFormat("hostile clients for %.0f s",
                      absl::ToDoubleSeconds(options_.attack.duration)));
  sampler_ = std::make_unique<ProcessSampler>(options_.sampler);
  sampler_->Start();
  probes_ = std::make_unique<Probes>(options_.probes);
  (void)probes_->Start();
  attack_ = std::make_unique<Hostile>(options_.attack);
  return attack_->Start();
}

void HostilePhase::Finish(Cluster& cluster, absl::Time start, absl::Time end,
                          SoakReport* soak) {
  // msgqd exiting by itself is a violation (and it is started again, on
  // the same ports).
  int64_t last_report = 0;
  while (absl::Now() < end) {
    absl::SleepFor(std::min(absl::Seconds(1), end - absl::Now()));
    if (absl::Status s = cluster.CheckMsgqdAlive(); !s.ok()) {
      Log("msgqd does not start again: " + std::string(s.message()));
    }
    const int64_t elapsed = absl::ToInt64Seconds(absl::Now() - start);
    if (elapsed / 60 > last_report) {
      last_report = elapsed / 60;
      const ProcessSummary m = sampler_->Summary();
      Log(absl::StrFormat(
          "hostile phase: %d s; msgqd CPU peak %.0f%%, RSS peak %.1f MiB",
          elapsed, m.cpu_peak_pct, static_cast<double>(m.rss_peak_kb) / 1024));
    }
  }
  Log("stopping the hostile clients");
  attack_->Stop();
  probes_->Stop();
  sampler_->Stop();
  soak->hostile = attack_->Reports();
  soak->under_attack = probes_->Reports();
  soak->msgqd = sampler_->Summary();
  soak->hostile_s = absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace msgq::chaos
