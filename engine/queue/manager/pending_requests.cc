// PendingRequests: see pending_requests.h.
#include "engine/queue/manager/pending_requests.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace msgq {

PendingRequests::PendingRequests(size_t max_requests, size_t max_ids)
    : max_requests_(max_requests), max_ids_(max_ids) {}

absl::Status PendingRequests::Admit(size_t ids, absl::string_view name) {
  const size_t requests = acks_.size() + nacks_.size() + extends_.size() +
                          redrives_.size() + dead_lists_.size();
  if (requests >= max_requests_ || admitted_ids_ + ids > max_ids_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many requests waiting for ", name));
  }
  admitted_ids_ += ids;
  return absl::OkStatus();
}

void PendingRequests::Add(PendingAck ack) { acks_.push_back(std::move(ack)); }
void PendingRequests::Add(PendingNack nack) {
  nacks_.push_back(std::move(nack));
}
void PendingRequests::Add(PendingExtend extend) {
  extends_.push_back(std::move(extend));
}
void PendingRequests::Add(PendingRedrive redrive) {
  redrives_.push_back(std::move(redrive));
}
void PendingRequests::Add(PendingDeadList list) {
  dead_lists_.push_back(std::move(list));
}

void PendingRequests::Settled(size_t ids) {
  admitted_ids_ -= std::min(admitted_ids_, ids);
}

bool PendingRequests::others_waiting() const {
  return !nacks_.empty() || !extends_.empty() || !redrives_.empty() ||
         !dead_lists_.empty();
}

void PendingRequests::TakeAcks(ManagerRound& round) {
  round.acks.swap(acks_);
  for (const PendingAck& ack : round.acks) {
    round.writes.ack_groups.push_back(ack.ticket.ids);
  }
}

void PendingRequests::TakeOthers(ManagerRound& round) {
  round.nacks.swap(nacks_);
  for (const PendingNack& p : round.nacks) {
    round.writes.nack_groups.push_back(p.group);
  }
  round.extends.swap(extends_);
  for (const PendingExtend& p : round.extends) {
    round.writes.extend_groups.push_back(p.group);
  }
  round.redrives.swap(redrives_);
  for (const PendingRedrive& p : round.redrives) {
    round.writes.redrive_groups.push_back(p.group);
  }
  round.dead_lists.swap(dead_lists_);
}

ManagerRound PendingRequests::TakeAll() {
  ManagerRound all;
  all.acks.swap(acks_);
  all.nacks.swap(nacks_);
  all.extends.swap(extends_);
  all.redrives.swap(redrives_);
  all.dead_lists.swap(dead_lists_);
  admitted_ids_ = 0;
  return all;
}

void PendingRequests::Answer(ManagerRound& round, const absl::Status& status) {
  for (PendingAck& p : round.acks) p.done(status);
  for (PendingNack& p : round.nacks) {
    if (p.done != nullptr) p.done(status);
  }
  for (PendingExtend& p : round.extends) p.done(status);
  for (PendingRedrive& p : round.redrives) p.done(status);
  for (PendingDeadList& p : round.dead_lists) p.done(status);
}

}  // namespace msgq
