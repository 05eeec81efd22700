#include "server/msgqd_server.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/log.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_posix.h"
#include "server/http/build_info.h"
#include "server/http/grpc_metrics.h"
#include "server/http/routes.h"
#include "server/mysql_protocol/mysql_protocol_flags.h"
#include "server/port_check.h"

namespace msgq {
namespace {

// --mysql_protocol_listen, or "" when disabled or its flags are wrong
// (StartFromFlags reports those).
std::string MysqlProtocolListen() {
  absl::StatusOr<mysql_protocol::MysqlProtocolServer::Options> options =
      mysql_protocol::OptionsFromFlags();
  return options.ok() ? options->listen : "";
}

// "HOST" of "HOST:PORT" (brackets of an IPv6 address kept).
std::string HostOf(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? "" : listen.substr(0, colon);
}

// Never destroyed: gRPC may end a call (and its metrics interceptor count
// it) on one of its threads after the server's Wait() returned; seen by
// ThreadSanitizer as ~GrpcMetrics racing CallEnded at exit.
// (Held by a static so LeakSanitizer sees it reachable.)
GrpcMetrics& ProcessGrpcMetrics() {
  static GrpcMetrics* const metrics = new GrpcMetrics();
  return *metrics;
}

}  // namespace

std::string MysqlStartError(const Engine::Options& engine,
                            const absl::Status& status) {
  const MysqlOptions& mysql = engine.mysql;
  const std::string where = !mysql.socket.empty() ? mysql.socket
                            : mysql.primary != nullptr
                                ? "the --mysql_host servers"
                                : absl::StrCat(mysql.host, ":", mysql.port);
  // The engine's text is "cannot connect to MySQL at WHERE: MYSQL'S ERROR";
  // keep MySQL's part, which names the user and host MySQL saw.
  absl::string_view reason = status.message();
  const std::string prefix =
      absl::StrCat("cannot connect to MySQL at ", where, ": ");
  const bool connect = absl::ConsumePrefix(&reason, prefix);
  const std::string after = absl::StrCat(
      "; msgqd serves no table and /readyz answers 503 until it can (it "
      "tries again every ",
      absl::FormatDuration(engine.reload_interval), ")");
  if (connect && absl::StrContains(reason, "Access denied")) {
    return absl::StrCat("cannot log in to MySQL as ", mysql.user, "@", where,
                        " (--mysql_user, --mysql_password): ", reason, after);
  }
  if (connect) {
    return absl::StrCat("cannot reach MySQL at ", where, " as ", mysql.user,
                        ": ", reason, after);
  }
  return absl::StrCat("cannot read the schema as ", mysql.user, "@", where,
                      ": ", reason, after);
}

std::string DefaultInstanceId(const std::string& listen, int port) {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  const std::string host = HostOf(listen);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::" ||
      host == "*") {
    return absl::StrCat(name, ":", port);
  }
  return absl::StrCat(name, ":", host, ":", port);
}

MsgqdServer::MsgqdServer(MsgqdOptions options, SecurityConfig security)
    : options_(std::move(options)),
      security_(std::move(security)),
      grpc_metrics_(ProcessGrpcMetrics()),
      jitter_(absl::ToUnixNanos(absl::Now())) {}

MsgqdServer::~MsgqdServer() { StopGrpc(); }

absl::StatusOr<std::unique_ptr<MsgqdServer>> MsgqdServer::Start(
    MsgqdOptions options, SecurityConfig security,
    HttpServer::Options http_options) {
  std::unique_ptr<MsgqdServer> server(
      new MsgqdServer(std::move(options), std::move(security)));
  server->engine_ = std::make_unique<Engine>(
      server->options_.engine, RealClock::Get(), &server->jitter_);
  // Every port is checked before anything starts: one in use fails the
  // start, naming its flag.
  const std::string mysql_protocol_listen = MysqlProtocolListen();
  absl::Status s = CheckPortFree(server->options_.listen, "--listen");
  if (s.ok() && !server->options_.http_listen.empty()) {
    s = CheckPortFree(server->options_.http_listen, "--http_listen");
  }
  if (s.ok() && !mysql_protocol_listen.empty()) {
    s = CheckPortFree(mysql_protocol_listen, "--mysql_protocol_listen");
  }
  if (s.ok()) s = server->StartGrpc();
  if (s.ok()) s = server->StartEngine();
  if (s.ok()) {
    // `stream * from T` over the MySQL protocol (server/mysql_protocol/).
    absl::StatusOr<std::unique_ptr<mysql_protocol::MysqlProtocolServer>> mp =
        mysql_protocol::StartFromFlags(server->engine_.get(),
                                       server->security_.authorizer.get(),
                                       server->security_.own_tls);
    if (mp.ok()) {
      server->mysql_protocol_ = *std::move(mp);
    } else if (mp.status().code() == absl::StatusCode::kUnavailable) {
      s = ExplainListenFailure(mysql_protocol_listen, "--mysql_protocol_listen",
                               mp.status());
    } else {
      s = mp.status();
    }
  }
  if (s.ok()) {
    server->health_ = std::make_unique<HealthReporter>(
        server->engine_.get(), server->grpc_->GetHealthCheckService());
    s = server->StartHttp(std::move(http_options));
  }
  if (!s.ok()) {
    if (server->health_ != nullptr) server->health_->Stop();
    if (server->mysql_protocol_ != nullptr) server->mysql_protocol_->Stop();
    server->engine_->Stop();
    server->StopGrpc();
    return s;
  }
  // Exactly this line, unprefixed: scripts and tests wait for it.
  std::fprintf(stderr, "msgqd listening on %s:%d\n",
               HostOf(server->options_.listen).c_str(), server->port_);
  std::fflush(stderr);
  return server;
}

absl::Status MsgqdServer::StartGrpc() {
  service_ = std::make_unique<MessagingService>(
      engine_.get(), security_.authorizer.get(), &peers_);
  keda_ = std::make_unique<KedaScalerService>(
      engine_.get(), security_.authorizer.get(), &peers_);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(grpc_metrics_.InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  // One process per HOST:PORT: the instance id relies on it (see header).
  // gRPC listens on no port: the front (server/grpc_front/grpc_front.h)
  // accepts, does TLS, bounds stream resets and hands each connection over.
  ApplyServerLimits(&builder);
  builder.RegisterService(service_.get());
  builder.RegisterService(keda_.get());
  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr) {
    return absl::InternalError("gRPC: the server did not start");
  }
  tls::TlsServerContext* tls = nullptr;
  if (security_.own_tls != nullptr) {
    tls::TlsServerFiles files = security_.own_tls->files();
    absl::StatusOr<std::unique_ptr<tls::TlsServerContext>> context =
        tls::TlsServerContext::Create(std::move(files), {.alpn_h2 = true});
    if (!context.ok()) {
      StopGrpc();
      return context.status();
    }
    grpc_tls_ = *std::move(context);
    tls = grpc_tls_.get();
  }
  absl::StatusOr<std::unique_ptr<grpc_front::GrpcFront>> front =
      grpc_front::GrpcFront::Start(
          GrpcFrontOptions(options_.listen, tls),
          [server = grpc_.get()](int fd) {
            grpc::AddInsecureChannelFromFd(server, fd);
          },
          &peers_);
  if (!front.ok()) {
    StopGrpc();
    if (front.status().code() != absl::StatusCode::kUnavailable) {
      return front.status();
    }
    return ExplainListenFailure(options_.listen, "--listen", front.status());
  }
  front_ = *std::move(front);
  port_ = front_->port();
  grpc_metrics_.SetPortCounters([f = front_.get()] {
    const grpc_front::GrpcFront::Counters c = f->counters();
    return GrpcMetrics::PortCounters{
        .open = c.open,
        .accepted = static_cast<int64_t>(c.accepted),
        .refused_max_connections = static_cast<int64_t>(c.refused_full),
        .closed_stream_resets = static_cast<int64_t>(c.closed_resets),
        .closed_handshake = static_cast<int64_t>(c.failed_handshakes),
        .closed_not_http2 = static_cast<int64_t>(c.not_http2),
        .stream_resets = static_cast<int64_t>(c.resets)};
  });
  // Not serving until the engine started and HealthReporter says so.
  grpc_->GetHealthCheckService()->SetServingStatus(false);
  return absl::OkStatus();
}

absl::Status MsgqdServer::StartEngine() {
  if (options_.engine.instance_id.empty()) {
    engine_->Identify(DefaultInstanceId(options_.listen, port_),
                      options_.listen);
  }
  absl::Status s = engine_->Start();
  if (s.code() == absl::StatusCode::kFailedPrecondition) return s;
  if (!s.ok()) LogError(MysqlStartError(options_.engine, s));
  return absl::OkStatus();
}

absl::Status MsgqdServer::StartHttp(HttpServer::Options http_options) {
  // With --tls_cert the HTTP port speaks HTTPS only, with the gRPC port's
  // files (and client CA), re-read every --tls_reload_interval.
  const std::string& listen = options_.http_listen;
  if (listen.empty()) return absl::OkStatus();
  if (security_.own_tls != nullptr)
    http_options.tls = security_.own_tls->files();
  absl::StatusOr<std::unique_ptr<HttpServer>> started = HttpServer::Start(
      listen,
      MsgqdRoutes(engine_.get(), &grpc_metrics_, CurrentBuildInfo(),
                  security_.authorizer.get()),
      http_options);
  if (!started.ok()) {
    if (started.status().code() != absl::StatusCode::kUnavailable) {
      return started.status();
    }
    return ExplainListenFailure(listen, "--http_listen", started.status());
  }
  http_ = *std::move(started);
  std::fprintf(stderr, "msgqd http on %s:%d\n", HostOf(listen).c_str(),
               http_->port());
  if (http_->tls()) {
    LogInfo("the HTTP port speaks HTTPS only",
            security_.own_tls->requires_client_certificate()
                ? ", with client certificates of --tls_client_ca"
                : "");
  }
  return absl::OkStatus();
}

bool MsgqdServer::Stop() {
  // Tell load balancers first, then end streams (UNAVAILABLE), then stop
  // serving.
  if (health_ != nullptr) health_->Stop();
  if (mysql_protocol_ != nullptr) mysql_protocol_->Stop();
  const absl::Duration timeout = options_.shutdown_timeout;
  if (!engine_->Stop(timeout)) {
    LogError("shutdown: tables did not flush within ",
             absl::FormatDuration(timeout),
             " (is MySQL hanging?); exiting anyway: unflushed sends are "
             "redelivered after their ack wait");
    return false;
  }
  StopGrpc();
  http_.reset();
  return true;
}

void MsgqdServer::StopGrpc() {
  grpc_metrics_.SetPortCounters(nullptr);
  // No new connections; gRPC's GOAWAY still reaches the open ones through
  // the front, which closes what is left once gRPC is done.
  if (front_ != nullptr) front_->StopAccepting();
  if (grpc_ != nullptr) {
    grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    grpc_->Wait();
  }
  if (front_ != nullptr) front_->Stop();
  front_.reset();
  grpc_.reset();
}

}  // namespace msgq
