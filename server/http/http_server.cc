#include "server/http/http_server.h"

#include <civetweb.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstring>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 421:
      return "Misdirected Request";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

std::optional<std::string> Var(const std::string& data, absl::string_view name,
                               int occurrence) {
  if (data.empty()) return std::nullopt;
  std::string key(name);
  std::string value(data.size() + 1, '\0');
  const int n = mg_get_var2(data.data(), data.size(), key.c_str(), value.data(),
                            value.size(), static_cast<size_t>(occurrence));
  if (n < 0) return std::nullopt;
  value.resize(static_cast<size_t>(n));
  return value;
}

}  // namespace

std::optional<std::string> HttpRequest::Param(absl::string_view name,
                                              int occurrence) const {
  if (auto v = Var(query, name, occurrence)) return v;
  // Occurrences continue in the body after those of the query.
  int in_query = 0;
  while (Var(query, name, in_query).has_value()) ++in_query;
  return Var(body, name, occurrence - in_query);
}

std::vector<std::string> HttpRequest::Params(absl::string_view name) const {
  std::vector<std::string> out;
  for (int i = 0;; ++i) {
    std::optional<std::string> v = Param(name, i);
    if (!v.has_value()) break;
    out.push_back(*std::move(v));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen, std::map<std::string, HttpHandler> routes,
    Options options) {
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });
  std::unique_ptr<HttpServer> server(
      new HttpServer(std::move(routes), options));
  const std::string threads = absl::StrCat(options.threads);
  // With TLS, civetweb serves the terminator only.
  const std::string backend = options.tls != nullptr ? "127.0.0.1:0" : listen;
  const char* config[] = {"listening_ports",
                          backend.c_str(),
                          "num_threads",
                          threads.c_str(),
                          "enable_keep_alive",
                          "no",
                          nullptr};
  mg_callbacks callbacks{};
  char error_text[256] = {0};
  mg_error_data error{nullptr, error_text, sizeof(error_text)};
  mg_init_data init_data{&callbacks, server.get(), config};
  server->context_ = mg_start2(&init_data, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", listen, ": ", error_text));
  }
  mg_server_port ports[4];
  const int n = mg_get_server_ports(server->context_, 4, ports);
  if (n < 1) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", listen, ": no port"));
  }
  server->port_ = ports[0].port;
  server->backend_port_ = ports[0].port;
  if (options.tls != nullptr) {
    unsigned char random[16];
    if (RAND_bytes(random, sizeof(random)) != 1) {
      return absl::InternalError("no random bytes for the TLS relay");
    }
    server->relay_secret_ = absl::BytesToHexString(absl::string_view(
        reinterpret_cast<const char*>(random), sizeof(random)));
    absl::StatusOr<std::unique_ptr<TlsTerminator>> terminator =
        TlsTerminator::Start(listen, server->port_, server->relay_secret_,
                             options.tls, options.terminator);
    if (!terminator.ok()) return terminator.status();
    server->terminator_ = *std::move(terminator);
    server->port_ = server->terminator_->port();
  }
  for (const auto& route : server->routes_) {
    mg_set_request_handler(server->context_, route.first.c_str(),
                           &HttpServer::Handle, nullptr);
  }
  return server;
}

HttpServer::~HttpServer() {
  terminator_.reset();  // no new requests
  if (context_ != nullptr) mg_stop(context_);
}

int HttpServer::Handle(::mg_connection* conn, void* /*cbdata*/) {
  const mg_request_info* info = mg_get_request_info(conn);
  auto* server = static_cast<HttpServer*>(info->user_data);
  HttpRequest request;
  request.method = info->request_method;
  request.path = info->local_uri != nullptr ? info->local_uri : "";
  // civetweb hands a route every path below it as well (and "/" all of
  // them): dispatch on the exact path.
  auto route = server->routes_.find(request.path);
  if (route == server->routes_.end()) {
    mg_send_http_error(conn, 404, "%s", "not found\n");
    return 404;
  }
  if (info->query_string != nullptr) request.query = info->query_string;
  for (int i = 0; i < info->num_headers; ++i) {
    request.headers[absl::AsciiStrToLower(info->http_headers[i].name)] =
        info->http_headers[i].value;
  }
  if (!server->relay_secret_.empty()) {
    // The terminator's header comes first, right after the request line:
    // mg_get_header returns the first of several.
    const char* relay = mg_get_header(conn, kTlsRelayHeader);
    const std::string& secret = server->relay_secret_;
    if (relay == nullptr || std::strlen(relay) != secret.size() ||
        CRYPTO_memcmp(relay, secret.data(), secret.size()) != 0) {
      mg_send_http_error(conn, 421, "%s", "this port speaks HTTPS only\n");
      return 421;
    }
    request.headers.erase(kTlsRelayHeader);
  }
  if (info->content_length > 0) {
    if (static_cast<size_t>(info->content_length) >
        server->options_.max_body_bytes) {
      mg_send_http_error(conn, 413, "%s", "request body too large\n");
      return 413;
    }
    request.body.resize(static_cast<size_t>(info->content_length));
    size_t got = 0;
    while (got < request.body.size()) {
      const int n =
          mg_read(conn, request.body.data() + got, request.body.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    request.body.resize(got);
  }
  const HttpResponse response = route->second(request);
  const std::string head = absl::StrFormat(
      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
      "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
      "Connection: close\r\n\r\n",
      response.status, Reason(response.status), response.content_type,
      response.body.size());
  mg_write(conn, head.data(), head.size());
  if (request.method != "HEAD") {
    mg_write(conn, response.body.data(), response.body.size());
  }
  return response.status;
}

}  // namespace msgq
