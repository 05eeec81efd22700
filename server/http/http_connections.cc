// HttpServer's limits on connections (http_server.h, "Limits"): admission
// by count and client address, the request deadline's watchdog, the TLS
// handshake's callbacks (the certificate in use, the client's check) and
// the rate-limited log of refusals.
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/listen_socket.h"
#include "server/http/http_server_internal.h"

namespace msgq {
namespace {

// The 408 the watchdog writes itself (libmicrohttpd has no answer queued
// then), with the headers of every answer.
std::string TimeoutAnswer() {
  std::string answer =
      "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; "
      "charset=utf-8\r\nContent-Length: 29\r\nConnection: close\r\n";
  for (const auto& [name, value] : kAnswerHeaders) {
    absl::StrAppend(&answer, name, ": ", value, "\r\n");
  }
  absl::StrAppend(&answer, "\r\nrequest not complete in time\n");
  return answer;
}

}  // namespace

// libmicrohttpd sets a GnuTLS session's pointer to its MHD_Connection, whose
// socket context is ours.
HttpServer::Connection* MhdCallbacks::ConnectionOf(gnutls_session_t session) {
  auto* mhd = static_cast<MHD_Connection*>(gnutls_session_get_ptr(session));
  if (mhd == nullptr) return nullptr;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (info == nullptr) return nullptr;
  return static_cast<HttpServer::Connection*>(info->socket_context);
}

void MhdCallbacks::OnConnection(void* cls, MHD_Connection* mhd,
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

int MhdCallbacks::OnCertificate(
    gnutls_session_t session, const gnutls_datum_t* /*req_ca_rdn*/,
    int /*nreqs*/, const gnutls_pk_algorithm_t* /*pk_algos*/,
    int /*pk_algos_length*/, gnutls_pcert_st** pcert,
    unsigned int* pcert_length, gnutls_privkey_t* privkey) {
  HttpServer::Connection* conn = ConnectionOf(session);
  if (conn == nullptr || conn->server->credentials_ == nullptr) return -1;
  // The connection keeps its set alive while GnuTLS uses it.
  conn->tls_set = conn->server->credentials_->Acquire();
  *pcert = conn->tls_set->chain();
  *pcert_length = conn->tls_set->chain_length();
  *privkey = conn->tls_set->key();
  return 0;
}

int MhdCallbacks::OnVerify(gnutls_session_t session) {
  HttpServer::Connection* conn = ConnectionOf(session);
  if (conn == nullptr) return GNUTLS_E_CERTIFICATE_ERROR;
  std::shared_ptr<const GnutlsCredentials::Set> set = conn->tls_set;
  if (set == nullptr) set = conn->server->credentials_->Acquire();
  const absl::Status verified = GnutlsCredentials::VerifyClient(*set, session);
  if (verified.ok()) return 0;
  conn->server->LogRefusal(
      absl::StrCat("handshake: ", verified.message()),
      absl::StrCat("HTTPS client ", conn->peer,
                   ": TLS handshake failed: ", verified.message()));
  return GNUTLS_E_CERTIFICATE_ERROR;
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
    if (admitted_ >= options_.max_connections) {
      const auto it = per_address_.find(conn->address);
      const int open = it == per_address_.end() ? 0 : it->second;
      if (open < options_.max_connections_per_address &&
          DisplaceFor(conn->address)) {
        log_kind = "displaced";
      }
    }
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
  if (log_kind == "displaced") {
    LogRefusal(log_kind,
               absl::StrCat(tls() ? "HTTPS" : "HTTP", " client ", conn->peer,
                            ": admitted over --http_max_connections ",
                            options_.max_connections,
                            " in place of the oldest connection without a "
                            "complete request of the address with the most"));
  } else if (!log_kind.empty()) {
    LogRefusal(log_kind,
               absl::StrCat(tls() ? "HTTPS" : "HTTP", " client ", conn->peer,
                            ": refused, too many connections (", conn->refusal,
                            ")", close_now ? "; closed" : "; answered 429"));
  }
  // Past the refusal slots: no answer, the connection's thread reads EOF.
  if (close_now && conn->fd >= 0) shutdown(conn->fd, SHUT_RDWR);
  *socket_context = conn.release();
}

bool HttpServer::DisplaceFor(const std::string& address) {
  // Connections without a complete request, by address, and the oldest of
  // each (the earliest deadline: all have the same request_timeout).
  absl::flat_hash_map<std::string, std::pair<int, Connection*>> pending;
  for (Connection* conn : open_) {
    if (!conn->counted || conn->request_done || conn->cut_off) continue;
    auto& [count, oldest] = pending[conn->address];
    ++count;
    if (oldest == nullptr || conn->deadline < oldest->deadline) oldest = conn;
  }
  const auto own = pending.find(address);
  const int own_count = own == pending.end() ? 0 : own->second.first;
  Connection* victim = nullptr;
  int most = own_count;
  for (const auto& [key, entry] : pending) {
    if (entry.first > most) {
      most = entry.first;
      victim = entry.second;
    }
  }
  if (victim == nullptr) return false;
  victim->counted = false;
  victim->displaced = true;
  victim->cut_off = true;
  --admitted_;
  auto it = per_address_.find(victim->address);
  if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
  // As in Watchdog: the descriptor stays the victim's until Release.
  shutdown(victim->fd, SHUT_RDWR);
  return true;
}

void HttpServer::Release(Connection* conn) {
  absl::MutexLock lock(&mu_);
  open_.erase(conn);
  if (conn->counted) {
    --admitted_;
    auto it = per_address_.find(conn->address);
    if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
  } else if (!conn->displaced) {
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
        static const std::string k408 = TimeoutAnswer();
        send(conn->fd, k408.data(), k408.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
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

void HttpServer::LogRefusal(const std::string& kind,
                            absl::string_view message) {
  if (std::optional<std::string> line = refusal_log_.Admit(kind, message)) {
    LogWarning(*line);
  }
}

}  // namespace msgq
