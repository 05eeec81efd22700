// HttpServer: msgqd's HTTP port (metrics, health, the console), a thin
// wrapper over the civetweb embedded server.
//
// Each route maps an exact path to a Handler, which runs on one of
// civetweb's worker threads (never a gRPC thread), so a handler may wait
// for a table manager's answer. Requests to unknown paths get 404; a
// handler's Response is sent with Content-Length and Cache-Control:
// no-store.
//
// Example:
//   auto http = HttpServer::Start("127.0.0.1:0", {{"/healthz",
//       [](const HttpRequest&) { return HttpResponse{200, "text/plain", "ok"};
//       }}});
//   int port = (*http)->port();
//
// With Options::tls the port speaks HTTPS only (see TlsTerminator): plain
// HTTP to it fails the handshake.
//
// Thread-safety: handlers run concurrently (up to Options::threads); the
// object itself is immutable after Start. Destruction stops the server
// and waits for running handlers.
#ifndef MSGQ_SERVER_HTTP_HTTP_SERVER_H_
#define MSGQ_SERVER_HTTP_HTTP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/http/tls_terminator.h"
#include "server/tls/tls_server_context.h"

struct mg_connection;
struct mg_context;

namespace msgq {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;
  std::string query;  // after '?', still URL-encoded
  std::string body;   // form bodies, URL-encoded
  // Request headers, names lowercased.
  std::map<std::string, std::string> headers;

  // The `occurrence`th value of `name` in the query string, then the form
  // body, URL-decoded; nullopt when absent.
  std::optional<std::string> Param(absl::string_view name,
                                   int occurrence = 0) const;
  // Every value of `name`.
  std::vector<std::string> Params(absl::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  struct Options {
    int threads = 4;
    // A request body larger than this gets 413.
    size_t max_body_bytes = 1 << 20;
    // Non-null: HTTPS with this context (which must outlive the server).
    // civetweb then listens on 127.0.0.1:0 only, behind a TlsTerminator on
    // `listen`, and answers requests that did not come through it with
    // 421.
    tls::TlsServerContext* tls = nullptr;
    TlsTerminator::Options terminator;
  };

  // Listens on `listen` ("HOST:PORT"; port 0 picks a free one) and serves
  // `routes` (over HTTPS with Options::tls). UNAVAILABLE when it cannot
  // listen (the message says why).
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

  // The port listened on (with TLS: the terminator's).
  int port() const { return port_; }
  bool tls() const { return terminator_ != nullptr; }
  // civetweb's own port (with TLS: on 127.0.0.1, behind the terminator).
  int backend_port() const { return backend_port_; }

 private:
  HttpServer(std::map<std::string, HttpHandler> routes, Options options)
      : routes_(std::move(routes)), options_(options) {}
  static int Handle(::mg_connection* conn, void* cbdata);

  // Constant after Start.
  const std::map<std::string, HttpHandler> routes_;
  const Options options_;
  ::mg_context* context_ = nullptr;
  int port_ = 0;
  int backend_port_ = 0;
  // With TLS: what the terminator adds to each request it relays.
  std::string relay_secret_;
  std::unique_ptr<TlsTerminator> terminator_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HTTP_SERVER_H_
