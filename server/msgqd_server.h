// MsgqdServer: msgqd's parts, started and stopped in their order.
//
// Start():
//   0. checks that no port it is to listen on (--listen, --http_listen,
//      --mysql_protocol_listen) is in use (server/port_check.h): one that
//      is fails the start, naming its port and flag;
//   1. binds and starts the gRPC server (msgq.v1.Messaging, KEDA's
//      externalscaler.ExternalScaler, health, reflection) with SO_REUSEPORT
//      off, so that one HOST:PORT is one process's (gRPC turns it on by
//      default). Until 2 is done, calls get UNAVAILABLE "schema not loaded yet"
//      and health says NOT_SERVING;
//   2. names the engine (--instance_id, else DefaultInstanceId of the port
//      just bound) and starts it: with leases it checks their grants
//      (refusing to start without them) and only then takes any lease. A
//      MySQL that cannot be reached or logged into is not fatal: logged as
//      an error (MysqlStartError), and the engine keeps trying;
//   3. the MySQL-protocol port (server/mysql_protocol/);
//   4. health reporting (server/http/health_reporter.h);
//   5. the HTTP port.
// A port that cannot be bound at 1, 3 or 5 fails the start too (what was
// started is stopped again).
// Then prints "msgqd listening on HOST:PORT" (exactly; scripts wait for it).
//
// Why the port comes first: the default instance id is host:port, and a
// restarted msgqd with the same id takes up its leases at once
// (engine/lease/lease_keeper.h). That is safe only if no live process has
// that id: while an older msgqd with the same --listen lives (running,
// stopping, or SIGSTOPped) it holds the port, and the new one fails to bind
// and exits before it touches a lease; once the port is free the older one
// is dead (a msgqd stops serving gRPC only after its engine released its
// leases). The id has the listen host unless it is a wildcard (0.0.0.0,
// ::): two msgqd on one host may bind different addresses with the same
// port. It has the host name: two hosts (or containers) with one host name
// and one port need --instance_id.
//
// Stop(): health NOT_SERVING, the MySQL-protocol port, the engine (every
// table flushes its postpones and acks, then the leases are handed over),
// then the gRPC server (1 s for open calls) and the HTTP port.
//
// Thread-compatible: main's thread starts, waits and stops it.
#ifndef MSGQ_SERVER_MSGQD_SERVER_H_
#define MSGQ_SERVER_MSGQD_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "engine/queue/redelivery_backoff.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/peer_directory.h"
#include "server/grpc_front/grpc_front.h"
#include "server/http/health_reporter.h"
#include "server/http/http_server.h"
#include "server/keda_scaler_service.h"
#include "server/messaging_service.h"
#include "server/msgqd_flags.h"
#include "server/mysql_protocol/server.h"
#include "server/security_flags.h"

namespace msgq {

class GrpcMetrics;

// The log line for the engine's failed first schema read `status` (MySQL
// unreachable, a wrong password, missing grants): it names the user and the
// server msgqd tried, MySQL's own error, and that msgqd keeps trying while
// /readyz answers 503. "cannot log in to MySQL as USER@WHERE ..." when MySQL
// denied the login.
std::string MysqlStartError(const Engine::Options& engine,
                            const absl::Status& status);

// "HOST:PORT" of this machine's host name and `port`, or
// "HOST:LISTEN_HOST:PORT" when `listen`'s host is not a wildcard.
std::string DefaultInstanceId(const std::string& listen, int port);

class MsgqdServer {
 public:
  // Starts everything, in order. On error, what was started is stopped
  // again. UNAVAILABLE "port N (flag --X) is in use ...": one of its ports
  // is taken; UNAVAILABLE "cannot listen on ..." or "cannot serve HTTP on
  // ...": a port could not be bound for another reason (msgqd exits 1 on
  // these); FAILED_PRECONDITION: leases without their grants
  // (Engine::Start; the message is for the operator); INVALID_ARGUMENT: a
  // flag of the MySQL-protocol or HTTP port (msgqd exits 2).
  static absl::StatusOr<std::unique_ptr<MsgqdServer>> Start(
      MsgqdOptions options, SecurityConfig security,
      HttpServer::Options http_options);
  ~MsgqdServer();
  MsgqdServer(const MsgqdServer&) = delete;
  MsgqdServer& operator=(const MsgqdServer&) = delete;

  // Stops in order (see above). False when the tables did not flush within
  // --shutdown_timeout: the caller should exit at once (std::_Exit), as
  // stopping threads still use the engine. Call once.
  bool Stop();

 private:
  MsgqdServer(MsgqdOptions options, SecurityConfig security);

  absl::Status StartGrpc();
  absl::Status StartEngine();
  absl::Status StartHttp(HttpServer::Options http_options);
  void StopGrpc();

  const MsgqdOptions options_;
  const SecurityConfig security_;
  GrpcMetrics& grpc_metrics_;
  SeededJitter jitter_;
  std::unique_ptr<Engine> engine_;
  // The gRPC front's connections: who is on each (outlives both).
  auth::PeerDirectory peers_;
  std::unique_ptr<MessagingService> service_;
  std::unique_ptr<KedaScalerService> keda_;
  // The gRPC port's TLS (ALPN h2), from security_'s files; null without.
  std::unique_ptr<tls::TlsServerContext> grpc_tls_;
  std::unique_ptr<grpc::Server> grpc_;
  // Destroyed before grpc_: it hands connections to it.
  std::unique_ptr<grpc_front::GrpcFront> front_;
  int port_ = 0;  // the gRPC port bound
  std::unique_ptr<mysql_protocol::MysqlProtocolServer> mysql_protocol_;
  std::unique_ptr<HealthReporter> health_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_MSGQD_SERVER_H_
