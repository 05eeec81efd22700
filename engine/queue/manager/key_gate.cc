// KeyGate: see key_gate.h.
#include "engine/queue/manager/key_gate.h"

namespace msgq {

KeyGate::KeyGate(int limit) {
  if (limit > 0) gate_.emplace(limit);
}

void KeyGate::OwnershipGained() {
  loaded_ = false;
  ++generation_;
}

std::optional<int64_t> KeyGate::LoadTicket() const {
  if (!on() || loaded_) return std::nullopt;
  return generation_;
}

void KeyGate::Load(const std::vector<InFlightRow>& rows, int64_t ticket) {
  if (!on()) return;
  gate_->Load(rows);
  loaded_ = ticket == generation_;
}

bool KeyGate::Admits(const std::optional<std::string>& key, int64_t now) {
  return !on() || gate_->Admits(key, now);
}

bool KeyGate::TryTake(const Message& m, int64_t now, int64_t until) {
  return !on() || gate_->TryTake(m, now, until);
}

bool KeyGate::Release(absl::string_view id) {
  return on() && gate_->Release(id);
}

bool KeyGate::ReleaseNacked(absl::string_view id, int64_t epoch) {
  return on() && gate_->ReleaseNacked(id, epoch);
}

void KeyGate::Extend(absl::string_view id, int64_t epoch, int64_t until) {
  if (on()) gate_->Extend(id, epoch, until);
}

std::optional<KeyRoom> KeyGate::Room(int64_t now, int64_t unlimited) {
  if (!on()) return std::nullopt;
  return gate_->Room(now, unlimited);
}

int64_t KeyGate::KeysAtLimit(int64_t now) const {
  return on() ? gate_->KeysAtLimit(now) : 0;
}

}  // namespace msgq
