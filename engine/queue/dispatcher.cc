#include "engine/queue/dispatcher.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace msgq {

Dispatcher::Slot* Dispatcher::Find(const Subscriber* subscriber) {
  for (Slot& slot : slots_) {
    if (slot.subscriber.get() == subscriber) return &slot;
  }
  return nullptr;
}

bool Dispatcher::Add(std::shared_ptr<Subscriber> subscriber, int max_unacked) {
  if (Find(subscriber.get()) != nullptr) return slots_.size() == 1;
  Slot slot{std::move(subscriber)};
  slot.max_unacked = std::max(0, max_unacked);
  slots_.push_back(std::move(slot));
  return slots_.size() == 1;
}

bool Dispatcher::Remove(const Subscriber* subscriber) {
  auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) {
    return s.subscriber.get() == subscriber;
  });
  if (it == slots_.end()) return false;
  if (it->unacked > 0) {
    for (auto h = held_.begin(); h != held_.end();) {
      if (h->second == subscriber) {
        held_.erase(h++);
      } else {
        ++h;
      }
    }
  }
  const size_t index = static_cast<size_t>(it - slots_.begin());
  slots_.erase(it);
  // Keep the turn of whoever was next.
  if (index < next_) --next_;
  if (next_ >= slots_.size()) next_ = 0;
  return true;
}

void Dispatcher::SendDone(const Subscriber* subscriber) {
  Slot* slot = Find(subscriber);
  if (slot != nullptr && slot->outstanding > 0) --slot->outstanding;
}

bool Dispatcher::HasFreeSlot() const {
  for (const Slot& slot : slots_) {
    if (slot.Free(max_outstanding_)) return true;
  }
  return false;
}

std::optional<Dispatcher::Pick> Dispatcher::Next() {
  const size_t n = slots_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (next_ + i) % n;
    Slot& slot = slots_[index];
    if (!slot.Free(max_outstanding_)) continue;
    ++slot.outstanding;
    next_ = (index + 1) % n;
    Pick pick{slot.subscriber, slot.next_sequence++};
    if (slot.max_unacked > 0) {
      pick.room = static_cast<size_t>(slot.max_unacked - slot.unacked);
    }
    return pick;
  }
  return std::nullopt;
}

void Dispatcher::Hold(const Subscriber* subscriber, const MessageBatch& batch) {
  Slot* slot = Find(subscriber);
  if (slot == nullptr || slot->max_unacked == 0) return;
  for (const Message& m : batch) {
    Release(m.id);  // sent again: no longer the previous holder's
    held_.emplace(m.id, subscriber);
    ++slot->unacked;
  }
}

bool Dispatcher::ReleaseHeld(absl::string_view id) {
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  Slot* slot = Find(it->second);
  held_.erase(it);
  if (slot == nullptr || slot->unacked == 0) return false;
  --slot->unacked;
  return true;
}

int Dispatcher::unacked(const Subscriber* subscriber) const {
  for (const Slot& slot : slots_) {
    if (slot.subscriber.get() == subscriber) return slot.unacked;
  }
  return 0;
}

std::vector<std::shared_ptr<Subscriber>> Dispatcher::TakeAll() {
  std::vector<std::shared_ptr<Subscriber>> out;
  out.reserve(slots_.size());
  for (Slot& slot : slots_) out.push_back(std::move(slot.subscriber));
  slots_.clear();
  held_.clear();
  next_ = 0;
  return out;
}

}  // namespace msgq
