// ProducerPool: P producer connections inserting one message per
// transaction (BEGIN; INSERT; COMMIT, like an application's outbox write) at
// a fixed total offered rate. Message k (id k+1) is due at start + k/rate and
// belongs to producer k mod P, so the offered load is evenly spaced; a
// producer that falls behind sends at once (its lag is reported). With T
// tables, message k goes to table k mod T (the total rate stays the same).
// A failed transaction is retried up to 5 times (on a new connection when
// the old one broke).
//
// For each id it records when COMMIT was sent and when it returned (bench
// clock), so latency can be measured from either.
//
// Run() blocks; the accessors are valid after it returns. `committed()` may
// be read concurrently (sampling).
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PRODUCERS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PRODUCERS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

class ProducerPool {
 public:
  // `tables`: `db`.`name` of each table, message k goes to k mod size(); not
  // empty. From `options`: producers, rate, duration, payload_bytes.
  ProducerPool(MysqlOptions mysql, std::vector<std::string> tables,
               const pb::Options& options);

  // Produces every message; the first producer's lasting error otherwise
  // (its unsent messages have commit_end_ns == 0).
  absl::Status Run();

  int64_t messages() const { return messages_; }  // rate x duration
  int64_t committed() const { return committed_.load(); }
  int64_t errors() const { return errors_.load(); }
  int64_t start_ns() const { return start_ns_; }
  int64_t end_ns() const { return end_ns_; }  // the last COMMIT returned
  // Worst delay of a COMMIT's start behind its schedule.
  int64_t max_lag_ns() const { return max_lag_ns_; }
  // Per id (1..messages()); 0 when the id was never committed.
  int64_t commit_start_ns(int64_t id) const { return commit_start_[id]; }
  int64_t commit_end_ns(int64_t id) const { return commit_end_[id]; }

 private:
  absl::Status Produce(int p);

  const MysqlOptions mysql_;
  const std::vector<std::string> tables_;
  const int producers_;
  const double rate_;
  const int payload_bytes_;
  const int64_t messages_;
  std::vector<int64_t> commit_start_;
  std::vector<int64_t> commit_end_;
  std::vector<int64_t> lag_by_producer_;
  std::atomic<int64_t> committed_{0};
  std::atomic<int64_t> errors_{0};
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  int64_t max_lag_ns_ = 0;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PRODUCERS_H_
