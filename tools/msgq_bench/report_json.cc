// WriteJson (report.h): bench.json, the results (bench_results.proto
// messages) printed by protobuf's JSON printer.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/report.h"

namespace msgq::bench {
namespace {

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
  out->set_tables(o.tables);
  switch (o.stream_reader) {
    case StreamReader::kAuto:
      out->set_stream_reader("auto");
      break;
    case StreamReader::kThread:
      out->set_stream_reader("thread");
      break;
    case StreamReader::kCallback:
      out->set_stream_reader("callback");
      break;
  }
}

}  // namespace

absl::Status WriteJson(const BenchOptions& o, const BenchResults& r,
                       const std::string& path) {
  pb::BenchResults out;
  out.set_ok(r.ok);
  *out.mutable_environment() = r.env;
  ToProto(o, r.table_comment, out.mutable_options());
  if (r.relay.has_value()) *out.mutable_relay() = *r.relay;
  for (const DrainResult& d : r.drains) *out.add_drains() = d;
  if (r.sustained.has_value()) *out.mutable_sustained() = *r.sustained;
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
