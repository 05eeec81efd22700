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
// (speed is reported, never asserted), 1 otherwise, 2 on bad flags.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/log.h"
#include "engine/sql/mysql_connection.h"
#include "tools/launch/child_process.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/private_mariadb.h"
#include "tools/msgq_bench/environment.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/phases.h"
#include "tools/msgq_bench/report.h"
#include "tools/msgq_bench/tables.h"

namespace msgq::bench {
namespace {

// What a Ctrl-C must clean up: set before each resource exists.
struct Emergency {
  absl::Mutex mu;
  pid_t msgqd_pid = 0;
  std::string mariadb_stop;
};
Emergency& TheEmergency() {
  static Emergency* e = new Emergency;
  return *e;
}

void StartSignalThread() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    Emergency& e = TheEmergency();
    absl::MutexLock lock(&e.mu);
    LogWarning("msgq-bench: signal ", sig, ", cleaning up");
    if (e.msgqd_pid > 0) kill(e.msgqd_pid, SIGTERM);
    if (!e.mariadb_stop.empty()) (void)launch::RunCommand(e.mariadb_stop);
    _exit(130);
  }).detach();
}

int Run(const BenchOptions& options, int argc, char** argv) {
  BenchOptions o = options;
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    LogError("msgq-bench: cannot create ", o.out_dir, ": ", ec.message());
    return 1;
  }
  o.out_dir = std::filesystem::absolute(o.out_dir).string();
  StartSignalThread();

  // The private MariaDB, unless one was given.
  std::unique_ptr<launch::PrivateMariaDb> mariadb;
  std::string work_dir = o.work_dir;
  bool remove_work_dir = false;
  if (o.mysql_socket.empty() || o.msgq_server.empty()) {
    if (work_dir.empty()) {
      std::string tmpl =
          (std::filesystem::temp_directory_path() / "msgq-bench-XXXXXX")
              .string();
      if (mkdtemp(tmpl.data()) == nullptr) {
        LogError("msgq-bench: mkdtemp failed");
        return 1;
      }
      work_dir = tmpl;
      remove_work_dir = !o.keep_work_dir;
    }
    std::filesystem::create_directories(work_dir, ec);
  }
  if (o.mysql_socket.empty()) {
    launch::PrivateMariaDb::Options mo;
    mo.source_dir = o.source_dir;
    mo.dir = absl::StrCat(work_dir, "/mariadb");
    mo.durable = o.durable;
    mo.binlog = o.binlog;
    mo.extra_args = o.mariadb_args;
    {
      Emergency& e = TheEmergency();
      absl::MutexLock lock(&e.mu);
      e.mariadb_stop = launch::PrivateMariaDb::StopCommand(mo);
    }
    LogInfo("msgq-bench: starting a private MariaDB in ", mo.dir);
    absl::StatusOr<std::unique_ptr<launch::PrivateMariaDb>> db =
        launch::PrivateMariaDb::Start(mo);
    if (!db.ok()) {
      LogError("msgq-bench: ", db.status().message());
      return 1;
    }
    mariadb = *std::move(db);
    o.mysql_socket = mariadb->socket();
  }

  BenchContext ctx;
  ctx.options = o;
  ctx.mysql.socket = o.mysql_socket;
  ctx.mysql.io_timeout = absl::Seconds(600);
  absl::StatusOr<std::unique_ptr<MysqlConnection>> admin =
      MysqlConnection::Connect(ctx.mysql);
  if (!admin.ok()) {
    LogError("msgq-bench: ", admin.status().message());
    return 1;
  }
  ctx.admin = admin->get();
  ctx.mariadbd_pid = ServerPid(*ctx.admin);
  for (const std::string& sql :
       {absl::StrCat("DROP DATABASE IF EXISTS ", QuoteIdentifier(o.database)),
        absl::StrCat("CREATE DATABASE ", QuoteIdentifier(o.database))}) {
    if (auto s = ctx.admin->Execute(sql); !s.ok()) {
      LogError("msgq-bench: ", s.status().message());
      return 1;
    }
  }

  BenchResults results;
  results.env = DescribeEnvironment(o, *ctx.admin, argc, argv);
  results.table_comment = MessageTableComment(o, o.batch_sizes.front());

  // Our msgqd starts after the relay baseline: the relay should not pay for
  // msgqd's binlog follower (the server's dump thread), and msgqd starts
  // following the binlog after the preloads, as it would in production.
  std::unique_ptr<launch::MsgqdProcess> msgqd;
  auto ensure_msgqd = [&]() -> absl::Status {
    if (!ctx.msgq_address.empty()) return absl::OkStatus();
    if (!o.msgq_server.empty()) {
      ctx.msgq_address = o.msgq_server;
      results.notes.push_back(
          "msgqd is external: its CPU and RSS are not measured");
      return absl::OkStatus();
    }
    launch::MsgqdProcess::Options mo;
    mo.path = o.msgqd_path;
    mo.mysql_socket = o.mysql_socket;
    mo.args = {
        absl::StrCat("--databases=", o.database),
        // New bench tables are found within 5 s instead of 10. Not faster:
        // each reload's information_schema queries cost MySQL ~50 ms.
        "--schema_reload_interval=5s",
    };
    mo.args.insert(mo.args.end(), o.msgqd_args.begin(), o.msgqd_args.end());
    mo.log_path = absl::StrCat(o.out_dir, "/msgqd.log");
    std::filesystem::remove(mo.log_path, ec);
    absl::StatusOr<std::unique_ptr<launch::MsgqdProcess>> p =
        launch::MsgqdProcess::Start(mo);
    if (!p.ok()) return p.status();
    msgqd = *std::move(p);
    {
      Emergency& e = TheEmergency();
      absl::MutexLock lock(&e.mu);
      e.msgqd_pid = msgqd->pid();
    }
    ctx.msgq_address = msgqd->address();
    ctx.msgqd_pid = msgqd->pid();
    LogInfo("msgq-bench: msgqd pid ", ctx.msgqd_pid, " on ", ctx.msgq_address);
    return absl::OkStatus();
  };

  bool failed = false;
  auto fail = [&](const std::string& what, const absl::Status& s) {
    LogError("msgq-bench: ", what, ": ", s.message());
    results.notes.push_back(absl::StrCat(what, " failed: ", s.message()));
    failed = true;
  };

  if (o.run_drain) {
    double relay_preload = 0;
    bool relay_ready = false;
    if (o.run_relay) {
      LogInfo("msgq-bench: preloading ", o.messages, " rows for the relay");
      absl::StatusOr<double> t = PrepareRelay(ctx);
      if (t.ok()) {
        relay_preload = *t;
        relay_ready = true;
      } else {
        fail("relay preload", t.status());
      }
    }
    LogInfo("msgq-bench: preloading ", o.messages, " rows for msgq");
    absl::StatusOr<double> first_preload =
        PrepareDrain(ctx, o.batch_sizes.front());
    if (!first_preload.ok()) fail("msgq preload", first_preload.status());
    if (relay_ready) {
      LogInfo("msgq-bench: relay baseline");
      absl::StatusOr<RelayResult> relay = RunRelayPhase(ctx, &results.series);
      if (relay.ok()) {
        relay->set_preload_s(relay_preload);
        results.relay = *relay;
        if (!relay->ok()) failed = true;
        LogInfo("msgq-bench: relay ", relay->msgs_per_s(), " msgs/s");
      } else {
        fail("relay", relay.status());
      }
    }
    if (first_preload.ok()) {
      if (absl::Status s = ensure_msgqd(); !s.ok()) {
        fail("starting msgqd", s);
        first_preload = s;
      }
    }
    for (size_t i = 0; i < o.batch_sizes.size() && first_preload.ok(); ++i) {
      const int batch = o.batch_sizes[i];
      double preload_s = *first_preload;
      if (i > 0) {
        // Drop the previous table so msgqd stops serving it.
        (void)ctx.admin->Execute(absl::StrCat(
            "DROP TABLE IF EXISTS ",
            Qualified(o.database, DrainTableName(o.batch_sizes[i - 1]))));
        absl::StatusOr<double> t = PrepareDrain(ctx, batch);
        if (!t.ok()) {
          fail("msgq preload", t.status());
          break;
        }
        preload_s = *t;
      }
      LogInfo("msgq-bench: msgq drain, batch size ", batch);
      absl::StatusOr<DrainResult> drain =
          RunDrainPhase(ctx, batch, &results.series);
      if (!drain.ok()) {
        fail(absl::StrCat("msgq drain (batch ", batch, ")"), drain.status());
        continue;
      }
      drain->set_preload_s(preload_s);
      if (results.relay.has_value() && results.relay->msgs_per_s() > 0) {
        drain->set_ratio_to_relay(drain->msgs_per_s() /
                                  results.relay->msgs_per_s());
      }
      if (!drain->ok()) failed = true;
      LogInfo("msgq-bench: msgq ", drain->msgs_per_s(), " msgs/s");
      results.drains.push_back(*std::move(drain));
    }
    (void)ctx.admin->Execute(absl::StrCat(
        "DROP TABLE IF EXISTS ",
        Qualified(o.database, DrainTableName(o.batch_sizes.back()))));
  }
  if (o.run_sustained) {
    LogInfo("msgq-bench: sustained, ", o.rate, " msgs/s for ", o.duration_s,
            " s over ", o.tables, o.tables == 1 ? " table" : " tables");
    absl::Status started = ensure_msgqd();
    absl::StatusOr<SustainedResult> s =
        started.ok() ? RunSustainedPhase(ctx, &results.series)
                     : absl::StatusOr<SustainedResult>(started);
    if (s.ok()) {
      if (!s->ok()) failed = true;
      if (s->discovery() != "binlog") {
        results.notes.push_back(absl::StrCat(
            "sustained: msgqd discovered new rows by polling every ",
            o.poller_interval_s,
            " s (vt_poller_interval), so latency includes up to one poll "
            "interval"));
      }
      results.sustained = *std::move(s);
    } else {
      fail("sustained", s.status());
    }
  }
  results.ok = !failed;

  if (msgqd != nullptr) {
    const int rc = msgqd->Stop();
    if (rc != 0) {
      results.notes.push_back(absl::StrCat("msgqd exited with ", rc));
    }
  }
  const std::string text = FormatTable(o, results);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  {
    std::ofstream f(absl::StrCat(o.out_dir, "/bench.txt"));
    f << text;
  }
  const std::string csv = absl::StrCat(o.out_dir, "/timeseries.csv");
  for (const absl::Status& s :
       {WriteJson(o, results, absl::StrCat(o.out_dir, "/bench.json")),
        WriteCsv(results, csv)}) {
    if (!s.ok()) LogError("msgq-bench: ", s.message());
  }
  if (o.plot) {
    absl::Status s =
        WritePlot(o, results, csv, absl::StrCat(o.out_dir, "/bench.png"));
    if (!s.ok()) LogWarning("msgq-bench: no plot: ", s.message());
  }
  std::fprintf(stdout, "wrote %s/{bench.txt,bench.json,timeseries.csv%s}\n",
               o.out_dir.c_str(), o.plot ? ",bench.png" : "");

  admin->reset();
  if (mariadb != nullptr) {
    if (absl::Status s = mariadb->Stop(); !s.ok()) {
      LogWarning("msgq-bench: stopping MariaDB: ", s.message());
    }
  }
  if (remove_work_dir && !failed) {
    std::filesystem::remove_all(work_dir, ec);
  } else if (!work_dir.empty()) {
    std::fprintf(stdout, "kept %s (MariaDB data and log)\n", work_dir.c_str());
  }
  return failed ? 1 : 0;
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
  absl::StatusOr<msgq::bench::BenchOptions> options =
      msgq::bench::OptionsFromFlags();
  if (!options.ok()) {
    std::fprintf(stderr, "msgq-bench: %s\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  return msgq::bench::Run(*options, argc, argv);
}
