// SoakReport: what a hostile soak (msgq-chaos --hostile) measured, printed
// for people (PrintSoakReport) and written as JSON (WriteSoakJson) and CSV
// (WriteSamplesCsv, msgqd's CPU and RSS second by second). The fields are
// filled by main.cc; these functions only format them.
#ifndef MSGQ_TOOLS_CHAOS_SOAK_REPORT_H_
#define MSGQ_TOOLS_CHAOS_SOAK_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/chaos/hostile.h"
#include "tools/chaos/ledger.h"
#include "tools/chaos/probes.h"
#include "tools/chaos/process_sampler.h"
#include "tools/chaos/producers.h"
#include "tools/chaos/subscribers.h"

namespace msgq::chaos {

struct SoakReport {
  std::string command;  // as run
  uint64_t seed = 0;
  double calm_s = 0, hostile_s = 0, drain_s = 0;
  std::string grpc_address, https_address, mysql_address;
  int msgqd_runs = 0;
  Report ledger;
  Producers::Stats producers;
  Subscribers::Stats subscribers;
  int grpc_subscribers = 0, mysql_subscribers = 0;
  std::vector<Probes::KindReport> calm, under_attack;
  std::vector<Hostile::KindReport> hostile;
  ProcessSummary calm_msgqd, msgqd;  // before and during the attack
  int64_t rss_after_drain_kb = -1;
  bool pass = false;
};

void PrintSoakReport(const SoakReport& r, FILE* out);
// INTERNAL when the file cannot be written.
absl::Status WriteSoakJson(const SoakReport& r, const std::string& path);
absl::Status WriteSamplesCsv(const std::vector<ProcessSample>& samples,
                             const std::string& path);

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_SOAK_REPORT_H_
