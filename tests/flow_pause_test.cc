// Pause / resume end to end (docs/flow-control.md#pausing-a-table): a real
// MariaDB, real msgqd processes, real streams and the real msgq CLI.
#include <stdio.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif

namespace msgq::testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<std::string> Ids(int from, int to) {
  std::vector<std::string> ids;
  for (int i = from; i <= to; ++i) ids.push_back(std::to_string(i));
  return ids;
}

struct ToolResult {
  int code = -1;
  std::string output;  // stdout and stderr
};

class FlowPauseTest : public MsgqTest {
 protected:
  // Runs the msgq CLI against `address` with `args`.
  ToolResult Tool(const std::string& address,
                  const std::vector<std::string>& args) {
    std::string cmd = absl::StrCat(MSGQ_CLI_PATH, " --server=", address);
    for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
    absl::StrAppend(&cmd, " 2>&1");
    ToolResult r;
    FILE* f = popen(cmd.c_str(), "r");
    if (f == nullptr) return r;
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
    const int status = pclose(f);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }
};

TEST_F(FlowPauseTest, PauseHoldsAcrossRestartAndResumeSendsTheBacklog) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.1"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  {
    StreamCollector s(stub_.get(), "q");
    ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 10));
    ASSERT_TRUE(s.WaitForRows(10, absl::Seconds(10)));

    ToolResult paused = Tool(server_->address(), {"pause", "q"});
    EXPECT_EQ(paused.code, 0) << paused.output;
    EXPECT_EQ(paused.output, "paused q\n");
    EXPECT_TRUE(FindTable(stub_.get(), "q").paused());
    EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.msgq_paused WHERE keyspace = "
                  "'msgq' AND name = 'q'"),
              1);
    ToolResult tables = Tool(server_->address(), {"tables"});
    EXPECT_THAT(tables.output, HasSubstr("paused"));

    // Enqueueing goes on; nothing is sent (10 poll intervals pass).
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", 11, 20));
    EXPECT_FALSE(s.WaitForRows(11, absl::Seconds(1)));
    // Acks still work while paused.
    int64_t acked = 0;
    grpc::Status ack = AckIds(stub_.get(), "q", Ids(1, 10), &acked);
    ASSERT_TRUE(ack.ok()) << ack.error_message();
    EXPECT_EQ(acked, 10);
    EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT NULL"),
              10);
    EXPECT_EQ(s.row_count(), 10u);
  }

  // A restarted msgqd starts paused: nothing is sent before the resume.
  ASSERT_EQ(server_->Terminate(), 0);
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  EXPECT_TRUE(FindTable(stub_.get(), "q").paused());
  EXPECT_FALSE(s.WaitForRows(1, absl::Seconds(1)));

  ToolResult resumed = Tool(server_->address(), {"resume", "q"});
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_EQ(resumed.output, "resumed q\n");
  ASSERT_TRUE(s.WaitForRows(10, absl::Seconds(10)));
  EXPECT_THAT(s.ids(), ElementsAreArray(Ids(11, 20)));
  EXPECT_FALSE(FindTable(stub_.get(), "q").paused());
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.msgq_paused"), 0);
}

TEST_F(FlowPauseTest, BadTablesAreRefusedWithClearErrors) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(Eventually([&] { return FindTable(stub_.get(), "q").loaded(); },
                         absl::Seconds(10)));
  ToolResult missing = Tool(server_->address(), {"pause", "nosuch"});
  EXPECT_EQ(missing.code, 4) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("`nosuch` not found"));

  v1::SetPausedRequest request;
  request.set_paused(true);
  v1::SetPausedResponse response;
  grpc::ClientContext context;
  grpc::Status empty = stub_->SetPaused(&context, request, &response);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(empty.error_message(), "table name is empty");

  ToolResult usage = Tool(server_->address(), {"resume"});
  EXPECT_EQ(usage.code, 2) << usage.output;
  EXPECT_THAT(usage.output, HasSubstr("missing TABLE"));
  // Resuming a table that was never paused is fine (no msgq_paused yet).
  ToolResult resumed = Tool(server_->address(), {"resume", "q"});
  EXPECT_EQ(resumed.code, 0) << resumed.output;
}

// Another msgqd serving the table learns of the pause at its next schema
// reload (200 ms here), and of the resume likewise.
TEST_F(FlowPauseTest, OtherInstancesLearnOfThePauseAtTheirNextReload) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.1"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto other = Msgqd::Start(
      *db_, {"--databases=msgq", "--schema_reload_interval=200ms"});
  ASSERT_TRUE(other.ok()) << other.status();
  auto other_stub = (*other)->Stub();
  ASSERT_TRUE(
      Eventually([&] { return FindTable(other_stub.get(), "q").loaded(); },
                 absl::Seconds(10)));

  // The pause and the resume go to the standby (leases are on by default:
  // the first msgqd owns the table); the owner learns of them.
  ToolResult paused = Tool((*other)->address(), {"pause", "q"});
  ASSERT_EQ(paused.code, 0) << paused.output;
  EXPECT_TRUE(Eventually([&] { return FindTable(stub_.get(), "q").paused(); },
                         absl::Seconds(5)));
  // The owner sends nothing.
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  EXPECT_FALSE(s.WaitForRows(1, absl::Seconds(1)));

  ToolResult resumed = Tool((*other)->address(), {"resume", "q"});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  ASSERT_TRUE(s.WaitForRows(5, absl::Seconds(10)));
}

}  // namespace
}  // namespace msgq::testing
