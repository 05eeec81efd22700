#include "engine/groups/group_ledger.h"

#include <cassert>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/groups/group_name.h"

namespace msgq {

absl::StatusOr<Gtid> ParseGtid(absl::string_view text) {
  absl::StatusOr<GtidList> list = ParseGtidList(text);
  if (!list.ok()) return list.status();
  if (list->size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", EchoForError(text), "\" is not one GTID"));
  }
  const auto& [domain, entry] = *list->begin();
  return Gtid{domain, entry.server, entry.sequence};
}

GroupLedger::GroupLedger(GtidList floor) : floor_(std::move(floor)) {}

bool GroupLedger::AtOrBelowFloor(const Gtid& gtid) const {
  auto it = floor_.find(gtid.domain);
  return it != floor_.end() && gtid.sequence <= it->second.sequence;
}

bool GroupLedger::See(const Gtid& gtid) {
  if (open_ == gtid) return !AtOrBelowFloor(gtid);
  // A new transaction: the one before it is complete.
  open_ = gtid;
  Advance();
  if (AtOrBelowFloor(gtid)) return false;
  // A settled transaction that is not at its domain's front (an earlier
  // one is unsettled) is passed over with the next one: keep only the
  // latest of such a run.
  const TxnKey key{gtid.domain, gtid.sequence};
  auto last = transactions_.lower_bound(key);
  if (last != transactions_.begin()) {
    --last;
    if (last->first.first == gtid.domain && last->second.unsettled == 0) {
      transactions_.erase(last);
    }
  }
  transactions_.emplace(key, Transaction{gtid.server, 0});
  return true;
}

bool GroupLedger::Offer(const Gtid& gtid, const std::string& id) {
  if (!See(gtid)) return false;
  if (messages_.contains(id)) return false;
  const TxnKey key{gtid.domain, gtid.sequence};
  ++transactions_[key].unsettled;
  const uint64_t arrival = next_arrival_++;
  messages_.emplace(id, Pending{key, arrival, 0, 0});
  queue_.emplace(arrival, id);
  return true;
}

std::vector<GroupLedger::Taken> GroupLedger::Take(SubscriberId subscriber,
                                                  size_t max,
                                                  int64_t deadline) {
  std::vector<Taken> out;
  while (out.size() < max && !queue_.empty()) {
    auto first = queue_.begin();
    const std::string& id = first->second;
    Pending& p = messages_.at(id);
    p.holder = subscriber;
    p.state = State::kHeld;
    p.time = deadline;
    out.push_back(Taken{id, p.sends});
    ++p.sends;
    held_[subscriber].insert(id);
    deadlines_.emplace(deadline, id);
    queue_.erase(first);
  }
  return out;
}

void GroupLedger::Requeue(const std::string& id, Pending& p) {
  Detach(id, p);
  p.state = State::kQueued;
  p.time = kNever;
  queue_.emplace(p.arrival, id);
}

void GroupLedger::Detach(const std::string& id, Pending& p) {
  switch (p.state) {
    case State::kQueued:
      queue_.erase(p.arrival);
      break;
    case State::kHeld: {
      auto held = held_.find(p.holder);
      if (held != held_.end()) {
        held->second.erase(id);
        if (held->second.empty()) held_.erase(held);
      }
      deadlines_.erase({p.time, id});
      p.holder = 0;
      break;
    }
    case State::kWaiting:
      waiting_.erase({p.time, id});
      break;
    case State::kDead:
      assert(dead_ > 0);
      --dead_;
      break;
  }
}

size_t GroupLedger::Return(SubscriberId subscriber,
                           const std::vector<std::string>& ids) {
  auto held = held_.find(subscriber);
  if (held == held_.end()) return 0;
  std::vector<std::string> back;
  for (const std::string& id : ids) {
    if (held->second.contains(id)) back.push_back(id);
  }
  for (const std::string& id : back) Requeue(id, messages_.at(id));
  return back.size();
}

size_t GroupLedger::ReturnAll(SubscriberId subscriber) {
  auto held = held_.find(subscriber);
  if (held == held_.end()) return 0;
  const std::vector<std::string> back(held->second.begin(), held->second.end());
  for (const std::string& id : back) Requeue(id, messages_.at(id));
  return back.size();
}

bool GroupLedger::Uncount(Pending& p) {
  if (!p.counted) return false;
  p.counted = false;
  auto txn = transactions_.find(p.txn);
  assert(txn != transactions_.end() && txn->second.unsettled > 0);
  --txn->second.unsettled;
  return true;
}

int64_t GroupLedger::Ack(const std::vector<std::string>& ids,
                         std::vector<std::string>* exceptions) {
  int64_t settled = 0;
  bool uncounted = false;
  for (const std::string& id : ids) {
    auto it = messages_.find(id);
    if (it == messages_.end() || it->second.state == State::kDead) continue;
    Pending& p = it->second;
    Detach(id, p);
    uncounted |= Uncount(p);
    if (p.exception && exceptions != nullptr) exceptions->push_back(id);
    messages_.erase(it);
    ++settled;
  }
  if (uncounted) Advance();
  return settled;
}

std::vector<GroupLedger::Expired> GroupLedger::ExpiredAt(int64_t now) const {
  std::vector<Expired> out;
  for (const auto& [deadline, id] : deadlines_) {
    if (deadline > now) break;
    out.push_back(Expired{id, messages_.at(id).sends, deadline});
  }
  return out;
}

std::optional<int64_t> GroupLedger::Sends(const std::string& id) const {
  auto it = messages_.find(id);
  if (it == messages_.end() || it->second.state == State::kDead) {
    return std::nullopt;
  }
  return it->second.sends;
}

bool GroupLedger::Fail(const std::string& id,
                       std::optional<int64_t> time_next) {
  auto it = messages_.find(id);
  if (it == messages_.end() || it->second.state == State::kDead) return false;
  Pending& p = it->second;
  Detach(id, p);
  Park(id, p, time_next);
  return true;
}

std::vector<std::string> GroupLedger::Due(int64_t now) const {
  std::vector<std::string> out;
  for (const auto& [time_next, id] : waiting_) {
    if (time_next > now) break;
    out.push_back(id);
  }
  return out;
}

bool GroupLedger::Resend(const std::string& id) {
  auto it = messages_.find(id);
  if (it == messages_.end() || it->second.state != State::kWaiting) {
    return false;
  }
  Requeue(id, it->second);
  return true;
}

void GroupLedger::Recorded(const std::string& id) {
  auto it = messages_.find(id);
  if (it == messages_.end() || !it->second.exception) return;
  if (Uncount(it->second)) Advance();
}

bool GroupLedger::Load(const std::string& id, int64_t attempts,
                       std::optional<int64_t> time_next) {
  if (messages_.contains(id)) return false;
  Pending p;
  p.arrival = next_arrival_++;
  p.sends = attempts;
  p.counted = false;
  Park(id, p, time_next);
  messages_.emplace(id, p);
  return true;
}

void GroupLedger::Park(const std::string& id, Pending& p,
                       std::optional<int64_t> time_next) {
  p.exception = true;
  if (time_next.has_value()) {
    p.state = State::kWaiting;
    p.time = *time_next;
    waiting_.emplace(*time_next, id);
  } else {
    p.state = State::kDead;
    p.time = kNever;
    ++dead_;
  }
}

std::vector<std::string> GroupLedger::Redrive(
    const std::vector<std::string>& ids, bool all, int64_t now) {
  std::vector<std::string> picked;
  if (all) {
    for (const auto& [id, p] : messages_) {
      if (p.state == State::kDead) picked.push_back(id);
    }
  } else {
    for (const std::string& id : ids) {
      auto it = messages_.find(id);
      if (it != messages_.end() && it->second.state == State::kDead) {
        picked.push_back(id);
      }
    }
  }
  for (const std::string& id : picked) {
    Pending& p = messages_.at(id);
    Detach(id, p);
    p.sends = 0;
    p.state = State::kWaiting;
    p.time = now;
    waiting_.emplace(now, id);
  }
  return picked;
}

void GroupLedger::Advance() {
  auto it = transactions_.begin();
  while (it != transactions_.end()) {
    const auto [domain, sequence] = it->first;
    const bool open = open_.has_value() && open_->domain == domain &&
                      open_->sequence == sequence;
    if (it->second.unsettled == 0 && !open) {
      floor_[domain] = GtidEntry{it->second.server, sequence};
      it = transactions_.erase(it);
      continue;
    }
    // The rest of this domain waits for this transaction.
    it = transactions_.upper_bound(
        TxnKey{domain, std::numeric_limits<uint64_t>::max()});
  }
}

size_t GroupLedger::held(SubscriberId subscriber) const {
  auto it = held_.find(subscriber);
  return it == held_.end() ? 0 : it->second.size();
}

}  // namespace msgq
