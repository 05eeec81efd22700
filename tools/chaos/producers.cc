#include "tools/chaos/producers.h"

#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace msgq::chaos {

void Producers::Start() {
  for (int t = 0; t < options_.threads; ++t) {
    threads_.emplace_back([this, t] { Run(t); });
  }
}

void Producers::Stop() {
  stopping_.store(true);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

Producers::Stats Producers::stats() const {
  Stats s;
  s.transactions = transactions_.load();
  s.commits = commits_.load();
  s.rollbacks = rollbacks_.load();
  s.failed = failed_.load();
  s.unknown = unknown_.load();
  s.reconnects = reconnects_.load();
  return s;
}

void Producers::Run(int thread) {
  std::mt19937_64 rng(options_.seed * 1000003 + static_cast<uint64_t>(thread));
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> rows(1, options_.max_rows);
  const absl::Duration interval =
      absl::Seconds(options_.threads / options_.tx_per_second);
  std::unique_ptr<MysqlConnection> conn;
  absl::Time next = absl::Now();
  while (!stopping_.load()) {
    if (conn == nullptr || conn->broken()) {
      conn.reset();
      absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
          MysqlConnection::Connect(options_.mysql);
      if (!c.ok()) {
        absl::SleepFor(absl::Milliseconds(100));
        continue;
      }
      conn = *std::move(c);
      reconnects_.fetch_add(1);
    }
    next = std::max(next + interval, absl::Now() - absl::Seconds(1));
    absl::SleepFor(next - absl::Now());

    std::vector<int64_t> ids, time_next;
    std::string sql = absl::StrCat("INSERT INTO ", options_.table,
                                   " (id, time_next, message) VALUES ");
    const int n = rows(rng);
    for (int i = 0; i < n; ++i) {
      const int64_t id = ledger_->NextId();
      int64_t tn = 0;
      if (u(rng) < options_.scheduled_fraction) {
        const double delay = 0.2 + u(rng) * (options_.max_schedule_s - 0.2);
        tn = absl::ToUnixNanos(absl::Now() + absl::Seconds(delay));
      }
      ids.push_back(id);
      time_next.push_back(tn);
      absl::StrAppend(&sql, i > 0 ? "," : "", "(", id, ",", tn,
                      ",'{\"p\":", thread, "}')");
    }
    const bool rollback = u(rng) < options_.rollback_fraction;
    transactions_.fetch_add(1);
    absl::Status s = conn->Execute("START TRANSACTION").status();
    if (s.ok()) s = conn->Execute(sql).status();
    if (s.ok() && rollback) {
      // Whatever ROLLBACK returns, COMMIT was never sent.
      (void)conn->Execute("ROLLBACK");
      ledger_->Produced(ids, time_next, Outcome::kNotCommitted);
      rollbacks_.fetch_add(1);
      continue;
    }
    if (!s.ok()) {
      ledger_->Produced(ids, time_next, Outcome::kNotCommitted);
      failed_.fetch_add(1);
      (void)conn->Execute("ROLLBACK");
      conn.reset();  // start clean, whatever broke
      continue;
    }
    s = conn->Execute("COMMIT").status();
    if (s.ok()) {
      ledger_->Produced(ids, time_next, Outcome::kCommitted,
                        absl::ToUnixNanos(absl::Now()));
      commits_.fetch_add(1);
    } else {
      ledger_->Produced(ids, time_next, Outcome::kUnknown);
      unknown_.fetch_add(1);
      conn.reset();
    }
  }
}

}  // namespace msgq::chaos
