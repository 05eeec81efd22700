#include "tools/msgq_bench/msgqd_process.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq::bench {

absl::StatusOr<v1::TableStatus> WaitForTable(const std::string& address,
                                             const std::string& keyspace,
                                             const std::string& table,
                                             absl::Duration timeout) {
  absl::StatusOr<std::vector<v1::TableStatus>> all =
      WaitForTables(address, keyspace, {table}, timeout);
  if (!all.ok()) return all.status();
  return all->front();
}

absl::StatusOr<std::vector<v1::TableStatus>> WaitForTables(
    const std::string& address, const std::string& keyspace,
    const std::vector<std::string>& tables, absl::Duration timeout) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Messaging::NewStub(channel);
  const absl::Time deadline = absl::Now() + timeout;
  std::string last_error = "not listed";
  size_t missing = tables.size();
  std::string first_missing = tables.empty() ? "" : tables.front();
  while (absl::Now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1::ListTablesRequest req;
    v1::ListTablesResponse resp;
    grpc::Status s = stub->ListTables(&ctx, req, &resp);
    if (s.ok()) {
      std::unordered_map<std::string, const v1::TableStatus*> by_name;
      for (const v1::TableStatus& t : resp.tables()) {
        if (t.keyspace() == keyspace) by_name[t.name()] = &t;
      }
      std::vector<v1::TableStatus> loaded;
      loaded.reserve(tables.size());
      missing = 0;
      for (const std::string& name : tables) {
        auto it = by_name.find(name);
        if (it != by_name.end() && it->second->loaded()) {
          loaded.push_back(*it->second);
          continue;
        }
        if (missing++ == 0) {
          first_missing = name;
          last_error = it == by_name.end() ? "not listed" : it->second->error();
        }
      }
      if (missing == 0) return loaded;
    } else {
      last_error = s.error_message();
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  const std::string which =
      tables.size() == 1
          ? ""
          : absl::StrCat(missing, " of ", tables.size(), " tables, the first ");
  return absl::DeadlineExceededError(
      absl::StrCat("msgqd at ", address, " did not load ", which, keyspace, ".",
                   first_missing, ": ", last_error));
}

}  // namespace msgq::bench
