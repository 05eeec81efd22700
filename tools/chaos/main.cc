// msgq-chaos: the fault campaign. A private durable MariaDB, msgqd, producers
// writing in transactions (some rolled back, some scheduled) and subscribers
// acking (some acks skipped or late), while msgqd is killed with SIGKILL and
// restarted, MariaDB is restarted (cleanly and with SIGKILL), msgqd is
// SIGSTOPped and SIGCONTed and the binlog dump connection is KILLed. Then the
// faults stop, the queue drains, and the table and what the subscribers saw
// are checked (tools/chaos/ledger.h). Exit 0: no violation; 1: violations;
// 2: the campaign could not run. See docs/reliability.md.
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tools/chaos/cluster.h"
#include "tools/chaos/ledger.h"
#include "tools/chaos/producers.h"
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

namespace msgq::chaos {
namespace {

constexpr char kDatabase[] = "chaos";
constexpr char kTable[] = "q";

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

int Run() {
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed == 0) seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const double ack_wait = absl::GetFlag(FLAGS_ack_wait);
  const int kills = absl::GetFlag(FLAGS_msgqd_kills);
  const int restarts = absl::GetFlag(FLAGS_mariadb_restarts);
  int sigstops = absl::GetFlag(FLAGS_sigstops);
  int dump_kills = absl::GetFlag(FLAGS_dump_kills);
  if (sigstops < 0) sigstops = kills / 4 + 1;
  if (dump_kills < 0) dump_kills = kills / 4 + 1;
  const int reloads = absl::GetFlag(FLAGS_table_reloads);
  int crashes = absl::GetFlag(FLAGS_host_crashes);
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
  Subscribers subscribers(so, &ledger);
  subscribers.Start();
  producers.Start();

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
  const absl::Duration slot =
      absl::Seconds(absl::GetFlag(FLAGS_duration)) / (plan.size() + 1);
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
  printf("RESULT: %s\n", pass ? "PASS" : "FAIL");
  fflush(stdout);
  started->reset();  // stops MariaDB (clean)
  if (pass && !absl::GetFlag(FLAGS_keep_work_dir) &&
      absl::GetFlag(FLAGS_work_dir).empty()) {
    (void)launch::RunCommand("rm -rf " + launch::ShellQuote(work_dir));
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
      "[--seed=N]: the fault campaign (docs/reliability.md)");
  absl::ParseCommandLine(argc, argv);
  return msgq::chaos::Run();
}
