// Rows spread over keys in a shuffled order, for the tests of per-key flow
// control (msgq_order_by, msgq_concurrency_by): `keys_per` messages for
// each of `key_count` keys, ids 1..N in a random interleaving of keys
// fixed by `seed`.
//
//   const KeyedRows rows(30, 40, 20261127);
//   ASSERT_NO_FATAL_FAILURE(Exec(rows.Insert("msgq.q", "ckey", 1, 600)));
//   Ledger ledger(rows.key_of());
//
// Thread-compatible.
#ifndef MSGQ_TESTS_KEYED_ROWS_H_
#define MSGQ_TESTS_KEYED_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace msgq::testing {

class KeyedRows {
 public:
  KeyedRows(int key_count, int per_key, uint32_t seed) {
    for (int k = 0; k < key_count; ++k) keys_.insert(keys_.end(), per_key, k);
    std::mt19937 rng(seed);
    std::shuffle(keys_.begin(), keys_.end(), rng);
    for (size_t i = 0; i < keys_.size(); ++i) {
      key_of_[std::to_string(i + 1)] = keys_[i];
    }
  }

  int size() const { return static_cast<int>(keys_.size()); }
  // The key of id `id` (1-based).
  int key(int id) const { return keys_[id - 1]; }
  // Id (as text) -> key.
  const std::map<std::string, int>& key_of() const { return key_of_; }
  // INSERT INTO `table` (id, `column`) of ids from..to, with their keys.
  std::string Insert(const std::string& table, const std::string& column,
                     int from, int to) const {
    std::string sql =
        absl::StrCat("INSERT INTO ", table, " (id, ", column, ") VALUES ");
    for (int i = from; i <= to; ++i) {
      absl::StrAppend(&sql, i > from ? "," : "", "(", i, ",", key(i), ")");
    }
    return sql;
  }

 private:
  std::vector<int> keys_;
  std::map<std::string, int> key_of_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_KEYED_ROWS_H_
