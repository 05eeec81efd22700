#include "tools/msgq_bench/report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "google/protobuf/util/json_util.h"
#include "tools/launch/child_process.h"

namespace msgq::bench {
namespace {

// The first line of `command`'s output, `otherwise` when it fails.
std::string FirstLine(const std::string& command,
                      const std::string& otherwise) {
  absl::StatusOr<std::string> out = launch::RunCommand(command);
  if (!out.ok()) return otherwise;
  return std::string(
      absl::StripAsciiWhitespace(out->substr(0, out->find('\n'))));
}

const char* YesNo(bool ok) { return ok ? "yes" : "NO"; }

// CPU seconds or MiB; "-" where the process was not ours to measure.
std::string Measured(double v) {
  return v < 0 ? "-" : absl::StrFormat("%.1f", v);
}

// The cost table's columns from per_message: name, counter, scale, decimals.
struct CostColumn {
  const char* name;
  const char* counter;
  double scale;
  int decimals;
};
constexpr CostColumn kCostColumns[] = {
    {"stmts/1k", "statements", 1000, 1},
    {"cmts/1k", "Com_commit", 1000, 1},
    {"rowsread", "Rows_read", 1, 2},
    {"hreads", "handler_reads", 1, 2},
    {"pgdisk/k", "Innodb_buffer_pool_reads", 1000, 1},
    {"rows_upd", "Handler_update", 1, 2},
    {"rows_ins", "Handler_write", 1, 2},
    {"fsync/1k", "Innodb_data_fsyncs", 1000, 2},
    {"redo_B", "Innodb_os_log_written", 1, 0},
    {"binlog_B", "Binlog_bytes_written", 1, 0}};

void AppendCostRow(const std::string& name, const pb::Cost& c,
                   std::string* out) {
  absl::StrAppendFormat(out, "  %-20s", name);
  for (const CostColumn& col : kCostColumns) {
    auto it = c.per_message().find(col.counter);
    const double v = it == c.per_message().end() ? 0 : it->second;
    absl::StrAppendFormat(out, " %8.*f", col.decimals, col.scale * v);
  }
  absl::StrAppendFormat(out, " %8s %8s %8s %7.1f\n", Measured(c.msgqd_cpu_s()),
                        Measured(c.msgqd_peak_rss_mib()),
                        Measured(c.mariadbd_cpu_s()), c.bench_cpu_s());
}

void AppendDrains(const pb::BenchResults& r, std::string* out) {
  absl::StrAppend(out, "Drain of ", r.options().messages(),
                  " preloaded messages (", r.options().payload_bytes(),
                  "-byte JSON)");
  if (r.has_relay() && r.relay().table_mib() > 0) {
    absl::StrAppendFormat(out, "; outbox %.1f MiB", r.relay().table_mib());
  }
  if (r.drains_size() > 0 && r.drains(0).table_mib() > 0) {
    absl::StrAppendFormat(out, "; message table %.1f MiB",
                          r.drains(0).table_mib());
  }
  if (r.has_machine()) {
    absl::StrAppendFormat(out, " (buffer pool %.0f MiB)",
                          r.machine().buffer_pool_mib());
  }
  absl::StrAppend(out, "\n");
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
    const pb::Subscribers& s = d.subscribers();
    absl::StrAppendFormat(
        out, "  %-26s %10.0f %8.2f %7s %9d %6d %6d %6d %5s\n",
        absl::StrCat("msgq batch ", d.batch_size(), " cache ", d.cache_size(),
                     d.partitioned() ? " part" : ""),
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
        "", d.startup_s(), s.batches(), s.ack_rpcs(), s.ack_errors(),
        s.ack_latency().p50_ms(), s.ack_latency().p99_ms(),
        d.sent_more_than_once_in_db());
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
      "streams\n"
      "  committed %d (%.0f msgs/s achieved, worst producer lag %.1f ms, %d "
      "errors)\n"
      "  delivered %.0f msgs/s in the window (%.2f%% of offered, %.2f%% of "
      "the %d committed in it); everything arrived %.2f s after the last "
      "commit\n",
      s.producers(), s.offered_rate(), s.duration_s(), s.discovery(),
      s.tables(), s.streams(), s.committed(), s.achieved_offered_rate(),
      s.max_producer_lag_ms(), s.producer_errors(), s.delivered_rate(),
      s.delivered_pct_of_offered(), s.delivered_pct_of_committed(),
      s.committed_in_window(), s.tail_s());
  absl::StrAppendFormat(
      out,
      "  latency commit->receipt (ms): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 "
      "%.1f  max %.1f  mean %.1f\n"
      "  (from COMMIT sent: p50 %.1f  p99 %.1f  max %.1f; %d received before "
      "COMMIT returned)\n"
      "  received %d, duplicates %d, lost %d, unacked in MySQL %d: %s\n\n",
      end.p50_ms(), end.p90_ms(), end.p99_ms(), end.p999_ms(), end.max_ms(),
      end.mean_ms(), start.p50_ms(), start.p99_ms(), start.max_ms(),
      s.received_before_commit_returned(), s.received(), s.duplicates(),
      s.lost(), s.unacked_in_db(), s.ok() ? "ok" : "NOT OK");
}

std::string FormatTable(const pb::BenchResults& r) {
  const pb::Environment& e = r.environment();
  std::string out = absl::StrCat(
      "msgq-bench ", e.date_utc(), " on ", e.host(), " (", e.cpus(), " CPUs, ",
      e.cpu_model(), ", ", e.mem_total_mib(),
      " MiB)\n  MySQL: ", e.mysql_version(), " (", e.mysql_settings(),
      ")\n  msgqd: ", e.msgqd(), "  msgq commit ", e.msgq_commit(),
      "\n  command: ", e.command(),
      "\n  table comment: ", r.options().table_comment(),
      "\n  subscribers: ", r.options().subscribers(),
      " streams, <= ", r.options().max_acks_in_flight(),
      " acks in flight per stream\n");
  if (r.has_machine()) {
    const pb::Machine& m = r.machine();
    if (m.fsync_samples() > 0) {
      absl::StrAppendFormat(
          &out,
          "  machine: write+fdatasync 4 KiB p50 %.2f ms, p99 %.2f ms, max "
          "%.2f ms (%d in %s);",
          m.fsync_p50_ms(), m.fsync_p99_ms(), m.fsync_max_ms(),
          m.fsync_samples(), m.fsync_dir());
    } else {
      absl::StrAppend(&out, "  machine: fsync not measured (", m.fsync_error(),
                      ");");
    }
    absl::StrAppendFormat(
        &out, " single-row autocommit INSERTs %.0f commits/s (%d in %.1f s)\n",
        m.commits_per_s(), m.commits(), m.commit_probe_s());
  }
  absl::StrAppend(&out, "\n");
  if (r.has_relay() || r.drains_size() > 0) AppendDrains(r, &out);
  if (r.has_sustained()) AppendSustained(r.sustained(), &out);
  absl::StrAppend(&out,
                  "Cost per delivered message (MySQL counters are "
                  "server-wide; sustained includes the producers' inserts)\n",
                  absl::StrFormat("  %-20s", ""));
  for (const CostColumn& col : kCostColumns) {
    absl::StrAppendFormat(&out, " %8s", col.name);
  }
  absl::StrAppendFormat(&out, " %8s %8s %8s %7s\n", "msgqd_s", "msgqdMiB",
                        "mysqld_s", "bench_s");
  if (r.has_relay()) AppendCostRow("relay", r.relay().cost(), &out);
  for (const pb::Drain& d : r.drains()) {
    AppendCostRow(d.phase(), d.cost(), &out);
  }
  if (r.has_sustained()) {
    AppendCostRow("sustained", r.sustained().cost(), &out);
  }
  absl::StrAppend(
      &out,
      "  (/1k: per 1000 messages; rows and bytes per message: Rows_read, "
      "Handler_read_{key,next,rnd,rnd_next},\n   "
      "Handler_update, Handler_write, redo and binlog bytes; pgdisk/k: "
      "Innodb_buffer_pool_reads\n   (pages read from disk) per 1000 "
      "messages; msgqd_s, "
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

// bench.gp with the phases the run has: the drains in order (relay first)
// and whether there is a sustained phase.
absl::Status Plot(const pb::BenchResults& r, const std::string& csv,
                  const std::string& png) {
  std::vector<std::string> drains;
  if (r.has_relay()) drains.push_back("relay");
  for (const pb::Drain& d : r.drains()) drains.push_back(d.phase());
  if (drains.empty() && !r.has_sustained()) return absl::OkStatus();
  const pb::Environment& e = r.environment();
  const std::string title = absl::StrCat("msgq-bench ", e.date_utc(), " - ",
                                         e.host(), " (", e.cpus(), " CPUs)");
  return launch::RunCommand(
             absl::StrCat(
                 "gnuplot -c ",
                 launch::ShellQuote(absl::StrCat(r.options().source_dir(),
                                                 "/tools/msgq_bench/bench.gp")),
                 " ", launch::ShellQuote(csv), " ", launch::ShellQuote(png),
                 " ", launch::ShellQuote(title), " ", r.options().messages(),
                 " ", launch::ShellQuote(absl::StrJoin(drains, " ")), " ",
                 r.has_sustained() ? 1 : 0, " 2>&1"))
      .status();
}

}  // namespace

pb::Environment DescribeEnvironment(const pb::Options& o,
                                    MysqlConnection& admin, int argc,
                                    char** argv) {
  pb::Environment e;
  e.set_date_utc(
      absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::Now(), absl::UTCTimeZone()));
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  e.set_host(host);
  e.set_cpus(static_cast<int>(std::thread::hardware_concurrency()));
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (absl::StartsWith(line, "model name")) {
      e.set_cpu_model(std::string(
          absl::StripAsciiWhitespace(line.substr(line.find(':') + 1))));
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  if (meminfo >> key >> kib) e.set_mem_total_mib(kib / 1024);
  utsname u;
  if (uname(&u) == 0) e.set_kernel(absl::StrCat(u.sysname, " ", u.release));
  absl::StatusOr<QueryResult> v = admin.Query(
      "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@sync_binlog, "
      "@@log_bin, @@binlog_format, @@innodb_buffer_pool_size DIV 1048576");
  if (v.ok() && !v->rows.empty()) {
    auto s = [&](int i) { return v->rows[0][i].value_or("NULL"); };
    e.set_mysql_version(s(0));
    e.set_mysql_settings(
        absl::StrCat("innodb_flush_log_at_trx_commit=", s(1),
                     ", sync_binlog=", s(2), ", log_bin=", s(3),
                     ", binlog_format=", s(4), ", buffer pool ", s(5), " MiB"));
  }
  const std::string git =
      absl::StrCat("git -C ", launch::ShellQuote(o.source_dir()));
  e.set_msgq_commit(FirstLine(
      absl::StrCat(git, " describe --always --dirty 2>/dev/null"), "unknown"));
  if (absl::EndsWith(e.msgq_commit(), "-dirty")) {
    // Identify the uncommitted state too: a hash of the diff.
    absl::StrAppend(
        e.mutable_msgq_commit(), " (diff sha1 ",
        FirstLine(absl::StrCat(git, " diff HEAD 2>/dev/null | sha1sum"), "?")
            .substr(0, 12),
        ")");
  }
  e.set_command(absl::StrJoin(argv, argv + argc, " "));
  e.set_msgqd(o.msgq_server().empty()
                  ? o.msgqd_path()
                  : absl::StrCat("external ", o.msgq_server()));
  return e;
}

void WriteReport(const pb::BenchResults& r,
                 const std::vector<SeriesPoint>& series) {
  const std::string text = FormatTable(r);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  const std::string dir = r.options().out_dir() + "/";
  // bench.txt first: check_outputs.py takes older files for leftovers.
  for (const absl::Status& s :
       {WriteFile(dir + "bench.txt", text), WriteJson(r, dir + "bench.json"),
        WriteFile(dir + "timeseries.csv", Csv(series))}) {
    if (!s.ok()) LogError("msgq-bench: ", s.message());
  }
  if (r.options().plot()) {
    absl::Status s = Plot(r, dir + "timeseries.csv", dir + "bench.png");
    if (!s.ok()) LogWarning("msgq-bench: no plot: ", s.message());
  }
  std::fprintf(stdout, "wrote %s{bench.txt,bench.json,timeseries.csv%s}\n",
               dir.c_str(), r.options().plot() ? ",bench.png" : "");
}

}  // namespace msgq::bench
