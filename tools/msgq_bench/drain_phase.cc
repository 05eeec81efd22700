// The drain phases (phases.h): the relay baseline and msgq draining a
// preloaded backlog, once per --batch_size.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/status_macros.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/phases.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

// The relay baseline's fixed shape: the seeds' relay, 5 workers x 1000 rows.
constexpr int kRelayWorkers = 5;
constexpr int kRelayBatch = 1000;
// --partitioned tables: msgq_partition_interval (s), one day.
constexpr int64_t kPartitionIntervalS = 86400;

// The relay baseline: the polling outbox relay of the seeds (002, 004).
// kRelayWorkers workers, each on its own connection at READ COMMITTED, loop:
//   BEGIN; SELECT id, payload ... WHERE processed_at IS NULL ORDER BY id
//   LIMIT kRelayBatch FOR UPDATE SKIP LOCKED; "publish" (read every payload);
//   UPDATE ... SET processed_at = now WHERE id IN (...); COMMIT
// until a SELECT comes back empty. It delivers to no remote consumer and has
// no redelivery: it is the cost floor msgq is compared against.
struct RelayWorker {
  int64_t processed = 0;
  int64_t batches = 0;
  int64_t retries = 0;    // transactions rolled back (deadlock, lock wait)
  int64_t end_ns = 0;     // the last COMMIT returned
  uint64_t checksum = 0;  // of the payloads "published"
};

// One transaction; returns the rows relayed (0: nothing left).
absl::StatusOr<int64_t> RelayOnce(MysqlConnection& conn,
                                  const std::string& table,
                                  const std::string& select, RelayWorker& run) {
  std::string ids;
  int64_t rows = 0;
  absl::Status status = conn.Execute("BEGIN").status();
  if (status.ok()) {
    status = conn.ForEachRow(select, [&](char** values, unsigned long* lengths,
                                         unsigned int) {
      absl::StrAppend(&ids, rows++ > 0 ? "," : "",
                      absl::string_view(values[0], lengths[0]));
      // "Publish": touch every byte of the payload.
      for (unsigned long i = 0; values[1] != nullptr && i < lengths[1]; ++i) {
        run.checksum =
            run.checksum * 31 + static_cast<unsigned char>(values[1][i]);
      }
    });
  }
  if (status.ok() && rows > 0) {
    status = conn.Execute(absl::StrCat("UPDATE ", table, " SET processed_at = ",
                                       NowNs(), " WHERE id IN (", ids, ")"))
                 .status();
  }
  if (status.ok()) status = conn.Execute("COMMIT").status();
  if (!status.ok()) {
    if (!conn.broken()) (void)conn.Execute("ROLLBACK");
    return status;
  }
  return rows;
}

// One worker until the outbox is empty; its counts in `run`, and the rows it
// committed as processed in `progress` (for sampling). Returns its error when
// it fails for good (after 1000 retries of ABORTED transactions, or at once
// on other errors).
absl::Status RunWorker(const MysqlOptions& mysql, const std::string& table,
                       std::atomic<int64_t>* progress, RelayWorker& run) {
  ASSIGN_OR_RETURN(std::unique_ptr<MysqlConnection> conn,
                   MysqlConnection::Connect(mysql));
  RETURN_IF_ERROR(
      conn->Execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
          .status());
  const std::string select =
      absl::StrCat("SELECT id, payload FROM ", table,
                   " WHERE processed_at IS NULL ORDER BY id LIMIT ",
                   kRelayBatch, " FOR UPDATE SKIP LOCKED");
  while (true) {
    absl::StatusOr<int64_t> n = RelayOnce(*conn, table, select, run);
    if (!n.ok() && n.status().code() == absl::StatusCode::kAborted &&
        run.retries < 1000) {
      ++run.retries;
      continue;
    }
    if (!n.ok()) return n.status();
    if (*n == 0) return absl::OkStatus();
    run.processed += *n;
    ++run.batches;
    run.end_ns = NowNs();
    progress->fetch_add(*n, std::memory_order_relaxed);
  }
}

// One msgq drain: a --batch_size on a plain or a partitioned table.
struct Variant {
  int batch_size = 0;
  bool partitioned = false;
};

// Every --batch_size, each on every --partitioned value, in flag order.
std::vector<Variant> Variants(const pb::Options& o) {
  std::vector<Variant> out;
  for (int batch : o.batch_size()) {
    for (bool partitioned : o.partitioned())
      out.push_back({batch, partitioned});
  }
  return out;
}

std::string DrainTable(const Variant& v) {
  return absl::StrCat("drain_b", v.batch_size, v.partitioned ? "_part" : "");
}

// Preloads the message table of `v`; the seconds it took.
absl::StatusOr<double> PrepareDrain(BenchContext& ctx, const Variant& v) {
  const pb::Options& o = ctx.options;
  const std::string table = Qualified(o.database(), DrainTable(v));
  std::string comment = MessageTableComment(o, v.batch_size);
  if (v.partitioned) {
    absl::StrAppend(&comment, ",msgq_partition_interval=", kPartitionIntervalS);
  }
  return Preload(ctx.mysql, table,
                 MessageTableDdl(table, comment, o.keys(),
                                 v.partitioned ? kPartitionIntervalS : 0),
                 "message", o.messages(), o.payload_bytes());
}

// The relay baseline over the preloaded outbox `table`.
absl::StatusOr<pb::Relay> RelayPhase(BenchContext& ctx,
                                     const std::string& table) {
  pb::Relay result;
  result.set_workers(kRelayWorkers);
  result.set_batch(kRelayBatch);
  result.set_messages(ctx.options.messages());
  result.set_settle_s(WaitForPurge(*ctx.admin));
  std::atomic<int64_t> progress{0};
  PhaseMeter meter(ctx, "relay", /*profile=*/true, [&progress] {
    const int64_t n = progress.load();
    return PhaseCounts{.delivered = n, .acked = n};
  });
  RETURN_IF_ERROR(meter.Start());
  const int64_t start_ns = NowNs();
  std::vector<RelayWorker> runs(kRelayWorkers);
  std::vector<std::future<absl::Status>> workers;
  for (RelayWorker& run : runs) {
    workers.push_back(std::async(std::launch::async, [&] {
      return RunWorker(ctx.mysql, table, &progress, run);
    }));
  }
  absl::Status status;
  for (std::future<absl::Status>& worker : workers) {
    if (absl::Status s = worker.get(); status.ok()) status = s;
  }
  absl::StatusOr<pb::Cost> cost = meter.Stop();
  result.set_perf_report(meter.perf_report());
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(cost.status());
  int64_t end_ns = start_ns;
  for (const RelayWorker& run : runs) {
    result.set_processed(result.processed() + run.processed);
    result.set_batches(result.batches() + run.batches);
    result.set_retries(result.retries() + run.retries);
    end_ns = std::max(end_ns, run.end_ns);
  }
  result.set_seconds(NsToSeconds(end_ns - start_ns));
  result.set_msgs_per_s(
      result.seconds() > 0 ? result.processed() / result.seconds() : 0);
  SetPerMessage(result.processed(), &*cost);
  *result.mutable_cost() = *std::move(cost);
  ASSIGN_OR_RETURN(const int64_t left,
                   CountRows(*ctx.admin, table, "processed_at IS NULL"));
  result.set_left_in_db(left);
  result.set_ok(left == 0 && result.processed() == result.messages());
  meter.AppendSeries(start_ns, &ctx.series);
  return result;
}

// --start_barrier: says this bench is ready and waits for the go (a file
// each), so that several benches (shards) drain at the same time.
absl::Status WaitAtBarrier(const std::string& prefix, absl::Duration timeout) {
  if (prefix.empty()) return absl::OkStatus();
  const std::string ready = absl::StrCat(prefix, ".ready.", getpid());
  if (std::FILE* f = std::fopen(ready.c_str(), "w"); f != nullptr) {
    std::fclose(f);
  } else {
    return absl::InternalError(absl::StrCat("cannot write ", ready));
  }
  const std::string go = absl::StrCat(prefix, ".go");
  const absl::Time deadline = absl::Now() + timeout;
  while (!std::filesystem::exists(go)) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no ", go));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return absl::OkStatus();
}

// Drains the preloaded message table of `v` through msgqd.
absl::StatusOr<pb::Drain> DrainPhase(BenchContext& ctx, const Variant& v) {
  const pb::Options& o = ctx.options;
  pb::Drain result;
  result.set_table(DrainTable(v));
  result.set_phase(
      absl::StrCat("msgq_b", v.batch_size, v.partitioned ? "_part" : ""));
  result.set_batch_size(v.batch_size);
  result.set_partitioned(v.partitioned);
  result.set_cache_size(o.cache_size());
  result.set_messages(o.messages());
  const std::string table = Qualified(o.database(), result.table());
  RETURN_IF_ERROR(WaitForTables(ctx.msgq_address, o.database(),
                                {result.table()}, 0, absl::Seconds(60))
                      .status());
  result.set_settle_s(WaitForPurge(*ctx.admin));

  DeliveryLog log(o.messages());
  SubscriberPool pool({.address = ctx.msgq_address,
                       .keyspace = o.database(),
                       .tables = {result.table()},
                       .streams = o.subscribers(),
                       .max_acks_in_flight = o.max_acks_in_flight()},
                      &log);
  RETURN_IF_ERROR(
      WaitAtBarrier(o.start_barrier(), absl::Seconds(o.drain_timeout())));
  PhaseMeter meter(ctx, result.phase(), /*profile=*/true, [&log, &pool] {
    return PhaseCounts{.delivered = log.unique(), .acked = pool.acked()};
  });
  RETURN_IF_ERROR(meter.Start());
  const int64_t subscribe_ns = NowNs();
  pool.Start();
  const int64_t acked_ns =
      pool.WaitAcked(o.messages(), absl::Seconds(o.drain_timeout()));
  result.set_completed(acked_ns > 0);
  const int64_t end_ns = result.completed() ? acked_ns : NowNs();
  absl::StatusOr<pb::Cost> cost = meter.Stop();
  result.set_perf_report(meter.perf_report());
  pool.Stop();
  RETURN_IF_ERROR(cost.status());

  const int64_t first_ns = log.earliest_ns();
  result.set_startup_s(first_ns > 0 ? NsToSeconds(first_ns - subscribe_ns) : 0);
  result.set_seconds(first_ns > 0 ? NsToSeconds(end_ns - first_ns) : 0);
  result.set_msgs_per_s(result.seconds() > 0 && result.completed()
                            ? o.messages() / result.seconds()
                            : 0);
  SetReceived(log, pool, *std::move(cost), &result);
  result.set_lost(result.messages() - result.received());
  ASSIGN_OR_RETURN(const int64_t unacked,
                   CountRows(*ctx.admin, table, "time_acked IS NULL"));
  result.set_unacked_in_db(unacked);
  ASSIGN_OR_RETURN(const int64_t again,
                   CountRows(*ctx.admin, table, "epoch > 1"));
  result.set_sent_more_than_once_in_db(again);
  result.set_ok(result.completed() && result.lost() == 0 &&
                result.unacked_in_db() == 0 && result.unexpected() == 0);
  meter.AppendSeries(first_ns > 0 ? first_ns : subscribe_ns, &ctx.series);
  return result;
}

}  // namespace

void RunDrainPhases(BenchContext& ctx,
                    const std::function<absl::Status()>& start_msgqd) {
  const pb::Options& o = ctx.options;
  // Both backlogs are preloaded before anything is timed.
  const std::string outbox = Qualified(o.database(), "outbox");
  absl::StatusOr<double> relay_preload_s = absl::CancelledError("no relay");
  if (o.relay()) {
    LogInfo("msgq-bench: preloading ", o.messages(), " rows for the relay");
    relay_preload_s = Preload(ctx.mysql, outbox, OutboxTableDdl(outbox),
                              "payload", o.messages(), o.payload_bytes());
    if (!relay_preload_s.ok()) {
      ctx.Fail("relay preload", relay_preload_s.status());
    }
  }
  LogInfo("msgq-bench: preloading ", o.messages(), " rows for msgq");
  const std::vector<Variant> variants = Variants(o);
  absl::StatusOr<double> preload_s = PrepareDrain(ctx, variants[0]);
  if (!preload_s.ok()) ctx.Fail("msgq preload", preload_s.status());
  // The backlogs' sizes, next to the buffer pool's: whether they fit.
  auto table_mib = [&](const std::string& name) {
    absl::StatusOr<double> mib = TableMib(*ctx.admin, o.database(), name);
    if (!mib.ok()) ctx.Fail(absl::StrCat("size of ", name), mib.status());
    return mib.value_or(0);
  };
  double drain_mib = preload_s.ok() ? table_mib(DrainTable(variants[0])) : 0;
  if (relay_preload_s.ok()) {
    const double outbox_mib = table_mib("outbox");
    LogInfo("msgq-bench: relay baseline");
    absl::StatusOr<pb::Relay> relay = RelayPhase(ctx, outbox);
    if (relay.ok()) {
      relay->set_preload_s(*relay_preload_s);
      relay->set_table_mib(outbox_mib);
      if (!relay->ok()) ctx.results.set_ok(false);
      LogInfo("msgq-bench: relay ", relay->msgs_per_s(), " msgs/s");
      *ctx.results.mutable_relay() = *std::move(relay);
    } else {
      ctx.Fail("relay", relay.status());
    }
  }
  if (preload_s.ok()) {
    if (absl::Status s = start_msgqd(); !s.ok()) {
      ctx.Fail("starting msgqd", s);
      preload_s = s;
    }
  }
  auto drop = [&](const Variant& v) {
    (void)ctx.admin->Execute(absl::StrCat(
        "DROP TABLE IF EXISTS ", Qualified(o.database(), DrainTable(v))));
  };
  for (size_t i = 0; i < variants.size() && preload_s.ok(); ++i) {
    const Variant& v = variants[i];
    if (i > 0) {
      drop(variants[i - 1]);  // so msgqd stops serving it
      preload_s = PrepareDrain(ctx, v);
      if (!preload_s.ok()) {
        ctx.Fail("msgq preload", preload_s.status());
        break;
      }
      drain_mib = table_mib(DrainTable(v));
    }
    LogInfo("msgq-bench: msgq drain, batch size ", v.batch_size,
            v.partitioned ? ", partitioned" : "");
    absl::StatusOr<pb::Drain> drain = DrainPhase(ctx, v);
    if (!drain.ok()) {
      ctx.Fail(absl::StrCat("msgq drain (", DrainTable(v), ")"),
               drain.status());
      continue;
    }
    drain->set_preload_s(*preload_s);
    drain->set_table_mib(drain_mib);
    if (ctx.results.relay().msgs_per_s() > 0) {
      drain->set_ratio_to_relay(drain->msgs_per_s() /
                                ctx.results.relay().msgs_per_s());
    }
    if (!drain->ok()) ctx.results.set_ok(false);
    LogInfo("msgq-bench: msgq ", drain->msgs_per_s(), " msgs/s");
    *ctx.results.add_drains() = *std::move(drain);
  }
  drop(variants.back());
}

}  // namespace msgq::bench
