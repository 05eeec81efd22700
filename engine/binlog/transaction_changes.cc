#include "engine/binlog/transaction_changes.h"

#include <utility>

namespace msgq {

void TransactionChanges::DropImages(std::vector<RowChange>& changes) {
  for (RowChange& c : changes) c.row.reset();
}

void TransactionChanges::Append(std::vector<TableChanges>& to,
                                const std::string& db, const std::string& table,
                                std::vector<RowChange> changes) {
  TableChanges* entry = nullptr;
  for (TableChanges& t : to) {
    if (t.db == db && t.table == table) entry = &t;
  }
  if (entry == nullptr) {
    to.push_back(TableChanges{db, table, std::move(changes)});
    return;
  }
  for (RowChange& c : changes) entry->changes.push_back(std::move(c));
}

std::vector<TransactionChanges::TableChanges> TransactionChanges::Add(
    const std::string& db, const std::string& table,
    std::vector<RowChange> changes) {
  std::vector<TableChanges> out;
  if (changes.empty()) return out;
  if (xa_) {
    // Held whatever their number, ids only, until the outcome.
    if (xa_dropped_) return out;
    DropImages(changes);
    held_changes_ += changes.size();
    Append(open_, db, table, std::move(changes));
    if (held_changes_ > max_changes_) {
      xa_dropped_ = true;
      open_.clear();
      held_changes_ = 0;
    }
    return out;
  }
  if (spilled_) {
    DropImages(changes);
    out = TakeReady();
    Append(out, db, table, std::move(changes));
    return out;
  }
  for (const RowChange& c : changes) {
    if (c.row != nullptr) image_bytes_ += c.row->values.size();
  }
  held_changes_ += changes.size();
  Append(open_, db, table, std::move(changes));
  if (held_changes_ <= max_changes_ && image_bytes_ <= max_image_bytes_) {
    return out;
  }
  spilled_ = true;
  out = TakeReady();
  for (TableChanges& t : open_) {
    DropImages(t.changes);
    Append(out, t.db, t.table, std::move(t.changes));
  }
  open_.clear();
  held_changes_ = 0;
  image_bytes_ = 0;
  return out;
}

void TransactionChanges::Commit() {
  for (TableChanges& t : open_) {
    ready_changes_ += t.changes.size();
    Append(ready_, t.db, t.table, std::move(t.changes));
  }
  Abort();
}

std::vector<TransactionChanges::TableChanges> TransactionChanges::TakeReady() {
  std::vector<TableChanges> out = std::move(ready_);
  ready_.clear();
  ready_changes_ = 0;
  return out;
}

void TransactionChanges::Abort() {
  open_.clear();
  held_changes_ = 0;
  image_bytes_ = 0;
  spilled_ = false;
  xa_ = false;
  xa_dropped_ = false;
}

size_t TransactionChanges::Count(const std::vector<TableChanges>& tables) {
  size_t n = 0;
  for (const TableChanges& t : tables) n += t.changes.size();
  return n;
}

void TransactionChanges::StartXa() {
  Abort();
  xa_ = true;
}

void TransactionChanges::Prepare(const std::string& xid) {
  Prepared p;
  p.complete = !xa_dropped_;
  for (TableChanges& t : open_) DropImages(t.changes);
  p.tables = std::move(open_);
  p.changes = Count(p.tables);
  Abort();
  RollbackPrepared(xid);  // an id used again replaces the old entry
  if (prepared_changes_ + p.changes > max_changes_) {
    p.tables.clear();
    p.changes = 0;
    p.complete = false;
  }
  while (prepared_.size() >= kMaxPrepared && !prepared_order_.empty()) {
    RollbackPrepared(prepared_order_.front());
    prepared_order_.pop_front();
  }
  prepared_changes_ += p.changes;
  prepared_.emplace(xid, std::move(p));
  prepared_order_.push_back(xid);
  // Names of ended transactions linger in the order; keep it bounded too.
  if (prepared_order_.size() > 2 * kMaxPrepared) {
    std::deque<std::string> live;
    for (std::string& x : prepared_order_) {
      if (prepared_.contains(x)) live.push_back(std::move(x));
    }
    prepared_order_ = std::move(live);
  }
}

bool TransactionChanges::CommitPrepared(const std::string& xid) {
  auto it = prepared_.find(xid);
  if (it == prepared_.end()) return false;
  const bool complete = it->second.complete;
  prepared_changes_ -= it->second.changes;
  ready_changes_ += it->second.changes;
  for (TableChanges& t : it->second.tables) {
    Append(ready_, t.db, t.table, std::move(t.changes));
  }
  prepared_.erase(it);
  return complete;
}

void TransactionChanges::RollbackPrepared(const std::string& xid) {
  auto it = prepared_.find(xid);
  if (it == prepared_.end()) return;
  prepared_changes_ -= it->second.changes;
  prepared_.erase(it);
}

}  // namespace msgq
