// By hand, never in CI (DISABLED_; no timed assertion): purging 1,000,000
// acked rows by msgqd's batched DELETE (500 rows a statement, as its purge
// steps run it) against dropping the partitions that hold them (one
// partition purge step), each while a real msgqd delivers a sustained load
// from another table of the same MariaDB; delivery latency from msgqd's own
// msgq_commit_to_send_seconds histogram (bucket bounds: 0.5, 1, 2.5, 5, 10,
// 25, 50, 100, 250 ms, ...). Figures: docs/benchmarks.md#purge-by-partition.
//   build/tests/partition_bench_test --gtest_also_run_disabled_tests
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/clock.h"
#include "engine/queue/partition_plan.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/schema_loader.h"
#include "tests/http_fixture.h"
#include "tests/partitioned_schema.h"

namespace msgq::testing {
namespace {

// Cumulative bucket counts of `live`'s commit-to-send histogram by upper
// bound (+Inf as infinity).
using Histogram = std::map<double, double>;

Histogram CommitToSend(const std::map<std::string, double>& m) {
  const std::string prefix =
      "msgq_commit_to_send_seconds_bucket{keyspace=\"msgq\",le=\"";
  const std::string suffix = "\",table=\"live\"}";
  Histogram h;
  for (const auto& [sample, value] : m) {
    if (sample.rfind(prefix, 0) != 0 || sample.size() < suffix.size() ||
        sample.compare(sample.size() - suffix.size(), suffix.size(), suffix) !=
            0) {
      continue;
    }
    const std::string le = sample.substr(
        prefix.size(), sample.size() - prefix.size() - suffix.size());
    double bound = std::numeric_limits<double>::infinity();
    if (le != "+Inf" && !absl::SimpleAtod(le, &bound)) continue;
    h[bound] = value;
  }
  return h;
}

// "n=..., p50 <=X ms, p99 <=Y ms" of the messages between two scrapes.
std::string Percentiles(const Histogram& before, const Histogram& after) {
  if (after.empty()) return "no histogram";
  auto was = [&](double bound) {
    auto it = before.find(bound);
    return it == before.end() ? 0.0 : it->second;
  };
  const double n = after.rbegin()->second - was(after.rbegin()->first);
  auto at = [&](double q) {
    for (const auto& [bound, count] : after) {
      if (count - was(bound) >= q * n) {
        return std::isinf(bound) ? std::string("> 5 s")
                                 : absl::StrCat("<= ", bound * 1000, " ms");
      }
    }
    return std::string("?");
  };
  return absl::StrCat("n=", n, ", p50 ", at(0.5), ", p99 ", at(0.99));
}

class PartitionBenchTest : public HttpTest {};

TEST_F(PartitionBenchTest, DISABLED_PurgeMillionRowsDeleteVsDropPartition) {
  constexpr int kRows = 1'000'000;
  constexpr int kParts = 10;
  constexpr int kRate = 1000;  // messages/s offered on `live`
  const int64_t t = NowNanos();
  const std::string comment =
      "vitess_message,vt_ack_wait=30,vt_purge_after=1,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30";
  // The purged tables live in `bench`, which msgqd does not serve.
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE DATABASE bench"));
  ASSERT_NO_FATAL_FAILURE(Exec("USE bench"));
  std::string parts;
  for (int p = 1; p <= kParts; ++p) {
    absl::StrAppend(&parts, "PARTITION old", p, " VALUES LESS THAN (",
                    t - 100 * kSecond + p * kSecond, "), ");
  }
  ASSERT_NO_FATAL_FAILURE(Exec(PartitionedDdl(
      comment, parts + "PARTITION pmax VALUES LESS THAN MAXVALUE")));
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrReplaceAll(
      PartitionedDdl(comment),
      {{"CREATE TABLE IF NOT EXISTS demo", "CREATE TABLE plain"},
       {"PRIMARY KEY (id, time_created)", "PRIMARY KEY (id)"},
       {"PARTITION BY RANGE (time_created) (\n  PARTITION pmax VALUES LESS "
        "THAN MAXVALUE\n)",
        ""}})));
  // Rows spread evenly over the old partitions, all acked 50 s ago.
  for (const char* table : {"demo", "plain"}) {
    ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
        "INSERT INTO bench.", table,
        " (id, time_next, time_acked, time_created, message) SELECT seq, "
        "NULL, ",
        t - 50 * kSecond, ", ", t - 100 * kSecond, " + (seq % ", kParts, ") * ",
        kSecond, " + 1, '{\"n\": 1}' FROM seq_1_to_", kRows)));
  }
  ASSERT_EQ(db_->Scalar("SELECT COUNT(*) FROM bench.plain"),
            std::to_string(kRows));
  auto conn = db_->Connect();
  ASSERT_TRUE(conn.ok());
  auto schema = LoadSchema(**conn, {"bench"});
  ASSERT_TRUE(schema.ok()) << schema.status();
  std::map<std::string, std::unique_ptr<MysqlMessageStore>> stores;
  for (const TableDefinition& def : schema->tables) {
    auto table =
        BuildMessageTable(def.keyspace, def.name, def.comment, def.columns);
    ASSERT_TRUE(table.ok()) << table.status();
    table->purge_by_partition =
        IsRangeOnTimeCreated(def.partition_method, def.partition_expression);
    stores[def.name] =
        std::make_unique<MysqlMessageStore>(*table, db_->mysql_options());
  }
  ASSERT_EQ(stores.size(), 2u);

  // The sustained load: msgqd delivers `live` to one subscriber.
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("live", "vt_cache_size=10000"));
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  StreamCollector s(stub_.get(), "live");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  std::atomic<bool> stop{false};
  std::atomic<int> produced{0};
  std::thread producer([&] {
    auto c = db_->Connect();
    if (!c.ok()) return;
    const absl::Time begin = absl::Now();
    for (int i = 1; !stop.load(); ++i) {
      absl::SleepFor(begin + absl::Seconds(i / double{kRate}) - absl::Now());
      if (!(*c)->Execute(absl::StrCat("INSERT INTO msgq.live (id, message) "
                                      "VALUES (",
                                      i, ", '{}')"))
               .ok()) {
        return;
      }
      produced.store(i);
    }
  });
  auto phase = [&](const char* name, auto&& work) {
    const Histogram before = CommitToSend(ScrapeMetrics(Url("/metrics")));
    const absl::Time start = absl::Now();
    work();
    const absl::Duration took = absl::Now() - start;
    const Histogram after = CommitToSend(ScrapeMetrics(Url("/metrics")));
    std::printf("%s: %.3f s; live load meanwhile: %s\n", name,
                absl::ToDoubleSeconds(took),
                Percentiles(before, after).c_str());
    return took;
  };
  absl::SleepFor(absl::Seconds(3));  // warm up
  phase("idle (no purge) 5 s", [] { absl::SleepFor(absl::Seconds(5)); });
  int64_t deleted = 0;
  int statements = 0;
  phase("DELETE purge", [&] {
    while (true) {
      auto n = stores["plain"]->Purge(NowNanos() - kSecond, 500);
      ASSERT_TRUE(n.ok()) << n.status();
      deleted += *n;
      ++statements;
      if (*n < 500) break;
    }
  });
  EXPECT_EQ(deleted, kRows);
  absl::StatusOr<PartitionReport> report;
  phase("DROP PARTITION purge",
        [&] { report = stores["demo"]->MaintainPartitions(NowNanos()); });
  phase("idle (no purge) 5 s", [] { absl::SleepFor(absl::Seconds(5)); });
  stop.store(true);
  producer.join();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->dropped.size(), static_cast<size_t>(kParts));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM bench.demo"), "0");
  std::printf(
      "%d rows: DELETE ... LIMIT 500 x %d statements; DROP PARTITION x %zu "
      "(+%d partitions created in the same step); %d messages produced\n",
      kRows, statements, report->dropped.size(), report->created,
      produced.load());
}

}  // namespace
}  // namespace msgq::testing
