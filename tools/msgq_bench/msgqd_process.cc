#include "tools/msgq_bench/msgqd_process.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq::bench {

absl::StatusOr<v1::TableStatus> WaitForTable(const std::string& address,
                                             const std::string& keyspace,
                                             const std::string& table,
                                             absl::Duration timeout) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Messaging::NewStub(channel);
  const absl::Time deadline = absl::Now() + timeout;
  std::string last_error = "not listed";
  while (absl::Now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1::ListTablesRequest req;
    v1::ListTablesResponse resp;
    grpc::Status s = stub->ListTables(&ctx, req, &resp);
    if (s.ok()) {
      for (const v1::TableStatus& t : resp.tables()) {
        if (t.keyspace() != keyspace || t.name() != table) continue;
        if (t.loaded()) return t;
        last_error = t.error();
      }
    } else {
      last_error = s.error_message();
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("msgqd at ", address, " did not load ", keyspace, ".", table,
                   ": ", last_error));
}

}  // namespace msgq::bench
