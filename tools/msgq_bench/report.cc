#include "tools/msgq_bench/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/log.h"
#include "google/protobuf/util/json_util.h"
#include "tools/launch/child_process.h"

namespace msgq::bench {
namespace {

const char* YesNo(bool ok) { return ok ? "yes" : "NO"; }

// CPU seconds or MiB; "-" where the process was not ours to measure.
std::string Measured(double v) {
  return v < 0 ? "-" : absl::StrFormat("%.1f", v);
}

void AppendCostRow(const std::string& name, const pb::Cost& c,
                   std::string* out) {
  auto per_msg = [&c](const std::string& counter) {
    auto it = c.per_message().find(counter);
    return it == c.per_message().end() ? 0.0 : it->second;
  };
  absl::StrAppendFormat(
      out,
      "  %-20s %8.1f %8.1f %8.2f %8.2f %8.2f %8.2f %8.0f %8.0f %8s %8s %8s "
      "%7.1f\n",
      name, 1000 * per_msg("statements"), 1000 * per_msg("Com_commit"),
      per_msg("Rows_read"), per_msg("Handler_update"), per_msg("Handler_write"),
      1000 * per_msg("Innodb_data_fsyncs"), per_msg("Innodb_os_log_written"),
      per_msg("Binlog_bytes_written"), Measured(c.msgqd_cpu_s()),
      Measured(c.msgqd_peak_rss_mib()), Measured(c.mariadbd_cpu_s()),
      c.bench_cpu_s());
}

void AppendDrains(const BenchOptions& o, const pb::BenchResults& r,
                  std::string* out) {
  absl::StrAppend(out, "Drain of ", o.messages, " preloaded messages (",
                  o.payload_bytes, "-byte JSON)\n");
  absl::StrAppendFormat(out, "  %-26s %10s %8s %7s %9s %6s %6s %6s %5s\n", "",
                        "msgs/s", "seconds", "ratio", "received", "lost",
                        "dups", "left", "ok");
  if (r.has_relay()) {
    const pb::Relay& x = r.relay();
    absl::StrAppendFormat(
        out, "  %-26s %10.0f %8.2f %7s %9d %6d %6s %6d %5s\n",
        absl::StrCat("relay ", x.workers(), "w x ", x.batch()), x.msgs_per_s(),
        x.seconds(), "1.00", x.processed(), x.messages() - x.processed(), "-",
        x.left_in_db(), YesNo(x.ok()));
  }
  for (const pb::Drain& d : r.drains()) {
    absl::StrAppendFormat(
        out, "  %-26s %10.0f %8.2f %7s %9d %6d %6d %6d %5s\n",
        absl::StrCat("msgq batch ", d.batch_size(), " cache ", d.cache_size()),
        d.msgs_per_s(), d.seconds(),
        d.ratio_to_relay() > 0 ? absl::StrFormat("%.2f", d.ratio_to_relay())
                               : "-",
        d.received(), d.lost(), d.duplicates(), d.unacked_in_db(),
        YesNo(d.ok()));
    absl::StrAppendFormat(
        out,
        "  %-26s first delivery %.2f s after subscribing; %d batches, %d ack "
        "RPCs (%d failed, round trip p50 %.2f ms, p99 %.2f ms), %d rows sent "
        "more than once\n",
        "", d.startup_s(), d.subscribers().batches(),
        d.subscribers().ack_rpcs(), d.subscribers().ack_errors(),
        d.subscribers().ack_latency().p50_ms(),
        d.subscribers().ack_latency().p99_ms(), d.sent_more_than_once_in_db());
  }
  absl::StrAppend(out, "\n");
}

void AppendSustained(const pb::Sustained& s, std::string* out) {
  const pb::Latency& end = s.latency_commit_end();
  const pb::Latency& start = s.latency_commit_start();
  absl::StrAppendFormat(
      out,
      "Sustained: %d producers, 1 message per transaction, %.0f msgs/s "
      "offered for %.0f s (discovery: %s)\n"
      "  tables %d (each message to the next, round-robin), %d subscriber "
      "streams (%s reader)\n"
      "  committed %d (%.0f msgs/s achieved, worst producer lag %.1f ms, %d "
      "errors)\n",
      s.producers(), s.offered_rate(), s.duration_s(), s.discovery(),
      s.tables(), s.streams(), s.stream_reader(), s.committed(),
      s.achieved_offered_rate(), s.max_producer_lag_ms(), s.producer_errors());
  absl::StrAppendFormat(
      out,
      "  delivered %.0f msgs/s in the window (%.2f%% of offered, %.2f%% of "
      "the %d committed in it); everything arrived %.2f s after the last "
      "commit\n",
      s.delivered_rate(), s.delivered_pct_of_offered(),
      s.delivered_pct_of_committed(), s.committed_in_window(), s.tail_s());
  absl::StrAppendFormat(
      out,
      "  latency commit->receipt (ms): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 "
      "%.1f  max %.1f  mean %.1f\n"
      "  (from COMMIT sent: p50 %.1f  p99 %.1f  max %.1f; %d received before "
      "COMMIT returned)\n",
      end.p50_ms(), end.p90_ms(), end.p99_ms(), end.p999_ms(), end.max_ms(),
      end.mean_ms(), start.p50_ms(), start.p99_ms(), start.max_ms(),
      s.received_before_commit_returned());
  absl::StrAppendFormat(
      out, "  received %d, duplicates %d, lost %d, unacked in MySQL %d: %s\n\n",
      s.received(), s.duplicates(), s.lost(), s.unacked_in_db(),
      s.ok() ? "ok" : "NOT OK");
}

std::string FormatTable(const BenchOptions& o, const pb::BenchResults& r) {
  const pb::Environment& e = r.environment();
  std::string out = absl::StrCat(
      "msgq-bench ", e.date_utc(), " on ", e.host(), " (", e.cpus(), " CPUs, ",
      e.cpu_model(), ", ", e.mem_total_mib(),
      " MiB)\n  MySQL: ", e.mysql_version(), " (", e.mysql_settings(),
      ")\n  msgqd: ", e.msgqd(), "  msgq commit ", e.msgq_commit(),
      "\n  command: ", e.command(),
      "\n  table comment: ", r.options().table_comment(),
      "\n  subscribers: ", o.subscribers, " streams, ack ",
      o.ack_mode == "sync" ? "sync"
                           : absl::StrCat("async (<= ", o.max_acks_in_flight,
                                          " in flight per stream)"),
      "\n\n");
  if (r.has_relay() || r.drains_size() > 0) AppendDrains(o, r, &out);
  if (r.has_sustained()) AppendSustained(r.sustained(), &out);
  absl::StrAppendFormat(
      &out,
      "Cost per delivered message (MySQL counters are server-wide; sustained "
      "includes the producers' inserts)\n"
      "  %-20s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %7s\n",
      "", "stmts/1k", "cmts/1k", "rowsread", "rows_upd", "rows_ins", "fsync/1k",
      "redo_B", "binlog_B", "msgqd_s", "msgqdMiB", "mysqld_s", "bench_s");
  if (r.has_relay()) AppendCostRow("relay", r.relay().cost(), &out);
  for (const pb::Drain& d : r.drains())
    AppendCostRow(d.phase(), d.cost(), &out);
  if (r.has_sustained()) {
    AppendCostRow("sustained", r.sustained().cost(), &out);
  }
  absl::StrAppend(
      &out,
      "  (/1k: per 1000 messages; rows and bytes per message: Rows_read, "
      "Handler_update, Handler_write, redo and binlog bytes;\n   msgqd_s, "
      "mysqld_s, bench_s: CPU seconds over the phase; msgqdMiB: msgqd peak "
      "RSS in the phase)\n");
  for (const std::string& note : r.notes()) {
    absl::StrAppend(&out, "note: ", note, "\n");
  }
  absl::StrAppend(&out, r.ok() ? "RESULT: ok (every message acked, none lost)\n"
                               : "RESULT: FAILED (see above)\n");
  return out;
}

std::string Csv(const std::vector<SeriesPoint>& series) {
  auto opt = [](const std::optional<double>& v) {
    return v.has_value() ? absl::StrFormat("%.3f", *v) : "";
  };
  std::string csv =
      "phase,t_s,dt_s,delivered_per_s,acked_per_s,offered_per_s,backlog,"
      "lat_p50_ms,lat_p99_ms,lat_max_ms,msgqd_rss_mib,msgqd_cpu_pct\n";
  for (const SeriesPoint& p : series) {
    absl::StrAppendFormat(
        &csv, "%s,%.3f,%.3f,%.1f,%.1f,%.1f,%.0f,%s,%s,%s,%.1f,%.1f\n", p.phase,
        p.t_s, p.dt_s, p.delivered_per_s, p.acked_per_s, p.offered_per_s,
        p.backlog, opt(p.lat_p50_ms), opt(p.lat_p99_ms), opt(p.lat_max_ms),
        p.msgqd_rss_mib, p.msgqd_cpu_pct);
  }
  return csv;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WriteJson(const pb::BenchResults& r, const std::string& path) {
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  print.always_print_primitive_fields = true;
  print.preserve_proto_field_names = true;
  std::string json;
  const auto printed =
      google::protobuf::util::MessageToJsonString(r, &json, print);
  if (!printed.ok()) {
    return absl::InternalError(absl::StrCat(path, ": ", printed.ToString()));
  }
  return WriteFile(path, json);
}

// bench.gp's arguments: the drain phases in the series (in order) and
// whether the sustained phase is there.
absl::Status Plot(const BenchOptions& o, const pb::BenchResults& r,
                  const std::vector<SeriesPoint>& series,
                  const std::string& csv, const std::string& png) {
  std::vector<std::string> drains;
  bool sustained = false;
  for (const SeriesPoint& p : series) {
    if (p.phase == "sustained") {
      sustained = true;
    } else if (std::find(drains.begin(), drains.end(), p.phase) ==
               drains.end()) {
      drains.push_back(p.phase);
    }
  }
  if (drains.empty() && !sustained) return absl::OkStatus();
  const pb::Environment& e = r.environment();
  const std::string title = absl::StrCat("msgq-bench ", e.date_utc(), " - ",
                                         e.host(), " (", e.cpus(), " CPUs)");
  return launch::RunCommand(
             absl::StrCat("gnuplot -c ",
                          launch::ShellQuote(absl::StrCat(
                              o.source_dir, "/tools/msgq_bench/bench.gp")),
                          " ", launch::ShellQuote(csv), " ",
                          launch::ShellQuote(png), " ",
                          launch::ShellQuote(title), " ", o.messages, " ",
                          launch::ShellQuote(absl::StrJoin(drains, " ")), " ",
                          sustained ? 1 : 0, " 2>&1"))
      .status();
}

}  // namespace

void WriteReport(const BenchOptions& o, const pb::BenchResults& r,
                 const std::vector<SeriesPoint>& series) {
  const std::string text = FormatTable(o, r);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  const std::string dir = o.out_dir + "/";
  // bench.txt first: check_outputs.py takes older files for leftovers.
  for (const absl::Status& s :
       {WriteFile(dir + "bench.txt", text), WriteJson(r, dir + "bench.json"),
        WriteFile(dir + "timeseries.csv", Csv(series))}) {
    if (!s.ok()) LogError("msgq-bench: ", s.message());
  }
  if (o.plot) {
    absl::Status s =
        Plot(o, r, series, dir + "timeseries.csv", dir + "bench.png");
    if (!s.ok()) LogWarning("msgq-bench: no plot: ", s.message());
  }
  std::fprintf(stdout, "wrote %s/{bench.txt,bench.json,timeseries.csv%s}\n",
               o.out_dir.c_str(), o.plot ? ",bench.png" : "");
}

}  // namespace msgq::bench
