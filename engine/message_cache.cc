#include "engine/message_cache.h"

#include "absl/strings/numbers.h"

namespace msgq {

MessageCache::Key MessageCache::KeyOf(const Message& m) {
  int64_t n = 0;
  if (absl::SimpleAtoi(m.id, &n)) {
    return Key{m.priority, m.time_next, false, n, std::string()};
  }
  return Key{m.priority, m.time_next, true, 0, m.id};
}

MessageCache::AddResult MessageCache::Add(Message message) {
  if (queued_.contains(message.id)) return AddResult::kAlreadyPresent;
  if (full()) return AddResult::kFull;
  Key key = KeyOf(message);
  std::string id = message.id;
  auto [it, inserted] = order_.emplace(std::move(key), std::move(message));
  queued_.emplace(std::move(id), it);
  return AddResult::kAdded;
}

MessageBatch MessageCache::PopBatch(size_t max) {
  MessageBatch batch;
  batch.reserve(std::min(max, order_.size()));
  while (batch.size() < max && !order_.empty()) {
    auto it = order_.begin();
    queued_.erase(it->second.id);
    batch.push_back(std::move(it->second));
    order_.erase(it);
  }
  return batch;
}

bool MessageCache::RemoveQueued(absl::string_view id) {
  auto it = queued_.find(id);
  if (it == queued_.end()) return false;
  order_.erase(it->second);
  queued_.erase(it);
  return true;
}

}  // namespace msgq
