#include "engine/queue/recent_ids.h"

#include <algorithm>

namespace msgq {

void RecentIds::Put(absl::string_view id, int64_t value) {
  if (capacity_ == 0) return;
  auto [it, inserted] = values_.try_emplace(id);
  if (!inserted) return;
  it->second = Entry{value, next_seq_};
  order_.emplace_back(next_seq_++, std::string(id));
  // The oldest live ids go while over capacity.
  while (values_.size() > capacity_) {
    auto oldest = values_.find(order_.front().second);
    if (oldest != values_.end() && oldest->second.seq == order_.front().first) {
      values_.erase(oldest);
    }
    order_.pop_front();
  }
  Trim();
}

std::optional<int64_t> RecentIds::Take(absl::string_view id) {
  auto it = values_.find(id);
  if (it == values_.end()) return std::nullopt;
  const int64_t value = it->second.value;
  values_.erase(it);
  Trim();
  return value;
}

void RecentIds::Trim() {
  auto live = [this](const std::pair<uint64_t, std::string>& e) {
    auto it = values_.find(e.second);
    return it != values_.end() && it->second.seq == e.first;
  };
  while (!order_.empty() && !live(order_.front())) order_.pop_front();
  if (order_.size() <= 2 * values_.size() + 16) return;
  std::deque<std::pair<uint64_t, std::string>> kept;
  for (auto& e : order_) {
    if (live(e)) kept.push_back(std::move(e));
  }
  order_.swap(kept);
}

}  // namespace msgq
