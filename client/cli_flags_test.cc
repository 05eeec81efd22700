#include "client/cli_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Values {
  std::string server = "127.0.0.1:15999";
  bool json = false;
  int64_t count = 0;
  absl::Duration timeout = absl::Seconds(10);
};

FlagParser MakeParser(Values* v) {
  FlagParser flags;
  flags.AddString("server", &v->server, "HOST:PORT", "server");
  flags.AddBool("json", &v->json, "json output");
  flags.AddCount("count", &v->count, "N", "how many");
  flags.AddDuration("timeout", &v->timeout, "deadline");
  return flags;
}

TEST(FlagParserTest, ParsesEveryFormAnywhere) {
  Values v;
  FlagParser flags = MakeParser(&v);
  absl::StatusOr<std::vector<std::string>> args =
      flags.Parse({"orders", "--server", "h:1", "--json", "--count=5", "x",
                   "--timeout=250ms"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(*args, ElementsAre("orders", "x"));
  EXPECT_EQ(v.server, "h:1");
  EXPECT_TRUE(v.json);
  EXPECT_EQ(v.count, 5);
  EXPECT_EQ(v.timeout, absl::Milliseconds(250));
  EXPECT_FALSE(flags.help());
}

TEST(FlagParserTest, BoolTakesExplicitValues) {
  Values v;
  v.json = true;
  FlagParser flags = MakeParser(&v);
  ASSERT_TRUE(flags.Parse({"--json=false"}).ok());
  EXPECT_FALSE(v.json);
  EXPECT_EQ(flags.Parse({"--json=maybe"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FlagParserTest, DoubleDashEndsFlags) {
  Values v;
  FlagParser flags = MakeParser(&v);
  absl::StatusOr<std::vector<std::string>> args =
      flags.Parse({"t", "--", "-5", "--json"});
  ASSERT_TRUE(args.ok());
  EXPECT_THAT(*args, ElementsAre("t", "-5", "--json"));
  EXPECT_FALSE(v.json);
}

TEST(FlagParserTest, StopAtPositionalLeavesTheRest) {
  Values v;
  FlagParser flags = MakeParser(&v);
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(
      {"--server=a:1", "tail", "--unknown", "t"}, /*stop_at_positional=*/true);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(*args, ElementsAre("tail", "--unknown", "t"));
  EXPECT_EQ(v.server, "a:1");
}

TEST(FlagParserTest, HelpIsRecognized) {
  Values v;
  FlagParser flags = MakeParser(&v);
  ASSERT_TRUE(flags.Parse({"-h"}).ok());
  EXPECT_TRUE(flags.help());
}

TEST(FlagParserTest, ReportsBadFlagsByName) {
  struct Case {
    std::vector<std::string> args;
    const char* mentions;
  };
  const Case cases[] = {
      {{"--nope"}, "--nope"},
      {{"-x"}, "-x"},
      {{"--server"}, "needs a value"},
      {{"--count=-1"}, "--count"},
      {{"--count=abc"}, "--count"},
      {{"--timeout=0s"}, "--timeout"},
      {{"--timeout=soon"}, "--timeout"},
  };
  for (const Case& c : cases) {
    Values v;
    FlagParser flags = MakeParser(&v);
    absl::Status status = flags.Parse(c.args).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.args[0];
    EXPECT_THAT(status.message(), HasSubstr(c.mentions));
  }
}

TEST(FlagParserTest, UsageListsFlagsWithDefaults) {
  Values v;
  FlagParser flags = MakeParser(&v);
  const std::string usage = flags.Usage();
  EXPECT_THAT(usage, HasSubstr("--server=HOST:PORT"));
  EXPECT_THAT(usage, HasSubstr("(default: 127.0.0.1:15999)"));
  EXPECT_THAT(usage, HasSubstr("--json "));
  EXPECT_THAT(usage, HasSubstr("--timeout=DURATION"));
  EXPECT_THAT(usage, HasSubstr("(default: 10s)"));
  EXPECT_THAT(usage, HasSubstr("--help"));
}

TEST(FlagParserTest, SecondsTakeNumbersOrDurationsAndMayBeAbsent) {
  std::optional<absl::Duration> delay;
  FlagParser flags;
  flags.AddSeconds("delay", &delay, "wait");
  ASSERT_TRUE(flags.Parse({}).ok());
  EXPECT_EQ(delay, std::nullopt);
  ASSERT_TRUE(flags.Parse({"--delay=1.5"}).ok());
  EXPECT_EQ(delay, absl::Milliseconds(1500));
  ASSERT_TRUE(flags.Parse({"--delay", "0"}).ok());
  EXPECT_EQ(delay, absl::ZeroDuration());
  ASSERT_TRUE(flags.Parse({"--delay=250ms"}).ok());
  EXPECT_EQ(delay, absl::Milliseconds(250));
  for (const char* bad : {"--delay=-1", "--delay=soon", "--delay=-2s",
                          "--delay=inf", "--delay="}) {
    absl::StatusOr<std::vector<std::string>> r = flags.Parse({bad});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("flag '--delay'")) << bad;
  }
  EXPECT_THAT(flags.Usage(), HasSubstr("--delay=S"));
}

TEST(FlagParserTest, NoArgumentsIsFine) {
  Values v;
  FlagParser flags = MakeParser(&v);
  absl::StatusOr<std::vector<std::string>> args = flags.Parse({});
  ASSERT_TRUE(args.ok());
  EXPECT_THAT(*args, IsEmpty());
}

}  // namespace
}  // namespace msgq
