#include "server/http/due_depth_sampler.h"

#include <set>

#include "absl/strings/numbers.h"
#include "common/log.h"

namespace msgq {

absl::StatusOr<int64_t> ParseInnodbHistory(const QueryResult& result) {
  int64_t length = 0;
  if (result.rows.size() != 1 || result.rows[0].size() != 1 ||
      !result.rows[0][0].has_value() ||
      !absl::SimpleAtoi(*result.rows[0][0], &length)) {
    return absl::InternalError(
        "InnoDB history list length: expected one row with one integer");
  }
  return length;
}

absl::StatusOr<std::optional<OldestTransaction>> ParseOldestTransaction(
    const QueryResult& result) {
  if (result.rows.empty()) return std::nullopt;
  const auto& row = result.rows[0];
  OldestTransaction t;
  if (result.rows.size() != 1 || row.size() != 6 || !row[0].has_value() ||
      !absl::SimpleAtoi(*row[0], &t.connection) || !row[1].has_value() ||
      !absl::SimpleAtoi(*row[1], &t.seconds)) {
    return absl::InternalError(
        "oldest transaction: expected one row of a connection id, its "
        "seconds and four strings");
  }
  t.user = row[2].value_or("");
  t.host = row[3].value_or("");
  t.db = row[4].value_or("");
  t.statement = row[5].value_or("");
  return t;
}

namespace {

// Runs `sql`, a statement about the server rather than a table, on the
// pool connection of the first loaded table; FAILED_PRECONDITION when no
// table is loaded.
absl::StatusOr<QueryResult> ReadOnAnyTable(Engine* engine, const char* sql) {
  for (const Engine::TableInfo& t : engine->ListTables()) {
    if (!t.loaded) continue;
    return engine->ReadTable(
        t.keyspace, t.name,
        [sql](const MessageTable&) -> absl::StatusOr<std::string> {
          return std::string(sql);
        });
  }
  return absl::FailedPreconditionError("no table is loaded");
}

}  // namespace

DueDepthSampler::DueDepthSampler(Lister lister, Reader reader, Clock* clock,
                                 Options options, HistoryReader history,
                                 TransactionReader transaction)
    : lister_(std::move(lister)),
      reader_(std::move(reader)),
      clock_(clock),
      options_(options),
      history_(std::move(history)),
      transaction_(std::move(transaction)) {}

std::unique_ptr<DueDepthSampler> DueDepthSampler::ForEngine(Engine* engine,
                                                            Clock* clock,
                                                            Options options) {
  Lister lister = [engine] {
    std::vector<TableKey> tables;
    for (const Engine::TableInfo& t : engine->ListTables()) {
      // Tables with exact counts need no sample (For).
      if (t.loaded && !t.counts.has_value()) {
        tables.emplace_back(t.keyspace, t.name);
      }
    }
    return tables;
  };
  Reader reader = [engine](const TableKey& table, int64_t now_ns,
                           int64_t cap) -> absl::StatusOr<DueDepth> {
    absl::StatusOr<QueryResult> result = engine->ReadTable(
        table.first, table.second,
        [&](const MessageTable& t) -> absl::StatusOr<std::string> {
          return DueDepthSql(t, now_ns, cap);
        });
    if (!result.ok()) return result.status();
    return ParseDueDepth(*result, cap);
  };
  HistoryReader history = [engine]() -> absl::StatusOr<int64_t> {
    absl::StatusOr<QueryResult> result =
        ReadOnAnyTable(engine, kInnodbHistorySql);
    if (!result.ok()) return result.status();
    return ParseInnodbHistory(*result);
  };
  TransactionReader transaction =
      [engine]() -> absl::StatusOr<std::optional<OldestTransaction>> {
    absl::StatusOr<QueryResult> result =
        ReadOnAnyTable(engine, kOldestTransactionSql);
    if (!result.ok()) return result.status();
    return ParseOldestTransaction(*result);
  };
  return std::make_unique<DueDepthSampler>(std::move(lister), std::move(reader),
                                           clock, options, std::move(history),
                                           std::move(transaction));
}

DueDepthSampler::~DueDepthSampler() { Stop(); }

std::optional<DueDepthSampler::Sample> DueDepthSampler::For(
    const Engine::TableInfo& table) const {
  if (!table.counts.has_value()) return Get({table.keyspace, table.name});
  Sample sample;
  sample.depth.count = table.counts->ready;
  sample.depth.oldest_due_ns = table.counts->oldest_due_ns;
  sample.now_ns = table.counts->now_ns;
  return sample;
}

int DueDepthSampler::SampleDue() {
  const std::vector<TableKey> tables = lister_();
  const absl::Time mono = clock_->MonotonicNow();
  std::vector<TableKey> due;
  {
    absl::MutexLock lock(&mu_);
    const std::set<TableKey> present(tables.begin(), tables.end());
    std::erase_if(entries_,
                  [&](const auto& e) { return !present.contains(e.first); });
    for (const TableKey& t : tables) {
      auto it = entries_.find(t);
      if (it == entries_.end() ||
          mono - it->second.measured >= options_.interval) {
        due.push_back(t);
      }
    }
  }
  for (const TableKey& t : due) {
    const int64_t now_ns = clock_->NowNanos();
    absl::StatusOr<DueDepth> depth = reader_(t, now_ns, options_.cap);
    if (!depth.ok()) {
      LogTableWarning(
          t.first, t.second, "table `", t.first, "`.`", t.second,
          "`: cannot measure the due messages: ", depth.status().message());
    }
    absl::MutexLock lock(&mu_);
    Entry& entry = entries_[t];
    entry.measured = mono;
    if (depth.ok()) entry.sample = Sample{*depth, now_ns};
  }
  SampleHistory(mono);
  return static_cast<int>(due.size());
}

void DueDepthSampler::SampleHistory(absl::Time mono) {
  if (history_ == nullptr && transaction_ == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    if (history_measured_.has_value() &&
        mono - *history_measured_ < options_.interval) {
      return;
    }
    history_measured_ = mono;
  }
  SampleTransaction();
  if (history_ == nullptr) return;
  absl::StatusOr<int64_t> length = history_();
  bool warn = false;
  {
    absl::MutexLock lock(&mu_);
    if (length.ok()) {
      history_length_ = *length;
      history_warned_ = false;
    } else if (!absl::IsFailedPrecondition(length.status())) {
      // Once until a read succeeds: a server without the status variable
      // would otherwise log this every interval.
      warn = !history_warned_;
      history_warned_ = true;
    }
  }
  if (warn) {
    LogWarning("cannot read the InnoDB history list length: ",
               length.status().message());
  }
}

void DueDepthSampler::SampleTransaction() {
  if (transaction_ == nullptr) return;
  absl::StatusOr<std::optional<OldestTransaction>> oldest = transaction_();
  if (absl::IsFailedPrecondition(oldest.status())) return;  // nothing loaded
  bool warn = false;
  {
    absl::MutexLock lock(&mu_);
    if (oldest.ok()) {
      transaction_sample_ = TransactionSample{true, *oldest, ""};
      transaction_warned_ = false;
    } else {
      transaction_sample_ = TransactionSample{
          false, std::nullopt, std::string(oldest.status().message())};
      warn = !transaction_warned_;
      transaction_warned_ = true;
    }
  }
  if (warn) {
    LogWarning(
        "cannot read the oldest open transaction (it needs the PROCESS "
        "privilege): ",
        oldest.status().message());
  }
}

DueDepthSampler::TransactionSample DueDepthSampler::OldestTransactionSample()
    const {
  absl::MutexLock lock(&mu_);
  return transaction_sample_;
}

std::optional<int64_t> DueDepthSampler::HistoryLength() const {
  absl::MutexLock lock(&mu_);
  return history_length_;
}

std::optional<DueDepthSampler::Sample> DueDepthSampler::Get(
    const TableKey& table) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(table);
  if (it == entries_.end()) return std::nullopt;
  return it->second.sample;
}

void DueDepthSampler::Start() {
  thread_ = std::thread([this] {
    while (true) {
      SampleDue();
      absl::MutexLock lock(&mu_);
      if (!stopping_) wake_.WaitFor(&mu_, options_.tick);
      if (stopping_) return;
    }
  });
}

void DueDepthSampler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace msgq
