// The partitioned message table of schema/message_table_partitioned.sql,
// for tests that need it with their own comment and partitions.
#ifndef MSGQ_TESTS_PARTITIONED_SCHEMA_H_
#define MSGQ_TESTS_PARTITIONED_SCHEMA_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_replace.h"

namespace msgq::testing {

// schema/message_table_partitioned.sql with its comment replaced and, when
// given, its partition list.
inline std::string PartitionedDdl(const std::string& comment,
                                  const std::string& partitions = "") {
  std::ifstream in(std::string(MSGQ_SOURCE_DIR) +
                   "/schema/message_table_partitioned.sql");
  std::stringstream file;
  file << in.rdbuf();
  std::string ddl = file.str();
  const size_t at = ddl.find("COMMENT 'vitess_message");
  const size_t end = ddl.find('\'', at + 9);
  ddl.replace(at, end + 1 - at, "COMMENT '" + comment + "'");
  if (!partitions.empty()) {
    ddl = absl::StrReplaceAll(
        ddl, {{"PARTITION pmax VALUES LESS THAN MAXVALUE", partitions}});
  }
  return ddl;
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_PARTITIONED_SCHEMA_H_
