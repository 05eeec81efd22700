// WriteJson (report.h): bench.json, the results copied into the
// bench_results.proto messages and printed by protobuf's JSON printer.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/report.h"

namespace msgq::bench {
namespace {

double PerMsg(int64_t v, int64_t delivered) {
  return delivered > 0 ? static_cast<double>(v) / static_cast<double>(delivered)
                       : 0;
}

void ToProto(const PhaseCost& c, int64_t delivered, pb::Cost* out) {
  out->set_wall_s(c.wall_s);
  out->set_msgqd_cpu_s(c.msgqd_cpu_s);
  out->set_msgqd_peak_rss_mib(
      c.msgqd_peak_rss_kib < 0 ? -1.0 : c.msgqd_peak_rss_kib / 1024.0);
  out->set_msgqd_peak_rss_is_phase_only(c.msgqd_peak_reset);
  out->set_mariadbd_cpu_s(c.mariadbd_cpu_s);
  out->set_bench_cpu_s(c.bench_cpu_s);
  auto& per_message = *out->mutable_per_message();
  const StatusCounters& m = c.mysql;
  per_message["statements"] =
      PerMsg(m.Get("Com_select") + m.Get("Com_insert") + m.Get("Com_update") +
                 m.Get("Com_delete"),
             delivered);
  per_message["questions"] = PerMsg(m.Get("Questions"), delivered);
  for (const auto& [name, v] : m.values) {
    (*out->mutable_mysql_delta())[name] = static_cast<double>(v);
    if (name != "Questions") per_message[name] = PerMsg(v, delivered);
  }
}

void ToProto(const Percentiles& p, pb::Latency* out) {
  out->set_count(p.count);
  out->set_mean_ms(p.mean_ms);
  out->set_p50_ms(p.p50_ms);
  out->set_p90_ms(p.p90_ms);
  out->set_p99_ms(p.p99_ms);
  out->set_p999_ms(p.p999_ms);
  out->set_max_ms(p.max_ms);
}

void ToProto(const SubscriberPool::Stats& s, pb::Subscribers* out) {
  out->set_batches(s.batches);
  out->set_rows(s.rows);
  out->set_ack_rpcs(s.ack_rpcs);
  out->set_ack_errors(s.ack_errors);
  out->set_acked(s.acked);
  out->set_stream_restarts(s.stream_restarts);
}

void ToProto(const Environment& e, pb::Environment* out) {
  out->set_date_utc(e.date_utc);
  out->set_host(e.host);
  out->set_cpu_model(e.cpu_model);
  out->set_cpus(e.cpus);
  out->set_mem_total_mib(e.mem_total_mib);
  out->set_kernel(e.kernel);
  out->set_mysql_version(e.mysql_version);
  out->set_mysql_settings(e.mysql_settings);
  out->set_msgq_commit(e.msgq_commit);
  out->set_msgqd(e.msgqd);
  out->set_command(e.command);
}

void ToProto(const BenchOptions& o, const std::string& comment,
             pb::Options* out) {
  out->set_messages(o.messages);
  out->set_payload_bytes(o.payload_bytes);
  out->set_subscribers(o.subscribers);
  out->set_ack_mode(o.ack_mode == AckMode::kAsync ? "async" : "sync");
  out->set_max_acks_in_flight(o.max_acks_in_flight);
  out->set_relay_workers(o.relay_workers);
  out->set_relay_batch(o.relay_batch);
  out->set_cache_size(o.cache_size);
  out->set_poller_interval_s(o.poller_interval_s);
  out->set_ack_wait_s(o.ack_wait_s);
  out->set_producers(o.producers);
  out->set_rate(o.rate);
  out->set_duration_s(o.duration_s);
  out->set_table_comment(comment);
}

void ToProto(const RelayResult& x, pb::Relay* out) {
  out->set_ok(x.ok);
  out->set_workers(x.workers);
  out->set_batch(x.batch);
  out->set_messages(x.messages);
  out->set_processed(x.processed);
  out->set_batches(x.batches);
  out->set_retries(x.retries);
  out->set_preload_s(x.preload_s);
  out->set_settle_s(x.settle_s);
  out->set_seconds(x.seconds);
  out->set_msgs_per_s(x.msgs_per_s);
  out->set_left_in_db(x.left_in_db);
  out->set_perf_report(x.perf_report);
  ToProto(x.cost, x.processed, out->mutable_cost());
}

void ToProto(const DrainResult& d, pb::Drain* out) {
  out->set_ok(d.ok);
  out->set_phase(d.phase);
  out->set_table(d.table);
  out->set_batch_size(d.batch_size);
  out->set_cache_size(d.cache_size);
  out->set_messages(d.messages);
  out->set_preload_s(d.preload_s);
  out->set_settle_s(d.settle_s);
  out->set_startup_s(d.startup_s);
  out->set_seconds(d.seconds);
  out->set_msgs_per_s(d.msgs_per_s);
  out->set_ratio_to_relay(d.ratio);
  out->set_completed(d.completed);
  out->set_received(d.received);
  out->set_duplicates(d.duplicates);
  out->set_unexpected(d.unexpected);
  out->set_lost(d.lost);
  out->set_unacked_in_db(d.unacked_in_db);
  out->set_sent_more_than_once_in_db(d.redelivered_in_db);
  out->set_perf_report(d.perf_report);
  ToProto(d.subscribers, out->mutable_subscribers());
  ToProto(d.cost, d.received, out->mutable_cost());
}

void ToProto(const SustainedResult& s, pb::Sustained* out) {
  out->set_ok(s.ok);
  out->set_discovery(s.discovery);
  out->set_producers(s.producers);
  out->set_offered_rate(s.offered_rate);
  out->set_duration_s(s.duration_s);
  out->set_messages(s.messages);
  out->set_committed(s.committed);
  out->set_producer_errors(s.producer_errors);
  out->set_achieved_offered_rate(s.achieved_offered_rate);
  out->set_max_producer_lag_ms(s.max_producer_lag_ms);
  out->set_delivered_in_window(s.delivered_in_window);
  out->set_delivered_rate(s.delivered_rate);
  out->set_delivered_pct_of_offered(s.delivered_pct);
  out->set_committed_in_window(s.committed_in_window);
  out->set_delivered_pct_of_committed(s.delivered_pct_of_committed);
  out->set_tail_s(s.tail_s);
  ToProto(s.latency, out->mutable_latency_commit_end());
  ToProto(s.latency_commit_start, out->mutable_latency_commit_start());
  out->set_received_before_commit_returned(s.before_commit_returned);
  out->set_received(s.received);
  out->set_duplicates(s.duplicates);
  out->set_unexpected(s.unexpected);
  out->set_lost(s.lost);
  out->set_unacked_in_db(s.unacked_in_db);
  ToProto(s.subscribers, out->mutable_subscribers());
  ToProto(s.cost, s.received, out->mutable_cost());
}

}  // namespace

absl::Status WriteJson(const BenchOptions& o, const BenchResults& r,
                       const std::string& path) {
  pb::BenchResults out;
  out.set_ok(r.ok);
  ToProto(r.env, out.mutable_environment());
  ToProto(o, r.table_comment, out.mutable_options());
  if (r.relay.has_value()) ToProto(*r.relay, out.mutable_relay());
  for (const DrainResult& d : r.drains) ToProto(d, out.add_drains());
  if (r.sustained.has_value()) ToProto(*r.sustained, out.mutable_sustained());
  for (const std::string& n : r.notes) out.add_notes(n);

  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  print.always_print_primitive_fields = true;
  print.preserve_proto_field_names = true;
  std::string text;
  const google::protobuf::util::Status printed =
      google::protobuf::util::MessageToJsonString(out, &text, print);
  if (!printed.ok()) {
    return absl::InternalError(
        absl::StrCat("bench.json: ", printed.ToString()));
  }
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace msgq::bench
