// The console's JSON API against a real msgqd and MariaDB: one message by
// id (GET /api/message), the message list filtered by state
// (GET /api/messages?state=), and a selection of dead messages redriven
// (POST /api/redrive) or deleted (POST /api/dead/delete), and the served
// chart history (GET /api/history), with their errors.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

using nlohmann::json;

class ConsoleApiTest : public HttpTest {
 protected:
  // msgq.jobs with one row in each state, no subscriber (nothing is sent):
  // 1 ready, 2 scheduled, 3 dead, 4 acked now (kept for vt_purge_after),
  // 5 in flight, 6 ready with a
  // payload longer than the view shows, 7 dead.
  void SetUpJobs() {
    ASSERT_NO_FATAL_FAILURE(CreateTable(
        "jobs", "",
        "time_created bigint DEFAULT NULL, time_dead bigint DEFAULT NULL, "
        "last_error varchar(64) DEFAULT NULL, traceparent varchar(55) "
        "DEFAULT NULL"));
    later_ = NowNanos() + 3600 * kSecond;
    ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
        "INSERT INTO msgq.jobs (id, message, time_next, epoch, time_acked, "
        "time_created, time_dead, last_error, traceparent) VALUES "
        "(1, '{\"n\": \"<b>1</b>\"}', 0, 0, NULL, 100, NULL, NULL, "
        "'00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), "
        "(2, '{}', ",
        later_,
        ", 0, NULL, NULL, NULL, NULL, NULL), "
        "(3, '{}', NULL, 2, NULL, NULL, 300, 'boom', NULL), "
        "(4, '{}', NULL, 1, ",
        NowNanos(),
        ", NULL, NULL, NULL, NULL), "
        "(5, '{}', ",
        later_,
        ", 1, NULL, NULL, NULL, 'timeout', NULL), "
        "(6, CONCAT('\"', REPEAT('x', 5000), '\"'), 0, 0, NULL, NULL, NULL, "
        "NULL, NULL), "
        "(7, '{}', NULL, 3, NULL, NULL, 700, 'bad', NULL)")));
    ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  }

  std::pair<int, json> Get(const std::string& path) {
    auto [code, body] = HttpGet(Url(path));
    json parsed = json::parse(body, nullptr, false);
    if (parsed.is_discarded()) parsed = body;
    return {code, parsed};
  }

  // POSTs `form` to `path` with X-Msgq-Console: 1 unless `header` is false.
  std::pair<int, json> Post(const std::string& path, const std::string& form,
                            bool header = true) {
    absl::StatusOr<std::string> out =
        Probe("post", Url(path),
              absl::StrCat("'", form, "'", header ? " X-Msgq-Console:1" : ""));
    if (!out.ok()) return {0, json(std::string(out.status().message()))};
    const size_t nl = out->find('\n');
    int code = 0;
    (void)absl::SimpleAtoi(out->substr(0, nl), &code);
    json parsed = json::parse(out->substr(nl + 1), nullptr, false);
    return {code, parsed.is_discarded() ? json(out->substr(nl + 1)) : parsed};
  }

  std::string State(const std::string& id) {
    auto [code, body] = Get("/api/message?keyspace=msgq&table=jobs&id=" + id);
    if (code == 404) return "none";
    return code == 200 ? std::string(body["message"]["msgq_state"])
                       : absl::StrCat(code);
  }

  int64_t later_ = 0;
};

TEST_F(ConsoleApiTest, OneMessageByIdWithItsStateAndColumns) {
  ASSERT_NO_FATAL_FAILURE(SetUpJobs());
  auto [code, body] = Get("/api/message?keyspace=msgq&table=jobs&id=1");
  ASSERT_EQ(code, 200) << body;
  EXPECT_EQ(body,
            json({{"max_value_chars", 4096},
                  {"message",
                   {{"id", "1"},
                    {"priority", "50"},
                    {"epoch", "0"},
                    {"time_next", "0"},
                    {"time_acked", nullptr},
                    {"time_created", "100"},
                    {"time_dead", nullptr},
                    {"last_error", nullptr},
                    {"msgq_state", "ready"},
                    {"columns",
                     {{{"name", "message"},
                       {"value", "{\"n\": \"<b>1</b>\"}"},
                       {"truncated", false}},
                      {{"name", "traceparent"},
                       {"value",
                        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-"
                        "01"},
                       {"truncated", false}}}}}}}));
  // Each state, on MySQL's clock; "007" is id 7.
  const std::pair<const char*, const char*> states[] = {{"2", "scheduled"},
                                                        {"3", "dead"},
                                                        {"4", "acked"},
                                                        {"5", "in_flight"},
                                                        {"007", "dead"}};
  for (const auto& [id, state] : states) {
    std::tie(code, body) =
        Get(absl::StrCat("/api/message?keyspace=msgq&table=jobs&id=", id));
    ASSERT_EQ(code, 200) << body;
    EXPECT_EQ(body["message"]["msgq_state"], state) << id;
  }
  EXPECT_EQ(body["message"]["id"], "7");
  EXPECT_EQ(body["message"]["last_error"], "bad");
  EXPECT_EQ(body["message"]["time_dead"], "700");
  // A value past 4096 characters is cut and says so.
  std::tie(code, body) = Get("/api/message?keyspace=msgq&table=jobs&id=6");
  ASSERT_EQ(code, 200) << body;
  const json& payload = body["message"]["columns"][0];
  EXPECT_EQ(payload["value"], "\"" + std::string(4095, 'x'));
  EXPECT_EQ(payload["truncated"], true);
}

TEST_F(ConsoleApiTest, OneMessageErrorsArePrecise) {
  ASSERT_NO_FATAL_FAILURE(SetUpJobs());
  EXPECT_EQ(Get("/api/message?keyspace=msgq&table=jobs&id=999"),
            std::make_pair(404, json({{"error",
                                       "no message with id '999' "
                                       "in msgq.jobs"}})));
  EXPECT_EQ(Get("/api/message?keyspace=msgq&table=jobs"),
            std::make_pair(400, json({{"error", "id is required"}})));
  EXPECT_EQ(Get("/api/message?keyspace=msgq&table=jobs&id=1%20OR%201%3D1"),
            std::make_pair(400, json({{"error",
                                       "malformed message id \"1 OR 1=1\": "
                                       "the id column is an integer"}})));
  EXPECT_EQ(
      Get(absl::StrCat("/api/message?keyspace=msgq&table=jobs&id=",
                       std::string(1025, '1'))),
      std::make_pair(400, json({{"error", "id longer than 1024 bytes"}})));
  EXPECT_EQ(Get("/api/message?keyspace=msgq&table=nope&id=1").first, 404);
}

// The message list in one state, on MySQL's clock, each row with its
// state; at most 100 rows a page.
TEST_F(ConsoleApiTest, MessagesFilteredByState) {
  ASSERT_NO_FATAL_FAILURE(SetUpJobs());
  auto ids = [&](const std::string& query) {
    auto [code, body] = Get("/api/messages?keyspace=msgq&table=jobs&" + query);
    std::vector<std::string> out;
    if (code != 200) {
      ADD_FAILURE() << query << ": " << code << " " << body;
      return out;
    }
    for (const json& m : body["messages"]) {
      out.push_back(std::string(m["id"]) + ":" + std::string(m["msgq_state"]));
    }
    return out;
  };
  using Ids = std::vector<std::string>;
  EXPECT_EQ(ids("state=ready"), (Ids{"6:ready", "1:ready"}));
  EXPECT_EQ(ids("state=scheduled"), (Ids{"2:scheduled"}));
  EXPECT_EQ(ids("state=in_flight"), (Ids{"5:in_flight"}));
  EXPECT_EQ(ids("state=dead"), (Ids{"7:dead", "3:dead"}));
  EXPECT_EQ(ids("state=dead&limit=1"), (Ids{"7:dead"}));
  EXPECT_EQ(ids("state=acked"), (Ids{"4:acked"}));
  EXPECT_EQ(ids("state=ready&order=next"), (Ids{"1:ready", "6:ready"}));
  EXPECT_EQ(ids(""), (Ids{"7:dead", "6:ready", "5:in_flight", "4:acked",
                          "3:dead", "2:scheduled", "1:ready"}));
  EXPECT_EQ(Get("/api/messages?keyspace=msgq&table=jobs&state=done"),
            std::make_pair(
                400, json({{"error",
                            "state must be 'ready', 'scheduled', 'in_flight', "
                            "'dead' or 'acked', not 'done'"}})));
  EXPECT_EQ(
      Get("/api/messages?keyspace=msgq&table=jobs&state=acked&order=next"),
      std::make_pair(400, json({{"error",
                                 "order 'next' lists unacked messages: state "
                                 "'acked' needs order 'newest'"}})));
  EXPECT_EQ(Get("/api/messages?keyspace=msgq&table=jobs&state=dead&limit=101"),
            std::make_pair(400, json({{"error", "limit must be 1..100"}})));
}

// A selection of dead messages is redriven or deleted; a selection naming
// an unknown or a live message changes nothing and says which.
TEST_F(ConsoleApiTest, DeadSelectionIsRedrivenOrDeleted) {
  ASSERT_NO_FATAL_FAILURE(SetUpJobs());
  const std::string t = "keyspace=msgq&table=jobs";
  EXPECT_EQ(Post("/api/redrive", t + "&id=7&id=007"),
            std::make_pair(200, json({{"redriven", 1}})));
  EXPECT_EQ(State("7"), "ready");
  EXPECT_EQ(Post("/api/dead/delete", t + "&id=3"),
            std::make_pair(200, json({{"deleted", 1}})));
  EXPECT_EQ(State("3"), "none");
  // Dead again, for the refusals below: nothing of a refused selection
  // changes.
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET time_next = NULL WHERE id = 7"));
  EXPECT_EQ(Post("/api/dead/delete", t + "&id=7&id=998&id=999"),
            std::make_pair(404, json({{"error",
                                       "no message with ids '998', '999' in "
                                       "msgq.jobs"},
                                      {"ids", {"998", "999"}}})));
  EXPECT_EQ(Post("/api/redrive", t + "&id=7&id=3"),
            std::make_pair(404, json({{"error",
                                       "no message with id '3' in "
                                       "msgq.jobs"},
                                      {"ids", {"3"}}})));
  EXPECT_EQ(Post("/api/dead/delete", t + "&id=7&id=1&id=2&id=4&id=5"),
            std::make_pair(409, json({{"error",
                                       "not dead in msgq.jobs: '1' (ready), "
                                       "'2' (scheduled), '4' (acked), '5' "
                                       "(in_flight)"},
                                      {"ids", {"1", "2", "4", "5"}}})));
  EXPECT_EQ(Post("/api/redrive", t + "&id=7&id=1").first, 409);
  EXPECT_EQ(State("7"), "dead");
  EXPECT_EQ(State("1"), "ready");
  std::string many = t;
  for (int i = 0; i < 101; ++i) absl::StrAppend(&many, "&id=7");
  EXPECT_EQ(Post("/api/dead/delete", many),
            std::make_pair(
                400, json({{"error", "at most 100 ids at once, not 101"}})));
  EXPECT_EQ(Post("/api/dead/delete", t),
            std::make_pair(400, json({{"error",
                                       "id is required (repeated, "
                                       "at most 100)"}})));
  EXPECT_EQ(Post("/api/dead/delete", t + "&id=x"),
            std::make_pair(400, json({{"error",
                                       "malformed message id \"x\": the id "
                                       "column is an integer"}})));
  EXPECT_EQ(Post("/api/dead/delete", t + "&id=7", false),
            std::make_pair(403, json({{"error",
                                       "missing header "
                                       "X-Msgq-Console: 1"}})));
  EXPECT_EQ(Get("/api/dead/delete?" + t + "&id=7"),
            std::make_pair(405, json({{"error", "use POST"}})));
  EXPECT_EQ(Post("/api/dead/delete", "keyspace=msgq&table=nope&id=7").first,
            404);
  EXPECT_EQ(State("7"), "dead");
  // All at once still takes no ids.
  EXPECT_EQ(Post("/api/redrive", t + "&all=1"),
            std::make_pair(200, json({{"redriven", 1}})));
  EXPECT_EQ(State("7"), "ready");
}

// msgqd keeps each table's last hour for the console's charts and serves
// it: a sample every 10 s with the counters and the exact counts.
TEST_F(ConsoleApiTest, HistoryIsServedFromMsgqd) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 3));
  const double start = NowNanos() / 1e9;
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  json last;
  ASSERT_TRUE(Eventually(
      [&] {
        auto [code, body] = Get("/api/history?keyspace=msgq&table=jobs");
        if (code != 200 || body["samples"].empty()) return false;
        last = body["samples"].back();
        EXPECT_EQ(body["interval"], 10.0);
        return last["ready"] == 3;
      },
      absl::Seconds(30)));
  const double time = last["time"];
  last.erase("time");
  EXPECT_EQ(last, json({{"sent", 0},
                        {"acked", 0},
                        {"ready", 3},
                        {"scheduled", 0},
                        {"in_flight", 0},
                        {"dead", 0}}));
  EXPECT_GE(time, start - 1);
  EXPECT_LE(time, NowNanos() / 1e9 + 1);
  EXPECT_EQ(Get("/api/history?keyspace=msgq&table=nope").first, 404);
}

// The purge debt line: the oldest open transaction is named by its
// connection, user, host and database, as the server's PROCESSLIST has them,
// on /api/tables and as the age gauge on /metrics; once it commits it is
// no longer named.
TEST_F(ConsoleApiTest, DatabaseNamesTheOldestOpenTransaction) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  // --leases=false: no lease renewal is open when the sampler reads.
  ASSERT_NO_FATAL_FAILURE(StartHttpServer({"--leases=false"}));
  absl::StatusOr<std::unique_ptr<MysqlConnection>> open = db_->Connect();
  ASSERT_TRUE(open.ok()) << open.status();
  ASSERT_TRUE((*open)->Execute("USE msgq").ok());
  absl::StatusOr<QueryResult> who = (*open)->Query(
      "SELECT CONNECTION_ID(), SUBSTRING_INDEX(USER(), '@', 1), "
      "SUBSTRING_INDEX(USER(), '@', -1)");
  ASSERT_TRUE(who.ok()) << who.status();
  const std::string connection = *who->rows[0][0];
  const std::string user = *who->rows[0][1];
  const std::string host = *who->rows[0][2];
  ASSERT_TRUE(
      (*open)->Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT").ok());
  json oldest;
  ASSERT_TRUE(Eventually(
      [&] {
        auto [code, body] = Get("/api/tables");
        if (code != 200) return false;
        oldest = body["database"]["oldest_transaction"];
        EXPECT_EQ(body["database"]["oldest_transaction_error"], "");
        return oldest.is_object() &&
               absl::StrCat(oldest["connection"].get<int64_t>()) == connection;
      },
      absl::Seconds(25)))
      << oldest;
  EXPECT_EQ(oldest["user"], user);
  EXPECT_EQ(oldest["host"], host);
  EXPECT_EQ(oldest["db"], "msgq");
  EXPECT_EQ(oldest["statement"], "");  // idle inside its transaction
  EXPECT_GE(oldest["seconds"].get<int64_t>(), 0);
  EXPECT_GE(Sample(ScrapeMetrics(Url("/metrics")),
                   "msgq_innodb_oldest_transaction_seconds{}"),
            0);

  ASSERT_TRUE((*open)->Execute("COMMIT").ok());
  ASSERT_TRUE(Eventually(
      [&] {
        auto [code, body] = Get("/api/tables");
        oldest = body["database"]["oldest_transaction"];
        return code == 200 &&
               (oldest.is_null() ||
                absl::StrCat(oldest["connection"].get<int64_t>()) !=
                    connection);
      },
      absl::Seconds(25)))
      << oldest;
}

}  // namespace
}  // namespace msgq::testing
