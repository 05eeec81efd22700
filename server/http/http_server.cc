// HttpServer: starting libmicrohttpd, and the request dispatch (the Host
// check, routes, the body limit, parameters, the answer). The limits on
// connections are in http_connections.cc, the sockets in
// common/listen_socket.h.
#include "server/http/http_server.h"

#include <microhttpd.h>
#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/listen_socket.h"
#include "server/http/http_server_internal.h"

namespace msgq {
namespace {

// TLS 1.2 and 1.3; in TLS 1.2 an ECDHE key exchange and AES-GCM only, the
// suites msgqd's other two ports agree (tls_server_context.h).
constexpr char kTlsPriorities[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:"
    "+AES-128-GCM:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"
    "%SERVER_PRECEDENCE";

MHD_Result Send(MHD_Connection* connection, const HttpResponse& response) {
  MHD_Response* r = MHD_create_response_from_buffer(
      response.body.size(), const_cast<char*>(response.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                          response.content_type.c_str());
  for (const auto& [name, value] : kAnswerHeaders) {
    MHD_add_response_header(r, name, value);
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  const MHD_Result queued =
      MHD_queue_response(connection, static_cast<unsigned>(response.status), r);
  MHD_destroy_response(r);
  return queued;
}

HttpResponse Text(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

MHD_Result AddHeader(void* cls, MHD_ValueKind, const char* key,
                     const char* value) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(cls);
  (*headers)[absl::AsciiStrToLower(key)] = value != nullptr ? value : "";
  return MHD_YES;
}

}  // namespace

void* MhdCallbacks::OnUri(void* /*cls*/, const char* uri, MHD_Connection* mhd) {
  auto exchange = std::make_unique<HttpServer::Exchange>();
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  exchange->connection =
      info != nullptr
          ? static_cast<HttpServer::Connection*>(info->socket_context)
          : nullptr;
  exchange->raw_uri = uri != nullptr ? uri : "";
  return exchange.release();
}

void MhdCallbacks::OnCompleted(void* /*cls*/, MHD_Connection* /*mhd*/,
                               void** exchange, MHD_RequestTerminationCode) {
  delete static_cast<HttpServer::Exchange*>(*exchange);
  *exchange = nullptr;
}

MHD_Result MhdCallbacks::OnHeaders(HttpServer& server,
                                   HttpServer::Exchange& exchange,
                                   MHD_Connection* mhd, const char* url,
                                   const char* method, const char* version) {
  HttpServer::Connection* conn = exchange.connection;
  HttpRequest& request = exchange.request;
  exchange.first_call = false;
  conn->headers_seen.store(true);
  if (!conn->refusal.empty()) {
    return Send(mhd, Text(429, absl::StrCat("too many connections (",
                                            conn->refusal, ")\n")));
  }
  if (!server.tls()) {
    const char* host =
        MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Host");
    const bool http10 = absl::EqualsIgnoreCase(version, "HTTP/1.0");
    if (host == nullptr ? !http10 : !server.host_check_.Allowed(host)) {
      const std::string shown =
          host == nullptr
              ? std::string("(none)")
              : absl::StrCat("'", absl::string_view(host).substr(0, 100), "'");
      server.LogRefusal(
          "host",
          absl::StrCat("HTTP client ", conn->peer, ": refused Host ", shown,
                       " (not a name of this server; "
                       "--http_allowed_hosts adds names)"));
      return Send(
          mhd,
          Text(403, absl::StrCat(
                        "403 forbidden: Host ", shown,
                        " is not a name of this server (a guard against DNS "
                        "rebinding); use localhost, an IP address, or a name "
                        "given to msgqd's --http_allowed_hosts\n")));
    }
  }
  request.method = method;
  request.path = url;
  if (server.routes_.find(request.path) == server.routes_.end()) {
    return Send(mhd, Text(404, "not found\n"));
  }
  if (const char* length = MHD_lookup_connection_value(
          mhd, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(length, &n) && n > server.options_.max_body_bytes) {
      server.LogRefusal(
          "body",
          absl::StrCat("HTTP client ", conn->peer, ": refused a body of ", n,
                       " bytes (--http_max_body_bytes ",
                       server.options_.max_body_bytes, ")"));
      return Send(
          mhd,
          Text(413, absl::StrCat("request body too large (at most ",
                                 server.options_.max_body_bytes, " bytes)\n")));
    }
  }
  return MHD_YES;  // the body follows, then the last call
}

MHD_Result MhdCallbacks::OnRequest(void* cls, MHD_Connection* mhd,
                                   const char* url, const char* method,
                                   const char* version, const char* upload_data,
                                   size_t* upload_data_size, void** con_cls) {
  auto* server = static_cast<HttpServer*>(cls);
  auto* exchange = static_cast<HttpServer::Exchange*>(*con_cls);
  if (exchange == nullptr || exchange->connection == nullptr) return MHD_NO;
  HttpServer::Connection* conn = exchange->connection;
  HttpRequest& request = exchange->request;
  if (exchange->first_call) {
    // The request line and headers are in; the body (if any) is not.
    return OnHeaders(*server, *exchange, mhd, url, method, version);
  }
  if (*upload_data_size > 0) {
    if (request.body.size() + *upload_data_size >
        server->options_.max_body_bytes) {
      // A chunked body past the limit: cut off (libmicrohttpd 0.9.75
      // refuses a response queued in the middle of a body).
      server->LogRefusal("body",
                         absl::StrCat("HTTP client ", conn->peer,
                                      ": cut off a chunked body over ",
                                      server->options_.max_body_bytes,
                                      " bytes (--http_max_body_bytes)"));
      return MHD_NO;
    }
    request.body.append(upload_data, *upload_data_size);
    *upload_data_size = 0;
    return MHD_YES;
  }
  // The whole request is in: no deadline any more.
  {
    absl::MutexLock lock(&server->mu_);
    conn->request_done = true;
  }
  const size_t q = exchange->raw_uri.find('?');
  if (q != std::string::npos) request.query = exchange->raw_uri.substr(q + 1);
  MHD_get_connection_values(mhd, MHD_HEADER_KIND, &AddHeader, &request.headers);
  return Send(mhd, server->Serve(*exchange));
}

void MhdCallbacks::OnLog(void* cls, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof(text), format, args);
  static_cast<HttpServer*>(cls)->LogRefusal(
      absl::StrCat("mhd: ", format),
      absl::StrCat("HTTP server: ", absl::StripTrailingAsciiWhitespace(text)));
}

std::vector<MHD_OptionItem> MhdCallbacks::DaemonOptions(HttpServer& server,
                                                        int listen_fd) {
  const unsigned idle_seconds = static_cast<unsigned>(absl::ToInt64Seconds(
      absl::Ceil(server.options_.idle_timeout, absl::Seconds(1))));
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_EXTERNAL_LOGGER,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnLog), &server},
      {MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT,
       static_cast<intptr_t>(server.options_.max_connections +
                             HttpServer::kRefusalSlots),
       nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(idle_seconds),
       nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT,
       static_cast<intptr_t>(server.options_.connection_memory_bytes), nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnConnection), &server},
      {MHD_OPTION_URI_LOG_CALLBACK,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnUri), &server},
      {MHD_OPTION_NOTIFY_COMPLETED,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnCompleted), &server},
  };
  if (server.tls()) {
    // Pointer options: given as both value and ptr_value (the array's
    // reader takes one or the other depending on the option).
    auto* callback = reinterpret_cast<void*>(&MhdCallbacks::OnCertificate);
    items.push_back({MHD_OPTION_HTTPS_CERT_CALLBACK,
                     reinterpret_cast<intptr_t>(callback), callback});
    auto* priorities = const_cast<char*>(kTlsPriorities);
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES,
                     reinterpret_cast<intptr_t>(priorities), priorities});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  return items;
}

HttpServer::HttpServer(std::string listen,
                       std::map<std::string, HttpHandler> routes,
                       Options options)
    : listen_(std::move(listen)),
      routes_(std::move(routes)),
      options_(std::move(options)),
      host_check_(listen_, options_.allowed_hosts),
      refusal_log_(options_.clock, LogRepeatLimiter::Options{
                                       options_.refusal_log_interval, 1024}) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen, std::map<std::string, HttpHandler> routes,
    Options options) {
  if (options.max_connections < 1 || options.max_connections_per_address < 1 ||
      options.request_timeout <= absl::ZeroDuration() ||
      options.idle_timeout <= absl::ZeroDuration() ||
      options.max_body_bytes < 1 || options.connection_memory_bytes < 4096 ||
      options.max_params < 1) {
    return absl::InvalidArgumentError(
        "HTTP limits: connections, timeouts, body bytes and parameters must "
        "be positive, the connection memory at least 4096 bytes");
  }
  // A client that goes away while we write must not kill the process.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { signal(SIGPIPE, SIG_IGN); });

  std::unique_ptr<HttpServer> server(
      new HttpServer(listen, std::move(routes), std::move(options)));
  const Options& o = server->options_;
  if (o.tls.has_value()) {
    absl::StatusOr<std::unique_ptr<GnutlsCredentials>> credentials =
        GnutlsCredentials::Create(*o.tls, GnutlsCredentials::Options{o.clock});
    if (!credentials.ok()) return credentials.status();
    server->credentials_ = *std::move(credentials);
  }
  absl::StatusOr<int> fd = ListenTcp(listen, "HTTP");
  if (!fd.ok()) return fd.status();
  server->port_ = LocalPort(*fd);

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                   MHD_USE_ERROR_LOG;
  if (server->tls()) flags |= MHD_USE_TLS;
  std::vector<MHD_OptionItem> items = MhdCallbacks::DaemonOptions(*server, *fd);
  server->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &MhdCallbacks::OnRequest, server.get(),
      MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    close(*fd);
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", listen,
                     ": libmicrohttpd did not start (see the log)"));
  }
  server->watchdog_ = std::thread([s = server.get()] { s->Watchdog(); });
  return server;
}

HttpServer::~HttpServer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (watchdog_.joinable()) watchdog_.join();
  // Closes the listening socket and every connection, joins their threads.
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

HttpResponse HttpServer::Serve(Exchange& exchange) const {
  HttpRequest& request = exchange.request;
  absl::StatusOr<HttpParams> params =
      HttpParams::Parse(request.query, request.body, options_.max_params);
  if (!params.ok()) {
    return Text(400, absl::StrCat("bad request: ", params.status().message(),
                                  " in the query and form body\n"));
  }
  request.params = *std::move(params);
  auto route = routes_.find(request.path);
  if (route == routes_.end()) return Text(404, "not found\n");
  return route->second(request);
}

}  // namespace msgq
