#include "tools/msgq_bench/report.h"

#include <fstream>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/launch/child_process.h"

namespace msgq::bench {
namespace {

std::string Mib(double mib) {
  return mib < 0 ? "-" : absl::StrFormat("%.1f", mib);
}

std::string Cpu(double s) { return s < 0 ? "-" : absl::StrFormat("%.1f", s); }

std::string CostRow(const std::string& name, const pb::Cost& c) {
  auto per_msg = [&c](const std::string& counter) {
    auto it = c.per_message().find(counter);
    return it == c.per_message().end() ? 0.0 : it->second;
  };
  return absl::StrFormat(
      "  %-20s %8.1f %8.1f %8.2f %8.2f %8.2f %8.2f %8.0f %8.0f %8s %8s %8s "
      "%7.1f\n",
      name, 1000 * per_msg("statements"), 1000 * per_msg("Com_commit"),
      per_msg("Rows_read"), per_msg("Handler_update"), per_msg("Handler_write"),
      1000 * per_msg("Innodb_data_fsyncs"), per_msg("Innodb_os_log_written"),
      per_msg("Binlog_bytes_written"), Cpu(c.msgqd_cpu_s()),
      Mib(c.msgqd_peak_rss_mib()), Cpu(c.mariadbd_cpu_s()), c.bench_cpu_s());
}

std::string Opt(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.3f", *v) : "";
}

}  // namespace

std::string FormatTable(const BenchOptions& o, const BenchResults& r) {
  std::string out;
  const Environment& e = r.env;
  absl::StrAppend(&out, "msgq-bench ", e.date_utc(), " on ", e.host(), " (",
                  e.cpus(), " CPUs, ", e.cpu_model(), ", ", e.mem_total_mib(),
                  " MiB)\n");
  absl::StrAppend(&out, "  MySQL: ", e.mysql_version(), " (",
                  e.mysql_settings(), ")\n  msgqd: ", e.msgqd(),
                  "  msgq commit ", e.msgq_commit(),
                  "\n  command: ", e.command(), "\n");
  absl::StrAppend(&out, "  table comment: ", r.table_comment, "\n");
  absl::StrAppend(&out, "  subscribers: ", o.subscribers, " streams, ack ",
                  o.ack_mode == AckMode::kAsync
                      ? absl::StrCat("async (<= ", o.max_acks_in_flight,
                                     " in flight per stream)")
                      : "sync",
                  "\n\n");
  if (r.relay.has_value() || !r.drains.empty()) {
    absl::StrAppend(&out, "Drain of ", o.messages, " preloaded messages (",
                    o.payload_bytes, "-byte JSON)\n");
    absl::StrAppend(
        &out, absl::StrFormat("  %-26s %10s %8s %7s %9s %6s %6s %6s %5s\n", "",
                              "msgs/s", "seconds", "ratio", "received", "lost",
                              "dups", "left", "ok"));
    if (r.relay.has_value()) {
      const RelayResult& x = *r.relay;
      absl::StrAppend(
          &out, absl::StrFormat(
                    "  %-26s %10.0f %8.2f %7s %9d %6d %6s %6d %5s\n",
                    absl::StrCat("relay ", x.workers(), "w x ", x.batch()),
                    x.msgs_per_s(), x.seconds(), "1.00", x.processed(),
                    x.messages() - x.processed(), "-", x.left_in_db(),
                    x.ok() ? "yes" : "NO"));
    }
    for (const DrainResult& d : r.drains) {
      absl::StrAppend(
          &out,
          absl::StrFormat("  %-26s %10.0f %8.2f %7s %9d %6d %6d %6d %5s\n",
                          absl::StrCat("msgq batch ", d.batch_size(), " cache ",
                                       d.cache_size()),
                          d.msgs_per_s(), d.seconds(),
                          d.ratio_to_relay() > 0
                              ? absl::StrFormat("%.2f", d.ratio_to_relay())
                              : "-",
                          d.received(), d.lost(), d.duplicates(),
                          d.unacked_in_db(), d.ok() ? "yes" : "NO"));
      absl::StrAppend(
          &out, absl::StrFormat(
                    "  %-26s first delivery %.2f s after subscribing; "
                    "%d batches, %d ack RPCs (%d failed), %d rows sent "
                    "more than once\n",
                    "", d.startup_s(), d.subscribers().batches(),
                    d.subscribers().ack_rpcs(), d.subscribers().ack_errors(),
                    d.sent_more_than_once_in_db()));
    }
    absl::StrAppend(&out, "\n");
  }
  if (r.sustained.has_value()) {
    const SustainedResult& s = *r.sustained;
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "Sustained: %d producers, 1 message per transaction, %.0f msgs/s "
            "offered for %.0f s (discovery: %s)\n",
            s.producers(), s.offered_rate(), s.duration_s(), s.discovery()));
    absl::StrAppend(
        &out, absl::StrFormat("  tables %d (each message to the next, "
                              "round-robin), %d subscriber streams (%s "
                              "reader)\n",
                              s.tables(), s.streams(), s.stream_reader()));
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "  committed %d (%.0f msgs/s achieved, worst producer lag %.1f "
            "ms, %d errors)\n",
            s.committed(), s.achieved_offered_rate(), s.max_producer_lag_ms(),
            s.producer_errors()));
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "  delivered %.0f msgs/s in the window (%.2f%% of offered, "
            "%.2f%% of the %d committed in it); everything arrived %.2f s "
            "after the last commit\n",
            s.delivered_rate(), s.delivered_pct_of_offered(),
            s.delivered_pct_of_committed(), s.committed_in_window(),
            s.tail_s()));
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "  latency commit->receipt (ms): p50 %.1f  p90 %.1f  "
            "p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n",
            s.latency_commit_end().p50_ms(), s.latency_commit_end().p90_ms(),
            s.latency_commit_end().p99_ms(), s.latency_commit_end().p999_ms(),
            s.latency_commit_end().max_ms(), s.latency_commit_end().mean_ms()));
    absl::StrAppend(
        &out,
        absl::StrFormat("  (from COMMIT sent: p50 %.1f  p99 %.1f  max %.1f; "
                        "%d received before COMMIT returned)\n",
                        s.latency_commit_start().p50_ms(),
                        s.latency_commit_start().p99_ms(),
                        s.latency_commit_start().max_ms(),
                        s.received_before_commit_returned()));
    absl::StrAppend(
        &out, absl::StrFormat("  received %d, duplicates %d, lost %d, "
                              "unacked in MySQL %d: %s\n\n",
                              s.received(), s.duplicates(), s.lost(),
                              s.unacked_in_db(), s.ok() ? "ok" : "NOT OK"));
  }
  absl::StrAppend(&out,
                  "Cost per delivered message (MySQL counters are "
                  "server-wide; sustained includes the producers' inserts)\n");
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "  %-20s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %7s\n", "",
          "stmts/1k", "cmts/1k", "rowsread", "rows_upd", "rows_ins", "fsync/1k",
          "redo_B", "binlog_B", "msgqd_s", "msgqdMiB", "mysqld_s", "bench_s"));
  if (r.relay.has_value()) {
    absl::StrAppend(&out, CostRow("relay", r.relay->cost()));
  }
  for (const DrainResult& d : r.drains) {
    absl::StrAppend(&out, CostRow(d.phase(), d.cost()));
  }
  if (r.sustained.has_value()) {
    absl::StrAppend(&out, CostRow("sustained", r.sustained->cost()));
  }
  absl::StrAppend(&out,
                  "  (/1k: per 1000 messages; rows and bytes per message: "
                  "Rows_read, Handler_update, Handler_write, redo and binlog "
                  "bytes;\n   msgqd_s, mysqld_s, bench_s: CPU seconds over the "
                  "phase; msgqdMiB: msgqd peak RSS in the phase)\n");
  for (const std::string& note : r.notes) {
    absl::StrAppend(&out, "note: ", note, "\n");
  }
  absl::StrAppend(&out, r.ok ? "RESULT: ok (every message acked, none lost)\n"
                             : "RESULT: FAILED (see above)\n");
  return out;
}

absl::Status WriteCsv(const BenchResults& r, const std::string& path) {
  std::ofstream f(path);
  f << "phase,t_s,dt_s,delivered_per_s,acked_per_s,offered_per_s,backlog,"
       "lat_p50_ms,lat_p99_ms,lat_max_ms,msgqd_rss_mib,msgqd_cpu_pct\n";
  for (const SeriesPoint& p : r.series) {
    f << absl::StrFormat(
        "%s,%.3f,%.3f,%.1f,%.1f,%.1f,%.0f,%s,%s,%s,%.1f,%.1f\n", p.phase, p.t_s,
        p.dt_s, p.delivered_per_s, p.acked_per_s, p.offered_per_s, p.backlog,
        Opt(p.lat_p50_ms), Opt(p.lat_p99_ms), Opt(p.lat_max_ms),
        p.msgqd_rss_mib, p.msgqd_cpu_pct);
  }
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WritePlot(const BenchOptions& o, const BenchResults& r,
                       const std::string& csv, const std::string& png) {
  std::vector<std::string> drain_phases;
  std::set<std::string> seen;
  bool sustained = false;
  for (const SeriesPoint& p : r.series) {
    if (p.phase == "sustained") {
      sustained = true;
    } else if (seen.insert(p.phase).second) {
      drain_phases.push_back(p.phase);
    }
  }
  if (drain_phases.empty() && !sustained) return absl::OkStatus();
  const std::string title =
      absl::StrCat("msgq-bench ", r.env.date_utc(), " - ", r.env.host(), " (",
                   r.env.cpus(), " CPUs)");
  absl::StatusOr<std::string> out = launch::RunCommand(absl::StrCat(
      "gnuplot -c ",
      launch::ShellQuote(
          absl::StrCat(o.source_dir, "/tools/msgq_bench/bench.gp")),
      " ", launch::ShellQuote(csv), " ", launch::ShellQuote(png), " ",
      launch::ShellQuote(title), " ", o.messages, " ",
      launch::ShellQuote(absl::StrJoin(drain_phases, " ")), " ",
      sustained ? 1 : 0, " 2>&1"));
  if (!out.ok()) return out.status();
  return absl::OkStatus();
}

}  // namespace msgq::bench
