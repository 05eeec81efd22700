#include "engine/queue/binlog_expectations.h"

namespace msgq {

void BinlogExpectations::ExpectRow(absl::string_view id, int64_t priority,
                                   int64_t time_next, int64_t now) {
  Put(id, Entry{.gone = false,
                .priority = priority,
                .time_next = time_next,
                .at = now});
}

void BinlogExpectations::ExpectGone(absl::string_view id, int64_t now) {
  Put(id, Entry{.gone = true, .at = now});
}

void BinlogExpectations::Forget(absl::string_view id) { entries_.erase(id); }

bool BinlogExpectations::Accept(absl::string_view id, int64_t priority,
                                int64_t time_next, int64_t now) {
  Age(now);
  auto it = entries_.find(id);
  if (it == entries_.end()) return true;
  const Entry& e = it->second;
  if (e.gone) return false;
  if (e.priority != priority || e.time_next != time_next) return false;
  entries_.erase(it);
  return true;
}

void BinlogExpectations::Put(absl::string_view id, Entry entry) {
  Age(entry.at);
  if (capacity_ == 0) return;
  entry.seq = next_seq_++;
  auto [it, inserted] = entries_.insert_or_assign(std::string(id), entry);
  order_.emplace_back(entry.seq, it->first);
  while (entries_.size() > capacity_ && !order_.empty()) {
    auto oldest = entries_.find(order_.front().second);
    if (oldest != entries_.end() &&
        oldest->second.seq == order_.front().first) {
      entries_.erase(oldest);
    }
    order_.pop_front();
  }
}

void BinlogExpectations::Age(int64_t now) {
  while (!order_.empty()) {
    auto it = entries_.find(order_.front().second);
    const bool live =
        it != entries_.end() && it->second.seq == order_.front().first;
    if (live && it->second.at >= now - max_age_) break;
    if (live) entries_.erase(it);
    order_.pop_front();
  }
  if (order_.size() <= 2 * entries_.size() + 16) return;
  std::deque<std::pair<uint64_t, std::string>> kept;
  for (auto& e : order_) {
    auto it = entries_.find(e.second);
    if (it != entries_.end() && it->second.seq == e.first) {
      kept.push_back(std::move(e));
    }
  }
  order_.swap(kept);
}

}  // namespace msgq
