#include "tools/msgq_bench/producers.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {

ProducerPool::ProducerPool(MysqlOptions mysql, Options options)
    : mysql_(std::move(mysql)),
      options_(std::move(options)),
      messages_(std::max<int64_t>(
          1, std::llround(options_.rate * options_.duration_s))),
      commit_start_(static_cast<size_t>(messages_ + 1), 0),
      commit_end_(static_cast<size_t>(messages_ + 1), 0),
      lag_by_producer_(static_cast<size_t>(options_.producers), 0) {}

absl::Status ProducerPool::Run() {
  // Connect first, outside the schedule.
  start_ns_ = NowNs() + 200 * 1000 * 1000;
  std::vector<absl::Status> results(static_cast<size_t>(options_.producers));
  std::vector<std::thread> threads;
  for (int p = 0; p < options_.producers; ++p) {
    threads.emplace_back(
        [this, p, &results] { results[static_cast<size_t>(p)] = Produce(p); });
  }
  for (std::thread& t : threads) t.join();
  end_ns_ = start_ns_;
  for (int64_t id = 1; id <= messages_; ++id) {
    end_ns_ = std::max(end_ns_, commit_end_[static_cast<size_t>(id)]);
  }
  for (int64_t lag : lag_by_producer_) max_lag_ns_ = std::max(max_lag_ns_, lag);
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ProducerPool::Produce(int p) {
  std::unique_ptr<MysqlConnection> conn;
  auto connect = [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql_);
    if (!c.ok()) return c.status();
    conn = *std::move(c);
    return absl::OkStatus();
  };
  if (absl::Status s = connect(); !s.ok()) return s;
  const double interval_ns = 1e9 / options_.rate;
  int64_t& max_lag = lag_by_producer_[static_cast<size_t>(p)];
  for (int64_t k = p; k < messages_; k += options_.producers) {
    const int64_t id = k + 1;
    const int64_t due =
        start_ns_ + static_cast<int64_t>(static_cast<double>(k) * interval_ns);
    SleepUntilNs(due);
    const std::string& table = options_.qualified_tables[static_cast<size_t>(
        k % static_cast<int64_t>(options_.qualified_tables.size()))];
    const std::string insert =
        absl::StrCat("INSERT INTO ", table, " (id, message) VALUES (", id, ",'",
                     Payload(id, options_.payload_bytes), "')");
    absl::Status status;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (conn == nullptr || conn->broken()) {
        status = connect();
        if (!status.ok()) continue;
      }
      status = conn->Execute("BEGIN").status();
      if (status.ok()) status = conn->Execute(insert).status();
      int64_t commit_start = 0;
      if (status.ok()) {
        commit_start = NowNs();
        status = conn->Execute("COMMIT").status();
      }
      if (status.ok()) {
        commit_start_[static_cast<size_t>(id)] = commit_start;
        commit_end_[static_cast<size_t>(id)] = NowNs();
        max_lag = std::max(max_lag, commit_start - due);
        committed_.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      errors_.fetch_add(1);
      if (conn != nullptr && !conn->broken()) (void)conn->Execute("ROLLBACK");
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace msgq::bench
