// A downstream consumer of the installed msgq client library: parses
// --server (absl flags), connects a msgq::Client and a msgq::Subscriber's
// options, and calls ListTables. Against a closed port that is UNAVAILABLE;
// it prints "ListTables: <code>" and exits 0 when the library worked.
#include <msgq/client.h>
#include <msgq/subscriber.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"

ABSL_FLAG(std::string, server, "127.0.0.1:1", "msgqd address");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<std::unique_ptr<msgq::Client>> client =
      msgq::Client::Connect(absl::GetFlag(FLAGS_server));
  if (!client.ok()) {
    std::printf("Connect: %s\n", client.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::vector<msgq::TableStatus>> tables =
      (*client)->ListTables();
  std::printf("ListTables: %s\n",
              tables.ok()
                  ? "OK"
                  : absl::StatusCodeToString(tables.status().code()).c_str());
  return 0;
}
