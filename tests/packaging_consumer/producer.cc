// A downstream user of the installed msgq::producer library: enqueues on
// no connection, which Enqueue refuses before any statement with
// INVALID_ARGUMENT. Prints "Enqueue: <code> <message>" and exits 0 when the
// library worked.
#include <msgq/producer.h>

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

int main() {
  absl::StatusOr<std::string> id =
      msgq::Enqueue(nullptr, "events", {.body = R"({"order": 42})"});
  std::printf("Enqueue: %s %s\n",
              absl::StatusCodeToString(id.status().code()).c_str(),
              std::string(id.status().message()).c_str());
  return 0;
}
