#include "server/http/due_depth_sampler.h"

#include <set>

#include "common/log.h"

namespace msgq {

DueDepthSampler::DueDepthSampler(Lister lister, Reader reader, Clock* clock,
                                 Options options)
    : lister_(std::move(lister)),
      reader_(std::move(reader)),
      clock_(clock),
      options_(options) {}

std::unique_ptr<DueDepthSampler> DueDepthSampler::ForEngine(Engine* engine,
                                                            Clock* clock,
                                                            Options options) {
  Lister lister = [engine] {
    std::vector<TableKey> tables;
    for (const Engine::TableInfo& t : engine->ListTables()) {
      if (t.loaded) tables.emplace_back(t.keyspace, t.name);
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
  return std::make_unique<DueDepthSampler>(std::move(lister), std::move(reader),
                                           clock, options);
}

DueDepthSampler::~DueDepthSampler() { Stop(); }

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
  return static_cast<int>(due.size());
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
