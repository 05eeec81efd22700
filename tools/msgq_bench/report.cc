#include "tools/msgq_bench/report.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/msgq_bench/json_writer.h"

namespace msgq::bench {
namespace {

double PerMsg(int64_t v, int64_t delivered) {
  return delivered > 0 ? static_cast<double>(v) / static_cast<double>(delivered)
                       : 0;
}

int64_t Dml(const StatusCounters& c) {
  return c.Get("Com_select") + c.Get("Com_insert") + c.Get("Com_update") +
         c.Get("Com_delete");
}

std::string Mib(int64_t kib) {
  return kib < 0 ? "-"
                 : absl::StrFormat("%.1f", static_cast<double>(kib) / 1024);
}

std::string Cpu(double s) { return s < 0 ? "-" : absl::StrFormat("%.1f", s); }

std::string CostRow(const std::string& name, const PhaseCost& c,
                    int64_t delivered) {
  const StatusCounters& m = c.mysql;
  return absl::StrFormat(
      "  %-20s %8.1f %8.1f %8.2f %8.2f %8.2f %8.2f %8.0f %8.0f %8s %8s %8s "
      "%7.1f\n",
      name, 1000 * PerMsg(Dml(m), delivered),
      1000 * PerMsg(m.Get("Com_commit"), delivered),
      PerMsg(m.Get("Rows_read"), delivered),
      PerMsg(m.Get("Handler_update"), delivered),
      PerMsg(m.Get("Handler_write"), delivered),
      1000 * PerMsg(m.Get("Innodb_data_fsyncs"), delivered),
      PerMsg(m.Get("Innodb_os_log_written"), delivered),
      PerMsg(m.Get("Binlog_bytes_written"), delivered), Cpu(c.msgqd_cpu_s),
      Mib(c.msgqd_peak_rss_kib), Cpu(c.mariadbd_cpu_s), c.bench_cpu_s);
}

void CostJson(JsonWriter& j, const PhaseCost& c, int64_t delivered) {
  j.Key("cost");
  j.BeginObject();
  j.Field("wall_s", c.wall_s);
  j.Field("msgqd_cpu_s", c.msgqd_cpu_s);
  j.Field("msgqd_peak_rss_mib",
          c.msgqd_peak_rss_kib < 0 ? -1.0 : c.msgqd_peak_rss_kib / 1024.0);
  j.Field("msgqd_peak_rss_is_phase_only", c.msgqd_peak_reset);
  j.Field("mariadbd_cpu_s", c.mariadbd_cpu_s);
  j.Field("bench_cpu_s", c.bench_cpu_s);
  j.Key("mysql_delta");
  j.BeginObject();
  for (const auto& [name, v] : c.mysql.values) j.Field(name, v);
  j.EndObject();
  j.Key("per_message");
  j.BeginObject();
  j.Field("statements", PerMsg(Dml(c.mysql), delivered));
  j.Field("questions", PerMsg(c.mysql.Get("Questions"), delivered));
  for (const auto& [name, v] : c.mysql.values) {
    if (name == "Questions") continue;
    j.Field(name, PerMsg(v, delivered));
  }
  j.EndObject();
  j.EndObject();
}

void PercentilesJson(JsonWriter& j, const std::string& key,
                     const Percentiles& p) {
  j.Key(key);
  j.BeginObject();
  j.Field("count", p.count);
  j.Field("mean_ms", p.mean_ms);
  j.Field("p50_ms", p.p50_ms);
  j.Field("p90_ms", p.p90_ms);
  j.Field("p99_ms", p.p99_ms);
  j.Field("p999_ms", p.p999_ms);
  j.Field("max_ms", p.max_ms);
  j.EndObject();
}

void SubscribersJson(JsonWriter& j, const SubscriberPool::Stats& s) {
  j.Key("subscribers");
  j.BeginObject();
  j.Field("batches", s.batches);
  j.Field("rows", s.rows);
  j.Field("ack_rpcs", s.ack_rpcs);
  j.Field("ack_errors", s.ack_errors);
  j.Field("acked", s.acked);
  j.Field("stream_restarts", s.stream_restarts);
  j.EndObject();
}

std::string Opt(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.3f", *v) : "";
}

}  // namespace

std::string FormatTable(const BenchOptions& o, const BenchResults& r) {
  std::string out;
  const Environment& e = r.env;
  absl::StrAppend(&out, "msgq-bench ", e.date_utc, " on ", e.host, " (", e.cpus,
                  " CPUs, ", e.cpu_model, ", ", e.mem_total_mib, " MiB)\n");
  absl::StrAppend(&out, "  MySQL: ", e.mysql_version, " (", e.mysql_settings,
                  ")\n  msgqd: ", e.msgqd, "  msgq commit ", e.msgq_commit,
                  "\n  command: ", e.command, "\n");
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
          &out,
          absl::StrFormat("  %-26s %10.0f %8.2f %7s %9d %6d %6s %6d %5s\n",
                          absl::StrCat("relay ", x.workers, "w x ", x.batch),
                          x.msgs_per_s, x.seconds, "1.00", x.processed,
                          x.messages - x.processed, "-", x.left_in_db,
                          x.ok ? "yes" : "NO"));
    }
    for (const DrainResult& d : r.drains) {
      absl::StrAppend(
          &out,
          absl::StrFormat("  %-26s %10.0f %8.2f %7s %9d %6d %6d %6d %5s\n",
                          absl::StrCat("msgq batch ", d.batch_size, " cache ",
                                       d.cache_size),
                          d.msgs_per_s, d.seconds,
                          d.ratio > 0 ? absl::StrFormat("%.2f", d.ratio) : "-",
                          d.received, d.lost, d.duplicates, d.unacked_in_db,
                          d.ok ? "yes" : "NO"));
      absl::StrAppend(
          &out,
          absl::StrFormat("  %-26s first delivery %.2f s after subscribing; "
                          "%d batches, %d ack RPCs (%d failed), %d rows sent "
                          "more than once\n",
                          "", d.startup_s, d.subscribers.batches,
                          d.subscribers.ack_rpcs, d.subscribers.ack_errors,
                          d.redelivered_in_db));
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
            s.producers, s.offered_rate, s.duration_s, s.discovery));
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "  committed %d (%.0f msgs/s achieved, worst producer lag %.1f "
            "ms, %d errors)\n",
            s.committed, s.achieved_offered_rate, s.max_producer_lag_ms,
            s.producer_errors));
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "  delivered %.0f msgs/s in the window (%.2f%% of offered, "
            "%.2f%% of the %d committed in it); everything arrived %.2f s "
            "after the last commit\n",
            s.delivered_rate, s.delivered_pct, s.delivered_pct_of_committed,
            s.committed_in_window, s.tail_s));
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  latency commit->receipt (ms): p50 %.1f  p90 %.1f  "
                  "p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n",
                  s.latency.p50_ms, s.latency.p90_ms, s.latency.p99_ms,
                  s.latency.p999_ms, s.latency.max_ms, s.latency.mean_ms));
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  (from COMMIT sent: p50 %.1f  p99 %.1f  max %.1f; "
                  "%d received before COMMIT returned)\n",
                  s.latency_commit_start.p50_ms, s.latency_commit_start.p99_ms,
                  s.latency_commit_start.max_ms, s.before_commit_returned));
    absl::StrAppend(
        &out, absl::StrFormat("  received %d, duplicates %d, lost %d, "
                              "unacked in MySQL %d: %s\n\n",
                              s.received, s.duplicates, s.lost, s.unacked_in_db,
                              s.ok ? "ok" : "NOT OK"));
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
    absl::StrAppend(&out, CostRow("relay", r.relay->cost, r.relay->processed));
  }
  for (const DrainResult& d : r.drains) {
    absl::StrAppend(&out, CostRow(d.phase, d.cost, d.received));
  }
  if (r.sustained.has_value()) {
    absl::StrAppend(
        &out, CostRow("sustained", r.sustained->cost, r.sustained->received));
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

absl::Status WriteJson(const BenchOptions& o, const BenchResults& r,
                       const std::string& path) {
  JsonWriter j;
  j.BeginObject();
  j.Field("ok", r.ok);
  j.Key("environment");
  j.BeginObject();
  j.Field("date_utc", r.env.date_utc);
  j.Field("host", r.env.host);
  j.Field("cpu_model", r.env.cpu_model);
  j.Field("cpus", r.env.cpus);
  j.Field("mem_total_mib", r.env.mem_total_mib);
  j.Field("kernel", r.env.kernel);
  j.Field("mysql_version", r.env.mysql_version);
  j.Field("mysql_settings", r.env.mysql_settings);
  j.Field("msgq_commit", r.env.msgq_commit);
  j.Field("msgqd", r.env.msgqd);
  j.Field("command", r.env.command);
  j.EndObject();
  j.Key("options");
  j.BeginObject();
  j.Field("messages", o.messages);
  j.Field("payload_bytes", o.payload_bytes);
  j.Field("subscribers", o.subscribers);
  j.Field("ack_mode", o.ack_mode == AckMode::kAsync ? "async" : "sync");
  j.Field("max_acks_in_flight", o.max_acks_in_flight);
  j.Field("relay_workers", o.relay_workers);
  j.Field("relay_batch", o.relay_batch);
  j.Field("cache_size", o.cache_size);
  j.Field("poller_interval_s", o.poller_interval_s);
  j.Field("ack_wait_s", o.ack_wait_s);
  j.Field("producers", o.producers);
  j.Field("rate", o.rate);
  j.Field("duration_s", o.duration_s);
  j.Field("table_comment", r.table_comment);
  j.EndObject();
  if (r.relay.has_value()) {
    const RelayResult& x = *r.relay;
    j.Key("relay");
    j.BeginObject();
    j.Field("ok", x.ok);
    j.Field("workers", x.workers);
    j.Field("batch", x.batch);
    j.Field("messages", x.messages);
    j.Field("processed", x.processed);
    j.Field("batches", x.batches);
    j.Field("retries", x.retries);
    j.Field("preload_s", x.preload_s);
    j.Field("settle_s", x.settle_s);
    j.Field("seconds", x.seconds);
    j.Field("msgs_per_s", x.msgs_per_s);
    j.Field("left_in_db", x.left_in_db);
    j.Field("perf_report", x.perf_report);
    CostJson(j, x.cost, x.processed);
    j.EndObject();
  }
  j.Key("drains");
  j.BeginArray();
  for (const DrainResult& d : r.drains) {
    j.BeginObject();
    j.Field("ok", d.ok);
    j.Field("phase", d.phase);
    j.Field("table", d.table);
    j.Field("batch_size", d.batch_size);
    j.Field("cache_size", d.cache_size);
    j.Field("messages", d.messages);
    j.Field("preload_s", d.preload_s);
    j.Field("settle_s", d.settle_s);
    j.Field("startup_s", d.startup_s);
    j.Field("seconds", d.seconds);
    j.Field("msgs_per_s", d.msgs_per_s);
    j.Field("ratio_to_relay", d.ratio);
    j.Field("completed", d.completed);
    j.Field("received", d.received);
    j.Field("duplicates", d.duplicates);
    j.Field("unexpected", d.unexpected);
    j.Field("lost", d.lost);
    j.Field("unacked_in_db", d.unacked_in_db);
    j.Field("sent_more_than_once_in_db", d.redelivered_in_db);
    j.Field("perf_report", d.perf_report);
    SubscribersJson(j, d.subscribers);
    CostJson(j, d.cost, d.received);
    j.EndObject();
  }
  j.EndArray();
  if (r.sustained.has_value()) {
    const SustainedResult& s = *r.sustained;
    j.Key("sustained");
    j.BeginObject();
    j.Field("ok", s.ok);
    j.Field("discovery", s.discovery);
    j.Field("producers", s.producers);
    j.Field("offered_rate", s.offered_rate);
    j.Field("duration_s", s.duration_s);
    j.Field("messages", s.messages);
    j.Field("committed", s.committed);
    j.Field("producer_errors", s.producer_errors);
    j.Field("achieved_offered_rate", s.achieved_offered_rate);
    j.Field("max_producer_lag_ms", s.max_producer_lag_ms);
    j.Field("delivered_in_window", s.delivered_in_window);
    j.Field("delivered_rate", s.delivered_rate);
    j.Field("delivered_pct_of_offered", s.delivered_pct);
    j.Field("committed_in_window", s.committed_in_window);
    j.Field("delivered_pct_of_committed", s.delivered_pct_of_committed);
    j.Field("tail_s", s.tail_s);
    PercentilesJson(j, "latency_commit_end", s.latency);
    PercentilesJson(j, "latency_commit_start", s.latency_commit_start);
    j.Field("received_before_commit_returned", s.before_commit_returned);
    j.Field("received", s.received);
    j.Field("duplicates", s.duplicates);
    j.Field("unexpected", s.unexpected);
    j.Field("lost", s.lost);
    j.Field("unacked_in_db", s.unacked_in_db);
    SubscribersJson(j, s.subscribers);
    CostJson(j, s.cost, s.received);
    j.EndObject();
  }
  j.Key("notes");
  j.BeginArray();
  for (const std::string& n : r.notes) j.String(n);
  j.EndArray();
  j.EndObject();
  std::ofstream f(path);
  f << j.str() << "\n";
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
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

}  // namespace msgq::bench
