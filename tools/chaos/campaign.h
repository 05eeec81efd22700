// The fault campaign and the hostile soak as one run (see main.cc for
// what each does): RunCampaign starts a private MariaDB and msgqd, the
// producers and subscribers, runs the hostile phase (--hostile) and the
// fault plan (fault_plan.h), drains, checks every message
// (tools/chaos/ledger.h) and prints the results (campaign_report.h).
//
// RunCampaign runs once per process: it installs a SIGINT/SIGTERM thread
// that kills msgqd and MariaDB.
#ifndef MSGQ_TOOLS_CHAOS_CAMPAIGN_H_
#define MSGQ_TOOLS_CHAOS_CAMPAIGN_H_

#include <cstdint>
#include <string>

namespace msgq::chaos {

// The hostile soak's clients (hostile.h, probes.h).
struct HostileSoakOptions {
  double calm_s = 10;  // normal clients alone first
  int mysql_subscribers = 1;
  double probe_interval_s = 0.2;
  double hold_s = 15;
  double gap_s = 3;
  double interval_s = 0.4;
  int mid_record = 8;
  int silent_tls = 4;
  int silent_tcp = 4;
  int hoard = 64;
  int idle = 4;
  int big_queries = 4;
};

// Everything a run needs, with the soak's defaults already applied.
struct CampaignOptions {
  std::string command;  // as run, for the soak's report
  double duration_s = 60;
  uint64_t seed = 1;  // never 0 here
  int msgqd_kills = 10;
  int mariadb_restarts = 4;
  int sigstops = 3;
  int dump_kills = 3;
  int host_crashes = 1;
  int table_reloads = 0;
  int producers = 3;
  double rate = 40;  // producer transactions per second, in total
  int subscribers = 3;
  double ack_wait_s = 2;
  double drain_timeout_s = 300;
  double early_tolerance_ms = 1;
  std::string work_dir;  // "": a new /tmp/msgq-chaos-XXXXXX
  bool keep_work_dir = false;
  std::string msgqd_path;
  std::string source_dir;
  bool hostile = false;
  HostileSoakOptions soak;
};

// Exit code: 0 no violation, 1 violations, 2 the campaign could not run.
int RunCampaign(const CampaignOptions& options);

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_CAMPAIGN_H_
