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

// The redeliveries inside the ack wait by epoch, in all and across msgqd
// kills (kill -9 of msgqd alone or with MariaDB), with the figure per kill.
void PrintInsideByEpoch(const Report& r) {
  const Report::EpochSplit& all = r.inside_by_epoch;
  printf(
      "inside ack wait by epoch: same %lld (postpone not committed), later "
      "%lld, earlier %lld (after a committed postpone: violations), "
      "unknown %lld\n",
      (long long)all.same, (long long)all.later, (long long)all.earlier,
      (long long)all.unknown);
  auto kills = r.faults.find("msgqd_kill");
  const int64_t n = kills == r.faults.end() ? 0 : kills->second;
  if (n == 0) return;
  auto it = r.inside_by_fault.find("msgqd_kill");
  const Report::EpochSplit k =
      it == r.inside_by_fault.end() ? Report::EpochSplit{} : it->second;
  const double per = 1.0 / static_cast<double>(n);
  printf(
      "across the %lld msgqd kills: %lld inside ack wait (%.2f per kill): "
      "same epoch %lld (%.2f per kill), later %lld, earlier %lld, unknown "
      "%lld\n",
      (long long)n, (long long)k.total(), k.total() * per, (long long)k.same,
      k.same * per, (long long)k.later, (long long)k.earlier,
      (long long)k.unknown);
  if (r.same_epoch_before_kill_ns.has_value()) {
    printf(
        "  same epoch across a kill: first delivered at most %.1f ms before "
        "the kill\n",
        static_cast<double>(*r.same_epoch_before_kill_ns) / 1e6);
  }
}

void PrintMessages(const CampaignOptions& o, const CampaignResults& res) {
  const Producers::Stats& ps = res.producers;
  const Report& r = res.ledger;
  std::vector<std::string> causes;
  for (const auto& [cause, split] : r.inside_by_fault) {
    causes.push_back(absl::StrCat(cause, " ", split.total()));
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
  PrintInsideByEpoch(r);
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
  for (const std::string& s : r.same_epoch_examples) {
    printf("  inside ack wait, same epoch: %s\n", s.c_str());
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
