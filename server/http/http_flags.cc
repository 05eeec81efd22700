#include "server/http/http_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

ABSL_FLAG(int, http_max_connections, 128,
          "Open connections of the HTTP port in all (each has a thread); "
          "one more is answered 429 and closed");
ABSL_FLAG(int, http_max_connections_per_address, 32,
          "Open connections of the HTTP port from one client address (IPv6: "
          "one /64); one more is answered 429 and closed");
ABSL_FLAG(absl::Duration, http_request_timeout, absl::Seconds(10),
          "An HTTP connection must have sent its whole request (TLS "
          "handshake, headers, body) this long after it was accepted, or it "
          "is closed (plain HTTP without complete headers: after a 408)");
ABSL_FLAG(absl::Duration, http_idle_timeout, absl::Seconds(30),
          "An HTTP connection that neither sends nor receives for this long "
          "is closed (whole seconds)");
ABSL_FLAG(int64_t, http_max_body_bytes, int64_t{1} << 20,
          "Largest HTTP request body; a larger one gets 413");
ABSL_FLAG(int64_t, http_connection_memory_bytes, int64_t{64} << 10,
          "Memory of one HTTP connection's request line, headers and read "
          "buffer (libmicrohttpd's pool); larger headers get 431 (a longer "
          "URL 414)");
ABSL_FLAG(int64_t, http_max_params, 100000,
          "Most parameters in one HTTP request's query and form body "
          "together; more get 400");
ABSL_FLAG(std::string, http_allowed_hosts, "",
          "Comma-separated host names that plain HTTP requests may send as "
          "Host besides localhost, loopback addresses and the host of "
          "--http_listen (with a wildcard listen address, any IP address); "
          "other names get 403 (against DNS rebinding). '*' allows any");
ABSL_FLAG(absl::Duration, http_refusal_log_interval, absl::Minutes(1),
          "Each kind of HTTP refusal (connection limits, timeouts, bodies, "
          "Host, failed TLS handshakes) is logged at most once per interval, "
          "with the count of those held back");

namespace msgq {

absl::StatusOr<HttpServer::Options> HttpOptionsFromFlags() {
  HttpServer::Options o;
  o.max_connections = absl::GetFlag(FLAGS_http_max_connections);
  o.max_connections_per_address =
      absl::GetFlag(FLAGS_http_max_connections_per_address);
  if (o.max_connections < 1 || o.max_connections > 100000 ||
      o.max_connections_per_address < 1) {
    return absl::InvalidArgumentError(
        "--http_max_connections must be between 1 and 100000 and "
        "--http_max_connections_per_address at least 1");
  }
  o.request_timeout = absl::GetFlag(FLAGS_http_request_timeout);
  o.idle_timeout = absl::GetFlag(FLAGS_http_idle_timeout);
  if (o.request_timeout < absl::Milliseconds(100) ||
      o.idle_timeout < absl::Seconds(1) || o.idle_timeout > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        "--http_request_timeout must be at least 100ms and "
        "--http_idle_timeout between 1s and 24h");
  }
  const int64_t body = absl::GetFlag(FLAGS_http_max_body_bytes);
  const int64_t memory = absl::GetFlag(FLAGS_http_connection_memory_bytes);
  const int64_t params = absl::GetFlag(FLAGS_http_max_params);
  if (body < 1 || memory < 4096 || memory > (int64_t{1} << 30) || params < 1) {
    return absl::InvalidArgumentError(
        "--http_max_body_bytes and --http_max_params must be positive and "
        "--http_connection_memory_bytes between 4096 and 1 GiB");
  }
  o.max_body_bytes = static_cast<size_t>(body);
  o.connection_memory_bytes = static_cast<size_t>(memory);
  o.max_params = static_cast<size_t>(params);
  for (absl::string_view host :
       absl::StrSplit(absl::GetFlag(FLAGS_http_allowed_hosts), ',',
                      absl::SkipWhitespace())) {
    o.allowed_hosts.emplace_back(absl::StripAsciiWhitespace(host));
  }
  o.refusal_log_interval = absl::GetFlag(FLAGS_http_refusal_log_interval);
  if (o.refusal_log_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--http_refusal_log_interval must not be negative");
  }
  return o;
}

}  // namespace msgq
