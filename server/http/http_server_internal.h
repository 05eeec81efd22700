// HttpServer's inside, shared by its two source files and by nothing else:
//   - http_server.cc: starting libmicrohttpd and the request dispatch (the
//     Host check, routes, body limit, parameters, the answer);
//   - http_connections.cc: the limits on connections (admission by count
//     and address, the request deadline's watchdog), the TLS handshake's
//     callbacks and the rate-limited refusal log.
// The sockets are common/listen_socket.h's.
// Thread-safety and ownership are HttpServer's (http_server.h); the
// comments on the fields below say which thread touches each.
#ifndef MSGQ_SERVER_HTTP_HTTP_SERVER_INTERNAL_H_
#define MSGQ_SERVER_HTTP_HTTP_SERVER_INTERNAL_H_

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdarg>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/http/gnutls_credentials.h"
#include "server/http/http_server.h"

namespace msgq {

// The headers of every answer besides Content-Type, Content-Length and
// Connection (http_server.h says why each), in the order they are sent.
inline constexpr std::pair<const char*, const char*> kAnswerHeaders[] = {
    {"Cache-Control", "no-store"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"},
    {"Referrer-Policy", "no-referrer"},
};

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
  bool counted = false;  // in admitted_/per_address_ (else refused_
                         // unless displaced)
  // The connection's thread only:
  std::shared_ptr<const GnutlsCredentials::Set> tls_set;
  // Written by the connection's thread, read by the watchdog:
  std::atomic<bool> headers_seen{false};
  // Guarded by the server's mu_:
  bool request_done = false;  // the deadline no longer applies
  bool cut_off = false;       // the watchdog shut the socket down
  bool displaced = false;     // shut down for a newcomer (DisplaceFor)
};

// One request (libmicrohttpd's con_cls), created when its request line is
// parsed.
struct HttpServer::Exchange {
  Connection* connection = nullptr;
  std::string raw_uri;
  bool first_call = true;
  HttpRequest request;
};

// libmicrohttpd's and GnuTLS's callbacks (a friend of HttpServer). The
// dispatch ones are defined in http_server.cc, the connection and TLS ones
// in http_connections.cc.
struct MhdCallbacks {
  // http_server.cc: one request.
  static void* OnUri(void* cls, const char* uri, MHD_Connection* mhd);
  static void OnCompleted(void* cls, MHD_Connection* mhd, void** exchange,
                          MHD_RequestTerminationCode code);
  static MHD_Result OnRequest(void* cls, MHD_Connection* mhd, const char* url,
                              const char* method, const char* version,
                              const char* upload_data, size_t* upload_data_size,
                              void** con_cls);
  static void OnLog(void* cls, const char* format, va_list args);
  // libmicrohttpd's options for `server` on `listen_fd`: its limits and
  // the callbacks above, ending with MHD_OPTION_END.
  static std::vector<MHD_OptionItem> DaemonOptions(HttpServer& server,
                                                   int listen_fd);

  // http_connections.cc: one connection and its TLS handshake.
  static void OnConnection(void* cls, MHD_Connection* mhd,
                           void** socket_context,
                           MHD_ConnectionNotificationCode code);
  static int OnCertificate(gnutls_session_t session,
                           const gnutls_datum_t* req_ca_rdn, int nreqs,
                           const gnutls_pk_algorithm_t* pk_algos,
                           int pk_algos_length, gnutls_pcert_st** pcert,
                           unsigned int* pcert_length,
                           gnutls_privkey_t* privkey);
  static int OnVerify(gnutls_session_t session);

 private:
  // The first call of a request: its line and headers are in, the body is
  // not. MHD_YES to read on, or the refusal (429, 403, 404, 413) queued.
  static MHD_Result OnHeaders(HttpServer& server,
                              HttpServer::Exchange& exchange,
                              MHD_Connection* mhd, const char* url,
                              const char* method, const char* version);
  // The server's connection state of a GnuTLS session.
  static HttpServer::Connection* ConnectionOf(gnutls_session_t session);
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HTTP_SERVER_INTERNAL_H_
