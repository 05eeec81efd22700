#include "engine/queue/concurrency_gate.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/queue/fair_key.h"

namespace msgq {

void ConcurrencyGate::Expire(int64_t now) {
  while (!expiries_.empty() && expiries_.begin()->first <= now) {
    const auto it = slots_.find(expiries_.begin()->second);
    if (it == slots_.end()) {
      expiries_.erase(expiries_.begin());  // cannot happen; stay consistent
      continue;
    }
    Erase(it);
  }
}

void ConcurrencyGate::Erase(Slots::iterator it) {
  expiries_.erase({it->second.until, it->first});
  const auto k = per_key_.find(it->second.tag);
  if (k != per_key_.end() && --k->second <= 0) per_key_.erase(k);
  slots_.erase(it);
}

void ConcurrencyGate::Insert(const std::string& id, std::string tag,
                             int64_t epoch, int64_t until) {
  ++per_key_[tag];
  expiries_.emplace(until, id);
  slots_.emplace(id, Slot{std::move(tag), epoch, until});
}

bool ConcurrencyGate::Admits(const std::optional<std::string>& key,
                             int64_t now) {
  if (!key.has_value()) return true;
  Expire(now);
  const auto it = per_key_.find(FairKeyTag(key));
  return it == per_key_.end() || it->second < limit_;
}

bool ConcurrencyGate::TryTake(const Message& m, int64_t now, int64_t until) {
  if (!m.fair_key.has_value()) return true;
  Expire(now);
  if (const auto it = slots_.find(m.id); it != slots_.end()) Erase(it);
  std::string tag = FairKeyTag(m.fair_key);
  if (const auto it = per_key_.find(tag);
      it != per_key_.end() && it->second >= limit_) {
    return false;
  }
  Insert(m.id, std::move(tag), m.epoch, until);
  return true;
}

void ConcurrencyGate::Load(const std::vector<InFlightRow>& rows) {
  for (const InFlightRow& r : rows) {
    if (!r.key.has_value() || slots_.contains(r.id)) continue;
    Insert(r.id, FairKeyTag(r.key), r.epoch - 1, r.time_next);
  }
}

bool ConcurrencyGate::Release(absl::string_view id) {
  const auto it = slots_.find(id);
  if (it == slots_.end()) return false;
  Erase(it);
  return true;
}

bool ConcurrencyGate::ReleaseNacked(absl::string_view id, int64_t epoch) {
  const auto it = slots_.find(id);
  if (it == slots_.end() || it->second.epoch != epoch) return false;
  Erase(it);
  return true;
}

void ConcurrencyGate::Extend(absl::string_view id, int64_t epoch,
                             int64_t until) {
  const auto it = slots_.find(id);
  if (it == slots_.end() || it->second.epoch != epoch ||
      it->second.until >= until) {
    return;
  }
  expiries_.erase({it->second.until, it->first});
  it->second.until = until;
  expiries_.emplace(until, it->first);
}

void ConcurrencyGate::Clear() {
  slots_.clear();
  per_key_.clear();
  expiries_.clear();
}

int64_t ConcurrencyGate::InFlight(const std::optional<std::string>& key,
                                  int64_t now) {
  if (!key.has_value()) return 0;
  Expire(now);
  const auto it = per_key_.find(FairKeyTag(key));
  return it == per_key_.end() ? 0 : it->second;
}

int64_t ConcurrencyGate::KeysAtLimit(int64_t now) const {
  absl::flat_hash_map<absl::string_view, int64_t> live;
  for (const auto& [id, slot] : slots_) {
    if (slot.until > now) ++live[slot.tag];
  }
  return std::count_if(live.begin(), live.end(),
                       [this](const auto& k) { return k.second >= limit_; });
}

KeyRoom ConcurrencyGate::Room(int64_t now, int64_t unlimited) {
  Expire(now);
  KeyRoom room;
  room.limit = limit_;
  room.unlimited = unlimited;
  room.used.insert(per_key_.begin(), per_key_.end());
  return room;
}

}  // namespace msgq
