// msgqd's --log_format and --log_level end to end.
#include <string>

#include "tests/fixture.h"
#include "tests/log_wait.h"

namespace msgq::testing {
namespace {

class LogFormatTest : public MsgqTest {};

TEST_F(LogFormatTest, JsonLinesAtInfo) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--log_format=json", "--http_listen=127.0.0.1:0"}));
  ASSERT_TRUE(LogShows(*server_,
                       "\"level\":\"info\",\"msg\":\"schema loaded: 1 message "
                       "table(s)\"}\n",
                       absl::Seconds(10)))
      << server_->Log();
  EXPECT_NE(server_->Log().find("{\"time\":\""), std::string::npos);
  // Scripts wait for this exact line, unchanged by the format.
  EXPECT_NE(server_->Log().find("\nmsgqd listening on 127.0.0.1:"),
            std::string::npos);
}

TEST_F(LogFormatTest, WarningLevelDropsInfoLines) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--log_level=warning", "--http_listen=127.0.0.1:0"}));
  ASSERT_EQ(FindTable(stub_.get(), "jobs").loaded(), true);
  EXPECT_EQ(server_->Log().find("schema loaded"), std::string::npos)
      << server_->Log();
}

TEST_F(LogFormatTest, BadValuesAreRefused) {
  auto server = Msgqd::Start(*db_, {"--databases=msgq", "--log_format=xml"});
  EXPECT_FALSE(server.ok());
}

}  // namespace
}  // namespace msgq::testing
