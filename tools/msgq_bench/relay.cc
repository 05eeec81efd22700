#include "tools/msgq_bench/relay.h"

#include <algorithm>
#include <future>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/options.h"

namespace msgq::bench {
namespace {

// One transaction; returns the rows relayed (0: nothing left).
absl::StatusOr<int64_t> RelayOnce(MysqlConnection& conn,
                                  const std::string& table,
                                  const std::string& select, RelayRun& run) {
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

// One worker until the outbox is empty; its counts in `run`.
absl::Status RunWorker(const MysqlOptions& mysql, const std::string& table,
                       std::atomic<int64_t>* progress, RelayRun& run) {
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

}  // namespace

absl::StatusOr<RelayRun> RunRelay(const MysqlOptions& mysql,
                                  const std::string& qualified_table,
                                  std::atomic<int64_t>* progress) {
  std::vector<RelayRun> runs(kRelayWorkers);
  std::vector<std::future<absl::Status>> workers;
  RelayRun total;
  total.start_ns = total.end_ns = NowNs();
  for (RelayRun& run : runs) {
    workers.push_back(std::async(std::launch::async, [&] {
      return RunWorker(mysql, qualified_table, progress, run);
    }));
  }
  for (std::future<absl::Status>& worker : workers) {
    RETURN_IF_ERROR(worker.get());
  }
  for (const RelayRun& run : runs) {
    total.processed += run.processed;
    total.batches += run.batches;
    total.retries += run.retries;
    total.checksum ^= run.checksum;
    total.end_ns = std::max(total.end_ns, run.end_ns);
  }
  return total;
}

}  // namespace msgq::bench
