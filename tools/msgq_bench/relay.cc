#include "tools/msgq_bench/relay.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tools/msgq_bench/clock.h"

namespace msgq::bench {
namespace {

struct WorkerResult {
  absl::Status status;
  int64_t processed = 0;
  int64_t batches = 0;
  int64_t retries = 0;
  int64_t last_commit_ns = 0;
  uint64_t checksum = 0;
};

// One transaction; returns the rows relayed (0: nothing left).
absl::StatusOr<int64_t> RelayOnce(MysqlConnection& conn,
                                  const RelayOptions& options,
                                  const std::string& select,
                                  uint64_t& checksum) {
  if (auto s = conn.Execute("BEGIN"); !s.ok()) return s.status();
  std::string ids;
  ids.reserve(static_cast<size_t>(options.batch) * 8);
  int64_t rows = 0;
  absl::Status status = conn.ForEachRow(
      select, [&](char** values, unsigned long* lengths, unsigned int) {
        if (rows++ > 0) ids.push_back(',');
        ids.append(values[0], lengths[0]);
        // "Publish": touch every byte of the payload.
        if (values[1] != nullptr) {
          for (unsigned long i = 0; i < lengths[1]; ++i) {
            checksum = checksum * 31 + static_cast<unsigned char>(values[1][i]);
          }
        }
      });
  if (status.ok() && rows > 0) {
    status = conn.Execute(absl::StrCat("UPDATE ", options.qualified_table,
                                       " SET processed_at = ", NowNs(),
                                       " WHERE id IN (", ids, ")"))
                 .status();
  }
  if (status.ok()) status = conn.Execute("COMMIT").status();
  if (!status.ok()) {
    if (!conn.broken()) (void)conn.Execute("ROLLBACK");
    return status;
  }
  return rows;
}

WorkerResult RunWorker(const MysqlOptions& mysql, const RelayOptions& options,
                       std::atomic<int64_t>* progress) {
  WorkerResult r;
  absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
      MysqlConnection::Connect(mysql);
  if (!conn.ok()) {
    r.status = conn.status();
    return r;
  }
  r.status = (*conn)
                 ->Execute(
                     "SET SESSION TRANSACTION ISOLATION LEVEL "
                     "READ COMMITTED")
                 .status();
  if (!r.status.ok()) return r;
  const std::string select =
      absl::StrCat("SELECT id, payload FROM ", options.qualified_table,
                   " WHERE processed_at IS NULL ORDER BY id LIMIT ",
                   options.batch, " FOR UPDATE SKIP LOCKED");
  while (true) {
    absl::StatusOr<int64_t> n = RelayOnce(**conn, options, select, r.checksum);
    if (!n.ok()) {
      if (n.status().code() == absl::StatusCode::kAborted && r.retries < 1000) {
        ++r.retries;
        continue;
      }
      r.status = n.status();
      return r;
    }
    if (*n == 0) return r;
    r.processed += *n;
    ++r.batches;
    r.last_commit_ns = NowNs();
    if (progress != nullptr) progress->fetch_add(*n, std::memory_order_relaxed);
  }
}

}  // namespace

absl::StatusOr<RelayRun> RunRelay(const MysqlOptions& mysql,
                                  const RelayOptions& options,
                                  std::atomic<int64_t>* progress) {
  std::vector<WorkerResult> results(static_cast<size_t>(options.workers));
  std::vector<std::thread> threads;
  RelayRun run;
  run.start_ns = NowNs();
  for (int w = 0; w < options.workers; ++w) {
    threads.emplace_back([&, w] {
      results[static_cast<size_t>(w)] = RunWorker(mysql, options, progress);
    });
  }
  for (std::thread& t : threads) t.join();
  run.end_ns = run.start_ns;
  for (const WorkerResult& r : results) {
    if (!r.status.ok()) return r.status;
    run.processed += r.processed;
    run.batches += r.batches;
    run.retries += r.retries;
    run.checksum ^= r.checksum;
    run.end_ns = std::max(run.end_ns, r.last_commit_ns);
  }
  return run;
}

}  // namespace msgq::bench
