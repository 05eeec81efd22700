// HttpServer: msgqd's HTTP port (metrics, health, the console and its
// /api), on GNU libmicrohttpd (Debian's libmicrohttpd 0.9.75, TLS by
// GnuTLS), with limits against hostile clients.
//
// Each route maps an exact path to a Handler. Requests to other paths get
// 404. Every answer of msgqd's (a handler's Response, each refusal below)
// is sent with Content-Length, Connection: close (one request per
// connection: every limit below is then a limit on one request) and:
//   - Cache-Control: no-store;
//   - X-Content-Type-Options: nosniff;
//   - X-Frame-Options: DENY and Content-Security-Policy: default-src
//     'self'; frame-ancestors 'none': no page may frame the console (and
//     trick a click on "Redrive all dead"), and the console loads scripts,
//     styles and data from this server only; it has no inline script or
//     style, which the policy would block;
//   - Referrer-Policy: no-referrer: the console's URLs name tables.
// libmicrohttpd's own answers to requests it cannot parse (400, 414, 431)
// carry none of these.
//
// Example:
//   auto http = HttpServer::Start("127.0.0.1:0", {{"/healthz",
//       [](const HttpRequest&) { return HttpResponse{200, "text/plain", "ok"};
//       }}});
//   int port = (*http)->port();
//
// Threads. libmicrohttpd runs one thread per connection
// (MHD_USE_THREAD_PER_CONNECTION, with poll(), so descriptors above
// FD_SETSIZE work): handlers may block (up to 10 s waiting for a table's
// answer) without holding up other connections, and a slow or silent
// client holds only its own thread, never a shared worker. The number of
// threads is bounded by the connection limits below.
//
// Limits (Options; msgqd's --http_* flags, server/http/http_flags.h). What
// a client over one gets:
//   - max_connections open connections in all, max_connections_per_address
//     from one client address (IPv6: one /64): a connection over either is
//     answered "429 Too Many Requests" (over HTTPS after its handshake) and
//     closed. Up to kRefusalSlots such connections are kept for their
//     answer; beyond them (and beyond libmicrohttpd's own limit of
//     max_connections + kRefusalSlots) a connection is closed at once.
//     Except: a connection over max_connections whose address has fewer
//     connections without a complete request than the address with the
//     most of them takes the place of that address's oldest one, which is
//     shut down without an answer. So clients that never finish a request,
//     from however many addresses, cannot keep out a client of an address
//     with fewer of them.
//   - request_timeout from accept to the whole request (TLS handshake,
//     request line, headers and body): a client not done by then is cut
//     off; on plain HTTP it first gets "408 Request Timeout" if it had not
//     finished its headers. A handler's run time does not count.
//   - idle_timeout (libmicrohttpd's connection timeout, whole seconds):
//     a connection that neither sends nor receives for that long is
//     closed (no answer: libmicrohttpd cannot send one).
//   - max_body_bytes: a larger Content-Length gets "413 Content Too Large"
//     before the body is read; a chunked body that grows past it is cut
//     off (the connection closed).
//   - connection_memory_bytes (libmicrohttpd's per-connection memory pool):
//     bounds the request line and headers; larger ones get "414 URI Too
//     Long" or "431 Request Header Fields Too Large" from libmicrohttpd.
//   - max_params parameters in the query and form body together (parsed
//     once, see http_params.h): "400 Bad Request" beyond.
// Refusals, failed TLS handshakes and libmicrohttpd's own error messages
// are logged as warnings, each kind at most once per refusal_log_interval
// (LogRepeatLimiter; the next line says how many were held back).
//
// Host check (plain HTTP only; see host_check.h): a request whose Host is
// not a name of this server (against DNS rebinding), or an HTTP/1.1
// request without Host, gets "403 Forbidden" with a text body saying why,
// before any route runs.
//
// HTTPS (Options::tls): the port speaks TLS 1.2/1.3 only, with the
// certificate and key re-read when the files change (GnutlsCredentials,
// at most once per reload interval; a pair that does not load keeps the
// previous one). With a client CA, a client must present a certificate it
// signed: one without, or with another, fails the handshake (no HTTP
// answer, a logged warning naming the client and the reason); no handler
// runs for it.
//
// Why libmicrohttpd. Debian 12's civetweb cannot do TLS with OpenSSL 3,
// which is why msgqd had its own TLS relay in front of it; libmicrohttpd
// does TLS itself (GnuTLS, client certificates, a per-handshake
// certificate callback for rotation) and has the limits msgqd needs built
// in (connection count, per-connection memory pool, inactivity timeout),
// in C with a stable API, packaged as libmicrohttpd-dev. Alternatives in
// Debian 12: cpp-httplib (0.11.4, header-only) serves each connection on
// one worker of a fixed thread pool for as long as it stays open, so
// silent or keep-alive clients hold the workers (the very starvation msgqd
// had), and it has no connection limits; its OpenSSL TLS takes the files
// at start (rotation would be msgqd's own SSL_CTX callbacks again);
// Boost.Beast (1.74) has everything but is a toolkit: the accept loop,
// parser limits, timeouts, TLS streams and certificate reloading would all
// be msgqd's own asynchronous code on Asio, i.e. another hand-written
// server to get right. The price of libmicrohttpd's thread per connection
// (a thread, some 100 KiB of memory, per open connection) is bounded by
// the connection limits and is what lets handlers block.
//
// Thread-safety: handlers run concurrently, one per connection; the object
// itself is immutable after Start. Destruction closes every connection
// and waits for running handlers.
#ifndef MSGQ_SERVER_HTTP_HTTP_SERVER_H_
#define MSGQ_SERVER_HTTP_HTTP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/log.h"
#include "server/http/gnutls_credentials.h"
#include "server/http/host_check.h"
#include "server/http/http_params.h"
#include "server/tls/tls_server_context.h"

struct MHD_Connection;
struct MHD_Daemon;

namespace msgq {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // URL-decoded, without the query
  std::string query;   // after '?', still URL-encoded
  std::string body;    // form bodies, URL-encoded
  // Request headers, names lowercased (of repeated headers, the last).
  std::map<std::string, std::string> headers;
  // The query's parameters, then the body's (HttpServer fills it).
  HttpParams params;

  // The `occurrence`th value of `name` in the query string, then the form
  // body, URL-decoded; nullopt when absent.
  std::optional<std::string> Param(absl::string_view name,
                                   int occurrence = 0) const {
    return params.Get(name, occurrence);
  }
  // Every value of `name`.
  std::vector<std::string> Params(absl::string_view name) const {
    return params.GetAll(name);
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  // Connections over a connection limit kept open for their 429.
  static constexpr int kRefusalSlots = 16;

  struct Options {
    int max_connections = 128;
    int max_connections_per_address = 32;
    absl::Duration request_timeout = absl::Seconds(10);
    // Rounded up to whole seconds.
    absl::Duration idle_timeout = absl::Seconds(30);
    size_t max_body_bytes = 1 << 20;
    size_t connection_memory_bytes = 64 << 10;
    size_t max_params = 100000;
    // Host names allowed besides loopback and the listen host (plain HTTP;
    // "*" = any).
    std::vector<std::string> allowed_hosts;
    absl::Duration refusal_log_interval = absl::Minutes(1);
    // Set: HTTPS only, with these files (re-read every reload_interval
    // when they changed; a client CA requires client certificates).
    std::optional<tls::TlsServerFiles> tls;
    // Deadlines (MonotonicNow) and the log limiter; must outlive the server.
    Clock* clock = RealClock::Get();
  };

  // Listens on `listen` ("HOST:PORT", HOST a name, an IPv4 address,
  // "[IPv6]" or empty for every address; port 0 picks a free one) and
  // serves `routes`. UNAVAILABLE "cannot serve HTTP on LISTEN: why" when it
  // cannot listen; INVALID_ARGUMENT for a listen address that does not
  // parse or resolve, limits below 1, or TLS files that do not load (the
  // message as from GnutlsCredentials::Create).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, std::map<std::string, HttpHandler> routes,
      Options options);
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, std::map<std::string, HttpHandler> routes) {
    return Start(listen, std::move(routes), Options());
  }
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port listened on.
  int port() const { return port_; }
  bool tls() const { return credentials_ != nullptr; }
  // Connections open now (admitted and refused); for tests.
  int connections() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Connection;
  struct Exchange;

  HttpServer(std::string listen, std::map<std::string, HttpHandler> routes,
             Options options);

  // libmicrohttpd's and GnuTLS's callbacks (http_server_internal.h):
  // the request dispatch in http_server.cc, the connections' limits and
  // TLS handshakes in http_connections.cc.
  friend struct MhdCallbacks;

  void Admit(::MHD_Connection* mhd, void** socket_context)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Release(Connection* connection) ABSL_LOCKS_EXCLUDED(mu_);
  // Shuts down the oldest connection without a complete request of the
  // address with the most of them, if it has more than `address`; whether
  // it did.
  bool DisplaceFor(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends connections past their request deadline, until stop_.
  void Watchdog() ABSL_LOCKS_EXCLUDED(mu_);
  // The answer to a complete request.
  HttpResponse Serve(Exchange& exchange) const;
  // Logs `message` as a warning unless its `kind` was logged within
  // refusal_log_interval.
  void LogRefusal(const std::string& kind, absl::string_view message);

  // Constant after Start.
  const std::string listen_;
  const std::map<std::string, HttpHandler> routes_;
  const Options options_;
  const HostCheck host_check_;
  std::unique_ptr<GnutlsCredentials> credentials_;
  ::MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  LogRepeatLimiter refusal_log_;
  std::thread watchdog_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // A connection was added since the watchdog last looked.
  bool watchdog_wake_ ABSL_GUARDED_BY(mu_) = false;
  // Every open connection; each is deleted when libmicrohttpd closes it.
  absl::flat_hash_set<Connection*> open_ ABSL_GUARDED_BY(mu_);
  int admitted_ ABSL_GUARDED_BY(mu_) = 0;
  int refused_ ABSL_GUARDED_BY(mu_) = 0;
  // Admitted connections per client address key.
  absl::flat_hash_map<std::string, int> per_address_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HTTP_SERVER_H_
