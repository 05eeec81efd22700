#include "engine/queue/settlement_ledger.h"

#include <algorithm>

namespace msgq {

bool SettlementLedger::Acking(absl::string_view id) const {
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.acks > 0;
}

void SettlementLedger::SetOwed(Entry& e, int64_t epoch) {
  if (!e.owed.has_value()) ++owed_;
  e.owed = epoch;
}

void SettlementLedger::ClearOwed(Entry& e) {
  if (e.owed.has_value()) --owed_;
  e.owed.reset();
}

void SettlementLedger::SettleIfDone(const std::string& id,
                                    std::vector<std::string>* left) {
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.settled()) return;
  entries_.erase(it);
  if (left != nullptr) left->push_back(id);
}

void SettlementLedger::Sent(const std::string& id, int64_t epoch,
                            absl::Time at) {
  Entry& e = entries_[id];
  SetOwed(e, epoch);
  e.owed_at = at;
  oldest_owed_at_ = std::min(oldest_owed_at_, at);
}

std::vector<SettlementLedger::Postpone> SettlementLedger::TakePostpones(
    absl::Time sent_by) {
  std::vector<Postpone> taken;
  oldest_owed_at_ = absl::InfiniteFuture();
  if (owed_ == 0) return taken;
  for (auto& [id, e] : entries_) {
    if (!e.owed.has_value()) continue;
    if (e.owed_at > sent_by && e.acks == 0) {
      oldest_owed_at_ = std::min(oldest_owed_at_, e.owed_at);
      continue;
    }
    taken.emplace_back(id, *e.owed);
    ClearOwed(e);
    ++e.writing;
    ++writing_;
  }
  return taken;
}

std::vector<std::string> SettlementLedger::PostponesDone(
    const std::vector<Postpone>& taken, Outcome outcome) {
  std::vector<std::string> left;
  for (const auto& [id, epoch] : taken) {
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.writing == 0) continue;
    Entry& e = it->second;
    --e.writing;
    --writing_;
    // Still delivered and still unsettled in MySQL: owe it again, unless a
    // newer send owes its own postpone. (Also while an ack runs: the ack may
    // fail, and a postpone after a committed ack changes nothing.)
    if (outcome == Outcome::kTransient && !e.owed.has_value()) {
      SetOwed(e, epoch);
      oldest_owed_at_ = std::min(oldest_owed_at_, e.owed_at);
    }
    SettleIfDone(id, &left);
  }
  return left;
}

SettlementLedger::SettleTicket SettlementLedger::BeginAck(
    std::vector<std::string> ids) {
  SettleTicket ticket;
  for (const std::string& id : ids) {
    Entry& e = entries_[id];
    ++e.acks;
    if (e.owed.has_value()) {
      ticket.cancelled.emplace_back(id, *e.owed);
      ClearOwed(e);
    }
  }
  ticket.ids = std::move(ids);
  return ticket;
}

SettlementLedger::SettleTicket SettlementLedger::BeginHold(
    std::vector<std::string> ids) {
  SettleTicket ticket;
  for (const std::string& id : ids) ++entries_[id].acks;
  ticket.ids = std::move(ids);
  return ticket;
}

std::vector<std::string> SettlementLedger::SettleDone(
    const SettleTicket& ticket, Outcome outcome) {
  std::vector<std::string> left;
  if (outcome != Outcome::kCommitted) {
    for (const auto& [id, epoch] : ticket.cancelled) {
      auto it = entries_.find(id);
      if (it != entries_.end() && !it->second.owed.has_value()) {
        SetOwed(it->second, epoch);
        oldest_owed_at_ = std::min(oldest_owed_at_, it->second.owed_at);
      }
    }
  }
  for (const std::string& id : ticket.ids) {
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.acks == 0) continue;
    --it->second.acks;
    SettleIfDone(id, &left);
  }
  return left;
}

bool SettlementLedger::HandBack(const std::string& id,
                                std::vector<std::string>* left) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return true;  // its postpone already committed
  if (it->second.acks > 0) return false;  // the ack settles it
  ClearOwed(it->second);
  SettleIfDone(id, left);
  return true;
}

}  // namespace msgq
