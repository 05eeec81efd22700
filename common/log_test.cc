#include "common/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

// Points stderr at a pipe for the test's lifetime and restores it after.
class StderrPipe {
 public:
  StderrPipe() {
    EXPECT_EQ(pipe(fds_), 0);
    saved_ = dup(STDERR_FILENO);
    dup2(fds_[1], STDERR_FILENO);
  }
  ~StderrPipe() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    close(fds_[1]);
    close(fds_[0]);
  }
  // Reads what is there without blocking.
  std::string Drain() {
    fcntl(fds_[0], F_SETFL, O_NONBLOCK);
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = read(fds_[0], buf, sizeof buf)) > 0) out.append(buf, n);
    return out;
  }

 private:
  int fds_[2];
  int saved_;
};

TEST(LogTest, LinesReachStderrInOrder) {
  StderrPipe pipe;
  LogInfo("first ", 1);
  LogWarning("second");
  ASSERT_TRUE(FlushLogs(absl::Seconds(10)));
  const std::string out = pipe.Drain();
  const size_t first = out.find(" first 1\n");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_EQ(out[0], 'I');
  const size_t second = out.find(" second\n");
  ASSERT_NE(second, std::string::npos) << out;
  EXPECT_LT(first, second);
  EXPECT_EQ(out[out.rfind('\n', second) + 1], 'W');
}

// A stalled stderr (a pipe nobody reads) never blocks a caller: lines beyond
// the queue are dropped, counted, and reported once stderr moves again.
TEST(LogTest, StalledStderrNeverBlocksAndDropsAreReported) {
  StderrPipe pipe;
  const int64_t dropped_before = DroppedLogLines();
  const std::string filler(1000, 'x');
  const absl::Time start = absl::Now();
  // 64 KiB of pipe buffer, the lines the writer took from the queue before
  // the pipe filled (up to a whole queue: it takes all at once, and on a
  // loaded machine it may wake late), the queue's 10,000 lines, then more.
  for (size_t i = 0; i < 2 * kMaxQueuedLogLines + 2000; ++i) LogInfo(filler);
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_GT(DroppedLogLines(), dropped_before);
  // Unblock the writer, and see the report of the loss.
  std::string out;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline &&
         out.find("line(s) dropped: stderr was not being read") ==
             std::string::npos) {
    out += pipe.Drain();
    LogInfo("after");
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_NE(out.find("line(s) dropped: stderr was not being read"),
            std::string::npos);
  while (!FlushLogs(absl::Milliseconds(10))) pipe.Drain();
}

TEST(LogTest, FormatsTextAndJsonLines) {
  const absl::Time t = absl::FromUnixMillis(1767323045678);  // 2026-01-02
  EXPECT_EQ(FormatLogLine(LogFormat::kText, "W", t, "table `a`.`b`: slow"),
            "W2026-01-02 03:04:05.678 table `a`.`b`: slow\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, "I", t, "say \"hi\"\n\tnow"),
            "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"info\","
            "\"msg\":\"say \\\"hi\\\"\\n\\tnow\"}\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, "E", t, "bad \xff byte"),
            "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"error\","
            "\"msg\":\"bad \xef\xbf\xbd byte\"}\n");
}

TEST(LogTest, ParsesFormatAndLevel) {
  absl::StatusOr<LogOptions> o = ParseLogOptions("json", "warning");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->format, LogFormat::kJson);
  EXPECT_EQ(o->min_level, LogLevel::kWarning);
  o = ParseLogOptions("text", "info");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->format, LogFormat::kText);
  EXPECT_EQ(o->min_level, LogLevel::kInfo);
  EXPECT_EQ(ParseLogOptions("xml", "info").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLogOptions("text", "debug").status().message(),
            "--log_level must be 'info', 'warning' or 'error', not 'debug'");
}

TEST(LogTest, LevelFiltersAndJsonIsWritten) {
  StderrPipe pipe;
  SetLogOptions({LogFormat::kJson, LogLevel::kWarning});
  LogInfo("hidden");
  LogWarning("shown");
  ASSERT_TRUE(FlushLogs(absl::Seconds(10)));
  SetLogOptions({});
  const std::string out = pipe.Drain();
  EXPECT_EQ(out.find("hidden"), std::string::npos) << out;
  EXPECT_NE(out.find("\"level\":\"warning\",\"msg\":\"shown\"}\n"),
            std::string::npos)
      << out;
}

TEST(LogTest, JsonLinesAboutATableCarryItsNames) {
  const absl::Time t = absl::FromUnixMillis(1767323045678);
  const LogTable jobs{"msgq", "jobs"};
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, "E", t, "poll failed", jobs),
            "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"error\","
            "\"keyspace\":\"msgq\",\"table\":\"jobs\",\"msg\":\"poll "
            "failed\"}\n");
  // Text lines are unchanged: the message names the table itself.
  EXPECT_EQ(FormatLogLine(LogFormat::kText, "E", t, "poll failed", jobs),
            "E2026-01-02 03:04:05.678 poll failed\n");
}

// First at once; repeats within the minute counted; the first after the
// minute written with the count (held back + itself); keys independent.
TEST(LogTest, RepeatLimiterWritesFirstThenOneLineAMinuteWithTheCount) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  LogRepeatLimiter limiter(&clock);
  EXPECT_EQ(limiter.Admit("a", "down"), "down");
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(limiter.Admit("a", "down"), std::nullopt);
  EXPECT_EQ(limiter.Admit("b", "down"), "down");
  clock.Advance(absl::Seconds(49));
  EXPECT_EQ(limiter.Admit("a", "down"), std::nullopt);  // 59 s after
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(limiter.Admit("a", "down"), "down (repeated 3 times)");
  EXPECT_EQ(limiter.Admit("a", "down"), std::nullopt);
  clock.Advance(absl::Minutes(1));
  EXPECT_EQ(limiter.Admit("a", "down"), "down (repeated 2 times)");
  // Nothing held back: after the minute the plain message again.
  clock.Advance(absl::Minutes(1));
  EXPECT_EQ(limiter.Admit("a", "down"), "down");
}

TEST(LogTest, RepeatLimiterForgetsOldKeysAndNeverDropsWhenFull) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  LogRepeatLimiter limiter(&clock, {.window = absl::Minutes(1), .max_keys = 2});
  EXPECT_EQ(limiter.Admit("a", "x"), "x");
  EXPECT_EQ(limiter.Admit("b", "x"), "x");
  // Full with recent keys: "c" is written, not remembered.
  EXPECT_EQ(limiter.Admit("c", "x"), "x");
  EXPECT_EQ(limiter.Admit("c", "x"), "x");
  clock.Advance(absl::Minutes(1));
  // "a" and "b" are old now: forgotten to make room for "c".
  EXPECT_EQ(limiter.Admit("c", "x"), "x");
  EXPECT_EQ(limiter.Admit("c", "x"), std::nullopt);
}

// Through the process-wide limiter: three identical errors about a table
// give exactly one line, in JSON with the table's fields; another table's
// identical error is its own line; info lines are never limited.
TEST(LogTest, TableErrorsAreRateLimitedAndNamed) {
  StderrPipe pipe;
  SetLogOptions({LogFormat::kJson, LogLevel::kInfo});
  for (int i = 0; i < 3; ++i) LogTableError("ks", "t1", "repeat-me ", 42);
  LogTableError("ks", "t2", "repeat-me ", 42);
  LogTableInfo("ks", "t1", "state-change");
  LogTableInfo("ks", "t1", "state-change");
  ASSERT_TRUE(FlushLogs(absl::Seconds(10)));
  SetLogOptions({});
  const std::string out = pipe.Drain();
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = out.find(needle); at != std::string::npos;
         at = out.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("\"level\":\"error\",\"keyspace\":\"ks\",\"table\":\"t1\","
                  "\"msg\":\"repeat-me 42\"}\n"),
            1)
      << out;
  EXPECT_EQ(count("\"level\":\"error\",\"keyspace\":\"ks\",\"table\":\"t2\","
                  "\"msg\":\"repeat-me 42\"}\n"),
            1)
      << out;
  EXPECT_EQ(count("repeat-me"), 2) << out;
  EXPECT_EQ(count("\"level\":\"info\",\"keyspace\":\"ks\",\"table\":\"t1\","
                  "\"msg\":\"state-change\"}\n"),
            2)
      << out;
}

}  // namespace
}  // namespace msgq
