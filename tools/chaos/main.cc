// msgq-chaos: the fault campaign. A private durable MariaDB, msgqd, producers
// writing in transactions (some rolled back, some scheduled) and subscribers
// acking (some acks skipped or late), while msgqd is killed with SIGKILL and
// restarted, MariaDB is restarted (cleanly and with SIGKILL), msgqd is
// SIGSTOPped and SIGCONTed and the binlog dump connection is KILLed. Then the
// faults stop, the queue drains, and the table and what the subscribers saw
// are checked (tools/chaos/ledger.h). Exit 0: no violation; 1: violations;
// 2: the campaign could not run. See docs/reliability.md.
//
// --hostile: the hostile soak (issue 34). msgqd serves TLS with bearer
// tokens and a policy on its three ports (tools/chaos/soak_files.h); the
// producers, gRPC subscribers, a MySQL-protocol subscriber and probes
// (probes.h) are the normal clients, timed first alone (--hostile_calm),
// then while hostile clients (hostile.h) work every port for --duration
// (600 s unless given; the faults are off unless given). msgqd's CPU and
// RSS are sampled every second (process_sampler.h). The report
// (soak_report.h) goes to stdout and WORK_DIR/hostile-report.json; the
// exit code is the campaign's (1 when a message was lost or msgqd died).
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tools/chaos/cluster.h"
#include "tools/chaos/hostile.h"
#include "tools/chaos/ledger.h"
#include "tools/chaos/mysql_client.h"
#include "tools/chaos/probes.h"
#include "tools/chaos/process_sampler.h"
#include "tools/chaos/producers.h"
#include "tools/chaos/soak_files.h"
#include "tools/chaos/soak_report.h"
#include "tools/chaos/subscribers.h"
#include "tools/launch/child_process.h"
#include "tools/launch/private_mariadb.h"

ABSL_FLAG(double, duration, 60,
          "Seconds of the fault phase (faults are "
          "spread over it; a slow restart can make it longer)");
ABSL_FLAG(int, msgqd_kills, 10, "kill -9 + restart cycles of msgqd");
ABSL_FLAG(int, mariadb_restarts, 4,
          "MariaDB restarts (alternately clean and kill -9)");
ABSL_FLAG(int, sigstops, -1, "SIGSTOP/SIGCONT of msgqd (-1: msgqd_kills/4+1)");
ABSL_FLAG(int, dump_kills, -1,
          "KILLs of the binlog dump connection (-1: msgqd_kills/4+1)");
ABSL_FLAG(int, host_crashes, -1,
          "kill -9 of msgqd and MariaDB together, msgqd restarted first "
          "(-1: mariadb_restarts/4)");
ABSL_FLAG(int, table_reloads, 0,
          "Comment changes of the table (vt_batch_size 10 <-> 11), which "
          "make msgqd reload it under load (issue 10, defect 2)");
ABSL_FLAG(uint64_t, seed, 1, "Random seed (0: from the clock)");
ABSL_FLAG(int, producers, 3, "Producer threads (one connection each)");
ABSL_FLAG(double, rate, 40, "Producer transactions per second, in total");
ABSL_FLAG(int, subscribers, 3, "Subscriber streams");
ABSL_FLAG(double, ack_wait, 2, "vt_ack_wait (s) of the campaign's table");
ABSL_FLAG(double, drain_timeout, 300,
          "After the faults: s to wait for every message to be acked");
ABSL_FLAG(double, early_tolerance_ms, 1,
          "A scheduled message received this much before its time_next "
          "still counts as on time (clock granularity)");
ABSL_FLAG(std::string, work_dir, "",
          "MariaDB data and msgqd logs (default: a new /tmp directory, "
          "removed when the campaign passes)");
ABSL_FLAG(bool, keep_work_dir, false, "Keep the work directory");
ABSL_FLAG(std::string, msgqd_path, MSGQ_CHAOS_MSGQD_PATH, "msgqd binary");
ABSL_FLAG(std::string, source_dir, MSGQ_CHAOS_SOURCE_DIR,
          "msgq source tree (for tools/mariadb-private)");

ABSL_FLAG(bool, hostile, false,
          "The hostile soak (issue 34): msgqd with TLS, tokens and a policy "
          "on gRPC, HTTPS and the MySQL protocol; normal clients timed "
          "while hostile clients work every port (tools/chaos/hostile.h). "
          "--duration defaults to 600 and the faults to 0; report on stdout "
          "and in WORK_DIR/hostile-report.json");
ABSL_FLAG(double, hostile_calm, 10,
          "With --hostile: s of normal clients alone before the attack "
          "(their figures are reported apart)");
ABSL_FLAG(int, mysql_subscribers, 1,
          "With --hostile: subscribers reading the table over the MySQL-"
          "protocol port (they ack over gRPC)");
ABSL_FLAG(double, probe_interval, 0.2,
          "With --hostile: s between the starts of a probe's attempts");
ABSL_FLAG(double, hostile_hold, 15,
          "With --hostile: s each held bad connection is held");
ABSL_FLAG(double, hostile_gap, 3,
          "With --hostile: s between two rounds of held connections");
ABSL_FLAG(double, hostile_interval, 0.4,
          "With --hostile: s between two requests of a hostile kind");
ABSL_FLAG(int, hostile_mid_record, 8,
          "With --hostile: HTTPS connections stalled inside a TLS record");
ABSL_FLAG(int, hostile_silent_tls, 4,
          "With --hostile: HTTPS connections silent after the handshake");
ABSL_FLAG(int, hostile_silent_tcp, 4,
          "With --hostile: TCP connections silent before any handshake, "
          "per port");
ABSL_FLAG(int, hostile_hoard, 64,
          "With --hostile: MySQL-protocol connections hog (no grant) logs "
          "in and holds");
ABSL_FLAG(int, hostile_idle, 4,
          "With --hostile: logged-in idle MySQL-protocol connections");
ABSL_FLAG(int, hostile_big_queries, 4,
          "With --hostile: threads sending 1 MiB COM_QUERYs of '('");

namespace msgq::chaos {
namespace {

constexpr char kDatabase[] = "chaos";
constexpr char kTable[] = "q";
// --hostile: a table no producer writes, for the hostile clients' streams,
// acks and forms, so that the Ledger of kTable stays exact.
constexpr char kDecoy[] = "decoy";

std::string g_command;            // as run, for the soak's report
std::vector<std::string> g_args;  // argv[1..]

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

void Log(const std::string& line) {
  fprintf(
      stderr, "%s  %s\n",
      absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone()).c_str(),
      line.c_str());
}

// Whether --`name` was given (the soak has defaults of its own).
bool FlagGiven(const char* name) {
  for (const std::string& arg : g_args) {
    absl::string_view a = arg;
    if (!absl::ConsumePrefix(&a, "--")) absl::ConsumePrefix(&a, "-");
    if (a == name || absl::StartsWith(a, absl::StrCat(name, "="))) return true;
  }
  return false;
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Run() {
  const bool hostile = absl::GetFlag(FLAGS_hostile);
  // The soak's faults are off and it lasts 10 minutes unless told.
  auto soak_default = [hostile](const char* name, auto value, auto soak) {
    return hostile && !FlagGiven(name) ? soak : value;
  };
  const double duration =
      soak_default("duration", absl::GetFlag(FLAGS_duration), 600.0);
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed == 0) seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const double ack_wait = absl::GetFlag(FLAGS_ack_wait);
  const int kills =
      soak_default("msgqd_kills", absl::GetFlag(FLAGS_msgqd_kills), 0);
  const int restarts = soak_default("mariadb_restarts",
                                    absl::GetFlag(FLAGS_mariadb_restarts), 0);
  int sigstops = soak_default("sigstops", absl::GetFlag(FLAGS_sigstops), 0);
  int dump_kills =
      soak_default("dump_kills", absl::GetFlag(FLAGS_dump_kills), 0);
  if (sigstops < 0) sigstops = kills / 4 + 1;
  if (dump_kills < 0) dump_kills = kills / 4 + 1;
  const int reloads = absl::GetFlag(FLAGS_table_reloads);
  int crashes =
      soak_default("host_crashes", absl::GetFlag(FLAGS_host_crashes), 0);
  if (crashes < 0) crashes = restarts / 4;

  std::string work_dir = absl::GetFlag(FLAGS_work_dir);
  if (work_dir.empty()) {
    char templ[] = "/tmp/msgq-chaos-XXXXXX";
    if (mkdtemp(templ) == nullptr) return 2;
    work_dir = templ;
  }
  launch::PrivateMariaDb::Options db_options;
  db_options.source_dir = absl::GetFlag(FLAGS_source_dir);
  db_options.dir = work_dir + "/mariadb";
  g_mariadb_stop = new std::string(launch::PrivateMariaDb::StopCommand(
      db_options, launch::PrivateMariaDb::StopMode::kKill));
  StartSignalThread();

  Ledger ledger;
  Cluster::Options co;
  co.source_dir = absl::GetFlag(FLAGS_source_dir);
  co.msgqd_path = absl::GetFlag(FLAGS_msgqd_path);
  co.work_dir = work_dir;
  co.msgqd_pid = &g_msgqd_pid;
  co.msgqd_args = {absl::StrCat("--databases=", kDatabase)};
  SoakFiles files;
  if (hostile) {
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
    co.msgqd_args.insert(
        co.msgqd_args.end(),
        {"--tls_cert=" + files.cert_file, "--tls_key=" + files.key_file,
         "--auth_tokens_file=" + files.tokens_file,
         "--auth_policy_file=" + files.policy_file, "--http_listen=127.0.0.1:0",
         "--mysql_protocol_listen=127.0.0.1:0"});
  }
  auto comment = [ack_wait](int batch_size) {
    return absl::StrFormat(
        "vitess_message,vt_ack_wait=%g,vt_purge_after=86400,"
        "vt_batch_size=%d,vt_cache_size=1000,vt_poller_interval=5,"
        "vt_max_backoff=%g",
        ack_wait, batch_size, 2 * ack_wait);
  };
  co.setup_sql = {
      absl::StrCat("CREATE DATABASE IF NOT EXISTS ", kDatabase),
      absl::StrFormat(
          "CREATE TABLE IF NOT EXISTS %s.%s (id bigint NOT NULL, "
          "priority tinyint NOT NULL DEFAULT 50, epoch bigint NOT NULL "
          "DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT "
          "NULL, message json, PRIMARY KEY (id), INDEX poller_idx "
          "(time_acked, priority, time_next)) COMMENT '%s'",
          kDatabase, kTable, comment(10)),
      absl::StrCat("TRUNCATE TABLE ", kDatabase, ".", kTable)};
  if (hostile) {
    co.setup_sql.push_back(
        absl::StrFormat("CREATE TABLE IF NOT EXISTS %s.%s LIKE %s.%s",
                        kDatabase, kDecoy, kDatabase, kTable));
    co.setup_sql.push_back(
        absl::StrCat("TRUNCATE TABLE ", kDatabase, ".", kDecoy));
  }
  Log("msgq-chaos: starting MariaDB and msgqd in " + work_dir);
  absl::StatusOr<std::unique_ptr<Cluster>> started =
      Cluster::Start(co, &ledger);
  if (!started.ok()) {
    fprintf(stderr, "msgq-chaos: cannot start: %s\n",
            std::string(started.status().message()).c_str());
    (void)launch::RunCommand(*g_mariadb_stop);
    return 2;
  }
  Cluster& cluster = **started;
  SoakReport soak;
  const int grpc_port = PortOf(cluster.address());
  const int https_port = PortOf(cluster.http_address());
  const int mysql_port = PortOf(cluster.mysql_protocol_address());
  if (hostile && (https_port == 0 || mysql_port == 0)) {
    fprintf(stderr,
            "msgq-chaos: msgqd did not say where its HTTP and MySQL-protocol "
            "ports are (http '%s', mysql protocol '%s'); see %s\n",
            cluster.http_address().c_str(),
            cluster.mysql_protocol_address().c_str(), work_dir.c_str());
    return 2;
  }

  Producers::Options po;
  po.mysql = cluster.mysql();
  po.table = absl::StrCat(kDatabase, ".", kTable);
  po.threads = absl::GetFlag(FLAGS_producers);
  po.tx_per_second = absl::GetFlag(FLAGS_rate);
  po.max_schedule_s = 3 * ack_wait;
  po.seed = seed;
  Producers producers(po, &ledger);
  Subscribers::Options so;
  so.address = cluster.address();
  so.keyspace = kDatabase;
  so.table = kTable;
  so.streams = absl::GetFlag(FLAGS_subscribers);
  so.ack_wait = absl::Seconds(ack_wait);
  so.seed = seed;
  if (hostile) {
    // Acks go through at once: every duplicate is then the soak's doing.
    so.skip_fraction = 0;
    so.delay_fraction = 0;
    so.tls_ca_pem = ReadFile(files.ca_file);
    so.token = files.worker_token;
    so.mysql_streams = absl::GetFlag(FLAGS_mysql_subscribers);
    so.mysql_port = mysql_port;
    so.mysql_user = "worker";
    so.mysql_ca_file = files.ca_file;
  }
  Subscribers subscribers(so, &ledger);
  subscribers.Start();
  producers.Start();

  // The soak: normal clients alone, then under attack.
  Probes::Options probe_options;
  probe_options.https_port = https_port;
  probe_options.mysql_port = mysql_port;
  probe_options.grpc_port = grpc_port;
  probe_options.ca_file = files.ca_file;
  probe_options.token = files.worker_token;
  probe_options.interval = absl::Seconds(absl::GetFlag(FLAGS_probe_interval));
  ProcessSampler::Options sampler_options;
  sampler_options.pid = [] { return g_msgqd_pid.load(); };
  std::unique_ptr<ProcessSampler> sampler;
  std::unique_ptr<Probes> probes;
  std::unique_ptr<Hostile> attack;
  if (hostile) {
    soak.calm_s = absl::GetFlag(FLAGS_hostile_calm);
    Log(
        absl::StrFormat("hostile soak: grpc %s, https %s, mysql %s; %.0f s "
                        "of normal clients alone",
                        cluster.address(), cluster.http_address(),
                        cluster.mysql_protocol_address(), soak.calm_s));
    sampler = std::make_unique<ProcessSampler>(sampler_options);
    sampler->Start();
    probes = std::make_unique<Probes>(probe_options);
    if (absl::Status s = probes->Start(); !s.ok()) {
      fprintf(stderr, "msgq-chaos: %s\n", std::string(s.message()).c_str());
      return 2;
    }
    absl::SleepFor(absl::Seconds(soak.calm_s));
    probes->Stop();
    soak.calm = probes->Reports();
    sampler->Stop();
    soak.calm_msgqd = sampler->Summary();

    Log(absl::StrFormat("hostile clients for %.0f s", duration));
    sampler = std::make_unique<ProcessSampler>(sampler_options);
    sampler->Start();
    probes = std::make_unique<Probes>(probe_options);
    (void)probes->Start();
    Hostile::Options ho;
    ho.grpc_port = grpc_port;
    ho.https_port = https_port;
    ho.mysql_port = mysql_port;
    ho.ca_file = files.ca_file;
    ho.keyspace = kDatabase;
    ho.table = kTable;
    ho.decoy = kDecoy;
    ho.worker_token = files.worker_token;
    ho.idler_token = files.idler_token;
    ho.ops_token = files.ops_token;
    ho.mallory_token = files.mallory_token;
    ho.hog_token = files.hog_token;
    ho.victims = [&subscribers] { return subscribers.MysqlConnectionIds(); };
    ho.duration = absl::Seconds(duration);
    ho.hold = absl::Seconds(absl::GetFlag(FLAGS_hostile_hold));
    ho.gap = absl::Seconds(absl::GetFlag(FLAGS_hostile_gap));
    ho.interval = absl::Seconds(absl::GetFlag(FLAGS_hostile_interval));
    ho.mid_record = absl::GetFlag(FLAGS_hostile_mid_record);
    ho.silent_tls = absl::GetFlag(FLAGS_hostile_silent_tls);
    ho.silent_tcp = absl::GetFlag(FLAGS_hostile_silent_tcp);
    ho.hoard = absl::GetFlag(FLAGS_hostile_hoard);
    ho.idle = absl::GetFlag(FLAGS_hostile_idle);
    ho.big_query_threads = absl::GetFlag(FLAGS_hostile_big_queries);
    attack = std::make_unique<Hostile>(ho);
    if (absl::Status s = attack->Start(); !s.ok()) {
      fprintf(stderr, "msgq-chaos: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }

  // The fault plan: every fault once per count, shuffled, spread evenly.
  enum Kind { kKill, kRestart, kStop, kDump, kCrash, kReload };
  std::vector<Kind> plan;
  plan.insert(plan.end(), kills, kKill);
  plan.insert(plan.end(), restarts, kRestart);
  plan.insert(plan.end(), sigstops, kStop);
  plan.insert(plan.end(), dump_kills, kDump);
  plan.insert(plan.end(), crashes, kCrash);
  plan.insert(plan.end(), reloads, kReload);
  int reloads_done = 0;
  std::shuffle(plan.begin(), plan.end(), rng);
  const absl::Time start = absl::Now();
  const absl::Duration slot = absl::Seconds(duration) / (plan.size() + 1);
  int restarts_done = 0, dumps_missing = 0, fault_errors = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    absl::SleepFor(start + slot * (i + 1 + (u(rng) - 0.5) * 0.6) - absl::Now());
    absl::Status s;
    std::string what;
    const absl::Time t0 = absl::Now();
    switch (plan[i]) {
      case kKill: {
        const absl::Duration down = absl::Seconds(u(rng));
        what = absl::StrCat("kill -9 msgqd, restart after ",
                            absl::FormatDuration(down));
        s = cluster.KillMsgqd(down);
        break;
      }
      case kRestart: {
        const bool kill = restarts_done++ % 2 == 1;
        const absl::Duration down = absl::Seconds(2 * u(rng));
        what = absl::StrCat(kill ? "kill -9" : "clean stop",
                            " of MariaDB, restart after ",
                            absl::FormatDuration(down));
        s = cluster.RestartMariaDb(kill, down);
        break;
      }
      case kStop: {
        const absl::Duration stopped = absl::Seconds((0.2 + u(rng)) * ack_wait);
        what =
            absl::StrCat("SIGSTOP msgqd for ", absl::FormatDuration(stopped));
        s = cluster.StopMsgqd(stopped);
        break;
      }
      case kCrash: {
        const absl::Duration down = absl::Seconds(2 * u(rng));
        what = absl::StrCat("kill -9 of msgqd and MariaDB, MariaDB back ",
                            absl::FormatDuration(down), " after msgqd");
        s = cluster.CrashBoth(down);
        break;
      }
      case kReload: {
        const int batch = ++reloads_done % 2 == 1 ? 11 : 10;
        what = absl::StrCat("table comment: vt_batch_size=", batch);
        // msgqd's default --schema_reload_interval is 10 s.
        s = cluster.ReloadTable(
            absl::StrCat("ALTER TABLE ", kDatabase, ".", kTable, " COMMENT '",
                         comment(batch), "'"),
            absl::Seconds(12));
        break;
      }
      case kDump:
        what = "KILL the binlog dump connection";
        s = cluster.KillDumpThread();
        if (s.code() == absl::StatusCode::kNotFound) {
          ++dumps_missing;
          s = absl::OkStatus();
          what += " (none found)";
        }
        break;
    }
    Log(absl::StrFormat("fault %d/%d: %s (%s)%s", i + 1, plan.size(), what,
                        absl::FormatDuration(absl::Now() - t0),
                        s.ok() ? "" : " FAILED: " + std::string(s.message())));
    if (!s.ok() && ++fault_errors >= 3) {
      ledger.Violation("the cluster did not come back after a fault: " +
                       std::string(s.message()));
      break;
    }
  }
  if (hostile) {
    // The rest of the attack; msgqd exiting by itself is a violation (and
    // it is started again, on the same ports).
    const absl::Time end = start + absl::Seconds(duration);
    int64_t last_report = 0;
    while (absl::Now() < end) {
      absl::SleepFor(std::min(absl::Seconds(1), end - absl::Now()));
      if (absl::Status s = cluster.CheckMsgqdAlive(); !s.ok()) {
        Log("msgqd does not start again: " + std::string(s.message()));
      }
      const int64_t elapsed = absl::ToInt64Seconds(absl::Now() - start);
      if (elapsed / 60 > last_report) {
        last_report = elapsed / 60;
        const ProcessSummary m = sampler->Summary();
        Log(absl::StrFormat(
            "hostile phase: %d s; msgqd CPU peak %.0f%%, RSS peak %.1f MiB",
            elapsed, m.cpu_peak_pct,
            static_cast<double>(m.rss_peak_kb) / 1024));
      }
    }
    Log("stopping the hostile clients");
    attack->Stop();
    probes->Stop();
    sampler->Stop();
    soak.hostile = attack->Reports();
    soak.under_attack = probes->Reports();
    soak.msgqd = sampler->Summary();
    soak.hostile_s = absl::ToDoubleSeconds(absl::Now() - start);
  }
  const absl::Duration fault_phase = absl::Now() - start;
  if (absl::Status s = cluster.CheckMsgqdAlive(); !s.ok()) {
    Log("msgqd does not start: " + std::string(s.message()));
  }

  // Drain: no more faults, producers stop, every ack goes through.
  producers.Stop();
  subscribers.SetFaulty(false);
  Log("faults done; draining");
  const absl::Time drain_start = absl::Now();
  const absl::Time drain_deadline =
      drain_start + absl::Seconds(absl::GetFlag(FLAGS_drain_timeout));
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
    ledger.Violation(absl::StrCat("drain did not finish within ",
                                  absl::GetFlag(FLAGS_drain_timeout),
                                  " s: ", unacked, " rows unacked"));
  }
  // A little longer, so late redeliveries of acked rows are counted too.
  absl::SleepFor(absl::Seconds(1));
  if (hostile) soak.rss_after_drain_kb = ReadRssKb(g_msgqd_pid.load());
  subscribers.Stop();
  (void)cluster.CheckMsgqdAlive();
  const int exit_code = cluster.StopMsgqdCleanly();
  if (exit_code != 0) {
    ledger.Violation(absl::StrCat("msgqd exited with ", exit_code,
                                  " on SIGTERM (expected 0)"));
  }

  std::unordered_map<int64_t, TableRow> table;
  absl::StatusOr<QueryResult> rows = cluster.Query(absl::StrCat(
      "SELECT id, time_acked IS NOT NULL FROM ", kDatabase, ".", kTable));
  if (!rows.ok()) {
    fprintf(stderr, "msgq-chaos: cannot read the table: %s\n",
            std::string(rows.status().message()).c_str());
    return 2;
  }
  for (const auto& row : rows->rows) {
    table[std::stoll(*row[0])].acked = row[1].value_or("0") == "1";
  }
  const Report r = ledger.Verify(
      table, static_cast<int64_t>(ack_wait * 1e9),
      static_cast<int64_t>(absl::GetFlag(FLAGS_early_tolerance_ms) * 1e6));
  const Producers::Stats ps = producers.stats();
  const Subscribers::Stats ss = subscribers.stats();

  std::vector<std::string> causes;
  for (const auto& [cause, n] : r.inside_by_fault) {
    causes.push_back(absl::StrCat(cause, " ", n));
  }
  printf(
      "msgq-chaos: seed %llu, fault phase %.0f s, drain %.1f s (bound %.0f "
      "s)\n",
      static_cast<unsigned long long>(seed), absl::ToDoubleSeconds(fault_phase),
      absl::ToDoubleSeconds(drain), absl::GetFlag(FLAGS_drain_timeout));
  printf(
      "faults: msgqd kill -9 %d, MariaDB restarts %d (clean %d, kill -9 %d), "
      "SIGSTOP %d, dump KILL %d (%d found none), both kill -9 %d, table "
      "reloads %d; msgqd runs %d\n",
      kills, restarts, (restarts + 1) / 2, restarts / 2, sigstops, dump_kills,
      dumps_missing, crashes, reloads, cluster.msgqd_starts());
  printf(
      "producers: %lld transactions: %lld committed, %lld rolled back, "
      "%lld failed before COMMIT, %lld COMMIT unknown; %lld reconnects\n",
      (long long)ps.transactions, (long long)ps.commits,
      (long long)ps.rollbacks, (long long)ps.failed, (long long)ps.unknown,
      (long long)ps.reconnects);
  printf(
      "messages: %lld committed (%lld scheduled), %lld not committed, "
      "unknown commits: %lld rows present, %lld absent\n",
      (long long)r.committed, (long long)r.scheduled,
      (long long)r.not_committed, (long long)r.unknown_present,
      (long long)r.unknown_absent);
  printf(
      "deliveries: %lld of %lld distinct ids; duplicates %lld, inside "
      "ack wait (%.1f s) %lld [%s]; after an OK ack %lld\n",
      (long long)r.deliveries, (long long)r.delivered_ids,
      (long long)r.duplicates, ack_wait, (long long)r.inside_ack_wait,
      absl::StrJoin(causes, ", ").c_str(), (long long)r.after_ack_ok);
  printf(
      "subscribers: %lld ack calls (%lld failed), %lld acks skipped, "
      "%lld delayed, %lld stream reconnects; max early %.3f ms "
      "(tolerance %.3f ms)\n",
      (long long)ss.ack_calls, (long long)ss.ack_errors, (long long)ss.skipped,
      (long long)ss.delayed, (long long)ss.reconnects,
      static_cast<double>(r.max_early_ns) / 1e6,
      absl::GetFlag(FLAGS_early_tolerance_ms));
  for (const auto& [what, n] : ss.errors) {
    printf("  %6lld x %s\n", (long long)n, what.c_str());
  }
  for (const std::string& s : r.suspicious) {
    printf("  inside ack wait, no fault between: %s\n", s.c_str());
  }
  printf("violations: %lld\n", (long long)r.violation_count);
  for (const std::string& v : r.violations) printf("  %s\n", v.c_str());
  const bool pass = r.violation_count == 0;
  std::string report_path;
  if (hostile) {
    soak.command = g_command;
    soak.seed = seed;
    soak.drain_s = absl::ToDoubleSeconds(drain);
    soak.grpc_address = cluster.address();
    soak.https_address = cluster.http_address();
    soak.mysql_address = cluster.mysql_protocol_address();
    soak.msgqd_runs = cluster.msgqd_starts();
    soak.ledger = r;
    soak.producers = ps;
    soak.subscribers = ss;
    soak.grpc_subscribers = so.streams;
    soak.mysql_subscribers = so.mysql_streams;
    soak.pass = pass;
    PrintSoakReport(soak, stdout);
    report_path = work_dir + "/hostile-report.json";
    if (absl::Status s = WriteSoakJson(soak, report_path); !s.ok()) {
      fprintf(stderr, "msgq-chaos: %s\n", std::string(s.message()).c_str());
    }
    (void)WriteSamplesCsv(sampler->Samples(), work_dir + "/msgqd-samples.csv");
    printf("report: %s; msgqd CPU and RSS per second: %s/msgqd-samples.csv\n",
           report_path.c_str(), work_dir.c_str());
  }
  printf("RESULT: %s\n", pass ? "PASS" : "FAIL");
  fflush(stdout);
  started->reset();  // stops MariaDB (clean)
  if (pass && !absl::GetFlag(FLAGS_keep_work_dir) &&
      absl::GetFlag(FLAGS_work_dir).empty()) {
    // The soak keeps its report and logs; only MariaDB's data goes.
    (void)launch::RunCommand(
        "rm -rf " +
        launch::ShellQuote(hostile ? work_dir + "/mariadb" : work_dir));
    if (hostile)
      printf("work dir (report, msgqd-NNN.log): %s\n", work_dir.c_str());
  } else {
    printf("work dir (MariaDB data, msgqd-NNN.log): %s\n", work_dir.c_str());
  }
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace msgq::chaos

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "msgq-chaos [--duration=S] [--msgqd_kills=N] [--mariadb_restarts=N] "
      "[--seed=N]: the fault campaign (docs/reliability.md); msgq-chaos "
      "--hostile [--duration=S]: the hostile soak of all three ports");
  absl::ParseCommandLine(argc, argv);
  for (int i = 0; i < argc; ++i) {
    absl::StrAppend(&msgq::chaos::g_command, i > 0 ? " " : "", argv[i]);
    if (i > 0) msgq::chaos::g_args.push_back(argv[i]);
  }
  // Writes to a socket the server closed fail with EPIPE instead of killing
  // the campaign (children start with an empty mask: launch/child_process).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  msgq::chaos::MysqlLibraryInit();
  return msgq::chaos::Run();
}
