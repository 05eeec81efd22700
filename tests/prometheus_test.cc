// A real Prometheus (Debian's prometheus package) scrapes a real msgqd
// every second with the shipped rules (deploy/prometheus/msgq-rules.yml)
// loaded: the series arrive with exact values, every rule evaluates
// without error, a dead letter fires MsgqDeadLettersGrowing, and every
// query of the rules and the dashboard names a family this msgqd's
// /metrics declares (tools/check-metric-names --metrics-url).
// Prometheus listens on loopback, keeps its data in the test's temporary
// directory and is stopped at the end (SIGKILL if the test dies).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/queue/manager/message_manager_latency.h"
#include "nlohmann/json.hpp"
#include "tests/failure_fixture.h"
#include "tests/http_fixture.h"
#include "tests/temp_dir.h"
#include "tools/launch/child_process.h"

namespace msgq::testing {
namespace {

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

class PrometheusTest : public FailureTest {
 protected:
  void TearDown() override {
    if (prometheus_ != nullptr) prometheus_->Stop(SIGTERM, absl::Seconds(10));
  }

  // msgqd with its HTTP port; `msgqd_http_` is its base URL.
  void StartMsgqd() {
    ASSERT_NO_FATAL_FAILURE(
        StartServer({"--http_listen=127.0.0.1:0", "--leases=false"}));
    const int port = HttpPortFromLog(server_->Log());
    ASSERT_NE(port, 0) << server_->Log();
    msgqd_http_ = absl::StrCat("http://127.0.0.1:", port);
  }

  // Prometheus scraping msgqd every second (job "msgq") with the shipped
  // rules, evaluated every second; ready when /-/ready answers 200.
  void StartPrometheus() {
    absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
        MakeTempDir("prometheus");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    const std::string config = dir_->path() + "/prometheus.yml";
    {
      std::ofstream out(config);
      out << "global:\n"
          << "  scrape_interval: 1s\n"
          << "  evaluation_interval: 1s\n"
          << "rule_files:\n"
          << "  - " << MSGQ_SOURCE_DIR << "/deploy/prometheus/msgq-rules.yml\n"
          << "scrape_configs:\n"
          << "  - job_name: msgq\n"
          << "    static_configs:\n"
          << "      - targets: ['" << msgqd_http_.substr(7) << "']\n";
      ASSERT_TRUE(out.good());
    }
    // The port is free when picked; another process may take it before
    // Prometheus binds it, so a start that fails is retried on a new one.
    std::string logs;
    for (int attempt = 0; attempt < 3 && prometheus_ == nullptr; ++attempt) {
      const int port = FreeLoopbackPort();
      ASSERT_NE(port, 0);
      auto child = launch::ChildProcess::Start(
          {"prometheus", "--config.file=" + config,
           "--storage.tsdb.path=" + dir_->path() + "/data",
           absl::StrCat("--web.listen-address=127.0.0.1:", port)},
          absl::StrCat(dir_->path(), "/prometheus-", attempt, ".log"));
      ASSERT_TRUE(child.ok()) << child.status();
      const std::string base = absl::StrCat("http://127.0.0.1:", port);
      const bool ready = Eventually(
          [&] {
            return !(*child)->running() ||
                   HttpGet(base + "/-/ready").first == 200;
          },
          absl::Seconds(30));
      if (ready && (*child)->running()) {
        prometheus_ = *std::move(child);
        prometheus_url_ = base;
      } else {
        (*child)->Stop(SIGKILL, absl::Seconds(5));
        absl::StrAppend(&logs, "attempt ", attempt, ":\n", (*child)->Log());
      }
    }
    ASSERT_NE(prometheus_, nullptr) << "prometheus did not start:\n" << logs;
  }

  // GET of the Prometheus API; the parsed body, or null with a failure.
  nlohmann::json Api(const std::string& path_and_query) {
    auto [code, body] = HttpGet(prometheus_url_ + path_and_query);
    if (code != 200) {
      ADD_FAILURE() << path_and_query << ": HTTP " << code << ": " << body;
      return nullptr;
    }
    nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_discarded() || doc.value("status", "") != "success") {
      ADD_FAILURE() << path_and_query << ": " << body;
      return nullptr;
    }
    return doc["data"];
  }

  // The value of an instant query that returns one series; nullopt when
  // it returns none (or several, with a failure).
  std::optional<double> Query(const std::string& promql) {
    nlohmann::json data = Api("/api/v1/query?query=" + UrlEncode(promql));
    if (data.is_null()) return std::nullopt;
    const nlohmann::json& result = data["result"];
    if (result.empty()) return std::nullopt;
    if (result.size() != 1) {
      ADD_FAILURE() << promql << ": " << result.dump();
      return std::nullopt;
    }
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  // Eventually `promql` == `want` (Prometheus scrapes every second).
  void ExpectQuery(const std::string& promql, double want) {
    std::optional<double> got;
    EXPECT_TRUE(Eventually(
        [&] {
          got = Query(promql);
          return got == want;
        },
        absl::Seconds(30)))
        << promql << " = " << (got ? std::to_string(*got) : "none") << ", want "
        << want;
  }

  std::string msgqd_http_;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::unique_ptr<launch::ChildProcess> prometheus_;
  std::string prometheus_url_;
};

TEST_F(PrometheusTest, ScrapesMsgqdAndEvaluatesTheShippedRules) {
  ASSERT_NO_FATAL_FAILURE(CreateFailureTable("jobs", ""));
  ASSERT_NO_FATAL_FAILURE(StartMsgqd());
  ASSERT_NO_FATAL_FAILURE(StartPrometheus());
  constexpr char kJobs[] = "{job=\"msgq\",keyspace=\"msgq\",table=\"jobs\"}";
  ExpectQuery("up{job=\"msgq\"}", 1);
  // A death must come after Prometheus saw the counter at 0, or the
  // increase the alert reads starts at the death.
  ExpectQuery(absl::StrCat("msgq_died_total", kJobs), 0);

  // 6 messages: 5 acked, 1 nacked dead.
  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 6));
  StreamCollector stream(stub_.get(), "jobs");
  ASSERT_TRUE(stream.WaitForRows(6, absl::Seconds(10)));
  int64_t acked = 0;
  ASSERT_TRUE(
      AckIds(stub_.get(), "jobs", {"1", "2", "3", "4", "5"}, &acked).ok());
  ASSERT_EQ(acked, 5);
  std::vector<Delivered> last;
  for (const Delivered& d : DeliveredRows(stream)) {
    if (d.first == "6") last.push_back(d);
  }
  ASSERT_EQ(last.size(), 1u);
  v1::MessageNackResponse nacked;
  ASSERT_TRUE(
      Nack("jobs", last, std::nullopt, "bad input", true, &nacked).ok());
  stream.Cancel();
  ASSERT_TRUE(stream.WaitForEnd(absl::Seconds(5)));

  ExpectQuery(absl::StrCat("msgq_sent_total", kJobs), 6);
  ExpectQuery(absl::StrCat("msgq_acked_total", kJobs), 5);
  ExpectQuery(absl::StrCat("msgq_died_total", kJobs), 1);
  ExpectQuery(absl::StrCat("msgq_subscribers", kJobs), 0);
  ExpectQuery(absl::StrCat("msgq_table_owned", kJobs), 1);
  ExpectQuery(absl::StrCat("msgq_mysql_up", kJobs), 1);
  ExpectQuery("msgq_ready{job=\"msgq\"}", 1);
  // One series per bucket bound and +Inf.
  ExpectQuery(
      "count(msgq_send_delay_seconds_bucket{job=\"msgq\",table=\"jobs\"})",
      StatementLatency::kBounds.size() + 1);
  ExpectQuery("count(msgq_innodb_history_list_length{job=\"msgq\"})", 1);
  ExpectQuery("count(msgq_innodb_oldest_transaction_seconds{job=\"msgq\"})", 1);

  // The shipped rules loaded as one group of 11 and all evaluate cleanly
  // against real series.
  nlohmann::json groups;
  EXPECT_TRUE(Eventually(
      [&] {
        nlohmann::json data = Api("/api/v1/rules");
        if (data.is_null()) return false;
        groups = data["groups"];
        if (groups.size() != 1 || groups[0]["rules"].size() != 11) return false;
        for (const nlohmann::json& rule : groups[0]["rules"]) {
          if (rule["health"] != "ok") return false;
        }
        return true;
      },
      absl::Seconds(30)))
      << groups.dump(1);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0]["name"], "msgq");
  EXPECT_EQ(groups[0]["file"],
            absl::StrCat(MSGQ_SOURCE_DIR, "/deploy/prometheus/msgq-rules.yml"));

  // The dead letter fires MsgqDeadLettersGrowing (no hold time) for jobs.
  nlohmann::json alerts;
  EXPECT_TRUE(Eventually(
      [&] {
        nlohmann::json data = Api("/api/v1/alerts");
        if (data.is_null()) return false;
        alerts = data["alerts"];
        for (const nlohmann::json& a : alerts) {
          if (a["labels"].value("alertname", "") == "MsgqDeadLettersGrowing" &&
              a["state"] == "firing") {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(30)))
      << alerts.dump(1);
  int dead_alerts = 0;
  for (const nlohmann::json& a : alerts) {
    if (a["labels"].value("alertname", "") != "MsgqDeadLettersGrowing") {
      continue;
    }
    ++dead_alerts;
    EXPECT_EQ(a["labels"],
              nlohmann::json({{"alertname", "MsgqDeadLettersGrowing"},
                              {"keyspace", "msgq"},
                              {"table", "jobs"},
                              {"severity", "warning"}}));
  }
  EXPECT_EQ(dead_alerts, 1);

  // Every query of the rules and the dashboard names a family this msgqd
  // declares on /metrics.
  absl::StatusOr<std::string> names = launch::RunCommand(absl::StrCat(
      "/usr/bin/python3 ", MSGQ_SOURCE_DIR, "/tools/check-metric-names",
      " --metrics-url ", msgqd_http_, "/metrics ", MSGQ_SOURCE_DIR,
      "/deploy/grafana/msgq-dashboard.json ", MSGQ_SOURCE_DIR,
      "/deploy/prometheus/msgq-rules.yml"));
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_NE(names->find(" 0 problem(s)"), std::string::npos) << *names;
}

}  // namespace
}  // namespace msgq::testing
