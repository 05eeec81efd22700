// The sustained phase: producers at a fixed offered rate while subscribers
// receive and ack; latency from commit to receipt. With --tables=N the
// load is spread round-robin over N tables, each with its own streams.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/log.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/cost_meter.h"
#include "tools/msgq_bench/delivery_log.h"
#include "tools/msgq_bench/msgqd_process.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/percentiles.h"
#include "tools/msgq_bench/phases.h"
#include "tools/msgq_bench/producers.h"
#include "tools/msgq_bench/sampler.h"
#include "tools/msgq_bench/series.h"
#include "tools/msgq_bench/subscribers.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

// Latency of the receipts in each series interval.
void AddLatencySeries(std::vector<std::pair<int64_t, int64_t>>& by_receipt,
                      int64_t start_ns, std::vector<SeriesPoint>& series,
                      size_t first_point) {
  std::sort(by_receipt.begin(), by_receipt.end());
  for (size_t i = first_point; i < series.size(); ++i) {
    SeriesPoint& p = series[i];
    const int64_t lo = start_ns + static_cast<int64_t>((p.t_s - p.dt_s) * 1e9);
    const int64_t hi = start_ns + static_cast<int64_t>(p.t_s * 1e9);
    auto begin = std::lower_bound(by_receipt.begin(), by_receipt.end(),
                                  std::make_pair(lo, INT64_MIN));
    auto end = std::lower_bound(by_receipt.begin(), by_receipt.end(),
                                std::make_pair(hi, INT64_MIN));
    if (begin == end) continue;
    std::vector<int64_t> lat;
    for (auto it = begin; it != end; ++it) lat.push_back(it->second);
    std::sort(lat.begin(), lat.end());
    p.lat_p50_ms = static_cast<double>(Quantile(lat, 0.5)) / 1e6;
    p.lat_p99_ms = static_cast<double>(Quantile(lat, 0.99)) / 1e6;
    p.lat_max_ms = static_cast<double>(lat.back()) / 1e6;
  }
}

}  // namespace

std::vector<std::string> SustainedTableNames(int tables) {
  if (tables == 1) return {kSustainedTable};
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(tables));
  for (int i = 0; i < tables; ++i) {
    names.push_back(absl::StrFormat("%s_%04d", kSustainedTable, i));
  }
  return names;
}

absl::StatusOr<SustainedResult> RunSustainedPhase(
    BenchContext& ctx, std::vector<SeriesPoint>* series) {
  const BenchOptions& o = ctx.options;
  SustainedResult result;
  result.set_producers(o.producers);
  result.set_offered_rate(o.rate);
  result.set_duration_s(o.duration_s);
  result.set_tables(o.tables);
  const std::vector<std::string> names = SustainedTableNames(o.tables);
  std::vector<std::string> tables;  // qualified
  for (const std::string& name : names) {
    tables.push_back(Qualified(o.database, name));
    if (auto s = ctx.admin->Execute(
            absl::StrCat("DROP TABLE IF EXISTS ", tables.back()));
        !s.ok()) {
      return s.status();
    }
    if (auto s = ctx.admin->Execute(MessageTableDdl(
            tables.back(), MessageTableComment(o, o.batch_sizes.front())));
        !s.ok()) {
      return s.status();
    }
  }
  // msgqd finds new tables at its next schema reload, then loads each.
  const absl::Time created = absl::Now();
  const absl::Duration per_table = absl::Milliseconds(200) * o.tables;
  absl::StatusOr<std::vector<v1::TableStatus>> loaded = WaitForTables(
      ctx.msgq_address, o.database, names, absl::Seconds(60) + per_table);
  if (!loaded.ok()) return loaded.status();
  if (o.tables > 1) {
    LogInfo("msgq-bench: msgqd serves the ", o.tables, " tables ",
            absl::ToDoubleSeconds(absl::Now() - created),
            " s after they were created");
  }
  if (o.settle) {
    absl::StatusOr<double> waited =
        WaitForPurge(*ctx.admin, kSettledHistory, absl::Seconds(120));
    if (!waited.ok()) LogWarning("msgq-bench: ", waited.status().message());
  }

  ProducerPool::Options po;
  po.qualified_tables = tables;
  po.producers = o.producers;
  po.rate = o.rate;
  po.duration_s = o.duration_s;
  po.payload_bytes = o.payload_bytes;
  ProducerPool producers(ctx.mysql, po);
  result.set_messages(producers.messages());

  DeliveryLog log(producers.messages());
  SubscriberPool::Options sub;
  sub.address = ctx.msgq_address;
  sub.keyspace = o.database;
  sub.tables = names;
  // At least one stream per table; stream i reads table i mod tables.
  sub.streams = std::max(o.subscribers, o.tables);
  sub.ack_mode = o.ack_mode;
  sub.max_acks_in_flight = o.max_acks_in_flight;
  sub.callback_reader = CallbackReader(o, o.tables);
  result.set_streams(sub.streams);
  result.set_stream_reader(sub.callback_reader ? "callback" : "thread");
  SubscriberPool pool(sub, &log);
  pool.Start();
  // Every stream must be subscribed before the first message is produced.
  const absl::Time deadline =
      absl::Now() + absl::Seconds(30) + absl::Milliseconds(50) * o.tables;
  while (true) {
    absl::StatusOr<std::vector<v1::TableStatus>> t = WaitForTables(
        ctx.msgq_address, o.database, names, absl::Seconds(10) + per_table);
    if (!t.ok()) return t.status();
    result.set_discovery(t->front().discovery());
    bool all = true;
    for (int i = 0; i < o.tables && all; ++i) {
      const int want =
          sub.streams / o.tables + (i < sub.streams % o.tables ? 1 : 0);
      all = (*t)[static_cast<size_t>(i)].subscribers() >= want;
    }
    if (all) break;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError("subscribers did not all subscribe");
    }
    absl::SleepFor(absl::Milliseconds(20));
  }

  CostMeter meter(ctx.admin, ctx.msgqd_pid, ctx.mariadbd_pid);
  if (auto s = meter.Begin(); !s.ok()) return s;
  Sampler sampler(absl::Seconds(o.sample_interval_s), [&] {
    std::vector<double> v = {static_cast<double>(log.unique()),
                             static_cast<double>(pool.acked()),
                             static_cast<double>(producers.committed())};
    for (double x : ProcessProbe(ctx.msgqd_pid)) v.push_back(x);
    return v;
  });
  sampler.Start();
  absl::Status produced = producers.Run();
  if (!produced.ok()) {
    LogError("msgq-bench: producers failed: ", produced.message());
  }
  const bool all_acked =
      pool.WaitAcked(producers.committed(), absl::Seconds(o.tail_timeout_s));
  const int64_t acked_ns = pool.reached_ns();
  absl::StatusOr<PhaseCost> cost = meter.End();
  sampler.Stop();
  pool.Stop();
  if (!cost.ok()) return cost.status();

  result.set_committed(producers.committed());
  result.set_producer_errors(producers.errors());
  const int64_t start = producers.start_ns();
  const double producing_s = NsToSeconds(producers.end_ns() - start);
  result.set_achieved_offered_rate(
      producing_s > 0 ? static_cast<double>(result.committed()) / producing_s
                      : 0);
  result.set_max_producer_lag_ms(static_cast<double>(producers.max_lag_ns()) /
                                 1e6);
  result.set_tail_s(all_acked && acked_ns > 0
                        ? NsToSeconds(acked_ns - producers.end_ns())
                        : o.tail_timeout_s);

  const int64_t window_end = start + static_cast<int64_t>(o.duration_s * 1e9);
  std::vector<int64_t> lat_end;
  std::vector<int64_t> lat_start;
  std::vector<std::pair<int64_t, int64_t>> by_receipt;
  lat_end.reserve(static_cast<size_t>(result.committed()));
  lat_start.reserve(static_cast<size_t>(result.committed()));
  by_receipt.reserve(static_cast<size_t>(result.committed()));
  int64_t lost = 0;
  for (int64_t id = 1; id <= producers.messages(); ++id) {
    const int64_t committed = producers.commit_end_ns(id);
    if (committed == 0) continue;  // never produced
    const int64_t received = log.first_ns(id);
    if (received == 0) {
      ++lost;
      continue;
    }
    if (committed <= window_end)
      result.set_committed_in_window(result.committed_in_window() + 1);
    if (received <= window_end)
      result.set_delivered_in_window(result.delivered_in_window() + 1);
    int64_t l = received - committed;
    if (l < 0) {
      result.set_received_before_commit_returned(
          result.received_before_commit_returned() + 1);
      l = 0;
    }
    lat_end.push_back(l);
    lat_start.push_back(received - producers.commit_start_ns(id));
    by_receipt.emplace_back(received, l);
  }
  *result.mutable_latency_commit_end() = Summarize(lat_end);
  *result.mutable_latency_commit_start() = Summarize(lat_start);
  result.set_delivered_rate(static_cast<double>(result.delivered_in_window()) /
                            o.duration_s);
  result.set_delivered_pct_of_offered(100.0 * result.delivered_rate() / o.rate);
  result.set_delivered_pct_of_committed(
      result.committed_in_window() > 0
          ? 100.0 * static_cast<double>(result.delivered_in_window()) /
                static_cast<double>(result.committed_in_window())
          : 0);
  result.set_received(log.unique());
  result.set_duplicates(log.duplicates());
  result.set_unexpected(log.unexpected());
  result.set_lost(lost);
  *result.mutable_subscribers() = pool.stats();
  FillCost(*cost, result.received(), result.mutable_cost());
  for (const std::string& table : tables) {
    absl::StatusOr<int64_t> unacked =
        QueryInt(*ctx.admin, absl::StrCat("SELECT COUNT(*) FROM ", table,
                                          " WHERE time_acked IS NULL"));
    if (!unacked.ok()) return unacked.status();
    result.set_unacked_in_db(result.unacked_in_db() +
                             static_cast<int32_t>(*unacked));
  }
  result.set_ok(produced.ok() && all_acked && result.lost() == 0 &&
                result.unacked_in_db() == 0 && result.unexpected() == 0);

  const size_t first_point = series->size();
  AppendSeries(
      "sustained", sampler.samples(), start,
      [](const std::vector<double>& prev, const std::vector<double>& cur,
         double dt, SeriesPoint& p) {
        p.delivered_per_s = (cur[0] - prev[0]) / dt;
        p.acked_per_s = (cur[1] - prev[1]) / dt;
        p.offered_per_s = (cur[2] - prev[2]) / dt;
        p.backlog = cur[2] - cur[0];
      },
      series);
  AddLatencySeries(by_receipt, start, *series, first_point);
  return result;
}

}  // namespace msgq::bench
