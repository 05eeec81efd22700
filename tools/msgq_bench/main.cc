// msgq-bench: measures msgqd against the polling outbox relay of the seeds,
// side by side on one MariaDB, and under a sustained offered load.
//
//   build/tools/msgq-bench                      # everything, defaults
//   build/tools/msgq-bench --mode=drain --messages=10000
//   build/tools/msgq-bench --mode=drain --batch_size=10,100,1000  # sweep
//
// Starts a private durable MariaDB (tools/mariadb-private) and an msgqd
// process unless --mysql_socket / --msgq_server name existing ones. Prints a
// table, writes bench.json, timeseries.csv and bench.png to --out_dir.
// Exits 0 when every message was delivered and acked and none was lost
// (speed is reported, never asserted), 1 otherwise, 2 on bad flags. On a
// Ctrl-C, msgqd and the private MariaDB die with it (tools/launch: msgqd by
// PR_SET_PDEATHSIG, MariaDB by its --owner-pid watchdog).
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "engine/sql/mysql_connection.h"
#include "engine/status_macros.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/private_mariadb.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/phases.h"
#include "tools/msgq_bench/probe.h"
#include "tools/msgq_bench/report.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

// Runs the phases and writes the report; whether the run was ok. An error
// when the environment cannot be set up.
absl::StatusOr<bool> Run(pb::Options o, int argc, char** argv) {
  std::error_code ec;
  if (std::filesystem::create_directories(o.out_dir(), ec); ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", o.out_dir(), ": ", ec.message()));
  }
  o.set_out_dir(std::filesystem::absolute(o.out_dir()).string());

  // The private MariaDB, unless one was given, in the work directory.
  BenchContext ctx;
  ctx.options = o;
  ctx.mysql.socket = o.mysql_socket();
  ctx.mysql.io_timeout = absl::Seconds(600);
  std::string work_dir = o.work_dir();
  const bool remove_work_dir = work_dir.empty() && !o.keep_work_dir();
  std::unique_ptr<launch::PrivateMariaDb> mariadb;
  if (o.mysql_socket().empty()) {
    if (work_dir.empty()) {
      work_dir = (std::filesystem::temp_directory_path() / "msgq-bench-XXXXXX")
                     .string();
      if (mkdtemp(work_dir.data()) == nullptr) {
        return absl::InternalError("mkdtemp failed");
      }
    }
    launch::PrivateMariaDb::Options mo{
        .source_dir = o.source_dir(),
        .dir = absl::StrCat(work_dir, "/mariadb"),
        .durable = o.durable(),
        .binlog = o.binlog(),
        .extra_args = {}};
    if (o.buffer_pool_mb() > 0) {
      mo.extra_args.push_back(
          absl::StrCat("--innodb-buffer-pool-size=", o.buffer_pool_mb(), "M"));
    }
    // --mariadb_args come last: they win over the bench's own.
    mo.extra_args.insert(mo.extra_args.end(), o.mariadb_args().begin(),
                         o.mariadb_args().end());
    LogInfo("msgq-bench: starting a private MariaDB in ", mo.dir);
    ASSIGN_OR_RETURN(mariadb, launch::PrivateMariaDb::Start(mo));
    ctx.mysql.socket = mariadb->socket();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<MysqlConnection> admin,
                   MysqlConnection::Connect(ctx.mysql));
  ctx.admin = admin.get();
  ctx.mariadbd_pid = ServerPid(*ctx.admin);
  for (const std::string& sql :
       {absl::StrCat("DROP DATABASE IF EXISTS ", QuoteIdentifier(o.database())),
        absl::StrCat("CREATE DATABASE ", QuoteIdentifier(o.database()))}) {
    RETURN_IF_ERROR(ctx.admin->Execute(sql).status());
  }
  pb::BenchResults& results = ctx.results;
  results.set_ok(true);
  *results.mutable_environment() =
      DescribeEnvironment(o, *ctx.admin, argc, argv);
  *results.mutable_options() = o;
  if (o.commit_probe_s() > 0) {
    LogInfo("msgq-bench: probing fsync latency and the commit ceiling");
    absl::StatusOr<pb::Machine> machine =
        ProbeMachine(*ctx.admin, Qualified(o.database(), "commit_probe"),
                     absl::Seconds(o.commit_probe_s()));
    if (machine.ok()) {
      *results.mutable_machine() = *std::move(machine);
    } else {
      results.add_notes(
          absl::StrCat("no machine probe: ", machine.status().message()));
    }
  }

  // Our msgqd starts after the relay baseline: the relay should not pay for
  // msgqd's binlog follower (the server's dump thread), and msgqd starts
  // following the binlog after the preloads, as it would in production.
  std::unique_ptr<launch::MsgqdProcess> msgqd;
  auto start_msgqd = [&]() -> absl::Status {
    if (!ctx.msgq_address.empty()) return absl::OkStatus();
    if (!o.msgq_server().empty()) {
      ctx.msgq_address = o.msgq_server();
      results.add_notes("msgqd is external: its CPU and RSS are not measured");
      return absl::OkStatus();
    }
    launch::MsgqdProcess::Options mo{
        .path = o.msgqd_path(),
        .mysql_socket = ctx.mysql.socket,
        // New bench tables are found within 5 s instead of 10. Not faster:
        // each reload's information_schema queries cost MySQL ~50 ms.
        .args = {absl::StrCat("--databases=", o.database()),
                 "--schema_reload_interval=5s"},
        .log_path = absl::StrCat(o.out_dir(), "/msgqd.log")};
    mo.args.insert(mo.args.end(), o.msgqd_args().begin(), o.msgqd_args().end());
    std::filesystem::remove(mo.log_path, ec);
    ASSIGN_OR_RETURN(msgqd, launch::MsgqdProcess::Start(mo));
    ctx.msgq_address = msgqd->address();
    ctx.msgqd_pid = msgqd->pid();
    LogInfo("msgq-bench: msgqd pid ", ctx.msgqd_pid, " on ", ctx.msgq_address);
    return absl::OkStatus();
  };

  if (o.mode() != "sustained") RunDrainPhases(ctx, start_msgqd);
  if (o.mode() != "drain") {
    if (absl::Status s = start_msgqd(); s.ok()) {
      RunSustainedPhase(ctx);
    } else {
      ctx.Fail("sustained", s);
    }
  }
  if (msgqd != nullptr) {
    if (const int rc = msgqd->Stop(); rc != 0) {
      results.add_notes(absl::StrCat("msgqd exited with ", rc));
    }
  }
  WriteReport(results, ctx.series);

  admin.reset();
  if (mariadb != nullptr) {
    if (absl::Status s = mariadb->Stop(); !s.ok()) {
      LogWarning("msgq-bench: stopping MariaDB: ", s.message());
    }
  }
  if (mariadb != nullptr && remove_work_dir && results.ok()) {
    std::filesystem::remove_all(work_dir, ec);
  } else if (mariadb != nullptr) {
    std::fprintf(stdout, "kept %s (MariaDB data and log)\n", work_dir.c_str());
  }
  return results.ok();
}

}  // namespace
}  // namespace msgq::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "msgq drain and sustained-load benchmark against the polling outbox "
      "relay (see docs/benchmarks.md)");
  // --help lists the bench's own flags (they live in options.cc).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view path) {
    return absl::StrContains(path, "msgq_bench/");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<msgq::bench::pb::Options> options =
      msgq::bench::OptionsFromFlags();
  if (!options.ok()) {
    std::fprintf(stderr, "msgq-bench: %s\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<bool> ok = msgq::bench::Run(*std::move(options), argc, argv);
  if (!ok.ok()) msgq::LogError("msgq-bench: ", ok.status().message());
  return ok.value_or(false) ? 0 : 1;
}
