#include "tools/chaos/campaign_report.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace msgq::chaos {
namespace {

void PrintRunAndFaults(const CampaignOptions& o, const CampaignResults& res) {
  printf(
      "msgq-chaos: seed %llu, fault phase %.0f s, drain %.1f s (bound %.0f "
      "s)\n",
      static_cast<unsigned long long>(o.seed),
      absl::ToDoubleSeconds(res.fault_phase), absl::ToDoubleSeconds(res.drain),
      o.drain_timeout_s);
  printf(
      "faults: msgqd kill -9 %d, MariaDB restarts %d (clean %d, kill -9 %d), "
      "SIGSTOP %d, dump KILL %d (%d found none), both kill -9 %d, table "
      "reloads %d; msgqd runs %d\n",
      o.msgqd_kills, o.mariadb_restarts, (o.mariadb_restarts + 1) / 2,
      o.mariadb_restarts / 2, o.sigstops, o.dump_kills, res.dumps_missing,
      o.host_crashes, o.table_reloads, res.msgqd_starts);
}

void PrintMessages(const CampaignOptions& o, const CampaignResults& res) {
  const Producers::Stats& ps = res.producers;
  const Report& r = res.ledger;
  std::vector<std::string> causes;
  for (const auto& [cause, n] : r.inside_by_fault) {
    causes.push_back(absl::StrCat(cause, " ", n));
  }
  printf(
      "producers: %lld transactions: %lld committed, %lld rolled back, "
      "%lld failed before COMMIT, %lld COMMIT unknown; %lld reconnects\n",
      (long long)ps.transactions, (long long)ps.commits,
      (long long)ps.rollbacks, (long long)ps.failed, (long long)ps.unknown,
      (long long)ps.reconnects);
  printf(
      "messages: %lld committed (%lld scheduled), %lld not committed, "
      "unknown commits: %lld rows present, %lld absent\n",
      (long long)r.committed, (long long)r.scheduled,
      (long long)r.not_committed, (long long)r.unknown_present,
      (long long)r.unknown_absent);
  printf(
      "deliveries: %lld of %lld distinct ids; duplicates %lld, inside "
      "ack wait (%.1f s) %lld [%s]; after an OK ack %lld\n",
      (long long)r.deliveries, (long long)r.delivered_ids,
      (long long)r.duplicates, o.ack_wait_s, (long long)r.inside_ack_wait,
      absl::StrJoin(causes, ", ").c_str(), (long long)r.after_ack_ok);
}

void PrintSubscribersAndVerdict(const CampaignOptions& o,
                                const CampaignResults& res) {
  const Subscribers::Stats& ss = res.subscribers;
  const Report& r = res.ledger;
  printf(
      "subscribers: %lld ack calls (%lld failed), %lld acks skipped, "
      "%lld delayed, %lld stream reconnects; max early %.3f ms "
      "(tolerance %.3f ms)\n",
      (long long)ss.ack_calls, (long long)ss.ack_errors, (long long)ss.skipped,
      (long long)ss.delayed, (long long)ss.reconnects,
      static_cast<double>(r.max_early_ns) / 1e6, o.early_tolerance_ms);
  for (const auto& [what, n] : ss.errors) {
    printf("  %6lld x %s\n", (long long)n, what.c_str());
  }
  for (const std::string& s : r.suspicious) {
    printf("  inside ack wait, no fault between: %s\n", s.c_str());
  }
  printf("violations: %lld\n", (long long)r.violation_count);
  for (const std::string& v : r.violations) printf("  %s\n", v.c_str());
}

}  // namespace

void PrintCampaignResults(const CampaignOptions& options,
                          const CampaignResults& results) {
  PrintRunAndFaults(options, results);
  PrintMessages(options, results);
  PrintSubscribersAndVerdict(options, results);
}

}  // namespace msgq::chaos
