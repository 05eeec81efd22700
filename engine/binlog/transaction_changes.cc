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
}

}  // namespace msgq
