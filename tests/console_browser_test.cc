// The web console in a real browser (real MariaDB, msgqd, headless
// Chromium driven by tests/console_driver.py through chromedriver): the
// numbers shown match the workload (the rows by state, exact, among them),
// the charts start from msgqd's served history and the table's "Last hour"
// chart by state draws exactly msgqd's samples, the
// dead list shows the dead messages, the recent-messages view lists the ids
// enqueued (and filtered by state, acked among them), the message view found
// by searching an id shows its state, attempts, last error and columns as
// text, "Redrive selected" redrives a ticked dead message once confirmed (it
// is streamed again), "Delete selected" cancelled deletes nothing and a dead
// message's own Delete, confirmed, deletes it, a dead list longer than 100
// is paged, the Pause button pauses the table and Resume resumes it, all of it
// under msgqd's Content Security Policy (the browser logs no violation, runs no
// inline script added to the page and refuses to frame the console), and
// screenshots are saved under <build>/console-screenshots/. Skipped, saying so,
// only when Chromium or chromedriver is not installed.
#include <cstdio>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "msgq/credentials.h"
#include "nlohmann/json.hpp"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

// The console ran under msgqd's Content-Security-Policy without a
// violation, and the policy was in force in the browser.
void ExpectTheCspHeld(const nlohmann::json& report) {
  EXPECT_EQ(report["security_log"], nlohmann::json::array());
  EXPECT_EQ(report["inline_script_ran"], false);
  EXPECT_EQ(report["framed"], false);
}

// The detail's Pause button paused the table (its state, read back from
// msgqd, said "paused" and the button offered Resume), and Resume resumed
// it.
void ExpectThePauseButtonWorked(const nlohmann::json& report) {
  EXPECT_EQ(report["pause_button"], "Pause");
  EXPECT_EQ(report["paused_state"], "paused");
  EXPECT_EQ(report["resume_button"], "Resume");
  EXPECT_EQ(report["resumed_state"], "loaded");
}

// The states the "Last hour" chart draws: field, label.
const std::pair<std::string, std::string> kChartStates[] = {
    {"ready", "ready"},
    {"scheduled", "scheduled"},
    {"in_flight", "in flight"},
    {"dead", "dead"}};

// The chart has a line and a legend entry for each state.
void ExpectTheChartHasEveryState(const nlohmann::json& chart) {
  ASSERT_EQ(chart["legend"].size(), 4u) << chart;
  for (size_t i = 0; i < 4; ++i) {
    const std::string entry = chart["legend"][i];
    EXPECT_EQ(entry.rfind(kChartStates[i].second + " ", 0), 0u) << entry;
    ASSERT_EQ(chart["series"][kChartStates[i].first].size(),
              chart["times"].size());
  }
}

// The "Last hour" chart drew msgqd's served history (`served`, GET
// /api/history read after the page): each sample the page shows is one
// msgqd serves, with the same counts by state, and the legend gives the
// newest one's.
void ExpectTheChartIsMsgqdsHistory(const nlohmann::json& chart,
                                   const nlohmann::json& served) {
  ASSERT_NO_FATAL_FAILURE(ExpectTheChartHasEveryState(chart));
  const nlohmann::json& times = chart["times"];
  ASSERT_EQ(chart["samples"], times.size());
  std::map<double, nlohmann::json> by_time;
  for (const nlohmann::json& s : served["samples"]) {
    by_time[s["time"].get<double>()] = s;
  }
  for (size_t i = 0; i < times.size(); ++i) {
    auto it = by_time.find(times[i].get<double>());
    ASSERT_NE(it, by_time.end()) << "not served: " << times[i];
    for (const auto& [field, label] : kChartStates) {
      EXPECT_EQ(chart["series"][field][i], it->second[field])
          << field << " at " << times[i];
    }
  }
  if (times.empty()) return;
  const nlohmann::json& last = by_time[times.back().get<double>()];
  nlohmann::json legend = nlohmann::json::array();
  for (const auto& [field, label] : kChartStates) {
    legend.push_back(label + " " +
                     (last[field].is_null()
                          ? std::string("\u2013")
                          : std::to_string(last[field].get<int64_t>())));
  }
  EXPECT_EQ(chart["legend"], legend);
}

// The dead-letter actions asked first: Redrive selected (4) was confirmed,
// Delete selected (5) cancelled changed nothing, and 5's own Delete,
// confirmed, deleted it and closed its view.
void ExpectTheActionsWereConfirmed(const nlohmann::json& report) {
  EXPECT_EQ(report["message_actions"], true);
  EXPECT_EQ(report["redrive_confirm"],
            "Redrive 1 dead message of msgq.jobs (4)? They become due now "
            "with epoch 0. [Redrive]");
  EXPECT_EQ(report["redrive"], "redriven: 1");
  const std::string delete_confirm =
      "Delete 1 dead message of msgq.jobs (5)? This cannot be undone. "
      "[Delete]";
  EXPECT_EQ(report["delete_confirm"], delete_confirm);
  EXPECT_EQ(report["delete_cancelled"],
            nlohmann::json({{"confirm_hidden", true},
                            {"result", "redriven: 1"},
                            {"dead_ids", {"5"}}}));
  EXPECT_EQ(report["message_delete_confirm"], delete_confirm);
  EXPECT_EQ(report["delete"], "deleted: 1");
  EXPECT_EQ(report["find_error_after_delete"],
            "no message with id '5' in msgq.jobs");
}

class ConsoleBrowserTest : public HttpTest {
 protected:
  // Runs tests/console_driver.py on msgq.jobs (expecting `sent` sent, the
  // message view of id 4) with screenshots in `out_dir`; `token` non-empty
  // signs in with it.
  void Drive(const std::string& out_dir, const std::string& sent,
             const std::string& token, nlohmann::json* report, bool* skipped,
             const std::string& paged_table = "") {
    ASSERT_EQ(std::system(("mkdir -p '" + out_dir + "'").c_str()), 0);
    const std::string cmd = absl::StrCat(
        token.empty() ? "" : "MSGQ_CONSOLE_TOKEN=" + token + " ",
        paged_table.empty() ? ""
                            : "MSGQ_CONSOLE_PAGED_TABLE=" + paged_table + " ",
        "/usr/bin/python3 ", MSGQ_TESTS_DIR, "/console_driver.py '", Url("/"),
        "' msgq.jobs ", sent, " '", out_dir, "' 4");
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
    const int rc = pclose(pipe);
    *skipped = WIFEXITED(rc) && WEXITSTATUS(rc) == 77;
    if (*skipped) return;
    ASSERT_EQ(rc, 0) << out;
    *report = nlohmann::json::parse(out);
  }
};

TEST_F(ConsoleBrowserTest, ShowsTheWorkloadAndRedrivesDeadMessages) {
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "jobs", "vt_poller_interval=1",
      "time_created bigint DEFAULT NULL, time_dead bigint DEFAULT NULL, "
      "last_error varchar(64) DEFAULT NULL, traceparent varchar(55) DEFAULT "
      "NULL"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("audit"));
  // Due now and never sent (audit has no subscriber), before msgqd starts,
  // so that its first due count (every 10 s at most) sees them.
  ASSERT_NO_FATAL_FAILURE(InsertRange("audit", 1, 2));
  // Scheduled: due in an hour.
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("INSERT INTO msgq.audit (id, message, time_next) "
                        "VALUES (3, '{}', ",
                        NowNanos() + 3600 * kSecond, ")")));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE TABLE msgq.broken (id BIGINT PRIMARY KEY) "
           "COMMENT 'vitess_message'"));
  // A transaction held open for the whole page: the Database line names
  // its connection as the server's oldest.
  absl::StatusOr<std::unique_ptr<MysqlConnection>> open = db_->Connect();
  ASSERT_TRUE(open.ok()) << open.status();
  ASSERT_TRUE((*open)->Execute("USE msgq").ok());
  absl::StatusOr<QueryResult> id = (*open)->Query("SELECT CONNECTION_ID()");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(
      (*open)->Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT").ok());
  // One msgqd without leases: ownership "off" (it holds the instance lock).
  ASSERT_NO_FATAL_FAILURE(StartHttpServer({"--leases=false"}));
  // Enqueue once the exact counts are loaded (ListTables gives the dead
  // count then): a row committed while the counting read runs may be
  // counted twice until the next read (engine/queue/message_counts.h).
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "jobs").dead() == 0; },
                 absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 8));
  StreamCollector stream(stub_.get(), "jobs");
  ASSERT_TRUE(stream.WaitForRows(8, absl::Seconds(10)));
  int64_t acked = 0;
  ASSERT_TRUE(AckIds(stub_.get(), "jobs", {"1", "2", "3"}, &acked).ok());
  ASSERT_EQ(acked, 3);
  v1::MessageNackRequest nack;
  nack.set_name("jobs");
  for (const char* id : {"4", "5"}) {
    v1::Delivery* d = nack.add_deliveries();
    d->set_id(id);
    d->set_epoch(0);
  }
  nack.set_reason("payment declined");
  nack.set_dead(true);
  v1::MessageNackResponse nacked;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->MessageNack(&context, nack, &nacked).ok());
  }
  ASSERT_EQ(nacked.dead(), 2);
  // The dead count is known from the table's first purge step (every 1 s).
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "jobs").dead() == 2; },
                 absl::Seconds(10)));

  // Markup in a payload, and a trace context, for the message view.
  ASSERT_NO_FATAL_FAILURE(Exec(
      "UPDATE msgq.jobs SET message = '{\"note\": \"<b>bold</b>\"}', "
      "traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' "
      "WHERE id = 4"));

  // msgqd has a chart sample of jobs (one every 10 s) with its two dead
  // messages before the page opens.
  ASSERT_TRUE(Eventually(
      [&] {
        auto [code, body] =
            HttpGet(Url("/api/history?keyspace=msgq&table=jobs"));
        if (code != 200) return false;
        const nlohmann::json samples = nlohmann::json::parse(body)["samples"];
        return !samples.empty() && samples.back()["dead"] == 2;
      },
      absl::Seconds(15)));

  const std::string out_dir = MSGQ_SCREENSHOT_DIR;
  bool skipped = false;
  nlohmann::json report;
  ASSERT_NO_FATAL_FAILURE(Drive(out_dir, "8", "", &report, &skipped));
  if (skipped) {
    GTEST_SKIP()
        << "Chromium or chromedriver is not installed: run tools/setup";
  }

  const nlohmann::json& jobs = report["before"]["msgq.jobs"];
  EXPECT_EQ(jobs["state"], "loaded");
  EXPECT_EQ(jobs["discovery"], "binlog");
  EXPECT_EQ(jobs["subscribers"], "1");
  EXPECT_EQ(jobs["sent"], "8");
  EXPECT_EQ(jobs["acked"], "3");
  // The rows by state, exact: 6, 7 and 8 sent and waiting for their acks,
  // 4 and 5 dead.
  EXPECT_EQ(jobs["ready"], "0");
  EXPECT_EQ(jobs["scheduled"], "0");
  EXPECT_EQ(jobs["in_flight"], "3");
  EXPECT_EQ(jobs["dead"], "2");
  EXPECT_EQ(jobs["redelivered"], "0");
  const nlohmann::json& audit = report["before"]["msgq.audit"];
  EXPECT_EQ(audit["sent"], "0");
  EXPECT_EQ(audit["ready"], "2");
  EXPECT_EQ(audit["scheduled"], "1");
  EXPECT_EQ(audit["in_flight"], "0");
  EXPECT_EQ(audit["dead"], "0");
  EXPECT_EQ(report["cards"], nlohmann::json({{"ready", "2"},
                                             {"scheduled", "1"},
                                             {"in_flight", "3"},
                                             {"dead", "2"}}));
  EXPECT_EQ(report["before"]["msgq.broken"]["state"], "error");
  EXPECT_EQ(report["before"]["msgq.broken"]["error"],
            "table `msgq`.`broken`: missing required directive vt_ack_wait");
  EXPECT_EQ(report["ready"], "ready");
  EXPECT_EQ(report["database_connection"], *id->rows[0][0]);
  const std::string database = report["database"];
  EXPECT_TRUE(std::regex_match(
      database, std::regex(absl::StrCat(
                    "Database: InnoDB history list [0-9,]+  \xc2\xb7  "
                    "oldest transaction: connection ",
                    *id->rows[0][0],
                    " \\([^@ ]+@[^, ]+, db msgq\\), open [0-9,]+ s, idle"))))
      << database;
  // The chart starts from msgqd's samples (at least one, taken before the
  // page opened) and adds the page's first poll.
  EXPECT_GE(report["chart_samples"], 2) << report["chart_samples"];
  EXPECT_EQ(report["dead_ids"], nlohmann::json({"4", "5"}));
  EXPECT_EQ(report["dead_errors"],
            nlohmann::json({"payment declined", "payment declined"}));
  // The recent-messages view: every id enqueued, highest first.
  EXPECT_EQ(report["recent_ids"],
            nlohmann::json({"8", "7", "6", "5", "4", "3", "2", "1"}));
  // Filtered by state.
  EXPECT_EQ(report["recent_dead"], nlohmann::json({"5", "4"}));
  EXPECT_EQ(report["recent_acked"], nlohmann::json({"3", "2", "1"}));
  EXPECT_EQ(report["recent_acked_order"], "newest");
  // The table's last hour by state is msgqd's history, its newest sample
  // (taken before the page opened) with the two dead messages.
  {
    auto [code, body] = HttpGet(Url("/api/history?keyspace=msgq&table=jobs"));
    ASSERT_EQ(code, 200) << body;
    const nlohmann::json& chart = report["state_chart"];
    ASSERT_NO_FATAL_FAILURE(
        ExpectTheChartIsMsgqdsHistory(chart, nlohmann::json::parse(body)));
    ASSERT_GE(chart["samples"], 1) << chart;
    EXPECT_EQ(chart["series"]["dead"].back(), 2) << chart;
    EXPECT_EQ(chart["legend"][3], "dead 2") << chart;
  }
  // The message view of id 4, found by the search; the payload's markup is
  // shown as text.
  nlohmann::json message = report["message"];
  EXPECT_NE(message["time_dead"], "\u2013");  // a local time
  message.erase("time_dead");
  EXPECT_EQ(message,
            nlohmann::json(
                {{"id", "4"},
                 {"state", "dead"},
                 {"epoch", "1"},
                 {"priority", "50"},
                 {"time_next", "\u2013"},
                 {"time_acked", "\u2013"},
                 {"time_created", "\u2013"},
                 {"last_error", "payment declined"},
                 {"column:message", "message = {\"note\": \"<b>bold</b>\"}"},
                 {"column:traceparent",
                  "traceparent (context) = "
                  "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}));
  EXPECT_EQ(report["message_elements"], 0);
  EXPECT_EQ(report["find_error"], "no message with id '999' in msgq.jobs");
  // Ownership is "off" with --leases=false; the counters shown with it (a
  // dead nack counts as died, not nacked; the due count, sampled every 10 s,
  // is not checked here: metrics_test does).
  const std::string ownership = report["ownership"];
  EXPECT_EQ(ownership.rfind("ownership: off  \u00b7  ", 0), 0u) << ownership;
  EXPECT_NE(
      ownership.find("  \u00b7  nacked 0  \u00b7  died 2  \u00b7  purged 0  "
                     "\u00b7  polls "),
      std::string::npos)
      << ownership;
  // 4 redriven by a selection, 5 deleted from its message view.
  ExpectTheActionsWereConfirmed(report);
  EXPECT_EQ(report["dead_ids_after_redrive"], nlohmann::json({"5"}));
  EXPECT_EQ(report["after"]["msgq.jobs"]["dead"], "0");
  EXPECT_EQ(report["dead_ids_after"], nlohmann::json::array());
  ExpectThePauseButtonWorked(report);
  ExpectTheCspHeld(report);
  // The redriven message is streamed again; the deleted one is gone.
  ASSERT_TRUE(stream.WaitForRows(9, absl::Seconds(10)));
  EXPECT_EQ(stream.ids()[8], "4");
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.jobs WHERE id = 5"), "0");
  std::printf(
      "screenshots: %s/console.png, console-dead.png, "
      "console-after-redrive.png, console-paused.png\n",
      out_dir.c_str());
}

// With authentication on, the console asks for a bearer token at the first
// 401 and works with it: the same views and the redrive (the workload is
// made with SQL, as the test's own gRPC calls would need the token too),
// and a dead list longer than a page is paged.
TEST_F(ConsoleBrowserTest, AsksForATokenAndWorksWithIt) {
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "jobs", "vt_poller_interval=1",
      "time_created bigint DEFAULT NULL, time_dead bigint DEFAULT NULL, "
      "last_error varchar(64) DEFAULT NULL"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 8));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET time_acked = UNIX_TIMESTAMP(NOW(6)) * "
           "1000000000, time_next = NULL WHERE id IN (1, 2, 3)"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET time_next = NULL, time_dead = 1, "
           "last_error = 'payment declined' WHERE id IN (4, 5)"));
  // 101 dead messages: the dead list shows them 100 at a time.
  ASSERT_NO_FATAL_FAILURE(CreateTable("many"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.many (id, message, time_next) "
           "SELECT seq, '{}', NULL FROM seq_1_to_101"));
  const std::string token = "console-test-token";
  const std::string tokens = db_->dir() + "/tokens";
  // Mode 0600: msgqd refuses a token file that group or others may write.
  ASSERT_EQ(std::system(absl::StrCat("umask 077 && printf %s ", token,
                                     " | sha256sum | cut -d' ' -f1 | sed "
                                     "'s/$/ ops/' > '",
                                     tokens, "'")
                            .c_str()),
            0);
  ASSERT_NO_FATAL_FAILURE(
      StartHttpServer({absl::StrCat("--auth_tokens_file=", tokens)}));

  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      NewSecureChannel(server_->address(), ChannelSecurity{.token = token});
  ASSERT_TRUE(channel.ok()) << channel.status();
  std::unique_ptr<v1::Messaging::Stub> stub = v1::Messaging::NewStub(*channel);
  // A subscriber (the dead count is kept while a table is watched): it gets
  // 6, 7 and 8.
  StreamCollector stream(stub.get(), "jobs");
  ASSERT_TRUE(stream.WaitForRows(3, absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub.get(), "jobs").dead() == 2; },
                 absl::Seconds(10)));

  bool skipped = false;
  nlohmann::json report;
  ASSERT_NO_FATAL_FAILURE(Drive(std::string(MSGQ_SCREENSHOT_DIR) + "/auth", "3",
                                token, &report, &skipped, "msgq.many"));
  if (skipped) {
    GTEST_SKIP()
        << "Chromium or chromedriver is not installed: run tools/setup";
  }
  EXPECT_EQ(report["token_prompt"], "token needed");
  const nlohmann::json& jobs = report["before"]["msgq.jobs"];
  EXPECT_EQ(jobs["state"], "loaded");
  EXPECT_EQ(jobs["sent"], "3");
  EXPECT_EQ(jobs["ready"], "0");
  EXPECT_EQ(jobs["scheduled"], "0");
  EXPECT_EQ(jobs["in_flight"], "3");
  EXPECT_EQ(jobs["dead"], "2");
  EXPECT_EQ(report["dead_ids"], nlohmann::json({"4", "5"}));
  EXPECT_EQ(report["recent_ids"],
            nlohmann::json({"8", "7", "6", "5", "4", "3", "2", "1"}));
  EXPECT_EQ(report["recent_dead"], nlohmann::json({"5", "4"}));
  EXPECT_EQ(report["recent_acked"], nlohmann::json({"3", "2", "1"}));
  ExpectTheChartHasEveryState(report["state_chart"]);
  EXPECT_EQ(report["message"]["state"], "dead");
  EXPECT_EQ(report["message"]["epoch"], "0");
  EXPECT_EQ(report["message"]["last_error"], "payment declined");
  EXPECT_EQ(report["message"]["column:message"], "message = {\"n\": 4}");
  EXPECT_EQ(report["find_error"], "no message with id '999' in msgq.jobs");
  ExpectTheActionsWereConfirmed(report);
  EXPECT_EQ(report["after"]["msgq.jobs"]["dead"], "0");
  ExpectThePauseButtonWorked(report);
  // msgq.many's dead list, 100 at a time by id.
  const nlohmann::json first_page = {
      {"first", "1"},  {"last", "100"},
      {"count", 100},  {"label", "dead 1\u2013100 by id, more after"},
      {"prev", false}, {"next", true}};
  EXPECT_EQ(report["dead_page_1"], first_page);
  EXPECT_EQ(report["dead_page_2"],
            nlohmann::json({{"first", "101"},
                            {"last", "101"},
                            {"count", 1},
                            {"label", "dead 101\u2013101 by id"},
                            {"prev", true},
                            {"next", false}}));
  EXPECT_EQ(report["dead_page_back"], first_page);
  // The last row's Redrive asks in view (the bar is far above the row).
  EXPECT_EQ(report["row_confirm"],
            nlohmann::json({{"text",
                             "Redrive 1 dead message of msgq.many (100)? They "
                             "become due now with epoch 0."},
                            {"in_view", true}}));
  ExpectTheCspHeld(report);
}

}  // namespace
}  // namespace msgq::testing
