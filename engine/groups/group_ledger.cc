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
                                                  size_t max) {
  std::vector<Taken> out;
  while (out.size() < max && !queue_.empty()) {
    auto first = queue_.begin();
    Pending& p = messages_.at(first->second);
    p.holder = subscriber;
    out.push_back(Taken{first->second, p.sends});
    ++p.sends;
    held_[subscriber].insert(first->second);
    queue_.erase(first);
  }
  return out;
}

void GroupLedger::Requeue(const std::string& id, Pending& p) {
  p.holder = 0;
  queue_.emplace(p.arrival, id);
}

size_t GroupLedger::Return(SubscriberId subscriber,
                           const std::vector<std::string>& ids) {
  auto held = held_.find(subscriber);
  if (held == held_.end()) return 0;
  size_t n = 0;
  for (const std::string& id : ids) {
    if (held->second.erase(id) == 0) continue;
    Requeue(id, messages_.at(id));
    ++n;
  }
  if (held->second.empty()) held_.erase(held);
  return n;
}

size_t GroupLedger::ReturnAll(SubscriberId subscriber) {
  auto held = held_.find(subscriber);
  if (held == held_.end()) return 0;
  const size_t n = held->second.size();
  for (const std::string& id : held->second) Requeue(id, messages_.at(id));
  held_.erase(held);
  return n;
}

int64_t GroupLedger::Ack(const std::vector<std::string>& ids) {
  int64_t settled = 0;
  for (const std::string& id : ids) {
    auto it = messages_.find(id);
    if (it == messages_.end()) continue;
    Pending& p = it->second;
    if (p.holder != 0) {
      auto held = held_.find(p.holder);
      held->second.erase(id);
      if (held->second.empty()) held_.erase(held);
    } else {
      queue_.erase(p.arrival);
    }
    auto txn = transactions_.find(p.txn);
    assert(txn != transactions_.end() && txn->second.unsettled > 0);
    --txn->second.unsettled;
    messages_.erase(it);
    ++settled;
  }
  if (settled > 0) Advance();
  return settled;
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
