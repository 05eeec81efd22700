#include "server/security_flags.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "common/log.h"
#include "grpcpp/resource_quota.h"

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of the gRPC port and the HTTP port; with "
          "--tls_key turns TLS on (the HTTP port is then HTTPS only). "
          "Re-read when it changes");
ABSL_FLAG(std::string, tls_key, "",
          "PEM private key of --tls_cert (unencrypted; refused when group or "
          "others may read it: chmod 600)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: clients of the gRPC and HTTP ports must present a "
          "certificate it signed (mTLS); on gRPC the certificate's identity "
          "(SAN, else CN) is a principal");
ABSL_FLAG(absl::Duration, tls_reload_interval, absl::Seconds(60),
          "How often the TLS files are checked for a new certificate (new "
          "connections get it; at least 1s)");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "File of 'sha256-hex principal' lines: clients must send "
          "'authorization: Bearer <token>' (re-read when it changes; refused "
          "when group or others may write it)");
ABSL_FLAG(std::string, auth_policy_file, "",
          "File of 'principal keyspace/table actions' grants (actions "
          "stream, ack, nack, admin, *); without it every authenticated "
          "caller may do everything (re-read when it changes; refused when "
          "group or others may write it)");
ABSL_FLAG(absl::Duration, auth_reload_interval, absl::Seconds(1),
          "How often --auth_tokens_file and --auth_policy_file are checked "
          "for changes");
ABSL_FLAG(int, max_streams_per_principal, 256,
          "Open MessageStreams one principal may hold (RESOURCE_EXHAUSTED "
          "beyond; without authentication every caller is the one "
          "anonymous principal); 0 = no limit");
ABSL_FLAG(int, grpc_max_receive_message_bytes, 4 << 20,
          "Largest request msgqd accepts (RESOURCE_EXHAUSTED beyond)");
ABSL_FLAG(int, grpc_max_concurrent_streams, 100,
          "Concurrent calls (HTTP/2 streams) per client connection");
ABSL_FLAG(absl::Duration, grpc_min_ping_interval, absl::Seconds(60),
          "Keepalive enforcement: a client pinging more often than this "
          "(with or without calls) gets GOAWAY after a few pings");
ABSL_FLAG(absl::Duration, grpc_handshake_timeout, absl::Seconds(10),
          "A gRPC connection that has not finished its handshake (TLS, "
          "HTTP/2 settings) by then is closed");
ABSL_FLAG(absl::Duration, grpc_max_connection_idle, absl::Minutes(10),
          "A gRPC connection without a call for this long gets GOAWAY "
          "(clients reconnect at their next call; streams keep it busy)");
ABSL_FLAG(absl::Duration, grpc_keepalive_time, absl::Seconds(30),
          "msgqd pings each client connection this often, so a client "
          "whose network died silently (no FIN, no RST) is noticed: its "
          "streams end and their subscriber slots are freed (at least 1s)");
ABSL_FLAG(absl::Duration, grpc_keepalive_timeout, absl::Seconds(10),
          "A connection whose client does not answer msgqd's keepalive ping "
          "within this, or leaves sent data unacknowledged this long, is "
          "closed (at least 1s)");
ABSL_FLAG(int, grpc_max_sync_threads, 8,
          "Threads of gRPC's synchronous server, whose only service in "
          "msgqd is reflection (grpcurl's list and describe): each open "
          "reflection stream holds one, one more polls; a call beyond gets "
          "RESOURCE_EXHAUSTED 'Server Threadpool Exhausted'. msgqd's own "
          "services use no such threads (at least 2)");
ABSL_FLAG(int64_t, grpc_memory_quota_bytes, int64_t{1} << 30,
          "Memory gRPC may use for all connections and calls (a "
          "grpc::ResourceQuota); new calls are refused beyond");

ABSL_FLAG(int, grpc_max_connections, 4096,
          "Connections the gRPC port holds at once; one beyond is closed "
          "at accept");
ABSL_FLAG(int, grpc_max_stream_resets, 2000,
          "Streams the clients of one address (IPv4, or IPv6 /64) may reset "
          "(HTTP/2 RST_STREAM) before msgqd answered them, at once, refilled "
          "at "
          "--grpc_stream_resets_per_second: a connection over it is sent "
          "GOAWAY (ENHANCE_YOUR_CALM) and closed (the HTTP/2 rapid reset "
          "attack, CVE-2023-44487)");
ABSL_FLAG(double, grpc_stream_resets_per_second, 200,
          "How fast an address's --grpc_max_stream_resets refills");

namespace msgq {
namespace {

// Whether a listen address is on loopback (empty: not listening).
bool IsLoopback(const std::string& address) {
  if (address.empty()) return true;
  const absl::StatusOr<HostPort> hp = ParseHostPort(address);
  return hp.ok() && IsLoopbackHost(hp->host);
}

int ClampedMs(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d),
                                            std::numeric_limits<int>::max()));
}

}  // namespace

absl::StatusOr<SecurityConfig> SecurityFromFlags() {
  SecurityConfig config;
  config.tls.cert = absl::GetFlag(FLAGS_tls_cert);
  config.tls.key = absl::GetFlag(FLAGS_tls_key);
  config.tls.client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  if (absl::Status s = auth::CheckTlsFiles(config.tls); !s.ok()) return s;
  config.tls_reload_interval = absl::GetFlag(FLAGS_tls_reload_interval);
  if (config.tls_reload_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        "--tls_reload_interval must be at least 1s");
  }
  auth::AuthOptions options;
  options.tokens_file = absl::GetFlag(FLAGS_auth_tokens_file);
  options.policy_file = absl::GetFlag(FLAGS_auth_policy_file);
  options.client_certificates = !config.tls.client_ca.empty();
  options.reload_interval = absl::GetFlag(FLAGS_auth_reload_interval);
  if (options.reload_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--auth_reload_interval must be positive");
  }
  options.max_streams_per_principal =
      absl::GetFlag(FLAGS_max_streams_per_principal);
  if (options.max_streams_per_principal < 0) {
    return absl::InvalidArgumentError(
        "--max_streams_per_principal must be >= 0");
  }
  absl::StatusOr<std::unique_ptr<auth::Authorizer>> authorizer =
      auth::Authorizer::Create(std::move(options));
  if (!authorizer.ok()) return authorizer.status();
  config.authorizer = *std::move(authorizer);
  if (config.tls.enabled()) {
    absl::StatusOr<std::unique_ptr<tls::TlsServerContext>> own =
        tls::TlsServerContext::Create(tls::TlsServerFiles{
            config.tls.cert, config.tls.key, config.tls.client_ca,
            config.tls_reload_interval});
    if (!own.ok()) return own.status();
    config.own_tls = *std::move(own);
  }
  if (absl::GetFlag(FLAGS_grpc_max_receive_message_bytes) < 1024 ||
      absl::GetFlag(FLAGS_grpc_max_concurrent_streams) < 1 ||
      absl::GetFlag(FLAGS_grpc_max_sync_threads) < 2 ||
      absl::GetFlag(FLAGS_grpc_memory_quota_bytes) < (1 << 20) ||
      absl::GetFlag(FLAGS_grpc_min_ping_interval) < absl::ZeroDuration() ||
      absl::GetFlag(FLAGS_grpc_handshake_timeout) < absl::Milliseconds(100) ||
      absl::GetFlag(FLAGS_grpc_max_connection_idle) < absl::Seconds(1) ||
      absl::GetFlag(FLAGS_grpc_keepalive_time) < absl::Seconds(1) ||
      absl::GetFlag(FLAGS_grpc_keepalive_timeout) < absl::Seconds(1) ||
      absl::GetFlag(FLAGS_grpc_max_connections) < 1 ||
      absl::GetFlag(FLAGS_grpc_max_stream_resets) < 1 ||
      !(absl::GetFlag(FLAGS_grpc_stream_resets_per_second) > 0)) {
    return absl::InvalidArgumentError(
        "--grpc_max_receive_message_bytes must be >= 1024, "
        "--grpc_max_concurrent_streams >= 1, --grpc_max_sync_threads >= 2, "
        "--grpc_memory_quota_bytes >= "
        "1 MiB, --grpc_min_ping_interval >= 0, --grpc_handshake_timeout >= "
        "100ms, --grpc_max_connection_idle >= 1s, --grpc_keepalive_time >= "
        "1s, --grpc_keepalive_timeout >= 1s, --grpc_max_connections >= 1, "
        "--grpc_max_stream_resets >= 1 and --grpc_stream_resets_per_second "
        "> 0");
  }
  return config;
}

void ApplyServerLimits(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(
      absl::GetFlag(FLAGS_grpc_max_receive_message_bytes));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                              absl::GetFlag(FLAGS_grpc_max_concurrent_streams));
  builder->AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      ClampedMs(absl::GetFlag(FLAGS_grpc_min_ping_interval)));
  // Clients' keepalive pings on idle connections are fine (msgq's client
  // sends one every 6 minutes), as long as they respect the interval.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder->AddChannelArgument(
      GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
      ClampedMs(absl::GetFlag(FLAGS_grpc_handshake_timeout)));
  builder->AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_IDLE_MS,
      ClampedMs(absl::GetFlag(FLAGS_grpc_max_connection_idle)));
  // Server keepalive: a client gone silently (its network dropped, no FIN
  // or RST) is found by a ping it cannot answer, or by the kernel when sent
  // data stays unacknowledged (gRPC sets TCP_USER_TIMEOUT to the keepalive
  // timeout); its streams are cancelled and their slots freed. gRPC's
  // server default pings after 2 hours. Pings must not stop on a stream
  // with nothing to send (an idle subscriber): no limit of pings without
  // data (the default, 2, would silence the keepalive after two pings).
  builder->AddChannelArgument(
      GRPC_ARG_KEEPALIVE_TIME_MS,
      ClampedMs(absl::GetFlag(FLAGS_grpc_keepalive_time)));
  builder->AddChannelArgument(
      GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
      ClampedMs(absl::GetFlag(FLAGS_grpc_keepalive_timeout)));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Outlives every server built (msgqd builds one); gRPC keeps its own ref.
  static grpc::ResourceQuota quota("msgqd");
  quota.Resize(
      static_cast<size_t>(absl::GetFlag(FLAGS_grpc_memory_quota_bytes)));
  // The synchronous server (reflection) starts a thread per call in
  // progress and, without a cap, one per open stream: a client could make
  // msgqd exhaust the host's threads. At the cap gRPC answers a new call
  // RESOURCE_EXHAUSTED on the polling thread (src/cpp/thread_manager).
  // Callback services run on gRPC's own event threads and are unaffected.
  quota.SetMaxThreads(absl::GetFlag(FLAGS_grpc_max_sync_threads));
  builder->SetResourceQuota(quota);
}

grpc_front::GrpcFront::Options GrpcFrontOptions(const std::string& listen,
                                                tls::TlsServerContext* tls) {
  grpc_front::GrpcFront::Options options;
  options.listen = listen;
  options.tls = tls;
  // Checked by SecurityFromFlags.
  options.max_connections = absl::GetFlag(FLAGS_grpc_max_connections);
  options.handshake_timeout = absl::GetFlag(FLAGS_grpc_handshake_timeout);
  // A client whose link died leaves msgqd's sends unacknowledged: aborted
  // after the keepalive timeout, as gRPC's own sockets were.
  options.tcp_user_timeout = absl::GetFlag(FLAGS_grpc_keepalive_timeout);
  options.resets.burst = absl::GetFlag(FLAGS_grpc_max_stream_resets);
  options.resets.per_second =
      absl::GetFlag(FLAGS_grpc_stream_resets_per_second);
  return options;
}

void LogSecurity(const SecurityConfig& config, const std::string& listen,
                 const std::string& http_listen) {
  const auth::Authorizer& a = *config.authorizer;
  LogInfo("security: ", config.tls.enabled() ? "TLS" : "plaintext",
          config.tls.client_ca.empty() ? "" : " with client certificates", "; ",
          a.Describe());
  if (!IsLoopback(http_listen) && !config.tls.enabled()) {
    // With --tls_cert the HTTP port is HTTPS (server/http/http_server.h).
    LogWarning("the HTTP port ", http_listen,
               " is plaintext (no --tls_cert): keep --http_listen on "
               "loopback or turn TLS on; console tokens and /metrics would "
               "cross the network in clear");
  }
  const bool exposed = !IsLoopback(listen) || !IsLoopback(http_listen);
  if (exposed && (!a.required() || !a.has_policy())) {
    LogWarning("listening beyond loopback (", listen, ", http ", http_listen,
               ") with ",
               a.required() ? "no --auth_policy_file: every authenticated "
                              "caller may stream, ack and administer every "
                              "table"
                            : "no authentication: anyone who reaches the "
                              "port may stream, ack and administer every "
                              "table (see --auth_tokens_file)");
  }
}

}  // namespace msgq
