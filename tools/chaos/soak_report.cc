#include "tools/chaos/soak_report.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace msgq::chaos {
namespace {

using json = nlohmann::json;

double MiB(int64_t kb) { return static_cast<double>(kb) / 1024.0; }

json SummaryJson(const OutcomeSummary& s) {
  return json{{"attempts", s.attempts},
              {"outcomes", s.outcomes},
              {"p50_ms", s.p50_ms},
              {"p99_ms", s.p99_ms},
              {"max_ms", s.max_ms}};
}

json ProcessJson(const ProcessSummary& p) {
  return json{{"samples", p.samples},
              {"cpu_peak_pct_of_a_core", p.cpu_peak_pct},
              {"cpu_avg_pct_of_a_core", p.cpu_avg_pct},
              {"rss_start_kb", p.rss_start_kb},
              {"rss_peak_kb", p.rss_peak_kb},
              {"rss_end_kb", p.rss_end_kb},
              {"threads_peak", p.threads_peak},
              {"fds_peak", p.fds_peak}};
}

void PrintProbes(const char* phase, const std::vector<Probes::KindReport>& v,
                 FILE* out) {
  for (const Probes::KindReport& k : v) {
    const OutcomeSummary& s = k.summary;
    fprintf(out,
            "  %-8s %-26s %5lld tries  p50 %8.1f ms  p99 %8.1f ms  max %8.1f "
            "ms  [%s]\n",
            phase, k.name.c_str(), static_cast<long long>(s.attempts), s.p50_ms,
            s.p99_ms, s.max_ms, s.OutcomesText().c_str());
  }
}

}  // namespace

void PrintSoakReport(const SoakReport& r, FILE* out) {
  const Report& l = r.ledger;
  fprintf(out,
          "hostile soak: %.0f s calm, then %.0f s with hostile clients, "
          "drain %.1f s; grpc %s, https %s, mysql protocol %s; msgqd runs "
          "%d\n",
          r.calm_s, r.hostile_s, r.drain_s, r.grpc_address.c_str(),
          r.https_address.c_str(), r.mysql_address.c_str(), r.msgqd_runs);
  fprintf(out,
          "messages: %lld committed, %lld received (%lld deliveries), lost "
          "%lld, duplicated %lld, violations %lld\n",
          static_cast<long long>(l.committed + l.unknown_present),
          static_cast<long long>(l.delivered_ids),
          static_cast<long long>(l.deliveries), static_cast<long long>(l.lost),
          static_cast<long long>(l.duplicates),
          static_cast<long long>(l.violation_count));
  fprintf(out,
          "subscribers (%d gRPC, %d MySQL protocol): commit to first receipt "
          "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%lld messages due at "
          "once); MySQL stream: %lld rows, %lld logins\n",
          r.grpc_subscribers, r.mysql_subscribers, l.latency_p50_ms,
          l.latency_p99_ms, l.latency_max_ms,
          static_cast<long long>(l.latency_count),
          static_cast<long long>(r.subscribers.mysql_rows),
          static_cast<long long>(r.subscribers.mysql_logins));
  fprintf(out,
          "normal clients (time of every attempt, failed ones included):\n");
  PrintProbes("calm", r.calm, out);
  PrintProbes("attacked", r.under_attack, out);
  fprintf(out,
          "hostile clients (held kinds: connections and how long each "
          "lived; others: requests and their answer time):\n");
  for (const Hostile::KindReport& k : r.hostile) {
    const OutcomeSummary& s = k.summary;
    if (k.held) {
      fprintf(out, "  %-46s %5lld conns  lived p50 %6.1f s max %6.1f s  [%s]\n",
              k.name.c_str(), static_cast<long long>(s.attempts),
              s.p50_ms / 1000, s.max_ms / 1000, s.OutcomesText().c_str());
    } else {
      fprintf(out, "  %-46s %5lld tries  p50 %8.1f ms  max %8.1f ms  [%s]\n",
              k.name.c_str(), static_cast<long long>(s.attempts), s.p50_ms,
              s.max_ms, s.OutcomesText().c_str());
    }
  }
  const ProcessSummary& m = r.msgqd;
  fprintf(out,
          "msgqd calm: CPU peak %.0f%% of a core, average %.0f%%; RSS %.1f "
          "MiB at start, peak %.1f MiB\n",
          r.calm_msgqd.cpu_peak_pct, r.calm_msgqd.cpu_avg_pct,
          MiB(r.calm_msgqd.rss_start_kb), MiB(r.calm_msgqd.rss_peak_kb));
  fprintf(out,
          "msgqd attacked: CPU peak %.0f%% of a core (1 s windows), average "
          "%.0f%%; RSS %.1f MiB at start, peak %.1f MiB, %.1f MiB at the end, "
          "%.1f MiB after the drain; threads peak %lld, open fds peak %lld\n",
          m.cpu_peak_pct, m.cpu_avg_pct, MiB(m.rss_start_kb),
          MiB(m.rss_peak_kb), MiB(m.rss_end_kb), MiB(r.rss_after_drain_kb),
          static_cast<long long>(m.threads_peak),
          static_cast<long long>(m.fds_peak));
}

absl::Status WriteSoakJson(const SoakReport& r, const std::string& path) {
  const Report& l = r.ledger;
  json probes = json::object();
  for (const auto& k : r.calm) probes["calm"][k.name] = SummaryJson(k.summary);
  for (const auto& k : r.under_attack) {
    probes["attacked"][k.name] = SummaryJson(k.summary);
  }
  json hostile = json::object();
  for (const auto& k : r.hostile) {
    json j = SummaryJson(k.summary);
    j["held"] = k.held;
    hostile[k.name] = std::move(j);
  }
  const json doc = {
      {"command", r.command},
      {"seed", r.seed},
      {"result", r.pass ? "PASS" : "FAIL"},
      {"seconds",
       {{"calm", r.calm_s}, {"hostile", r.hostile_s}, {"drain", r.drain_s}}},
      {"addresses",
       {{"grpc", r.grpc_address},
        {"https", r.https_address},
        {"mysql_protocol", r.mysql_address}}},
      {"msgqd_runs", r.msgqd_runs},
      {"messages",
       {{"committed", l.committed + l.unknown_present},
        {"received", l.delivered_ids},
        {"deliveries", l.deliveries},
        {"lost", l.lost},
        {"duplicated", l.duplicates},
        {"violations", l.violation_count},
        {"violation_examples", l.violations}}},
      {"producers",
       {{"transactions", r.producers.transactions},
        {"commits", r.producers.commits},
        {"rollbacks", r.producers.rollbacks},
        {"failed", r.producers.failed},
        {"unknown", r.producers.unknown}}},
      {"subscribers",
       {{"grpc", r.grpc_subscribers},
        {"mysql_protocol", r.mysql_subscribers},
        {"commit_to_receipt_ms",
         {{"count", l.latency_count},
          {"p50", l.latency_p50_ms},
          {"p99", l.latency_p99_ms},
          {"max", l.latency_max_ms}}},
        {"mysql_rows", r.subscribers.mysql_rows},
        {"mysql_logins", r.subscribers.mysql_logins},
        {"reconnects", r.subscribers.reconnects},
        {"ack_calls", r.subscribers.ack_calls},
        {"ack_errors", r.subscribers.ack_errors},
        {"errors", r.subscribers.errors}}},
      {"probes", probes},
      {"hostile", hostile},
      {"msgqd",
       {{"calm", ProcessJson(r.calm_msgqd)},
        {"attacked", ProcessJson(r.msgqd)},
        {"rss_after_drain_kb", r.rss_after_drain_kb}}},
  };
  std::ofstream f(path);
  f << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WriteSamplesCsv(const std::vector<ProcessSample>& samples,
                             const std::string& path) {
  std::ofstream f(path);
  f << "seconds,cpu_pct_of_a_core,rss_kb,threads,fds\n";
  for (const ProcessSample& s : samples) {
    f << absl::StrFormat("%.1f,%.1f,%d,%d,%d\n", s.at_s, s.cpu_pct, s.rss_kb,
                         s.threads, s.fds);
  }
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace msgq::chaos
