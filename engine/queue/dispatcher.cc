#include "engine/queue/dispatcher.h"

#include <algorithm>

namespace msgq {

Dispatcher::Slot* Dispatcher::Find(const Subscriber* subscriber) {
  for (Slot& slot : slots_) {
    if (slot.subscriber.get() == subscriber) return &slot;
  }
  return nullptr;
}

bool Dispatcher::Add(std::shared_ptr<Subscriber> subscriber) {
  if (Find(subscriber.get()) != nullptr) return slots_.size() == 1;
  slots_.push_back(Slot{std::move(subscriber)});
  return slots_.size() == 1;
}

bool Dispatcher::Remove(const Subscriber* subscriber) {
  auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) {
    return s.subscriber.get() == subscriber;
  });
  if (it == slots_.end()) return false;
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
    if (slot.outstanding < max_outstanding_) return true;
  }
  return false;
}

std::optional<Dispatcher::Pick> Dispatcher::Next() {
  const size_t n = slots_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (next_ + i) % n;
    Slot& slot = slots_[index];
    if (slot.outstanding >= max_outstanding_) continue;
    ++slot.outstanding;
    next_ = (index + 1) % n;
    return Pick{slot.subscriber, slot.next_sequence++};
  }
  return std::nullopt;
}

std::vector<std::shared_ptr<Subscriber>> Dispatcher::TakeAll() {
  std::vector<std::shared_ptr<Subscriber>> out;
  out.reserve(slots_.size());
  for (Slot& slot : slots_) out.push_back(std::move(slot.subscriber));
  slots_.clear();
  next_ = 0;
  return out;
}

}  // namespace msgq
