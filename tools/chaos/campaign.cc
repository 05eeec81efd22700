#include "tools/chaos/campaign.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/chaos/campaign_log.h"
#include "tools/chaos/campaign_report.h"
#include "tools/chaos/campaign_setup.h"
#include "tools/chaos/cluster.h"
#include "tools/chaos/fault_plan.h"
#include "tools/chaos/hostile_phase.h"
#include "tools/chaos/ledger.h"
#include "tools/chaos/producers.h"
#include "tools/chaos/soak_files.h"
#include "tools/chaos/soak_report.h"
#include "tools/chaos/subscribers.h"
#include "tools/launch/child_process.h"
#include "tools/launch/private_mariadb.h"

namespace msgq::chaos {
namespace {

std::atomic<int> g_msgqd_pid{0};
std::string* g_mariadb_stop = nullptr;  // set before the signal thread runs

// Ctrl-C or a ctest timeout: leave no msgqd or mariadbd behind.
void StartSignalThread() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    fprintf(stderr, "msgq-chaos: signal %d, cleaning up\n", sig);
    if (g_msgqd_pid.load() > 0) kill(g_msgqd_pid.load(), SIGKILL);
    (void)launch::RunCommand(*g_mariadb_stop);
    _exit(130);
  }).detach();
}

int PortOf(const std::string& address) {
  int port = 0;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return 0;
  }
  return port;
}

// No more faults: waits until every row is acked (a violation after
// `timeout_s`); returns how long it took.
absl::Duration Drain(Cluster& cluster, Ledger& ledger, double timeout_s) {
  const absl::Time drain_start = absl::Now();
  const absl::Time drain_deadline = drain_start + absl::Seconds(timeout_s);
  std::string unacked = "?";
  while (absl::Now() < drain_deadline) {
    absl::StatusOr<QueryResult> r =
        cluster.Query(absl::StrCat("SELECT COUNT(*) FROM ", kDatabase, ".",
                                   kTable, " WHERE time_acked IS NULL"));
    if (r.ok()) unacked = r->rows[0][0].value_or("?");
    if (unacked == "0") break;
    absl::SleepFor(absl::Milliseconds(500));
  }
  const absl::Duration drain = absl::Now() - drain_start;
  if (unacked != "0") {
    ledger.Violation(absl::StrCat("drain did not finish within ", timeout_s,
                                  " s: ", unacked, " rows unacked"));
  }
  return drain;
}

// The ledger's verdict on the table as it is now.
absl::StatusOr<Report> Verify(Cluster& cluster, Ledger& ledger,
                              const CampaignOptions& o) {
  std::unordered_map<int64_t, TableRow> table;
  absl::StatusOr<QueryResult> rows = cluster.Query(absl::StrCat(
      "SELECT id, time_acked IS NOT NULL FROM ", kDatabase, ".", kTable));
  if (!rows.ok()) return rows.status();
  for (const auto& row : rows->rows) {
    table[std::stoll(*row[0])].acked = row[1].value_or("0") == "1";
  }
  return ledger.Verify(table, static_cast<int64_t>(o.ack_wait_s * 1e9),
                       static_cast<int64_t>(o.early_tolerance_ms * 1e6));
}

// --hostile: the soak's report on stdout and in the work dir.
void WriteSoak(const CampaignOptions& o, const std::string& work_dir,
               const Cluster& cluster, const CampaignResults& res,
               const Subscribers::Options& so, const ProcessSampler& sampler,
               SoakReport& soak) {
  soak.command = o.command;
  soak.seed = o.seed;
  soak.drain_s = absl::ToDoubleSeconds(res.drain);
  soak.grpc_address = cluster.address();
  soak.https_address = cluster.http_address();
  soak.mysql_address = cluster.mysql_protocol_address();
  soak.msgqd_runs = cluster.msgqd_starts();
  soak.ledger = res.ledger;
  soak.producers = res.producers;
  soak.subscribers = res.subscribers;
  soak.grpc_subscribers = so.streams;
  soak.mysql_subscribers = so.mysql_streams;
  soak.pass = res.ledger.violation_count == 0;
  PrintSoakReport(soak, stdout);
  const std::string report_path = work_dir + "/hostile-report.json";
  if (absl::Status s = WriteSoakJson(soak, report_path); !s.ok()) {
    fprintf(stderr, "msgq-chaos: %s\n", std::string(s.message()).c_str());
  }
  (void)WriteSamplesCsv(sampler.Samples(), work_dir + "/msgqd-samples.csv");
  printf("report: %s; msgqd CPU and RSS per second: %s/msgqd-samples.csv\n",
         report_path.c_str(), work_dir.c_str());
}

// Stops the clients after the fault phase, drains, stops msgqd and judges.
// Fills all of `res` but dumps_missing; an error when the table cannot be
// read.
absl::Status DrainAndVerify(const CampaignOptions& o, Cluster& cluster,
                            Ledger& ledger, Producers& producers,
                            Subscribers& subscribers, SoakReport& soak,
                            CampaignResults& res) {
  producers.Stop();
  subscribers.SetFaulty(false);
  Log("faults done; draining");
  res.drain = Drain(cluster, ledger, o.drain_timeout_s);
  // A little longer, so late redeliveries of acked rows are counted too.
  absl::SleepFor(absl::Seconds(1));
  if (o.hostile) soak.rss_after_drain_kb = ReadRssKb(g_msgqd_pid.load());
  subscribers.Stop();
  (void)cluster.CheckMsgqdAlive();
  const int exit_code = cluster.StopMsgqdCleanly();
  if (exit_code != 0) {
    ledger.Violation(absl::StrCat("msgqd exited with ", exit_code,
                                  " on SIGTERM (expected 0)"));
  }
  absl::StatusOr<Report> r = Verify(cluster, ledger, o);
  if (!r.ok()) return r.status();
  res.ledger = *std::move(r);
  res.producers = producers.stats();
  res.subscribers = subscribers.stats();
  res.msgqd_starts = cluster.msgqd_starts();
  return absl::OkStatus();
}

// The run on a started cluster: clients, the hostile phase, the faults,
// the drain and the verdict. 0 pass, 1 violations, 2 could not run.
int RunOnCluster(const CampaignOptions& o, const std::string& work_dir,
                 const SoakFiles& files, Cluster& cluster, Ledger& ledger) {
  SoakReport soak;
  const Ports ports{PortOf(cluster.address()), PortOf(cluster.http_address()),
                    PortOf(cluster.mysql_protocol_address())};
  if (o.hostile && (ports.https == 0 || ports.mysql == 0)) {
    fprintf(stderr,
            "msgq-chaos: msgqd did not say where its HTTP and MySQL-protocol "
            "ports are (http '%s', mysql protocol '%s'); see %s\n",
            cluster.http_address().c_str(),
            cluster.mysql_protocol_address().c_str(), work_dir.c_str());
    return 2;
  }
  Producers producers(ProducerOptions(o, cluster), &ledger);
  const Subscribers::Options so =
      SubscriberOptions(o, cluster, files, ports.mysql);
  Subscribers subscribers(so, &ledger);
  subscribers.Start();
  producers.Start();
  // The soak: normal clients alone, then under attack.
  std::optional<HostilePhase> phase;
  if (o.hostile) {
    phase.emplace(HostileOptions(o, files, ports, &subscribers, &g_msgqd_pid));
    if (absl::Status s = phase->Start(cluster, &soak); !s.ok()) {
      fprintf(stderr, "msgq-chaos: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  std::mt19937_64 rng(o.seed);
  FaultPlan plan(FaultOptions(o), &rng);
  const absl::Time start = absl::Now();
  plan.Run(cluster, ledger, start, absl::Seconds(o.duration_s));
  if (phase) {
    phase->Finish(cluster, start, start + absl::Seconds(o.duration_s), &soak);
  }
  CampaignResults res;
  res.fault_phase = absl::Now() - start;
  res.dumps_missing = plan.dumps_missing();
  if (absl::Status s = cluster.CheckMsgqdAlive(); !s.ok()) {
    Log("msgqd does not start: " + std::string(s.message()));
  }
  if (absl::Status s =
          DrainAndVerify(o, cluster, ledger, producers, subscribers, soak, res);
      !s.ok()) {
    fprintf(stderr, "msgq-chaos: cannot read the table: %s\n",
            std::string(s.message()).c_str());
    return 2;
  }
  PrintCampaignResults(o, res);
  const bool pass = res.ledger.violation_count == 0;
  if (phase) WriteSoak(o, work_dir, cluster, res, so, phase->sampler(), soak);
  printf("RESULT: %s\n", pass ? "PASS" : "FAIL");
  fflush(stdout);
  return pass ? 0 : 1;
}

// After a run: the work dir goes when it passed and was not asked for
// (the soak keeps its report and logs; only MariaDB's data goes).
void CleanUp(const CampaignOptions& o, const std::string& work_dir, bool pass) {
  if (pass && !o.keep_work_dir && o.work_dir.empty()) {
    (void)launch::RunCommand(
        "rm -rf " +
        launch::ShellQuote(o.hostile ? work_dir + "/mariadb" : work_dir));
    if (o.hostile) {
      printf("work dir (report, msgqd-NNN.log): %s\n", work_dir.c_str());
    }
  } else {
    printf("work dir (MariaDB data, msgqd-NNN.log): %s\n", work_dir.c_str());
  }
}

}  // namespace

int RunCampaign(const CampaignOptions& o) {
  std::string work_dir = o.work_dir;
  if (work_dir.empty()) {
    char templ[] = "/tmp/msgq-chaos-XXXXXX";
    if (mkdtemp(templ) == nullptr) return 2;
    work_dir = templ;
  }
  launch::PrivateMariaDb::Options db_options;
  db_options.source_dir = o.source_dir;
  db_options.dir = work_dir + "/mariadb";
  g_mariadb_stop = new std::string(launch::PrivateMariaDb::StopCommand(
      db_options, launch::PrivateMariaDb::StopMode::kKill));
  StartSignalThread();

  Ledger ledger;
  SoakFiles files;
  if (o.hostile) {
    const std::string dir = work_dir + "/soak";
    mkdir(dir.c_str(), 0700);
    absl::StatusOr<SoakFiles> made =
        MakeSoakFiles(dir, kDatabase, {kTable, kDecoy}, kDecoy);
    if (!made.ok()) {
      fprintf(stderr, "msgq-chaos: %s\n",
              std::string(made.status().message()).c_str());
      return 2;
    }
    files = *std::move(made);
  }
  Log("msgq-chaos: starting MariaDB and msgqd in " + work_dir);
  absl::StatusOr<std::unique_ptr<Cluster>> started =
      Cluster::Start(ClusterOptions(o, work_dir, files, &g_msgqd_pid), &ledger);
  if (!started.ok()) {
    fprintf(stderr, "msgq-chaos: cannot start: %s\n",
            std::string(started.status().message()).c_str());
    (void)launch::RunCommand(*g_mariadb_stop);
    return 2;
  }
  const int code = RunOnCluster(o, work_dir, files, **started, ledger);
  if (code == 2) return code;
  started->reset();  // stops MariaDB (clean)
  CleanUp(o, work_dir, code == 0);
  return code;
}

}  // namespace msgq::chaos
