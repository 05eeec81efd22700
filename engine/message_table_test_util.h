// Test helpers shared by the message_table_*_test.cc files (test-only): the
// table comment carrying every required directive, a Column shorthand, the
// schema/message_table.sql layout as information_schema columns, and the
// names of a column list. Header-only; nothing here talks to MySQL.
#ifndef MSGQ_ENGINE_MESSAGE_TABLE_TEST_UTIL_H_
#define MSGQ_ENGINE_MESSAGE_TABLE_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "engine/message_table.h"

namespace msgq::message_table_test {

inline constexpr char kComment[] =
    "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
    "vt_cache_size=10000,vt_poller_interval=30";

inline Column Col(std::string name, std::string data_type,
                  std::string column_type = "") {
  if (column_type.empty()) column_type = data_type;
  return Column{std::move(name), std::move(data_type), std::move(column_type)};
}

// The schema/message_table.sql layout: id, bookkeeping, then app columns.
inline std::vector<Column> DemoColumns() {
  return {Col("id", "bigint", "bigint(20)"),
          Col("priority", "tinyint", "tinyint(4)"),
          Col("epoch", "bigint", "bigint(20)"),
          Col("time_next", "bigint", "bigint(20)"),
          Col("time_acked", "bigint", "bigint(20)"),
          Col("message", "json", "longtext")};
}

inline std::vector<std::string> Names(const std::vector<Column>& columns) {
  std::vector<std::string> names;
  for (const Column& c : columns) names.push_back(c.name);
  return names;
}

}  // namespace msgq::message_table_test

#endif  // MSGQ_ENGINE_MESSAGE_TABLE_TEST_UTIL_H_
