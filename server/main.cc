// msgqd: serves the message tables of MySQL/MariaDB databases over gRPC.
//
//   msgqd --mysql_socket=/path/mysqld.sock --databases=app
//   --listen=127.0.0.1:15999 --http_listen=127.0.0.1:15998
//
// Besides msgq.v1.Messaging, the gRPC port serves grpc.health.v1.Health and
// server reflection; the HTTP port serves /metrics, /healthz, /readyz and
// the web console (server/http/routes.h), over HTTPS when --tls_cert is
// set, with the limits of the --http_* flags (server/http/http_flags.h,
// server/http/http_server.h). Prints "msgqd http on HOST:PORT"
// and then "msgqd listening on HOST:PORT" to stderr once it serves. SIGTERM
// or SIGINT: reports NOT_SERVING, stops accepting, ends open streams with
// UNAVAILABLE, exits 0.
//
// msgqd's own flags are read by server/msgqd_flags.h; TLS (--tls_*), bearer
// tokens and the authorization policy (--auth_*) and the limits against
// hostile clients (--grpc_*) by server/security_flags.h; the MySQL flags by
// server/mysql_flags.h. The parts start and stop in the order of
// server/msgqd_server.h. Exit codes: 0 after a signal, 1 when one of its
// ports is in use or cannot be bound ("port N (flag --X) is in use") or the
// tables did not flush at stop, 2 for a bad flag or missing lease grants
// (--leases, the default).
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <memory>
#include <utility>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/http/build_info.h"
#include "server/http/http_flags.h"
#include "server/msgqd_flags.h"
#include "server/msgqd_server.h"
#include "server/mysql_flags.h"
#include "server/security_flags.h"

namespace {

void ParseFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "msgqd: serves MySQL/MariaDB message tables over gRPC (msgq.v1)");
  const msgq::BuildInfo build = msgq::CurrentBuildInfo();
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [build] {
    return absl::StrCat("msgqd ", build.version, " (commit ", build.commit,
                        ")\n");
  };
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);
  msgq::HideMysqlPasswordInArgv(argc, argv);
}

// Logs `status` and returns msgqd's exit code for it.
int Fail(const absl::Status& status, int code) {
  msgq::LogError(status.message());
  msgq::FlushLogs();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Row buffers of a megabyte and more (large payloads, batches, binlog
  // events) are mapped on their own and go back to the system when freed,
  // instead of staying in the heap of whichever thread freed them.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  ParseFlags(argc, argv);
  absl::StatusOr<msgq::LogOptions> log_options = msgq::LogOptionsFromFlags();
  if (!log_options.ok()) return Fail(log_options.status(), 2);
  msgq::SetLogOptions(*log_options);
  // Log lines are written by a background thread: write them out at exit.
  std::atexit([] { msgq::FlushLogs(); });

  // Handle SIGINT/SIGTERM synchronously in main; every thread inherits the
  // blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<msgq::MsgqdOptions> options = msgq::MsgqdOptionsFromFlags();
  if (!options.ok()) return Fail(options.status(), 2);
  absl::StatusOr<msgq::SecurityConfig> security = msgq::SecurityFromFlags();
  if (!security.ok()) return Fail(security.status(), 2);
  msgq::LogSecurity(*security, options->listen, options->http_listen);
  absl::StatusOr<msgq::HttpServer::Options> http = msgq::HttpOptionsFromFlags();
  if (!http.ok()) return Fail(http.status(), 2);

  absl::StatusOr<std::unique_ptr<msgq::MsgqdServer>> server =
      msgq::MsgqdServer::Start(*std::move(options), *std::move(security),
                               *std::move(http));
  if (!server.ok()) {
    return Fail(
        server.status(),
        server.status().code() == absl::StatusCode::kUnavailable ? 1 : 2);
  }

  int sig = 0;
  sigwait(&signals, &sig);
  msgq::LogInfo("signal ", sig, ": shutting down");
  if (!(*server)->Stop()) {
    msgq::FlushLogs();
    std::_Exit(1);
  }
  server->reset();
  msgq::LogInfo("msgqd stopped");
  return 0;
}
