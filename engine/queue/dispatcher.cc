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
  if (it->held > 0 || due_again_ > 0) {
    for (auto h = held_.begin(); h != held_.end();) {
      if (h->second.subscriber == subscriber) {
        due_again_ -= h->second.due_again ? 1 : 0;
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

bool Dispatcher::AnyInGoodStanding() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const Slot& slot) { return !slot.lapsed; });
}

int Dispatcher::Rank(const Slot& slot, bool any_good) const {
  if (!slot.Free(max_outstanding_)) return -1;
  if (!slot.lapsed) return 0;
  return !any_good || slot.held == 0 ? 1 : -1;
}

bool Dispatcher::HasFreeSlot() const {
  const bool any_good = AnyInGoodStanding();
  for (const Slot& slot : slots_) {
    if (Rank(slot, any_good) >= 0) return true;
  }
  return false;
}

bool Dispatcher::HasAlternative(size_t index, bool any_good) const {
  const int rank = Rank(slots_[index], any_good);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (i == index) continue;
    const int other = Rank(slots_[i], any_good);
    if (other >= 0 && other <= rank) return true;
  }
  return false;
}

std::optional<Dispatcher::Pick> Dispatcher::Next() {
  const size_t n = slots_.size();
  const bool any_good = AnyInGoodStanding();
  for (const int rank : {0, 1}) {
    for (size_t i = 0; i < n; ++i) {
      const size_t index = (next_ + i) % n;
      Slot& slot = slots_[index];
      if (Rank(slot, any_good) != rank) continue;
      // Ranked before the count below: a redirect needs another subscriber
      // as good as this one is now.
      const bool redirect = due_again_ > 0 && HasAlternative(index, any_good);
      ++slot.outstanding;
      next_ = (index + 1) % n;
      Pick pick{slot.subscriber, slot.next_sequence++};
      if (slot.max_unacked > 0) {
        pick.room = static_cast<size_t>(slot.max_unacked - slot.held);
      }
      pick.redirect = redirect;
      return pick;
    }
  }
  return std::nullopt;
}

void Dispatcher::Return(const Pick& pick) {
  Slot* slot = Find(pick.subscriber.get());
  if (slot == nullptr) return;
  if (slot->outstanding > 0) --slot->outstanding;
  if (slot->next_sequence == pick.sequence + 1)
    slot->next_sequence = pick.sequence;
}

bool Dispatcher::Redirects(const Pick& pick, absl::string_view id) const {
  if (!pick.redirect) return false;
  auto it = held_.find(id);
  return it != held_.end() && it->second.due_again &&
         it->second.subscriber == pick.subscriber.get();
}

Dispatcher::Slot* Dispatcher::Unhold(const HeldId& held) {
  if (held.due_again) return nullptr;
  Slot* slot = Find(held.subscriber);
  if (slot == nullptr || slot->held == 0) return nullptr;
  --slot->held;
  return slot;
}

void Dispatcher::Hold(const Subscriber* subscriber, const MessageBatch& batch) {
  Slot* slot = Find(subscriber);
  if (slot == nullptr) return;
  for (const Message& m : batch) {
    auto [it, added] = held_.try_emplace(m.id);
    if (!added) {  // sent again: no longer the previous holder's
      Unhold(it->second);
      due_again_ -= it->second.due_again ? 1 : 0;
    }
    it->second = HeldId{subscriber, false, generation_};
    ++slot->held;
  }
}

bool Dispatcher::Release(absl::string_view id) {
  if (held_.empty()) return false;
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  const HeldId held = it->second;
  due_again_ -= held.due_again ? 1 : 0;
  held_.erase(it);
  Slot* slot = Unhold(held);
  if (slot == nullptr) return false;
  const bool was_lapsed = slot->lapsed;
  slot->lapsed = false;
  return slot->max_unacked > 0 || was_lapsed;
}

void Dispatcher::Extended(absl::string_view id) {
  auto it = held_.find(id);
  if (it == held_.end() || it->second.due_again) return;
  if (Slot* slot = Find(it->second.subscriber)) slot->lapsed = false;
}

void Dispatcher::DueAgain(absl::string_view id) {
  if (held_.empty()) return;
  auto it = held_.find(id);
  if (it == held_.end() || it->second.due_again) return;
  Slot* slot = Unhold(it->second);
  if (slot == nullptr) {  // its subscriber is gone
    held_.erase(it);
    return;
  }
  slot->lapsed = true;
  it->second.due_again = true;
  it->second.generation = generation_;
  ++due_again_;
}

void Dispatcher::Sweep(absl::Time now) {
  if (now < next_sweep_) return;
  next_sweep_ = now + hold_horizon_;
  ++generation_;
  if (generation_ < 2) return;
  for (auto it = held_.begin(); it != held_.end();) {
    const HeldId& held = it->second;
    if (held.generation + 2 > generation_) {
      ++it;
      continue;
    }
    const Slot* slot = Find(held.subscriber);
    if (!held.due_again && slot != nullptr && slot->max_unacked > 0) {
      ++it;  // a prefetch slot frees only when the id is settled
      continue;
    }
    Unhold(held);
    due_again_ -= held.due_again ? 1 : 0;
    held_.erase(it++);
  }
}

int Dispatcher::unacked(const Subscriber* subscriber) const {
  for (const Slot& slot : slots_) {
    if (slot.subscriber.get() == subscriber) {
      return slot.max_unacked > 0 ? slot.held : 0;
    }
  }
  return 0;
}

bool Dispatcher::lapsed(const Subscriber* subscriber) const {
  for (const Slot& slot : slots_) {
    if (slot.subscriber.get() == subscriber) return slot.lapsed;
  }
  return false;
}

std::vector<std::shared_ptr<Subscriber>> Dispatcher::TakeAll() {
  std::vector<std::shared_ptr<Subscriber>> out;
  out.reserve(slots_.size());
  for (Slot& slot : slots_) out.push_back(std::move(slot.subscriber));
  slots_.clear();
  held_.clear();
  due_again_ = 0;
  next_ = 0;
  return out;
}

}  // namespace msgq
