#include "server/grpc_front/grpc_front.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/listen_socket.h"
#include "common/log.h"
#include "server/grpc_front/h2_frame_reader.h"
#include "server/tls/tls_connection.h"

namespace msgq::grpc_front {
namespace {

// epoll tags: the listening socket, the wake-up eventfd, and per
// connection (serial << 1) | side, serials from 1.
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kClientSide = 0;
constexpr uint64_t kGrpcSide = 1;
// How long a connection closed for its resets may take to be sent its
// GOAWAY before it is cut.
constexpr absl::Duration kGoAwayGrace = absl::Seconds(1);
// Streams of one connection the client opened and gRPC has not answered,
// at most: far beyond any SETTINGS_MAX_CONCURRENT_STREAMS msgqd sets.
constexpr size_t kMaxUnanswered = 10000;
// Connections accepted per wake-up, so that one flood of connects does
// not starve the open ones.
constexpr int kAcceptsPerWake = 64;

// A bounded byte queue whose memory is released while it is empty (an
// idle connection holds no buffers).
class ByteQueue {
 public:
  explicit ByteQueue(size_t capacity) : capacity_(capacity) {}
  size_t size() const { return end_ - begin_; }
  size_t space() const { return capacity_ > size() ? capacity_ - size() : 0; }
  absl::string_view Head() const {
    return {buf_.get() + begin_, end_ - begin_};
  }
  // Contiguous room for at most space() bytes at the tail.
  std::pair<char*, size_t> Tail() {
    if (buf_ == nullptr) buf_ = std::make_unique<char[]>(capacity_ + kSlack);
    if (begin_ > 0) {
      std::memmove(buf_.get(), buf_.get() + begin_, size());
      end_ -= begin_;
      begin_ = 0;
    }
    return {buf_.get() + end_, space()};
  }
  void Commit(size_t n) { end_ += n; }
  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) Clear();
  }
  void Truncate(size_t keep) { end_ = begin_ + std::min(keep, size()); }
  // Appends `bytes` (at most kSlack past the capacity).
  void Append(absl::string_view bytes) {
    auto [at, room] = Tail();
    const size_t n = std::min(bytes.size(), room + kSlack);
    std::memcpy(at, bytes.data(), n);
    end_ += n;
  }
  void Clear() {
    buf_.reset();
    begin_ = end_ = 0;
  }

 private:
  // Room for a GOAWAY frame past the capacity.
  static constexpr size_t kSlack = 32;
  const size_t capacity_;
  std::unique_ptr<char[]> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// Result of a read or write that did not move bytes.
constexpr ssize_t kWouldBlock = -1;
constexpr ssize_t kBroken = -2;

}  // namespace

struct GrpcFront::Connection {
  Connection(uint64_t serial, int fd, size_t buffer_bytes)
      : serial(serial), client_fd(fd), up(buffer_bytes), down(buffer_bytes) {}

  const uint64_t serial;
  const int client_fd;
  int grpc_fd = -1;       // the front's end of the socket pair
  int grpc_peer_fd = -1;  // gRPC's end (its name in the PeerDirectory)
  SSL* ssl = nullptr;
  bool handshaking = false;
  bool handshake_wants_write = false;
  std::string peer;     // "IP:PORT"
  std::string address;  // ClientAddressKey
  H2FrameReader in{H2FrameReader::Side::kClient};
  H2FrameReader out{H2FrameReader::Side::kServer};
  ByteQueue up;    // client -> gRPC
  ByteQueue down;  // gRPC -> client
  bool client_eof = false;
  bool grpc_eof = false;
  bool up_shut = false;
  // Over its reset budget: the GOAWAY (if any) is being flushed, then the
  // connection is closed.
  bool closing = false;
  bool over_budget = false;
  bool read_wants_write = false;
  bool write_wants_read = false;
  uint32_t last_stream_id = 0;  // highest stream the client opened
  // Streams the client opened that gRPC has not answered yet (no HEADERS
  // or RST_STREAM of its own): a client's reset of one of these is what
  // the budget counts.
  absl::flat_hash_set<uint32_t> unanswered;
  uint32_t client_interest = 0;
  uint32_t grpc_interest = 0;
};

class GrpcFront::Loop {
 public:
  Loop(Options options, std::function<void(int)> hand,
       auth::PeerDirectory* peers, int listen_fd, int epoll_fd, int wake_fd)
      : options_(std::move(options)),
        hand_(std::move(hand)),
        peers_(peers),
        budget_(options_.resets),
        listen_fd_(listen_fd),
        epoll_fd_(epoll_fd),
        wake_fd_(wake_fd),
        log_limiter_(options_.resets.clock) {}

  ~Loop() {
    for (auto& [serial, c] : connections_) Destroy(*c);
    connections_.clear();
    if (listen_fd_ >= 0) close(listen_fd_);
    close(epoll_fd_);
    close(wake_fd_);
  }

  void Run();
  void Wake() {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
  }

  std::atomic<bool> stop_accepting{false};
  std::atomic<bool> stop{false};

  Counters counters() const {
    Counters c;
    c.accepted = accepted_.load();
    c.refused_full = refused_full_.load();
    c.closed_resets = closed_resets_.load();
    c.failed_handshakes = failed_handshakes_.load();
    c.not_http2 = not_http2_.load();
    c.resets = resets_.load();
    c.open = open_.load();
    return c;
  }

 private:
  void AcceptSome();
  void Admit(int fd, const sockaddr* addr);
  // Moves bytes until nothing moves; false when the connection is done.
  bool Pump(Connection& c);
  // After the handshake (or at accept without TLS): the socket pair, the
  // directory entry, the hand-over to gRPC.
  bool Open(Connection& c);
  ssize_t ReadClient(Connection& c, char* buf, size_t size);
  ssize_t WriteClient(Connection& c, absl::string_view bytes);
  void OnClientFrame(Connection& c, const H2FrameHeader& h);
  void OnServerFrame(Connection& c, const H2FrameHeader& h);
  void BeginGoAway(Connection& c);
  void UpdateInterest(Connection& c);
  void SetInterest(int fd, uint64_t tag, uint32_t want, uint32_t* current);
  void Close(uint64_t serial);
  void Destroy(Connection& c);
  void Sweep();

  const Options options_;
  const std::function<void(int)> hand_;
  auth::PeerDirectory* const peers_;
  ResetBudget budget_;
  int listen_fd_;
  const int epoll_fd_;
  const int wake_fd_;
  LogRepeatLimiter log_limiter_;
  uint64_t next_serial_ = 1;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Connection>> connections_;
  // (deadline, serial) in deadline order: handshakes, then GOAWAY grace.
  std::deque<std::pair<absl::Time, uint64_t>> handshake_deadlines_;
  std::deque<std::pair<absl::Time, uint64_t>> goaway_deadlines_;

  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_full_{0};
  std::atomic<uint64_t> closed_resets_{0};
  std::atomic<uint64_t> failed_handshakes_{0};
  std::atomic<uint64_t> not_http2_{0};
  std::atomic<uint64_t> resets_{0};
  std::atomic<int> open_{0};
};

void GrpcFront::Loop::Run() {
  epoll_event events[64];
  while (!stop.load()) {
    if (stop_accepting.load() && listen_fd_ >= 0) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      close(listen_fd_);
      listen_fd_ = -1;
    }
    const int n = epoll_wait(epoll_fd_, events, 64, 250);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kListenTag) {
        if (listen_fd_ >= 0) AcceptSome();
        continue;
      }
      if (tag == kWakeTag) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
        continue;
      }
      const uint64_t serial = tag >> 1;
      auto it = connections_.find(serial);
      if (it == connections_.end()) continue;  // closed earlier this round
      if (!Pump(*it->second)) Close(serial);
    }
    Sweep();
  }
}

void GrpcFront::Loop::AcceptSome() {
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        // EMFILE and the like: log and let the backlog wait.
        if (std::optional<std::string> line = log_limiter_.Admit(
                "accept", absl::StrCat("gRPC port: accept failed: ",
                                       std::strerror(errno)))) {
          LogWarning(*line);
        }
      }
      return;
    }
    Admit(fd, reinterpret_cast<const sockaddr*>(&addr));
  }
}

void GrpcFront::Loop::Admit(int fd, const sockaddr* addr) {
  std::string peer, address;
  DescribePeer(addr, &peer, &address);
  if (open_.load() >= options_.max_connections) {
    ++refused_full_;
    close(fd);
    return;
  }
  ++accepted_;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (options_.tcp_user_timeout > absl::ZeroDuration()) {
    const unsigned int ms = static_cast<unsigned int>(
        absl::ToInt64Milliseconds(options_.tcp_user_timeout));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
  }
  const uint64_t serial = next_serial_++;
  auto owned = std::make_unique<Connection>(serial, fd, options_.buffer_bytes);
  Connection& c = *owned;
  c.peer = std::move(peer);
  c.address = std::move(address);
  connections_.emplace(serial, std::move(owned));
  ++open_;
  if (options_.tls != nullptr) {
    tls::SslCtxPtr ctx = options_.tls->Acquire();
    c.ssl = SSL_new(ctx.get());  // holds its own reference to ctx
    if (c.ssl == nullptr || SSL_set_fd(c.ssl, fd) != 1) {
      ERR_clear_error();
      Close(serial);
      return;
    }
    SSL_set_accept_state(c.ssl);
    c.handshaking = true;
  } else if (!Open(c)) {
    Close(serial);
    return;
  }
  handshake_deadlines_.emplace_back(
      options_.resets.clock->MonotonicNow() + options_.handshake_timeout,
      serial);
  if (!Pump(c)) Close(serial);
}

bool GrpcFront::Loop::Open(Connection& c) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                 pair) != 0) {
    if (std::optional<std::string> line = log_limiter_.Admit(
            "socketpair", absl::StrCat("gRPC port: socketpair failed: ",
                                       std::strerror(errno)))) {
      LogWarning(*line);
    }
    return false;
  }
  c.grpc_fd = pair[0];
  c.grpc_peer_fd = pair[1];
  auth::Peer peer{.address = c.peer};
  if (c.ssl != nullptr) peer.identities = tls::PeerIdentities(c.ssl);
  peers_->Add(c.grpc_peer_fd, c.serial, std::move(peer));
  hand_(c.grpc_peer_fd);  // gRPC owns and closes it from here
  return true;
}

ssize_t GrpcFront::Loop::ReadClient(Connection& c, char* buf, size_t size) {
  if (c.ssl == nullptr) {
    const ssize_t n = read(c.client_fd, buf, size);
    if (n >= 0) return n;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
               ? kWouldBlock
               : kBroken;
  }
  ERR_clear_error();
  c.read_wants_write = false;
  const int n = SSL_read(c.ssl, buf, static_cast<int>(size));
  if (n > 0) return n;
  const int error = SSL_get_error(c.ssl, n);
  ERR_clear_error();
  switch (error) {
    case SSL_ERROR_WANT_READ:
      return kWouldBlock;
    case SSL_ERROR_WANT_WRITE:
      c.read_wants_write = true;
      return kWouldBlock;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    default:
      return kBroken;
  }
}

ssize_t GrpcFront::Loop::WriteClient(Connection& c, absl::string_view bytes) {
  if (c.ssl == nullptr) {
    const ssize_t n =
        send(c.client_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) return n;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
               ? kWouldBlock
               : kBroken;
  }
  ERR_clear_error();
  c.write_wants_read = false;
  const int n = SSL_write(c.ssl, bytes.data(), static_cast<int>(bytes.size()));
  if (n > 0) return n;
  const int error = SSL_get_error(c.ssl, n);
  ERR_clear_error();
  switch (error) {
    case SSL_ERROR_WANT_WRITE:
      return kWouldBlock;
    case SSL_ERROR_WANT_READ:
      c.write_wants_read = true;
      return kWouldBlock;
    default:
      return kBroken;
  }
}

void GrpcFront::Loop::OnClientFrame(Connection& c, const H2FrameHeader& h) {
  if (h.type == kH2Headers && (h.stream_id & 1) == 1 &&
      h.stream_id > c.last_stream_id) {
    c.last_stream_id = h.stream_id;
    // gRPC refuses streams beyond its concurrency limit (RST_STREAM
    // REFUSED_STREAM): a client this far beyond it is flooding.
    if (c.unanswered.size() >= kMaxUnanswered) {
      c.over_budget = true;
      return;
    }
    c.unanswered.insert(h.stream_id);
    return;
  }
  if (h.type != kH2RstStream || c.unanswered.erase(h.stream_id) == 0) return;
  ++resets_;
  if (!c.over_budget && !budget_.Take(c.address)) c.over_budget = true;
}

void GrpcFront::Loop::OnServerFrame(Connection& c, const H2FrameHeader& h) {
  if (h.type == kH2Headers || h.type == kH2RstStream) {
    c.unanswered.erase(h.stream_id);
  }
}

void GrpcFront::Loop::BeginGoAway(Connection& c) {
  c.closing = true;
  ++closed_resets_;
  if (std::optional<std::string> line = log_limiter_.Admit(
          absl::StrCat("resets ", c.address),
          absl::StrCat("gRPC port: closed the connection of ", c.peer,
                       ": its address reset more streams than "
                       "--grpc_max_stream_resets allows (HTTP/2 rapid "
                       "reset)"))) {
    LogWarning(*line);
  }
  // Nothing more of the client's reaches gRPC; closing gRPC's side makes
  // it cancel the connection's calls.
  c.up.Clear();
  if (c.grpc_fd >= 0) shutdown(c.grpc_fd, SHUT_RDWR);
  c.grpc_eof = true;
  // The GOAWAY goes after the last whole frame gRPC wrote, unless part of
  // a frame after it was already sent.
  const uint64_t written = c.out.fed() - c.down.size();
  if (c.out.complete_end() >= written) {
    c.down.Truncate(c.out.complete_end() - written);
    c.down.Append(H2GoAwayFrame(c.last_stream_id, kH2EnhanceYourCalm));
  } else {
    c.down.Clear();
  }
  goaway_deadlines_.emplace_back(
      options_.resets.clock->MonotonicNow() + kGoAwayGrace, c.serial);
}

bool GrpcFront::Loop::Pump(Connection& c) {
  if (c.handshaking) {
    ERR_clear_error();
    const int r = SSL_accept(c.ssl);
    if (r != 1) {
      const int error = SSL_get_error(c.ssl, r);
      ERR_clear_error();
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        c.handshake_wants_write = error == SSL_ERROR_WANT_WRITE;
        UpdateInterest(c);
        return true;
      }
      ++failed_handshakes_;
      return false;
    }
    c.handshaking = false;
    if (!Open(c)) return false;
  }
  bool progress = true;
  while (progress) {
    progress = false;
    if (!c.client_eof && !c.closing && c.up.space() > 0) {
      auto [at, room] = c.up.Tail();
      const ssize_t n = ReadClient(c, at, room);
      if (n > 0) {
        absl::Status s =
            c.in.Feed({at, static_cast<size_t>(n)},
                      [&](const H2FrameHeader& h) { OnClientFrame(c, h); });
        if (!s.ok()) {
          ++not_http2_;
          return false;
        }
        c.up.Commit(static_cast<size_t>(n));
        progress = true;
        if (c.over_budget) BeginGoAway(c);
      } else if (n == 0) {
        c.client_eof = true;
        progress = true;
      } else if (n == kBroken) {
        return false;
      }
    }
    if (c.up.size() > 0 && !c.closing) {
      const absl::string_view head = c.up.Head();
      const ssize_t n = send(c.grpc_fd, head.data(), head.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.up.Consume(static_cast<size_t>(n));
        progress = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                 errno != EINTR) {
        c.up.Clear();  // gRPC closed the connection
        c.grpc_eof = true;
        progress = true;
      }
    }
    if (c.client_eof && c.up.size() == 0 && !c.up_shut && !c.closing) {
      shutdown(c.grpc_fd, SHUT_WR);
      c.up_shut = true;
    }
    if (!c.grpc_eof && !c.closing && c.down.space() > 0) {
      auto [at, room] = c.down.Tail();
      const ssize_t n = read(c.grpc_fd, at, room);
      if (n > 0) {
        // The server's direction has no preface to fail on.
        (void)c.out.Feed({at, static_cast<size_t>(n)},
                         [&](const H2FrameHeader& h) { OnServerFrame(c, h); });
        c.down.Commit(static_cast<size_t>(n));
        progress = true;
      } else if (n == 0 ||
                 (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        c.grpc_eof = true;
        progress = true;
      }
    }
    if (c.down.size() > 0) {
      const ssize_t n = WriteClient(c, c.down.Head());
      if (n > 0) {
        c.down.Consume(static_cast<size_t>(n));
        progress = true;
      } else if (n == kBroken) {
        return false;
      }
    }
  }
  if (c.down.size() == 0 && (c.closing || c.grpc_eof)) {
    if (c.ssl != nullptr) {
      ERR_clear_error();
      SSL_shutdown(c.ssl);  // close_notify, best effort
      ERR_clear_error();
    }
    return false;
  }
  UpdateInterest(c);
  return true;
}

void GrpcFront::Loop::SetInterest(int fd, uint64_t tag, uint32_t want,
                                  uint32_t* current) {
  if (fd < 0 || want == *current) return;
  // An fd wanting nothing leaves epoll: registered, it would still report
  // a hang-up over and over.
  if (want == 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    *current = 0;
    return;
  }
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = tag;
  const int op = *current == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  if (epoll_ctl(epoll_fd_, op, fd, &ev) == 0) *current = want;
}

void GrpcFront::Loop::UpdateInterest(Connection& c) {
  uint32_t client = 0;
  if (c.handshaking) {
    client = c.handshake_wants_write ? EPOLLOUT : EPOLLIN;
  } else {
    if ((!c.client_eof && !c.closing && c.up.space() > 0) ||
        c.write_wants_read) {
      client |= EPOLLIN;
    }
    if (c.down.size() > 0 || c.read_wants_write) client |= EPOLLOUT;
  }
  SetInterest(c.client_fd, (c.serial << 1) | kClientSide, client,
              &c.client_interest);
  uint32_t grpc = 0;
  if (!c.grpc_eof && !c.closing && c.down.space() > 0) grpc |= EPOLLIN;
  if (c.up.size() > 0 && !c.closing) grpc |= EPOLLOUT;
  SetInterest(c.grpc_fd, (c.serial << 1) | kGrpcSide, grpc, &c.grpc_interest);
}

void GrpcFront::Loop::Destroy(Connection& c) {
  if (c.ssl != nullptr) SSL_free(c.ssl);
  close(c.client_fd);
  if (c.grpc_fd >= 0) close(c.grpc_fd);
  if (c.grpc_peer_fd >= 0) peers_->Remove(c.grpc_peer_fd, c.serial);
}

void GrpcFront::Loop::Close(uint64_t serial) {
  auto it = connections_.find(serial);
  if (it == connections_.end()) return;
  Destroy(*it->second);  // closing the fds removes them from epoll
  connections_.erase(it);
  --open_;
}

void GrpcFront::Loop::Sweep() {
  const absl::Time now = options_.resets.clock->MonotonicNow();
  while (!handshake_deadlines_.empty() &&
         handshake_deadlines_.front().first <= now) {
    const uint64_t serial = handshake_deadlines_.front().second;
    handshake_deadlines_.pop_front();
    auto it = connections_.find(serial);
    if (it != connections_.end() &&
        (it->second->handshaking ||
         it->second->in.fed() < kH2ClientPreface.size())) {
      ++failed_handshakes_;
      Close(serial);
    }
  }
  while (!goaway_deadlines_.empty() && goaway_deadlines_.front().first <= now) {
    const uint64_t serial = goaway_deadlines_.front().second;
    goaway_deadlines_.pop_front();
    Close(serial);
  }
}

GrpcFront::GrpcFront(int port, std::unique_ptr<Loop> loop)
    : port_(port), loop_(std::move(loop)) {}

absl::StatusOr<std::unique_ptr<GrpcFront>> GrpcFront::Start(
    Options options, std::function<void(int fd)> hand,
    auth::PeerDirectory* peers) {
  absl::StatusOr<int> listen_fd = ListenTcp(options.listen, "gRPC");
  if (!listen_fd.ok()) return listen_fd.status();
  const int port = LocalPort(*listen_fd);
  const int flags = fcntl(*listen_fd, F_GETFL);
  fcntl(*listen_fd, F_SETFL, flags | O_NONBLOCK);
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd < 0 || wake_fd < 0) {
    const std::string error = std::strerror(errno);
    close(*listen_fd);
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
    return absl::UnavailableError(
        absl::StrCat("gRPC port: cannot create its event loop: ", error));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, *listen_fd, &ev);
  ev.data.u64 = kWakeTag;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
  auto loop = std::make_unique<Loop>(std::move(options), std::move(hand), peers,
                                     *listen_fd, epoll_fd, wake_fd);
  auto front = std::unique_ptr<GrpcFront>(new GrpcFront(port, std::move(loop)));
  try {
    front->thread_ = std::thread([l = front->loop_.get()] { l->Run(); });
  } catch (const std::system_error& e) {
    return absl::UnavailableError(
        absl::StrCat("gRPC port: cannot start its thread: ", e.what()));
  }
  return front;
}

GrpcFront::~GrpcFront() { Stop(); }

GrpcFront::Counters GrpcFront::counters() const { return loop_->counters(); }

void GrpcFront::StopAccepting() {
  loop_->stop_accepting.store(true);
  loop_->Wake();
}

void GrpcFront::Stop() {
  if (!thread_.joinable()) return;
  loop_->stop.store(true);
  loop_->Wake();
  thread_.join();
}

}  // namespace msgq::grpc_front
