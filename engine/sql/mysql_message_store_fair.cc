// MysqlMessageStore::FairPollDue: the poll of a msgq_fair_by table
// (fair_poll.h has the statements and the index they want).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "engine/queue/fair_key.h"
#include "engine/sql/mysql_message_store.h"

namespace msgq {
namespace {

// One page of keys with due rows (`keys_sql`, FairPollSql::KeysSql of at
// most `page_size` keys), as slices to read; `after` moves to the page's
// last key, or back to the first key when the page is the last. MySQL's
// error as it is.
absl::StatusOr<std::vector<FairPollSql::Slice>> ReadKeyPage(
    MysqlConnection* conn, const std::string& keys_sql, int64_t page_size,
    std::optional<std::string>& after, bool* more_keys) {
  std::vector<FairPollSql::Slice> open;
  absl::Status status = conn->ForEachRow(
      keys_sql, [&open](char** values, unsigned long* lengths, unsigned int) {
        FairPollSql::Slice& s = open.emplace_back();
        if (values[0] != nullptr) s.key.emplace(values[0], lengths[0]);
      });
  if (!status.ok()) return status;
  *more_keys = static_cast<int64_t>(open.size()) >= page_size;
  if (*more_keys) {
    after = open.back().key;
  } else {
    after.reset();  // the next page starts at the first key again
  }
  return open;
}

// Round-robin over the keys: the first row of every key, then the second,
// ... (`rank[i]` is out[i]'s place within its key), at most `limit`, so a
// cache that fills part way still holds every key's best rows.
std::vector<Message> InterleaveKeys(std::vector<Message> out,
                                    const std::vector<int64_t>& rank,
                                    int64_t limit) {
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&rank](size_t a, size_t b) { return rank[a] < rank[b]; });
  std::vector<Message> sorted;
  sorted.reserve(std::min<size_t>(out.size(), static_cast<size_t>(limit)));
  for (size_t i : order) {
    if (static_cast<int64_t>(sorted.size()) >= limit) break;
    sorted.push_back(std::move(out[i]));
  }
  return sorted;
}

}  // namespace

absl::Status MysqlMessageStore::LearnFairIndex(MysqlConnection* conn) {
  const std::string sql = absl::StrCat(
      "SELECT `INDEX_NAME` FROM information_schema.STATISTICS WHERE "
      "`TABLE_SCHEMA` = ",
      conn->QuoteString(table_.keyspace),
      " AND `TABLE_NAME` = ", conn->QuoteString(table_.name),
      " AND ((`SEQ_IN_INDEX` = 1 AND `COLUMN_NAME` = 'time_acked') OR "
      "(`SEQ_IN_INDEX` = 2 AND `COLUMN_NAME` = ",
      conn->QuoteString(key_column_),
      ")) GROUP BY `INDEX_NAME` HAVING COUNT(*) = 2 ORDER BY `INDEX_NAME` "
      "LIMIT 1");
  std::string name;
  absl::Status status = conn->ForEachRow(
      sql, [&name](char** values, unsigned long* lengths, unsigned int) {
        if (values[0] != nullptr) name.assign(values[0], lengths[0]);
      });
  if (!status.ok()) return Check(status);
  fair_index_ = std::move(name);
  fair_index_known_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::FairPollDue(
    int64_t limit, const KeyRoom* room) {
  limit = std::clamp<int64_t>(limit, 0, kMaxPollRows);
  std::vector<Message> out;
  if (limit == 0) return out;
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  const size_t max_bytes = StatementLimit((*conn)->max_allowed_packet());
  if (!fair_index_known_) {
    if (absl::Status s = LearnFairIndex(*conn); !s.ok()) return s;
  }
  // At least 2, so that a full page never ends with NULL (first in order).
  const int64_t page_size = std::clamp<int64_t>(limit, 2, kFairKeysPerPage);
  absl::flat_hash_set<std::string> seen;
  std::vector<int64_t> rank;  // rank of out[i] within its key
  size_t bytes_left = limits_.max_read_bytes;
  absl::flat_hash_map<std::string, int64_t> per_key;  // rows read per key
  for (int page = 0; page < kFairPagesPerPoll; ++page) {
    absl::StatusOr<std::string> keys_sql =
        fair_sql_->KeysSql(fair_after_, page_size);
    if (!keys_sql.ok()) {  // a key read back that the column cannot hold
      fair_after_.reset();
      return keys_sql.status();
    }
    bool more_keys = false;
    absl::StatusOr<std::vector<FairPollSql::Slice>> keys =
        ReadKeyPage(*conn, *keys_sql, page_size, fair_after_, &more_keys);
    if (!keys.ok()) return Check(keys.status());
    std::vector<FairPollSql::Slice> open = *std::move(keys);
    for (int pass = 0;
         pass < kFairPassesPerPage && !open.empty() &&
         static_cast<int64_t>(out.size()) < limit && bytes_left > 0;
         ++pass) {
      const int64_t left = limit - static_cast<int64_t>(out.size());
      const int64_t n = static_cast<int64_t>(open.size());
      const int64_t share = (left + n - 1) / n;
      // msgq_concurrency_by: never past what the key may still send.
      for (FairPollSql::Slice& s : open) {
        s.count = room == nullptr
                      ? share
                      : std::min(share, room->For(s.key) - s.offset);
      }
      std::erase_if(open,
                    [](const FairPollSql::Slice& s) { return s.count <= 0; });
      if (open.empty()) break;
      absl::flat_hash_map<std::string, int64_t> got;
      for (const std::string& sql :
           fair_sql_->RowsSql(open, std::nullopt, max_bytes, fair_index_)) {
        if (bytes_left == 0) break;
        absl::StatusOr<std::vector<Message>> rows =
            ReadMessages(sql, left, &bytes_left);
        if (!rows.ok()) {
          fair_index_known_ = false;  // e.g. the index was dropped
          return rows.status();
        }
        for (Message& m : *rows) {
          if (!seen.insert(m.id).second) continue;
          const std::string tag = FairKeyTag(m.fair_key);
          ++got[tag];
          rank.push_back(per_key[tag]++);
          out.push_back(std::move(m));
        }
      }
      // Keys that filled their share may have more: they share the room
      // left in the next pass; the others are done.
      std::vector<FairPollSql::Slice> next;
      for (FairPollSql::Slice& s : open) {
        const auto it = got.find(FairKeyTag(s.key));
        if (it == got.end() || it->second < s.count) continue;
        s.offset += s.count;
        next.push_back(std::move(s));
      }
      open = std::move(next);
    }
    if (!more_keys || static_cast<int64_t>(out.size()) >= limit ||
        bytes_left == 0) {
      break;
    }
  }
  return InterleaveKeys(std::move(out), rank, limit);
}

}  // namespace msgq
