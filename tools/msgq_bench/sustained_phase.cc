// The sustained phase (phases.h): producers at a fixed offered rate while
// subscribers receive and ack; latency from commit to receipt. With
// --tables=N the load is spread round-robin over N tables, each with its own
// streams.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/status_macros.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/phases.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

// What the producers did. Per id (1..messages): when its COMMIT was sent and
// when it returned (bench clock; 0: never committed).
struct Production {
  explicit Production(int64_t messages)
      : messages(messages),
        commit_start_ns(messages + 1),
        commit_end_ns(messages + 1) {}
  const int64_t messages;  // rate x duration
  std::vector<int64_t> commit_start_ns;
  std::vector<int64_t> commit_end_ns;
  std::atomic<int64_t> committed{0};  // may be read while producing
  std::atomic<int64_t> errors{0};
  int64_t start_ns = 0;    // message k is due at start + k / rate
  int64_t end_ns = 0;      // the last COMMIT returned
  int64_t max_lag_ns = 0;  // worst delay of a COMMIT behind its schedule
};

// Producer p of P: message k (id k+1) of `out` for each k with k mod P = p,
// into table k mod T of `tables`, in its own transaction (BEGIN; INSERT;
// COMMIT, like an application's outbox write), at its due time or at once
// when behind. A failed transaction is retried up to 5 times (on a new
// connection when the old one broke). Returns its lasting error.
absl::Status Produce(const MysqlOptions& mysql,
                     const std::vector<std::string>& tables,
                     const pb::Options& o, int p, Production& out,
                     int64_t& max_lag_ns) {
  std::unique_ptr<MysqlConnection> conn;
  auto connect = [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql);
    if (c.ok()) conn = *std::move(c);
    return c.status();
  };
  RETURN_IF_ERROR(connect());
  for (int64_t k = p; k < out.messages; k += o.producers()) {
    const int64_t id = k + 1;
    const int64_t due = out.start_ns + static_cast<int64_t>(k * 1e9 / o.rate());
    SleepUntilNs(due);
    const std::string insert = absl::StrCat(
        "INSERT INTO ", tables[k % tables.size()], " (id, message) VALUES (",
        id, ",'", Payload(id, o.payload_bytes()), "')");
    absl::Status status;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (conn->broken() && !(status = connect()).ok()) continue;
      status = conn->Execute("BEGIN").status();
      if (status.ok()) status = conn->Execute(insert).status();
      const int64_t commit_start = NowNs();
      if (status.ok()) status = conn->Execute("COMMIT").status();
      if (status.ok()) {
        out.commit_start_ns[id] = commit_start;
        out.commit_end_ns[id] = NowNs();
        max_lag_ns = std::max(max_lag_ns, commit_start - due);
        out.committed.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      out.errors.fetch_add(1);
      if (!conn->broken()) (void)conn->Execute("ROLLBACK");
    }
    RETURN_IF_ERROR(status);
  }
  return absl::OkStatus();
}

// The options' producers at a fixed total offered rate: message k is due at
// start + k/rate, so the offered load is evenly spaced (see Produce). Blocks
// until all are done; the first producer's lasting error (its unsent
// messages are never committed).
absl::Status RunProducers(const MysqlOptions& mysql,
                          const std::vector<std::string>& tables,
                          const pb::Options& o, Production& out) {
  out.start_ns = NowNs() + 200 * 1000 * 1000;  // connect first, off schedule
  std::vector<int64_t> lag_ns(o.producers(), 0);
  std::vector<std::future<absl::Status>> producers;
  for (int p = 0; p < o.producers(); ++p) {
    producers.push_back(std::async(std::launch::async, [&, p] {
      return Produce(mysql, tables, o, p, out, lag_ns[p]);
    }));
  }
  absl::Status status;
  for (std::future<absl::Status>& producer : producers) {
    absl::Status s = producer.get();
    if (status.ok()) status = s;
  }
  out.end_ns = std::max(
      out.start_ns,
      *std::max_element(out.commit_end_ns.begin(), out.commit_end_ns.end()));
  out.max_lag_ns = *std::max_element(lag_ns.begin(), lag_ns.end());
  return status;
}

// Sets the latency of the receipts in each interval of series[first..] (t_s
// since `start_ns`) from (receipt, latency) pairs.
void AddLatencySeries(std::vector<std::pair<int64_t, int64_t>>& by_receipt,
                      int64_t start_ns, std::vector<SeriesPoint>& series,
                      size_t first) {
  std::sort(by_receipt.begin(), by_receipt.end());
  auto at = [&](double t_s) {
    return std::lower_bound(
        by_receipt.begin(), by_receipt.end(),
        std::make_pair(start_ns + static_cast<int64_t>(t_s * 1e9), INT64_MIN));
  };
  for (size_t i = first; i < series.size(); ++i) {
    SeriesPoint& p = series[i];
    std::vector<int64_t> lat;
    for (auto it = at(p.t_s - p.dt_s), end = at(p.t_s); it != end; ++it) {
      lat.push_back(it->second);
    }
    if (lat.empty()) continue;
    std::sort(lat.begin(), lat.end());
    p.lat_p50_ms = Ms(Quantile(lat, 0.5));
    p.lat_p99_ms = Ms(Quantile(lat, 0.99));
    p.lat_max_ms = Ms(lat.back());
  }
}

// Creates the tables, waits until msgqd serves them and every stream of
// `pool` (started here) is subscribed; msgqd's discovery mode.
absl::StatusOr<std::string> SetUp(BenchContext& ctx,
                                  const std::vector<std::string>& names,
                                  SubscriberPool& pool, int streams) {
  const pb::Options& o = ctx.options;
  for (const std::string& name : names) {
    const std::string table = Qualified(o.database(), name);
    RETURN_IF_ERROR(
        Recreate(*ctx.admin, table,
                 MessageTableDdl(table, MessageTableComment(o, o.batch_size(0)),
                                 o.keys())));
  }
  // msgqd finds new tables at its next schema reload, then loads each.
  const absl::Time created = absl::Now();
  const absl::Duration per_table = absl::Milliseconds(200) * o.tables();
  RETURN_IF_ERROR(WaitForTables(ctx.msgq_address, o.database(), names, 0,
                                absl::Seconds(60) + per_table)
                      .status());
  if (o.tables() > 1) {
    LogInfo("msgq-bench: msgqd serves the ", o.tables(), " tables ",
            absl::ToDoubleSeconds(absl::Now() - created),
            " s after they were created");
  }
  WaitForPurge(*ctx.admin);
  pool.Start();
  // Every stream must be subscribed before the first message is produced.
  ASSIGN_OR_RETURN(std::vector<v1::TableStatus> t,
                   WaitForTables(ctx.msgq_address, o.database(), names, streams,
                                 absl::Seconds(30) + per_table));
  return t.front().discovery();
}

absl::StatusOr<pb::Sustained> SustainedPhase(BenchContext& ctx) {
  const pb::Options& o = ctx.options;
  pb::Sustained result;
  result.set_producers(o.producers());
  result.set_offered_rate(o.rate());
  result.set_duration_s(o.duration());
  result.set_tables(o.tables());
  // "sustained" for one table, sustained_0000, sustained_0001, ... for more.
  std::vector<std::string> names;
  std::vector<std::string> tables;  // qualified
  for (int i = 0; i < o.tables(); ++i) {
    names.push_back(o.tables() == 1 ? "sustained"
                                    : absl::StrFormat("sustained_%04d", i));
    tables.push_back(Qualified(o.database(), names.back()));
  }
  Production producers(
      std::max<int64_t>(1, std::llround(o.rate() * o.duration())));
  result.set_messages(producers.messages);
  DeliveryLog log(producers.messages);
  // At least one stream per table; stream i reads table i mod tables.
  result.set_streams(std::max(o.subscribers(), o.tables()));
  SubscriberPool pool({.address = ctx.msgq_address,
                       .keyspace = o.database(),
                       .tables = names,
                       .streams = result.streams(),
                       .max_acks_in_flight = o.max_acks_in_flight()},
                      &log);
  ASSIGN_OR_RETURN(*result.mutable_discovery(),
                   SetUp(ctx, names, pool, result.streams()));

  PhaseMeter meter(ctx, "sustained", /*profile=*/false, [&] {
    return PhaseCounts{.delivered = log.unique(),
                       .acked = pool.acked(),
                       .offered = producers.committed.load()};
  });
  RETURN_IF_ERROR(meter.Start());
  absl::Status produced = RunProducers(ctx.mysql, tables, o, producers);
  if (!produced.ok()) {
    LogError("msgq-bench: producers failed: ", produced.message());
  }
  const int64_t acked_ns = pool.WaitAcked(producers.committed.load(),
                                          absl::Seconds(o.tail_timeout()));
  absl::StatusOr<pb::Cost> cost = meter.Stop();
  pool.Stop();
  RETURN_IF_ERROR(cost.status());

  result.set_committed(producers.committed);
  result.set_producer_errors(producers.errors);
  const int64_t start = producers.start_ns;
  const double producing_s = NsToSeconds(producers.end_ns - start);
  result.set_achieved_offered_rate(
      producing_s > 0 ? result.committed() / producing_s : 0);
  result.set_max_producer_lag_ms(Ms(producers.max_lag_ns));
  result.set_tail_s(acked_ns > 0 ? NsToSeconds(acked_ns - producers.end_ns)
                                 : o.tail_timeout());

  const int64_t window_end = start + static_cast<int64_t>(o.duration() * 1e9);
  std::vector<int64_t> lat_end;    // receipt - COMMIT returned
  std::vector<int64_t> lat_start;  // receipt - COMMIT sent
  std::vector<std::pair<int64_t, int64_t>> by_receipt;  // receipt, lat_end
  int64_t lost = 0, committed_in_window = 0, delivered_in_window = 0,
          before_commit_returned = 0;
  for (int64_t id = 1; id <= producers.messages; ++id) {
    const int64_t committed = producers.commit_end_ns[id];
    if (committed == 0) continue;  // never produced
    const int64_t received = log.first_ns(id);
    if (received == 0) {
      ++lost;
      continue;
    }
    committed_in_window += committed <= window_end;
    delivered_in_window += received <= window_end;
    before_commit_returned += received < committed;
    lat_end.push_back(std::max<int64_t>(0, received - committed));
    lat_start.push_back(received - producers.commit_start_ns[id]);
    by_receipt.emplace_back(received, lat_end.back());
  }
  result.set_committed_in_window(committed_in_window);
  result.set_delivered_in_window(delivered_in_window);
  result.set_received_before_commit_returned(before_commit_returned);
  *result.mutable_latency_commit_end() = Summarize(lat_end);
  *result.mutable_latency_commit_start() = Summarize(lat_start);
  result.set_delivered_rate(delivered_in_window / o.duration());
  result.set_delivered_pct_of_offered(100.0 * result.delivered_rate() /
                                      o.rate());
  result.set_delivered_pct_of_committed(committed_in_window > 0
                                            ? 100.0 * delivered_in_window /
                                                  committed_in_window
                                            : 0);
  SetReceived(log, pool, *std::move(cost), &result);
  result.set_lost(lost);
  for (const std::string& table : tables) {
    ASSIGN_OR_RETURN(const int64_t unacked,
                     CountRows(*ctx.admin, table, "time_acked IS NULL"));
    result.set_unacked_in_db(result.unacked_in_db() + unacked);
  }
  result.set_ok(produced.ok() && acked_ns > 0 && lost == 0 &&
                result.unacked_in_db() == 0 && result.unexpected() == 0);

  const size_t first = ctx.series.size();
  meter.AppendSeries(start, &ctx.series);
  AddLatencySeries(by_receipt, start, ctx.series, first);
  return result;
}

}  // namespace

void RunSustainedPhase(BenchContext& ctx) {
  const pb::Options& o = ctx.options;
  LogInfo("msgq-bench: sustained, ", o.rate(), " msgs/s for ", o.duration(),
          " s over ", o.tables(), o.tables() == 1 ? " table" : " tables");
  absl::StatusOr<pb::Sustained> s = SustainedPhase(ctx);
  if (!s.ok()) {
    ctx.Fail("sustained", s.status());
    return;
  }
  if (!s->ok()) ctx.results.set_ok(false);
  if (s->discovery() != "binlog") {
    ctx.results.add_notes(absl::StrCat(
        "sustained: msgqd discovered new rows by polling every ",
        o.poller_interval(),
        " s (vt_poller_interval), so latency includes up to one poll "
        "interval"));
  }
  *ctx.results.mutable_sustained() = *std::move(s);
}

}  // namespace msgq::bench
