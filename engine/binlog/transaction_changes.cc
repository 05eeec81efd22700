#include "engine/binlog/transaction_changes.h"

#include <utility>

namespace msgq {

void TransactionChanges::DropImages(std::vector<RowChange>& changes) {
  for (RowChange& c : changes) c.row.reset();
}

std::vector<TransactionChanges::TableChanges> TransactionChanges::Add(
    const std::string& db, const std::string& table,
    std::vector<RowChange> changes) {
  std::vector<TableChanges> out;
  if (changes.empty()) return out;
  if (spilled_) {
    DropImages(changes);
    out.push_back(TableChanges{db, table, std::move(changes)});
    return out;
  }
  for (const RowChange& c : changes) {
    if (c.row != nullptr) image_bytes_ += c.row->values.size();
  }
  held_changes_ += changes.size();
  TableChanges* entry = nullptr;
  for (TableChanges& t : tables_) {
    if (t.db == db && t.table == table) entry = &t;
  }
  if (entry == nullptr) {
    entry = &tables_.emplace_back(TableChanges{db, table, {}});
  }
  for (RowChange& c : changes) entry->changes.push_back(std::move(c));
  if (held_changes_ <= max_changes_ && image_bytes_ <= max_image_bytes_) {
    return out;
  }
  spilled_ = true;
  out = std::move(tables_);
  for (TableChanges& t : out) DropImages(t.changes);
  tables_.clear();
  held_changes_ = 0;
  image_bytes_ = 0;
  return out;
}

std::vector<TransactionChanges::TableChanges> TransactionChanges::Commit() {
  std::vector<TableChanges> out = std::move(tables_);
  Clear();
  return out;
}

void TransactionChanges::Clear() {
  tables_.clear();
  held_changes_ = 0;
  image_bytes_ = 0;
  spilled_ = false;
}

}  // namespace msgq
