// The drain phases: the relay baseline and msgq draining a preloaded backlog.
#include <atomic>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/log.h"
#include "tools/launch/child_process.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/cost_meter.h"
#include "tools/msgq_bench/delivery_log.h"
#include "tools/msgq_bench/msgqd_process.h"
#include "tools/msgq_bench/phases.h"
#include "tools/msgq_bench/preload.h"
#include "tools/msgq_bench/relay.h"
#include "tools/msgq_bench/sampler.h"
#include "tools/msgq_bench/series.h"
#include "tools/msgq_bench/subscribers.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

// Purge of a phase's undo should be done before the next phase is timed.
double Settle(BenchContext& ctx) {
  if (!ctx.options.settle) return 0;
  absl::StatusOr<double> waited =
      WaitForPurge(*ctx.admin, kSettledHistory, absl::Seconds(120));
  if (!waited.ok()) {
    LogWarning("msgq-bench: ", waited.status().message());
    return 120;
  }
  return *waited;
}

// --perf: profiles of msgqd and mariadbd over one phase, by perf_phase.sh.
class PhaseProfiles {
 public:
  PhaseProfiles(const BenchContext& ctx, const std::string& phase,
                bool with_msgqd)
      : script_(launch::ShellQuote(absl::StrCat(
            ctx.options.source_dir, "/tools/msgq_bench/perf_phase.sh"))) {
    if (!ctx.options.perf) return;
    auto start = [&](pid_t pid, const std::string& who) {
      if (pid <= 0) return;
      const std::string prefix =
          absl::StrCat(ctx.options.out_dir, "/", who, "-", phase);
      absl::StatusOr<std::string> out = launch::RunCommand(absl::StrCat(
          script_, " start ", pid, " ", launch::ShellQuote(prefix)));
      if (out.ok()) {
        prefixes_.push_back(prefix);
      } else {
        LogWarning("msgq-bench: no profile of ", who, ": ",
                   out.status().message());
      }
    };
    if (with_msgqd) start(ctx.msgqd_pid, "msgqd");
    start(ctx.mariadbd_pid, "mariadbd");
  }
  // Stops perf; returns the text reports' paths, comma-separated.
  std::string Finish() {
    std::string paths;
    for (const std::string& prefix : prefixes_) {
      absl::StatusOr<std::string> out = launch::RunCommand(
          absl::StrCat(script_, " stop ", launch::ShellQuote(prefix)));
      if (out.ok()) {
        if (!paths.empty()) paths += ",";
        absl::StrAppend(&paths, prefix, ".perf.txt");
      } else {
        LogWarning("msgq-bench: perf report failed: ", out.status().message());
      }
    }
    prefixes_.clear();
    return paths;
  }

 private:
  const std::string script_;
  std::vector<std::string> prefixes_;  // of the profiles running
};

absl::Duration SampleInterval(const BenchContext& ctx) {
  return absl::Seconds(ctx.options.sample_interval_s);
}

// Drops and creates `table` with `ddl`, then preloads --messages rows.
absl::StatusOr<double> CreateAndPreload(BenchContext& ctx,
                                        const std::string& table,
                                        const std::string& ddl,
                                        const std::string& payload_column) {
  if (auto s = ctx.admin->Execute(absl::StrCat("DROP TABLE IF EXISTS ", table));
      !s.ok()) {
    return s.status();
  }
  if (auto s = ctx.admin->Execute(ddl); !s.ok()) return s.status();
  PreloadSpec spec;
  spec.qualified_table = table;
  spec.payload_column = payload_column;
  spec.rows = ctx.options.messages;
  spec.connections = ctx.options.preload_connections;
  spec.rows_per_insert = ctx.options.preload_rows_per_insert;
  spec.payload_bytes = ctx.options.payload_bytes;
  return Preload(ctx.mysql, spec);
}

}  // namespace

std::string DrainTableName(int batch_size) {
  return absl::StrCat("drain_b", batch_size);
}

absl::StatusOr<double> PrepareRelay(BenchContext& ctx) {
  const std::string table = Qualified(ctx.options.database, kOutboxTable);
  return CreateAndPreload(ctx, table, OutboxTableDdl(table), "payload");
}

absl::StatusOr<double> PrepareDrain(BenchContext& ctx, int batch_size) {
  const std::string table =
      Qualified(ctx.options.database, DrainTableName(batch_size));
  return CreateAndPreload(
      ctx, table,
      MessageTableDdl(table, MessageTableComment(ctx.options, batch_size)),
      "message");
}

absl::StatusOr<RelayResult> RunRelayPhase(BenchContext& ctx,
                                          std::vector<SeriesPoint>* series) {
  RelayResult result;
  result.set_workers(ctx.options.relay_workers);
  result.set_batch(ctx.options.relay_batch);
  result.set_messages(ctx.options.messages);
  result.set_settle_s(Settle(ctx));

  RelayOptions relay;
  relay.qualified_table = Qualified(ctx.options.database, kOutboxTable);
  relay.workers = ctx.options.relay_workers;
  relay.batch = ctx.options.relay_batch;
  std::atomic<int64_t> progress{0};
  CostMeter meter(ctx.admin, ctx.msgqd_pid, ctx.mariadbd_pid);
  if (auto s = meter.Begin(); !s.ok()) return s;
  Sampler sampler(SampleInterval(ctx), [&] {
    std::vector<double> v = {static_cast<double>(progress.load())};
    for (double x : ProcessProbe(ctx.msgqd_pid)) v.push_back(x);
    return v;
  });
  PhaseProfiles profiles(ctx, "relay", /*with_msgqd=*/false);
  sampler.Start();
  absl::StatusOr<RelayRun> run = RunRelay(ctx.mysql, relay, &progress);
  sampler.Stop();
  result.set_perf_report(profiles.Finish());
  absl::StatusOr<PhaseCost> cost = meter.End();
  if (!run.ok()) return run.status();
  if (!cost.ok()) return cost.status();
  result.set_processed(run->processed);
  FillCost(*cost, run->processed, result.mutable_cost());
  result.set_batches(run->batches);
  result.set_retries(run->retries);
  result.set_seconds(NsToSeconds(run->end_ns - run->start_ns));
  result.set_msgs_per_s(result.seconds() > 0
                            ? static_cast<double>(run->processed) /
                                  result.seconds()
                            : 0);
  absl::StatusOr<int64_t> left = QueryInt(
      *ctx.admin, absl::StrCat("SELECT COUNT(*) FROM ", relay.qualified_table,
                               " WHERE processed_at IS NULL"));
  if (!left.ok()) return left.status();
  result.set_left_in_db(*left);
  result.set_ok(result.left_in_db() == 0 &&
                result.processed() == result.messages());
  AppendSeries(
      "relay", sampler.samples(), run->start_ns,
      [](const std::vector<double>& prev, const std::vector<double>& cur,
         double dt, SeriesPoint& p) {
        p.delivered_per_s = (cur[0] - prev[0]) / dt;
        p.acked_per_s = p.delivered_per_s;
      },
      series);
  return result;
}

absl::StatusOr<DrainResult> RunDrainPhase(BenchContext& ctx, int batch_size,
                                          std::vector<SeriesPoint>* series) {
  DrainResult result;
  result.set_table(DrainTableName(batch_size));
  result.set_phase(absl::StrCat("msgq_b", batch_size));
  result.set_batch_size(batch_size);
  result.set_cache_size(ctx.options.cache_size);
  result.set_messages(ctx.options.messages);
  const std::string qualified = Qualified(ctx.options.database, result.table());

  absl::StatusOr<v1::TableStatus> loaded =
      WaitForTable(ctx.msgq_address, ctx.options.database, result.table(),
                   absl::Seconds(60));
  if (!loaded.ok()) return loaded.status();
  result.set_settle_s(Settle(ctx));

  DeliveryLog log(ctx.options.messages);
  SubscriberPool::Options sub;
  sub.address = ctx.msgq_address;
  sub.keyspace = ctx.options.database;
  sub.tables = {result.table()};
  sub.streams = ctx.options.subscribers;
  sub.ack_mode = ctx.options.ack_mode;
  sub.max_acks_in_flight = ctx.options.max_acks_in_flight;
  sub.callback_reader = CallbackReader(ctx.options, 1);
  SubscriberPool pool(sub, &log);

  PhaseProfiles profiles(ctx, result.phase(), /*with_msgqd=*/true);
  CostMeter meter(ctx.admin, ctx.msgqd_pid, ctx.mariadbd_pid);
  if (auto s = meter.Begin(); !s.ok()) return s;
  Sampler sampler(SampleInterval(ctx), [&] {
    std::vector<double> v = {static_cast<double>(log.unique()),
                             static_cast<double>(pool.acked())};
    for (double x : ProcessProbe(ctx.msgqd_pid)) v.push_back(x);
    return v;
  });
  const int64_t subscribe_ns = NowNs();
  sampler.Start();
  pool.Start();
  result.set_completed(pool.WaitAcked(
      ctx.options.messages, absl::Seconds(ctx.options.drain_timeout_s)));
  const int64_t end_ns = result.completed() ? pool.reached_ns() : NowNs();
  absl::StatusOr<PhaseCost> cost = meter.End();
  sampler.Stop();
  result.set_perf_report(profiles.Finish());
  pool.Stop();
  if (!cost.ok()) return cost.status();

  const int64_t first_ns = log.earliest_ns();
  result.set_startup_s(first_ns > 0 ? NsToSeconds(first_ns - subscribe_ns) : 0);
  result.set_seconds(first_ns > 0 ? NsToSeconds(end_ns - first_ns) : 0);
  result.set_msgs_per_s(result.seconds() > 0 && result.completed()
                            ? static_cast<double>(result.messages()) /
                                  result.seconds()
                            : 0);
  result.set_received(log.unique());
  result.set_duplicates(log.duplicates());
  result.set_unexpected(log.unexpected());
  result.set_lost(result.messages() - result.received());
  *result.mutable_subscribers() = pool.stats();
  FillCost(*cost, result.received(), result.mutable_cost());
  absl::StatusOr<int64_t> unacked =
      QueryInt(*ctx.admin, absl::StrCat("SELECT COUNT(*) FROM ", qualified,
                                        " WHERE time_acked IS NULL"));
  if (!unacked.ok()) return unacked.status();
  result.set_unacked_in_db(*unacked);
  absl::StatusOr<int64_t> again = QueryInt(
      *ctx.admin,
      absl::StrCat("SELECT COUNT(*) FROM ", qualified, " WHERE epoch > 1"));
  if (!again.ok()) return again.status();
  result.set_sent_more_than_once_in_db(*again);
  result.set_ok(result.completed() && result.lost() == 0 &&
                result.unacked_in_db() == 0 && result.unexpected() == 0);
  AppendSeries(
      result.phase(), sampler.samples(), first_ns > 0 ? first_ns : subscribe_ns,
      [](const std::vector<double>& prev, const std::vector<double>& cur,
         double dt, SeriesPoint& p) {
        p.delivered_per_s = (cur[0] - prev[0]) / dt;
        p.acked_per_s = (cur[1] - prev[1]) / dt;
      },
      series);
  return result;
}

}  // namespace msgq::bench
