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
// TLS (--tls_*), bearer tokens and the authorization policy (--auth_*) and
// the limits against hostile clients (--grpc_*) are read by
// server/security_flags.h; the MySQL flags by server/mysql_flags.h.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/log.h"
#include "engine/queue/backoff.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/http/build_info.h"
#include "server/http/grpc_metrics.h"
#include "server/http/health_reporter.h"
#include "server/http/http_flags.h"
#include "server/http/http_server.h"
#include "server/http/routes.h"
#include "server/messaging_service.h"
#include "server/mysql_flags.h"
#include "server/mysql_protocol/mysql_protocol_flags.h"
#include "server/security_flags.h"

ABSL_FLAG(std::string, databases, "msgq",
          "Comma-separated databases to serve; a request with an empty "
          "keyspace gets the first of them that has the table");
ABSL_FLAG(std::string, listen, "127.0.0.1:15999",
          "gRPC listen address; port 0 picks a free port");
ABSL_FLAG(std::string, http_listen, "127.0.0.1:15998",
          "HTTP listen address for /metrics, /healthz, /readyz and the web "
          "console; port 0 picks a free port; empty disables HTTP");
ABSL_FLAG(std::string, log_format, "text",
          "stderr log lines: 'text' (\"I2026-01-02 03:04:05.678 message\") "
          "or 'json' (one {\"time\",\"level\",\"msg\"} object per line)");
ABSL_FLAG(std::string, log_level, "info",
          "Lowest level logged: info, warning or error");
ABSL_FLAG(absl::Duration, schema_reload_interval, absl::Seconds(10),
          "How often message tables are re-read from information_schema");
ABSL_FLAG(bool, binlog, true,
          "Follow the binlog for instant delivery (needs binlog_format=ROW and "
          "REPLICATION SLAVE); without it, messages are found by polling");
ABSL_FLAG(uint32_t, binlog_server_id, 0,
          "Replica server id used to follow the binlog; 0 derives one from "
          "the host name, --listen, the pid and a random value (logged), so "
          "two msgqd do not evict each other's binlog stream");
ABSL_FLAG(std::string, binlog_discovery, "image",
          "How rows named by the binlog reach the cache: 'image' (sent from "
          "the binlog's row image when every streamed column's text form can "
          "be rebuilt from it, else read by primary key), 'fetch' (read by "
          "primary key, only those rows) or 'poll' (the event triggers a "
          "poll)");
ABSL_FLAG(bool, ack_lane, false,
          "Write a table's acks on a pooled connection of their own, in "
          "parallel with its polls and postpones (needs "
          "--mysql_max_connections to leave the tables at least 2). Off by "
          "default: on 2 cores it cost mysqld more CPU than it gained");
ABSL_FLAG(absl::Duration, postpone_grace, absl::ZeroDuration(),
          "A sent message's postpone is written this long after the send "
          "(at most a tenth of the table's ack wait) unless its ack came "
          "first (then never): fewer row updates (e.g. 200ms); after a "
          "kill -9, messages sent within it and not acked are sent again at "
          "once. 0 (default): in the round after the send");
ABSL_FLAG(int, mysql_max_connections, 8,
          "MySQL connections msgqd holds at most, however many tables it "
          "serves: 2 follow the binlog, the rest are shared by every table "
          "(at least 3 with --binlog, 1 without)");
ABSL_FLAG(absl::Duration, shutdown_timeout, absl::Seconds(10),
          "On SIGTERM/SIGINT, how long tables may take to flush their "
          "postpones and acks (in parallel) before msgqd exits anyway");
ABSL_FLAG(int, max_batches_per_subscriber, 2,
          "Batches written to one stream and not yet acknowledged by gRPC");
ABSL_FLAG(int64_t, max_batch_bytes, int64_t{1} << 20,
          "Bytes of rows in one streamed batch (a batch always carries at "
          "least one message)");
ABSL_FLAG(int64_t, max_message_bytes, 4000000,
          "A row larger than this is never sent: it dies with a reason "
          "giving its size. Keep it under the clients' gRPC max receive "
          "message size (4 MiB by default)");
ABSL_FLAG(bool, leases, false,
          "Several msgqd serve the same tables: each table is sent by the one "
          "instance holding its lease in MySQL (tables msgq_leases and "
          "msgq_instances in the first of --databases; see "
          "docs/several-instances.md)");
ABSL_FLAG(absl::Duration, lease_duration, absl::Seconds(5),
          "How long a table's lease lasts without renewal (renewed every "
          "fifth of it); a standby takes a dead owner's tables within about "
          "this plus a fifth");
ABSL_FLAG(std::string, instance_id, "",
          "This msgqd's name in lease rows and ListTables (default: "
          "host:listen-port:pid)");
ABSL_FLAG(absl::Duration, max_extend, absl::Hours(12),
          "The longest MessageExtend a subscriber may ask for");

int main(int argc, char** argv) {
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
  absl::StatusOr<msgq::LogOptions> log_options = msgq::ParseLogOptions(
      absl::GetFlag(FLAGS_log_format), absl::GetFlag(FLAGS_log_level));
  if (!log_options.ok()) {
    msgq::LogError(log_options.status().message());
    msgq::FlushLogs();
    return 2;
  }
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

  msgq::Engine::Options options;
  absl::StatusOr<msgq::MysqlOptions> mysql = msgq::MysqlOptionsFromFlags();
  if (!mysql.ok()) {
    msgq::LogError(mysql.status().message());
    return 2;
  }
  options.mysql = *std::move(mysql);
  for (absl::string_view db :
       absl::StrSplit(absl::GetFlag(FLAGS_databases), ',', absl::SkipEmpty())) {
    options.databases.emplace_back(absl::StripAsciiWhitespace(db));
  }
  if (options.databases.empty()) {
    msgq::LogError("--databases is empty: name at least one database");
    return 2;
  }
  options.reload_interval = absl::GetFlag(FLAGS_schema_reload_interval);
  if (options.reload_interval <= absl::ZeroDuration()) {
    msgq::LogError("--schema_reload_interval must be positive");
    return 2;
  }
  options.binlog = absl::GetFlag(FLAGS_binlog);
  options.max_connections = absl::GetFlag(FLAGS_mysql_max_connections);
  if (options.max_connections < (options.binlog ? 3 : 1)) {
    msgq::LogError(
        "--mysql_max_connections must be at least ",
        options.binlog ? "3 with --binlog (2 follow the binlog)" : "1");
    return 2;
  }
  options.binlog_server_id =
      absl::GetFlag(FLAGS_binlog_server_id) != 0
          ? absl::GetFlag(FLAGS_binlog_server_id)
          : msgq::BinlogWatcher::DefaultServerId(absl::GetFlag(FLAGS_listen));
  const std::string discovery = absl::GetFlag(FLAGS_binlog_discovery);
  if (discovery != "image" && discovery != "fetch" && discovery != "poll") {
    msgq::LogError("--binlog_discovery must be 'image', 'fetch' or 'poll'");
    return 2;
  }
  options.manager.binlog_fetch_by_id = discovery != "poll";
  options.manager.binlog_row_images = discovery == "image";
  options.manager.ack_lane = absl::GetFlag(FLAGS_ack_lane);
  options.manager.postpone_grace = absl::GetFlag(FLAGS_postpone_grace);
  if (options.manager.postpone_grace < absl::ZeroDuration() ||
      options.manager.postpone_grace > absl::Seconds(10)) {
    msgq::LogError("--postpone_grace must be between 0 and 10s");
    return 2;
  }
  options.manager.max_batches_per_subscriber =
      std::max(1, absl::GetFlag(FLAGS_max_batches_per_subscriber));

  options.manager.max_batch_bytes = static_cast<size_t>(
      std::max<int64_t>(1, absl::GetFlag(FLAGS_max_batch_bytes)));
  if (absl::GetFlag(FLAGS_max_message_bytes) < 1) {
    msgq::LogError("--max_message_bytes must be positive");
    return 2;
  }
  options.manager.max_message_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_message_bytes));
  options.manager.max_extend = absl::GetFlag(FLAGS_max_extend);
  if (options.manager.max_extend <= absl::ZeroDuration()) {
    msgq::LogError("--max_extend must be positive");
    return 2;
  }

  options.leases = absl::GetFlag(FLAGS_leases);
  options.lease_duration = absl::GetFlag(FLAGS_lease_duration);
  if (options.lease_duration < absl::Milliseconds(500)) {
    msgq::LogError("--lease_duration must be at least 500ms");
    return 2;
  }
  if (options.leases && options.max_connections < (options.binlog ? 4 : 2)) {
    msgq::LogError("--mysql_max_connections must be at least ",
                   options.binlog ? 4 : 2,
                   " with --leases (the lease keeper has one of its own)");
    return 2;
  }
  options.address = absl::GetFlag(FLAGS_listen);
  options.instance_id = absl::GetFlag(FLAGS_instance_id);
  if (options.instance_id.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    const std::string listen = absl::GetFlag(FLAGS_listen);
    const size_t colon = listen.rfind(':');
    options.instance_id = absl::StrCat(
        host, ":",
        colon == std::string::npos ? listen : listen.substr(colon + 1), ":",
        getpid());
  }

  absl::StatusOr<msgq::SecurityConfig> security = msgq::SecurityFromFlags();
  if (!security.ok()) {
    msgq::LogError(security.status().message());
    return 2;
  }
  msgq::LogSecurity(*security, absl::GetFlag(FLAGS_listen),
                    absl::GetFlag(FLAGS_http_listen));
  absl::StatusOr<msgq::HttpServer::Options> http_options =
      msgq::HttpOptionsFromFlags();
  if (!http_options.ok()) {
    msgq::LogError(http_options.status().message());
    return 2;
  }

  msgq::SeededJitter jitter(absl::ToUnixNanos(absl::Now()));
  msgq::Engine engine(options, msgq::RealClock::Get(), &jitter);
  if (absl::Status s = engine.Start(); !s.ok()) {
    msgq::LogWarning("starting without the schema; will keep retrying: ",
                     s.message());
  }

  // `stream * from T` over the MySQL protocol (server/mysql_protocol/).
  auto mysql_protocol = msgq::mysql_protocol::StartFromFlags(
      &engine, security->authorizer.get(), security->own_tls);
  if (!mysql_protocol.ok()) {
    msgq::LogError(mysql_protocol.status().message());
    engine.Stop();
    return 2;
  }

  msgq::MessagingService service(&engine, security->authorizer.get());
  // Never destroyed: gRPC may end a call (and its metrics interceptor count
  // it) on one of its threads after the server's Wait() returned; seen by
  // ThreadSanitizer as ~GrpcMetrics racing CallEnded at exit.
  // (Held by a static so LeakSanitizer sees it reachable.)
  static msgq::GrpcMetrics* const grpc_metrics_owner = new msgq::GrpcMetrics();
  msgq::GrpcMetrics& grpc_metrics = *grpc_metrics_owner;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  {
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(grpc_metrics.InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  int port = 0;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  builder.AddListeningPort(listen, msgq::GrpcServerCredentials(*security),
                           &port);
  msgq::ApplyServerLimits(&builder);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    msgq::LogError("cannot listen on ", listen);
    engine.Stop();
    return 1;
  }
  msgq::HealthReporter health(&engine, server->GetHealthCheckService());

  // A port in use costs the console and metrics, not the queues: msgqd
  // goes on serving gRPC and says so.
  // With --tls_cert the HTTP port speaks HTTPS only, with the gRPC port's
  // files (and client CA), re-read every --tls_reload_interval.
  std::unique_ptr<msgq::HttpServer> http;
  if (const std::string http_listen = absl::GetFlag(FLAGS_http_listen);
      !http_listen.empty()) {
    if (security->own_tls != nullptr) {
      http_options->tls = security->own_tls->files();
    }
    absl::StatusOr<std::unique_ptr<msgq::HttpServer>> started =
        msgq::HttpServer::Start(
            http_listen,
            msgq::MsgqdRoutes(&engine, &grpc_metrics, msgq::CurrentBuildInfo(),
                              security->authorizer.get()),
            *http_options);
    if (started.ok()) {
      http = *std::move(started);
      std::fprintf(stderr, "msgqd http on %s:%d\n",
                   http_listen.substr(0, http_listen.rfind(':')).c_str(),
                   http->port());
      if (http->tls()) {
        msgq::LogInfo("the HTTP port speaks HTTPS only",
                      security->own_tls->requires_client_certificate()
                          ? ", with client certificates of --tls_client_ca"
                          : "");
      }
    } else {
      msgq::LogError(started.status().message(),
                     "; serving gRPC without metrics, health pages or console");
    }
  }
  std::string host(listen.substr(0, listen.rfind(':')));
  // Exactly this line, unprefixed: scripts and tests wait for it.
  std::fprintf(stderr, "msgqd listening on %s:%d\n", host.c_str(), port);
  std::fflush(stderr);

  int sig = 0;
  sigwait(&signals, &sig);
  msgq::LogInfo("signal ", sig, ": shutting down");
  // Tell load balancers first, then end streams (UNAVAILABLE), then stop
  // serving.
  health.Stop();
  if (*mysql_protocol != nullptr) (*mysql_protocol)->Stop();
  const absl::Duration timeout = absl::GetFlag(FLAGS_shutdown_timeout);
  if (!engine.Stop(timeout)) {
    msgq::LogError("shutdown: tables did not flush within ",
                   absl::FormatDuration(timeout),
                   " (is MySQL hanging?); exiting anyway: unflushed sends "
                   "are redelivered after their ack wait");
    msgq::FlushLogs();
    std::_Exit(1);
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  http.reset();
  msgq::LogInfo("msgqd stopped");
  return 0;
}
