#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq {

// One open connection: created when libmicrohttpd accepts it, deleted when
// it closes it (HttpServer::Release). Its fields are set before its thread
// serves it, except those marked otherwise.
struct HttpServer::Connection {
  HttpServer* server = nullptr;
  int fd = -1;
  std::string peer;     // "IP:PORT" or "[IPv6]:PORT"
  std::string address;  // the per-address key
  absl::Time deadline;  // MonotonicNow() by which the request must be in
  // Over a connection limit: answered 429 (the reason for the log).
  std::string refusal;
  bool counted = false;  // in admitted_/per_address_ (else refused_)
  // The connection's thread only:
  std::shared_ptr<const GnutlsCredentials::Set> tls_set;
  // Written by the connection's thread, read by the watchdog:
  std::atomic<bool> headers_seen{false};
  // Guarded by the server's mu_:
  bool request_done = false;  // the deadline no longer applies
  bool cut_off = false;       // the watchdog shut the socket down
};

// One request (libmicrohttpd's con_cls), created when its request line is
// parsed.
struct HttpServer::Exchange {
  Connection* connection = nullptr;
  std::string raw_uri;
  bool first_call = true;
  HttpRequest request;
};

namespace {

constexpr char kTlsPriorities[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE";

absl::StatusOr<std::pair<std::string, std::string>> SplitHostPort(
    const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("HTTP listen address '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTP listen address '", listen, "': write IPv6 addresses as [ADDR]"));
  }
  return std::make_pair(host, listen.substr(colon + 1));
}

// A socket listening on `listen`, or why not.
absl::StatusOr<int> Listen(const std::string& listen) {
  absl::StatusOr<std::pair<std::string, std::string>> hp =
      SplitHostPort(listen);
  if (!hp.ok()) return hp.status();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(hp->first.empty() ? nullptr : hp->first.c_str(),
                             hp->second.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot serve HTTP on ", listen, ": ", gai_strerror(rc)));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      break;
    }
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", listen, ": ", error));
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return 0;
}

// The client's "IP:PORT" and its per-address key: the IPv4 address (also
// of an IPv4-mapped IPv6 one), or the /64 of an IPv6 address (one host
// commonly has a whole /64).
void DescribePeer(const sockaddr* addr, std::string* peer,
                  std::string* address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr == nullptr) {
    *peer = *address = "?";
    return;
  }
  if (addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    *address = text;
    *peer = absl::StrCat(text, ":", ntohs(v4->sin_port));
    return;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof(text));
      *address = text;
      *peer = absl::StrCat(text, ":", ntohs(v6->sin6_port));
      return;
    }
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    *peer = absl::StrCat("[", text, "]:", ntohs(v6->sin6_port));
    in6_addr prefix = v6->sin6_addr;
    std::memset(&prefix.s6_addr[8], 0, 8);
    inet_ntop(AF_INET6, &prefix, text, sizeof(text));
    *address = absl::StrCat(text, "/64");
    return;
  }
  *peer = *address = "?";
}

MHD_Result Send(MHD_Connection* connection, const HttpResponse& response) {
  MHD_Response* r = MHD_create_response_from_buffer(
      response.body.size(), const_cast<char*>(response.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                          response.content_type.c_str());
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
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

struct MhdCallbacks {
  // The server's connection state of a GnuTLS session: libmicrohttpd sets the
  // session's pointer to its MHD_Connection, whose socket context is ours.
  static HttpServer::Connection* ConnectionOf(gnutls_session_t session) {
    auto* mhd = static_cast<MHD_Connection*>(gnutls_session_get_ptr(session));
    if (mhd == nullptr) return nullptr;
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info == nullptr) return nullptr;
    return static_cast<HttpServer::Connection*>(info->socket_context);
  }

  static void OnConnection(void* cls, MHD_Connection* mhd,
                           void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    auto* server = static_cast<HttpServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      server->Admit(mhd, socket_context);
    } else if (*socket_context != nullptr) {
      server->Release(static_cast<HttpServer::Connection*>(*socket_context));
      *socket_context = nullptr;
    }
  }

  // The request line was parsed: the exchange starts with its raw URI (the
  // query string still encoded, which the access handler does not get).
  static void* OnUri(void* /*cls*/, const char* uri, MHD_Connection* mhd) {
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

  static void OnCompleted(void* /*cls*/, MHD_Connection* /*mhd*/,
                          void** exchange, MHD_RequestTerminationCode) {
    delete static_cast<HttpServer::Exchange*>(*exchange);
    *exchange = nullptr;
  }

  static MHD_Result OnRequest(void* cls, MHD_Connection* mhd, const char* url,
                              const char* method, const char* version,
                              const char* upload_data, size_t* upload_data_size,
                              void** con_cls) {
    auto* server = static_cast<HttpServer*>(cls);
    auto* exchange = static_cast<HttpServer::Exchange*>(*con_cls);
    if (exchange == nullptr || exchange->connection == nullptr) return MHD_NO;
    HttpServer::Connection* conn = exchange->connection;
    HttpRequest& request = exchange->request;
    if (exchange->first_call) {
      // The request line and headers are in; the body (if any) is not.
      exchange->first_call = false;
      conn->headers_seen.store(true);
      if (!conn->refusal.empty()) {
        return Send(mhd, Text(429, absl::StrCat("too many connections (",
                                                conn->refusal, ")\n")));
      }
      if (!server->tls()) {
        const char* host =
            MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Host");
        const bool http10 = absl::EqualsIgnoreCase(version, "HTTP/1.0");
        if (host == nullptr ? !http10 : !server->host_check_.Allowed(host)) {
          const std::string shown =
              host == nullptr
                  ? std::string("(none)")
                  : absl::StrCat("'", absl::string_view(host).substr(0, 100),
                                 "'");
          server->LogRefusal(
              "host",
              absl::StrCat("HTTP client ", conn->peer, ": refused Host ", shown,
                           " (not a name of this server; "
                           "--http_allowed_hosts adds names)"));
          return Send(
              mhd,
              Text(403,
                   absl::StrCat(
                       "403 forbidden: Host ", shown,
                       " is not a name of this server (a guard against DNS "
                       "rebinding); use localhost, an IP address, or a name "
                       "given to msgqd's --http_allowed_hosts\n")));
        }
      }
      request.method = method;
      request.path = url;
      if (server->routes_.find(request.path) == server->routes_.end()) {
        return Send(mhd, Text(404, "not found\n"));
      }
      if (const char* length = MHD_lookup_connection_value(
              mhd, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        uint64_t n = 0;
        if (absl::SimpleAtoi(length, &n) &&
            n > server->options_.max_body_bytes) {
          server->LogRefusal(
              "body",
              absl::StrCat("HTTP client ", conn->peer, ": refused a body of ",
                           n, " bytes (--http_max_body_bytes ",
                           server->options_.max_body_bytes, ")"));
          return Send(mhd,
                      Text(413, absl::StrCat("request body too large (at most ",
                                             server->options_.max_body_bytes,
                                             " bytes)\n")));
        }
      }
      return MHD_YES;  // the body follows, then the last call
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
    MHD_get_connection_values(mhd, MHD_HEADER_KIND, &AddHeader,
                              &request.headers);
    return Send(mhd, server->Serve(*exchange));
  }

  static int OnCertificate(gnutls_session_t session,
                           const gnutls_datum_t* /*req_ca_rdn*/, int /*nreqs*/,
                           const gnutls_pk_algorithm_t* /*pk_algos*/,
                           int /*pk_algos_length*/, gnutls_pcert_st** pcert,
                           unsigned int* pcert_length,
                           gnutls_privkey_t* privkey) {
    HttpServer::Connection* conn = ConnectionOf(session);
    if (conn == nullptr || conn->server->credentials_ == nullptr) return -1;
    // The connection keeps its set alive while GnuTLS uses it.
    conn->tls_set = conn->server->credentials_->Acquire();
    *pcert = conn->tls_set->chain();
    *pcert_length = conn->tls_set->chain_length();
    *privkey = conn->tls_set->key();
    return 0;
  }

  static int OnVerify(gnutls_session_t session) {
    HttpServer::Connection* conn = ConnectionOf(session);
    if (conn == nullptr) return GNUTLS_E_CERTIFICATE_ERROR;
    std::shared_ptr<const GnutlsCredentials::Set> set = conn->tls_set;
    if (set == nullptr) set = conn->server->credentials_->Acquire();
    const absl::Status verified =
        GnutlsCredentials::VerifyClient(*set, session);
    if (verified.ok()) return 0;
    conn->server->LogRefusal(
        absl::StrCat("handshake: ", verified.message()),
        absl::StrCat("HTTPS client ", conn->peer,
                     ": TLS handshake failed: ", verified.message()));
    return GNUTLS_E_CERTIFICATE_ERROR;
  }

  static void OnLog(void* cls, const char* format, va_list args) {
    char text[512];
    std::vsnprintf(text, sizeof(text), format, args);
    static_cast<HttpServer*>(cls)->LogRefusal(
        absl::StrCat("mhd: ", format),
        absl::StrCat("HTTP server: ",
                     absl::StripTrailingAsciiWhitespace(text)));
  }
};

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
  absl::StatusOr<int> fd = Listen(listen);
  if (!fd.ok()) return fd.status();
  server->port_ = LocalPort(*fd);

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                   MHD_USE_ERROR_LOG;
  if (server->tls()) flags |= MHD_USE_TLS;
  const unsigned idle_seconds = static_cast<unsigned>(
      absl::ToInt64Seconds(absl::Ceil(o.idle_timeout, absl::Seconds(1))));
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_EXTERNAL_LOGGER,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnLog), server.get()},
      {MHD_OPTION_LISTEN_SOCKET, *fd, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT,
       static_cast<intptr_t>(o.max_connections + kRefusalSlots), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(idle_seconds),
       nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT,
       static_cast<intptr_t>(o.connection_memory_bytes), nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnConnection), server.get()},
      {MHD_OPTION_URI_LOG_CALLBACK,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnUri), server.get()},
      {MHD_OPTION_NOTIFY_COMPLETED,
       reinterpret_cast<intptr_t>(&MhdCallbacks::OnCompleted), server.get()},
  };
  if (server->tls()) {
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

int HttpServer::connections() const {
  absl::MutexLock lock(&mu_);
  return admitted_ + refused_;
}

void HttpServer::Admit(MHD_Connection* mhd, void** socket_context) {
  auto conn = std::make_unique<Connection>();
  conn->server = this;
  if (const MHD_ConnectionInfo* info =
          MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CONNECTION_FD)) {
    conn->fd = info->connect_fd;
  }
  const MHD_ConnectionInfo* addr =
      MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  DescribePeer(addr != nullptr ? addr->client_addr : nullptr, &conn->peer,
               &conn->address);
  conn->deadline = options_.clock->MonotonicNow() + options_.request_timeout;
  if (tls() && credentials_->requires_client_certificate()) {
    // Asked for here, checked by OnVerify during the handshake (which has
    // not started: the connection's thread starts after this callback).
    if (const MHD_ConnectionInfo* info =
            MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_GNUTLS_SESSION)) {
      auto session = static_cast<gnutls_session_t>(info->tls_session);
      gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
      gnutls_session_set_verify_function(session, &MhdCallbacks::OnVerify);
    }
  }
  bool close_now = false;
  std::string log_kind;
  {
    absl::MutexLock lock(&mu_);
    int& from_address = per_address_[conn->address];
    if (admitted_ >= options_.max_connections) {
      conn->refusal = absl::StrCat(admitted_, " open, --http_max_connections ",
                                   options_.max_connections);
      log_kind = "total";
    } else if (from_address >= options_.max_connections_per_address) {
      conn->refusal = absl::StrCat(from_address, " open from ", conn->address,
                                   ", --http_max_connections_per_address ",
                                   options_.max_connections_per_address);
      log_kind = "per-address";
    }
    if (conn->refusal.empty()) {
      conn->counted = true;
      ++admitted_;
      ++from_address;
    } else {
      if (from_address == 0) per_address_.erase(conn->address);
      ++refused_;
      close_now = refused_ > kRefusalSlots;
      if (close_now) conn->cut_off = true;
    }
    open_.insert(conn.get());
    watchdog_wake_ = true;
  }
  if (!log_kind.empty()) {
    LogRefusal(log_kind,
               absl::StrCat(tls() ? "HTTPS" : "HTTP", " client ", conn->peer,
                            ": refused, too many connections (", conn->refusal,
                            ")", close_now ? "; closed" : "; answered 429"));
  }
  // Past the refusal slots: no answer, the connection's thread reads EOF.
  if (close_now && conn->fd >= 0) shutdown(conn->fd, SHUT_RDWR);
  *socket_context = conn.release();
}

void HttpServer::Release(Connection* conn) {
  absl::MutexLock lock(&mu_);
  open_.erase(conn);
  if (conn->counted) {
    --admitted_;
    auto it = per_address_.find(conn->address);
    if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
  } else {
    --refused_;
  }
  delete conn;
}

void HttpServer::Watchdog() {
  const std::string timeout = absl::FormatDuration(options_.request_timeout);
  std::vector<std::string> cut;  // log lines, written without the lock
  mu_.Lock();
  while (!stop_) {
    const absl::Time now = options_.clock->MonotonicNow();
    absl::Time next = now + absl::Seconds(1);
    for (Connection* conn : open_) {
      if (conn->request_done || conn->cut_off) continue;
      if (conn->deadline > now) {
        next = std::min(next, conn->deadline);
        continue;
      }
      conn->cut_off = true;
      const bool answer = !tls() && !conn->headers_seen.load();
      if (answer) {
        // Nothing else writes to the socket before the headers are in.
        static constexpr char k408[] =
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; "
            "charset=utf-8\r\nContent-Length: 29\r\nConnection: close\r\n"
            "\r\nrequest not complete in time\n";
        send(conn->fd, k408, sizeof(k408) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      }
      // libmicrohttpd's thread sees the socket shut and closes the
      // connection; it closes the descriptor only after Release ran, which
      // needs mu_, so the descriptor is still this connection's.
      shutdown(conn->fd, SHUT_RDWR);
      cut.push_back(
          absl::StrCat(tls() ? "HTTPS" : "HTTP", " client ", conn->peer,
                       ": request not complete within ", timeout,
                       " (--http_request_timeout); ",
                       answer ? "answered 408 and closed" : "closed"));
    }
    if (!cut.empty()) {
      mu_.Unlock();
      for (const std::string& line : cut) LogRefusal("deadline", line);
      cut.clear();
      mu_.Lock();
      continue;
    }
    const absl::Duration wait = next - options_.clock->MonotonicNow();
    if (wait > absl::ZeroDuration()) {
      // Woken early by a new connection (its deadline may come first).
      mu_.AwaitWithTimeout(
          absl::Condition(
              +[](HttpServer* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                return s->stop_ || s->watchdog_wake_;
              },
              this),
          wait);
    }
    watchdog_wake_ = false;
  }
  mu_.Unlock();
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

void HttpServer::LogRefusal(const std::string& kind,
                            absl::string_view message) {
  if (std::optional<std::string> line = refusal_log_.Admit(kind, message)) {
    LogWarning(*line);
  }
}

}  // namespace msgq
