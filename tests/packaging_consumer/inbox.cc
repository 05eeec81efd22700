// A downstream user of the installed msgq::inbox library: an Inbox on a
// closed port, whose EnsureTable() cannot connect (UNAVAILABLE, from
// MariaDB Connector/C). Prints "EnsureTable: <code>" and exits 0 when the
// library worked.
#include <msgq/inbox.h>

#include <cstdio>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

int main() {
  absl::StatusOr<std::unique_ptr<msgq::Inbox>> inbox =
      msgq::Inbox::Create({.connection = {.host = "127.0.0.1",
                                          .port = 1,
                                          .user = "app",
                                          .database = "app",
                                          .connect_timeout = absl::Seconds(5)},
                           .source = "packaging"});
  if (!inbox.ok()) {
    std::printf("Create: %s\n", inbox.status().ToString().c_str());
    return 1;
  }
  std::printf("EnsureTable: %s\n",
              absl::StatusCodeToString((*inbox)->EnsureTable().code()).c_str());
  return 0;
}
