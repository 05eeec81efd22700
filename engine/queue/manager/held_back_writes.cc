// HeldBackWrites: see held_back_writes.h.
#include "engine/queue/manager/held_back_writes.h"

#include <algorithm>
#include <utility>

namespace msgq {

HeldBackWrites::HeldBackWrites(absl::Duration retry, absl::Duration ack_wait)
    : retry_(retry), ack_wait_(ack_wait) {}

bool HeldBackWrites::RowHeld(const std::string& id, absl::Time mono) {
  // The row was sent before this round: its ack wait ends by then.
  fence_ = std::max(fence_, mono + ack_wait_);
  return rows_[id]++ == 0;
}

void HeldBackWrites::RowFreed(const std::string& id) {
  auto it = rows_.find(id);
  if (it != rows_.end() && --it->second == 0) rows_.erase(it);
}

void HeldBackWrites::HoldPostpone(Postpone postpone) {
  postpones_.push_back(std::move(postpone));
}

void HeldBackWrites::HoldAck(PendingAck ack) {
  acks_.push_back(std::move(ack));
}

void HeldBackWrites::ArmRetries(absl::Time mono) {
  if (!postpones_.empty() && postpones_at_ == absl::InfiniteFuture()) {
    postpones_at_ = mono + retry_;
  }
  if (!acks_.empty() && acks_at_ == absl::InfiniteFuture()) {
    acks_at_ = mono + retry_;
  }
}

std::vector<HeldBackWrites::Postpone> HeldBackWrites::TakePostpones(
    absl::Time mono, bool all) {
  std::vector<Postpone> out;
  if (postpones_.empty() || (!all && mono < postpones_at_)) return out;
  out.swap(postpones_);
  postpones_at_ = absl::InfiniteFuture();
  return out;
}

std::vector<PendingAck> HeldBackWrites::TakeAcks(absl::Time mono, bool all) {
  std::vector<PendingAck> out;
  if (acks_.empty() || (!all && mono < acks_at_)) return out;
  out.swap(acks_);
  acks_at_ = absl::InfiniteFuture();
  return out;
}

absl::Time HeldBackWrites::postpones_retry_at() const {
  return postpones_.empty() ? absl::InfiniteFuture() : postpones_at_;
}

absl::Time HeldBackWrites::acks_retry_at() const {
  return acks_.empty() ? absl::InfiniteFuture() : acks_at_;
}

bool HeldBackWrites::AckCancelledPostpone() const {
  return std::any_of(acks_.begin(), acks_.end(), [](const PendingAck& p) {
    return !p.ticket.cancelled.empty();
  });
}

size_t HeldBackWrites::GiveUp() {
  size_t given_up = postpones_.size();
  for (const PendingAck& p : acks_) given_up += p.ticket.ids.size();
  postpones_.clear();
  acks_.clear();
  rows_.clear();
  return given_up;
}

}  // namespace msgq
