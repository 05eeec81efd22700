#include "engine/binlog/dump_error.h"

#include <mysqld_error.h>

#include "absl/strings/str_cat.h"

namespace msgq {

absl::Status DumpError(unsigned int code, const std::string& message) {
  if (code == ER_SPECIFIC_ACCESS_DENIED_ERROR ||
      code == ER_ACCESS_DENIED_ERROR || code == ER_DBACCESS_DENIED_ERROR ||
      message.find("Access denied") != std::string::npos) {
    return absl::FailedPreconditionError(absl::StrCat(
        "missing privilege to read the binlog (", message,
        "); GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the msgqd "
        "user for instant delivery"));
  }
  if (code == ER_SLAVE_SAME_ID ||
      message.find("same server_uuid/server_id") != std::string::npos) {
    return absl::AlreadyExistsError(message);
  }
  if (code == ER_MASTER_FATAL_ERROR_READING_BINLOG) {
    return absl::OutOfRangeError(message);
  }
  return absl::UnavailableError(absl::StrCat("binlog stream ended: ", message));
}

}  // namespace msgq
