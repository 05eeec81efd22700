// msgq-chaos: the fault campaign. A private durable MariaDB, msgqd, producers
// writing in transactions (some rolled back, some scheduled) and subscribers
// acking (some acks skipped or late), while msgqd is killed with SIGKILL and
// restarted, MariaDB is restarted (cleanly and with SIGKILL), msgqd is
// SIGSTOPped and SIGCONTed and the binlog dump connection is KILLed. Then the
// faults stop, the queue drains, and the table and what the subscribers saw
// are checked (tools/chaos/ledger.h). Exit 0: no violation; 1: violations;
// 2: the campaign could not run. See docs/reliability.md.
//
// --hostile: the hostile soak (docs/reliability.md#hostile-soak). msgqd serves
// TLS with bearer tokens and a policy on its three ports
// (tools/chaos/soak_files.h); the producers, gRPC subscribers, a MySQL-protocol
// subscriber and probes (probes.h) are the normal clients, timed first alone
// (--hostile_calm), then while hostile clients (hostile.h) work every port for
// --duration (600 s unless given; the faults are off unless given). msgqd's CPU
// and RSS are sampled every second (process_sampler.h). The report
// (soak_report.h) goes to stdout and WORK_DIR/hostile-report.json; the exit
// code is the campaign's (1 when a message was lost or msgqd died).
#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tools/chaos/campaign.h"
#include "tools/chaos/mysql_client.h"

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

// Whether --`name` is among `args` (the soak has defaults of its own).
bool FlagGiven(const std::vector<std::string>& args, const char* name) {
  for (const std::string& arg : args) {
    absl::string_view a = arg;
    if (!absl::ConsumePrefix(&a, "--")) absl::ConsumePrefix(&a, "-");
    if (a == name || absl::StartsWith(a, absl::StrCat(name, "="))) return true;
  }
  return false;
}

HostileSoakOptions SoakFlags() {
  HostileSoakOptions s;
  s.calm_s = absl::GetFlag(FLAGS_hostile_calm);
  s.mysql_subscribers = absl::GetFlag(FLAGS_mysql_subscribers);
  s.probe_interval_s = absl::GetFlag(FLAGS_probe_interval);
  s.hold_s = absl::GetFlag(FLAGS_hostile_hold);
  s.gap_s = absl::GetFlag(FLAGS_hostile_gap);
  s.interval_s = absl::GetFlag(FLAGS_hostile_interval);
  s.mid_record = absl::GetFlag(FLAGS_hostile_mid_record);
  s.silent_tls = absl::GetFlag(FLAGS_hostile_silent_tls);
  s.silent_tcp = absl::GetFlag(FLAGS_hostile_silent_tcp);
  s.hoard = absl::GetFlag(FLAGS_hostile_hoard);
  s.idle = absl::GetFlag(FLAGS_hostile_idle);
  s.big_queries = absl::GetFlag(FLAGS_hostile_big_queries);
  return s;
}

// The flags as options; with --hostile the faults are off and it lasts 10
// minutes unless told.
CampaignOptions OptionsFromFlags(const std::string& command,
                                 const std::vector<std::string>& args) {
  CampaignOptions o;
  o.command = command;
  o.hostile = absl::GetFlag(FLAGS_hostile);
  auto soak_default = [&](const char* name, auto value, auto soak) {
    return o.hostile && !FlagGiven(args, name) ? soak : value;
  };
  o.duration_s = soak_default("duration", absl::GetFlag(FLAGS_duration), 600.0);
  o.seed = absl::GetFlag(FLAGS_seed);
  if (o.seed == 0)
    o.seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  o.ack_wait_s = absl::GetFlag(FLAGS_ack_wait);
  o.msgqd_kills =
      soak_default("msgqd_kills", absl::GetFlag(FLAGS_msgqd_kills), 0);
  o.mariadb_restarts = soak_default("mariadb_restarts",
                                    absl::GetFlag(FLAGS_mariadb_restarts), 0);
  o.sigstops = soak_default("sigstops", absl::GetFlag(FLAGS_sigstops), 0);
  o.dump_kills = soak_default("dump_kills", absl::GetFlag(FLAGS_dump_kills), 0);
  if (o.sigstops < 0) o.sigstops = o.msgqd_kills / 4 + 1;
  if (o.dump_kills < 0) o.dump_kills = o.msgqd_kills / 4 + 1;
  o.table_reloads = absl::GetFlag(FLAGS_table_reloads);
  o.host_crashes =
      soak_default("host_crashes", absl::GetFlag(FLAGS_host_crashes), 0);
  if (o.host_crashes < 0) o.host_crashes = o.mariadb_restarts / 4;
  o.producers = absl::GetFlag(FLAGS_producers);
  o.rate = absl::GetFlag(FLAGS_rate);
  o.subscribers = absl::GetFlag(FLAGS_subscribers);
  o.drain_timeout_s = absl::GetFlag(FLAGS_drain_timeout);
  o.early_tolerance_ms = absl::GetFlag(FLAGS_early_tolerance_ms);
  o.work_dir = absl::GetFlag(FLAGS_work_dir);
  o.keep_work_dir = absl::GetFlag(FLAGS_keep_work_dir);
  o.msgqd_path = absl::GetFlag(FLAGS_msgqd_path);
  o.source_dir = absl::GetFlag(FLAGS_source_dir);
  o.soak = SoakFlags();
  return o;
}

}  // namespace
}  // namespace msgq::chaos

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "msgq-chaos [--duration=S] [--msgqd_kills=N] [--mariadb_restarts=N] "
      "[--seed=N]: the fault campaign (docs/reliability.md); msgq-chaos "
      "--hostile [--duration=S]: the hostile soak of all three ports");
  absl::ParseCommandLine(argc, argv);
  std::string command;            // as run, for the soak's report
  std::vector<std::string> args;  // argv[1..]
  for (int i = 0; i < argc; ++i) {
    absl::StrAppend(&command, i > 0 ? " " : "", argv[i]);
    if (i > 0) args.push_back(argv[i]);
  }
  // Writes to a socket the server closed fail with EPIPE instead of killing
  // the campaign (children start with an empty mask: launch/child_process).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  msgq::chaos::MysqlLibraryInit();
  return msgq::chaos::RunCampaign(msgq::chaos::OptionsFromFlags(command, args));
}
