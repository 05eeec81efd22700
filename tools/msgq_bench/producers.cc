#include "tools/msgq_bench/producers.h"

#include <algorithm>
#include <cmath>
#include <future>

#include "absl/strings/str_cat.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {

ProducerPool::ProducerPool(MysqlOptions mysql, std::vector<std::string> tables,
                           const pb::Options& options)
    : mysql_(std::move(mysql)),
      tables_(std::move(tables)),
      producers_(options.producers()),
      rate_(options.rate()),
      payload_bytes_(options.payload_bytes()),
      messages_(std::max<int64_t>(
          1, std::llround(options.rate() * options.duration()))),
      commit_start_(messages_ + 1, 0),
      commit_end_(messages_ + 1, 0),
      lag_by_producer_(producers_, 0) {}

absl::Status ProducerPool::Run() {
  start_ns_ = NowNs() + 200 * 1000 * 1000;  // connect first, off schedule
  std::vector<std::future<absl::Status>> producers;
  for (int p = 0; p < producers_; ++p) {
    producers.push_back(
        std::async(std::launch::async, [this, p] { return Produce(p); }));
  }
  absl::Status status;
  for (std::future<absl::Status>& producer : producers) {
    absl::Status s = producer.get();
    if (status.ok()) status = s;
  }
  end_ns_ = std::max(start_ns_,
                     *std::max_element(commit_end_.begin(), commit_end_.end()));
  max_lag_ns_ =
      *std::max_element(lag_by_producer_.begin(), lag_by_producer_.end());
  return status;
}

absl::Status ProducerPool::Produce(int p) {
  std::unique_ptr<MysqlConnection> conn;
  auto connect = [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql_);
    if (c.ok()) conn = *std::move(c);
    return c.status();
  };
  if (absl::Status s = connect(); !s.ok()) return s;
  const double interval_ns = 1e9 / rate_;
  const int64_t tables = tables_.size();
  int64_t& max_lag = lag_by_producer_[p];
  for (int64_t k = p; k < messages_; k += producers_) {
    const int64_t id = k + 1;
    const int64_t due = start_ns_ + static_cast<int64_t>(k * interval_ns);
    SleepUntilNs(due);
    const std::string insert = absl::StrCat("INSERT INTO ", tables_[k % tables],
                                            " (id, message) VALUES (", id, ",'",
                                            Payload(id, payload_bytes_), "')");
    absl::Status status;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (conn->broken() && !(status = connect()).ok()) continue;
      status = conn->Execute("BEGIN").status();
      if (status.ok()) status = conn->Execute(insert).status();
      const int64_t commit_start = NowNs();
      if (status.ok()) status = conn->Execute("COMMIT").status();
      if (status.ok()) {
        commit_start_[id] = commit_start;
        commit_end_[id] = NowNs();
        max_lag = std::max(max_lag, commit_start - due);
        committed_.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      errors_.fetch_add(1);
      if (!conn->broken()) (void)conn->Execute("ROLLBACK");
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace msgq::bench
