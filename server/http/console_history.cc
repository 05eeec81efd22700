#include "server/http/console_history.h"

#include <iterator>
#include <set>
#include <utility>

namespace msgq {

ConsoleHistory::ConsoleHistory(Lister lister, Clock* clock, Options options)
    : lister_(std::move(lister)), clock_(clock), options_(options) {}

ConsoleHistory::~ConsoleHistory() { Stop(); }

void ConsoleHistory::Record(const std::vector<Engine::TableInfo>& tables) {
  const int64_t now_ns = clock_->NowNanos();
  std::set<TableKey> loaded;
  for (const Engine::TableInfo& t : tables) {
    if (t.loaded) loaded.insert({t.keyspace, t.name});
  }
  absl::MutexLock lock(&mu_);
  // Forget the tables no longer loaded first, to make room for new ones.
  for (auto it = tables_.begin(); it != tables_.end();) {
    it = loaded.contains(it->first) ? std::next(it) : tables_.erase(it);
  }
  for (const Engine::TableInfo& t : tables) {
    if (!t.loaded) continue;
    TableKey key{t.keyspace, t.name};
    auto it = tables_.find(key);
    if (it == tables_.end()) {
      if (tables_.size() >= options_.max_tables) continue;
      it = tables_.emplace(std::move(key), std::deque<Sample>()).first;
    }
    Sample s;
    s.time_ns = now_ns;
    s.sent = t.stats.sent;
    s.acked = t.stats.acked;
    if (t.counts.has_value()) {
      s.ready = t.counts->ready;
      s.scheduled = t.counts->scheduled;
      s.in_flight = t.counts->in_flight;
      s.dead = t.counts->dead;
    }
    it->second.push_back(s);
    while (it->second.size() > options_.samples) it->second.pop_front();
  }
}

std::vector<ConsoleHistory::Sample> ConsoleHistory::Get(
    const TableKey& table) const {
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return {};
  return std::vector<Sample>(it->second.begin(), it->second.end());
}

void ConsoleHistory::Start() {
  thread_ = std::thread([this] {
    while (true) {
      Record(lister_());
      absl::MutexLock lock(&mu_);
      if (!stopping_) wake_.WaitFor(&mu_, options_.interval);
      if (stopping_) return;
    }
  });
}

void ConsoleHistory::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace msgq
