#include "tools/chaos/hostile.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "server/grpc_front/h2_frame_reader.h"
#include "server/grpc_front/h2_test_client.h"
#include "tools/chaos/mysql_client.h"
#include "tools/chaos/subscribers.h"

namespace msgq::chaos {

struct Hostile::Kind {
  std::string name;
  bool held = false;
  std::atomic<int64_t> attempts{0};
  Outcomes outcomes;
};

class Hostile::Held {
 public:
  virtual ~Held() = default;
  // HeldState's answer for this connection.
  virtual std::string State() = 0;
};

namespace {

class HeldSocket : public Hostile::Held {
 public:
  explicit HeldSocket(std::unique_ptr<Socket> s) : s_(std::move(s)) {}
  std::string State() override { return HeldState(s_->fd()); }

 private:
  std::unique_ptr<Socket> s_;
};

class HeldTls : public Hostile::Held {
 public:
  explicit HeldTls(std::unique_ptr<TlsSocket> s) : s_(std::move(s)) {}
  std::string State() override { return s_->HeldState(); }

 private:
  std::unique_ptr<TlsSocket> s_;
};

class HeldMysql : public Hostile::Held {
 public:
  explicit HeldMysql(std::unique_ptr<MysqlClient> c) : c_(std::move(c)) {}
  // Raw bytes: the connection is never used again.
  std::string State() override { return HeldState(c_->fd()); }

 private:
  std::unique_ptr<MysqlClient> c_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string HttpOutcome(const absl::StatusOr<HttpAnswer>& a) {
  if (!a.ok()) {
    return absl::StrCat(a.status().code() == absl::StatusCode::kDeadlineExceeded
                            ? "no answer in time"
                            : std::string(a.status().message()));
  }
  return absl::StrCat("HTTP ", a->status);
}

std::string GrpcOutcome(const grpc::Status& s) {
  return s.ok() ? "OK" : GrpcCodeName(s.error_code());
}

void SetDeadline(grpc::ClientContext* c, absl::Time deadline,
                 const std::string& token) {
  c->set_deadline(absl::ToChronoTime(deadline));
  if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
}

}  // namespace

Hostile::Hostile(Options options) : options_(std::move(options)) {}

Hostile::~Hostile() { Stop(); }

Hostile::Kind* Hostile::AddKind(const std::string& name, bool held) {
  kinds_.push_back(std::make_unique<Kind>());
  kinds_.back()->name = name;
  kinds_.back()->held = held;
  return kinds_.back().get();
}

bool Hostile::Running(const Kind& kind) const {
  return !stop_.HasBeenNotified() && absl::Now() < deadline_ &&
         kind.attempts.load() < options_.max_attempts;
}

bool Hostile::Pause(absl::Duration d) {
  if (absl::Now() >= deadline_) return false;
  return !stop_.WaitForNotificationWithTimeout(
      std::min(d, deadline_ - absl::Now()));
}

void Hostile::Spawn(std::function<void()> body) {
  running_.fetch_add(1);
  threads_.emplace_back([this, body = std::move(body)] {
    body();
    running_.fetch_sub(1);
  });
}

void Hostile::HoldLoop(Kind* kind, int count, Opener open) {
  struct Entry {
    std::unique_ptr<Held> held;
    absl::Time opened;
  };
  while (Running(*kind)) {
    std::vector<Entry> entries;
    for (int i = 0; i < count && Running(*kind); ++i) {
      kind->attempts.fetch_add(1);
      const absl::Time t0 = absl::Now();
      absl::StatusOr<std::unique_ptr<Held>> h = open(t0 + options_.timeout);
      if (!h.ok()) {
        kind->outcomes.Record(absl::Now() - t0,
                              std::string(h.status().message()));
        continue;
      }
      entries.push_back({*std::move(h), absl::Now()});
    }
    const absl::Time end = absl::Now() + options_.hold;
    while (!entries.empty() && absl::Now() < end &&
           Pause(std::min(absl::Seconds(1), end - absl::Now()))) {
      for (auto it = entries.begin(); it != entries.end();) {
        const std::string state = it->held->State();
        if (state == "closed by server") {
          kind->outcomes.Record(absl::Now() - it->opened, state);
          it = entries.erase(it);
        } else {
          ++it;
        }
      }
    }
    const bool cut_short = absl::Now() < end;
    for (Entry& e : entries) {
      std::string state = e.held->State();
      if (cut_short && state != "closed by server") {
        state = "open when the soak ended";
      }
      kind->outcomes.Record(absl::Now() - e.opened, state);
    }
    entries.clear();
    if (!Pause(options_.gap)) break;
  }
}

void Hostile::RequestLoop(Kind* kind, absl::Duration interval,
                          absl::Duration timeout, Request request) {
  while (Running(*kind)) {
    kind->attempts.fetch_add(1);
    const absl::Time t0 = absl::Now();
    const std::string outcome = request(t0 + timeout);
    kind->outcomes.Record(absl::Now() - t0, outcome);
    if (!Pause(interval)) break;
  }
}

absl::Status Hostile::Start() {
  absl::StatusOr<std::unique_ptr<TlsClientContext>> tls =
      TlsClientContext::Create(options_.ca_file);
  if (!tls.ok()) return tls.status();
  tls_ = *std::move(tls);
  deadline_ = absl::Now() + options_.duration;
  big_query_ = std::string(options_.big_query_bytes, '(');
  const Options& o = options_;

  // Held kinds.
  auto tls_open = [this](bool stall) -> Opener {
    return [this, stall](
               absl::Time deadline) -> absl::StatusOr<std::unique_ptr<Held>> {
      absl::StatusOr<std::unique_ptr<TlsSocket>> s =
          TlsSocket::Connect(*tls_, options_.https_port, deadline, &sockets_);
      if (!s.ok()) return s.status();
      // An application-data record header, TLS 1.2 version, and no length:
      // the server holds a partial record.
      if (stall) {
        if (absl::Status w = SendAll((*s)->fd(), "\x17\x03\x03", deadline);
            !w.ok()) {
          return w;
        }
      }
      return std::unique_ptr<Held>(new HeldTls(*std::move(s)));
    };
  };
  Kind* mid = AddKind("https: TLS record header, then stall", true);
  Spawn([=, this] { HoldLoop(mid, o.mid_record, tls_open(true)); });
  Kind* silent_tls = AddKind("https: silent after TLS handshake", true);
  Spawn([=, this] { HoldLoop(silent_tls, o.silent_tls, tls_open(false)); });
  for (const auto& [port_name, port] :
       std::vector<std::pair<std::string, int>>{{"grpc", o.grpc_port},
                                                {"https", o.https_port},
                                                {"mysql", o.mysql_port}}) {
    Kind* k = AddKind(port_name + ": silent TCP, no handshake", true);
    const int p = port;
    Spawn([=, this] {
      HoldLoop(
          k, o.silent_tcp,
          [this,
           p](absl::Time deadline) -> absl::StatusOr<std::unique_ptr<Held>> {
            absl::StatusOr<std::unique_ptr<Socket>> s =
                ConnectLoopback(p, deadline, &sockets_);
            if (!s.ok()) return s.status();
            return std::unique_ptr<Held>(new HeldSocket(*std::move(s)));
          });
    });
  }
  auto mysql_open = [this](const std::string& user,
                           const std::string& token) -> Opener {
    return [this, user, token](
               absl::Time deadline) -> absl::StatusOr<std::unique_ptr<Held>> {
      MysqlClient::Login login;
      login.port = options_.mysql_port;
      login.user = user;
      login.password = token;
      login.ca_file = options_.ca_file;
      login.timeout = deadline - absl::Now();
      absl::StatusOr<std::unique_ptr<MysqlClient>> c =
          MysqlClient::Connect(login, &sockets_);
      if (!c.ok()) return c.status();
      return std::unique_ptr<Held>(new HeldMysql(*std::move(c)));
    };
  };
  Kind* hoard = AddKind("mysql: hog hoards logged-in connections", true);
  Spawn(
      [=, this] { HoldLoop(hoard, o.hoard, mysql_open("hog", o.hog_token)); });
  Kind* idle = AddKind("mysql: idler's logged-in idle connections", true);
  Spawn([=, this] {
    HoldLoop(idle, o.idle, mysql_open("idler", o.idler_token));
  });

  // Request kinds: HTTPS.
  Kind* form = AddKind("https: 1 MiB POST /api/redrive form (ops)", false);
  Spawn([=, this] {
    RequestLoop(form, o.interval, o.form_timeout,
                [this](absl::Time d) { return Form(d); });
  });
  Kind* evil =
      AddKind("https: Host: evil.example GET /api/messages (ops)", false);
  Spawn([=, this] {
    RequestLoop(evil, o.interval, o.timeout,
                [this](absl::Time d) { return EvilHost(d); });
  });

  // MySQL.
  Kind* kill = AddKind("mysql: mallory KILLs worker's connections", false);
  Spawn([=, this] {
    uint64_t n = 0;
    RequestLoop(kill, o.interval, o.timeout,
                [this, &n](absl::Time d) { return Kill(d, n++); });
  });
  Kind* big = AddKind("mysql: 1 MiB COM_QUERY of '(' (mallory)", false);
  for (int i = 0; i < o.big_query_threads; ++i) {
    Spawn([=, this] {
      RequestLoop(big, o.interval, o.timeout,
                  [this](absl::Time d) { return BigQuery(d); });
    });
  }

  // gRPC, on TLS channels of their own.
  auto stub = [this] {
    grpc::SslCredentialsOptions creds;
    creds.pem_root_certs = ReadFile(options_.ca_file);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxSendMessageSize(64 << 20);
    return std::shared_ptr<v1::Messaging::Stub>(
        v1::Messaging::NewStub(grpc::CreateCustomChannel(
            absl::StrCat("127.0.0.1:", options_.grpc_port),
            grpc::SslCredentials(creds), args)));
  };
  Kind* unknown = AddKind("grpc: unknown bearer token (ListTables)", false);
  Spawn([=, this, s = stub()] {
    uint64_t n = 0;
    RequestLoop(unknown, o.interval / 4, o.timeout, [&](absl::Time d) {
      grpc::ClientContext c;
      SetDeadline(&c, d, absl::StrCat("tok-nobody-", n++));
      v1::ListTablesResponse r;
      return GrpcOutcome(s->ListTables(&c, v1::ListTablesRequest(), &r));
    });
  });
  Kind* steal = AddKind("grpc: mallory MessageStream of the soak table", false);
  Spawn([=, this, s = stub()] {
    RequestLoop(steal, o.interval, o.timeout, [&](absl::Time d) {
      grpc::ClientContext c;
      SetDeadline(&c, d, o.mallory_token);
      v1::MessageStreamRequest req;
      req.set_keyspace(o.keyspace);
      req.set_name(o.table);
      auto reader = s->MessageStream(&c, req);
      v1::MessageStreamResponse r;
      if (reader->Read(&r)) {
        // Admitted: take nothing, leave at once (any row sent comes back
        // to the normal subscribers after the ack wait).
        c.TryCancel();
        (void)reader->Finish();
        return std::string("stream admitted (cancelled at once)");
      }
      return GrpcOutcome(reader->Finish());
    });
  });
  Kind* huge = AddKind("grpc: 5 MiB MessageAck (worker, decoy)", false);
  Spawn([=, this, s = stub()] {
    v1::MessageAckRequest req;
    req.set_keyspace(o.keyspace);
    req.set_name(o.decoy);
    size_t bytes = 0;
    for (int64_t id = 1000000000; bytes < o.huge_ack_bytes; ++id) {
      req.add_ids(std::to_string(id));
      bytes += 12;
    }
    RequestLoop(huge, o.interval, o.timeout, [&](absl::Time d) {
      grpc::ClientContext c;
      SetDeadline(&c, d, o.worker_token);
      v1::MessageAckResponse r;
      return GrpcOutcome(s->MessageAck(&c, req, &r));
    });
  });
  Kind* made_up = AddKind("grpc: calls to made-up method names", false);
  Spawn([=, this] {
    grpc::SslCredentialsOptions creds;
    creds.pem_root_certs = ReadFile(options_.ca_file);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    grpc::GenericStub generic(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", options_.grpc_port),
        grpc::SslCredentials(creds), args));
    uint64_t n = 0;
    RequestLoop(made_up, o.interval / 4, o.timeout, [&](absl::Time d) {
      grpc::ClientContext c;
      SetDeadline(&c, d, o.worker_token);
      grpc::Slice empty("");
      grpc::ByteBuffer request(&empty, 1);
      grpc::ByteBuffer response;
      grpc::Status status;
      absl::Notification done;
      generic.UnaryCall(&c, absl::StrCat("/evil.Service", n++, "/Method"),
                        grpc::StubOptions(), &request, &response,
                        [&](grpc::Status s) {
                          status = std::move(s);
                          done.Notify();
                        });
      done.WaitForNotification();
      return GrpcOutcome(status);
    });
  });
  Kind* reset =
      AddKind("grpc: HTTP/2 rapid reset, 3000 streams (TLS, 127.0.0.3)", false);
  Spawn([=, this] {
    const std::string block = grpc_front::testing::GrpcRequestHeaderBlock(
        "/msgq.v1.Messaging/ListTables");
    RequestLoop(reset, o.interval, o.timeout, [&](absl::Time d) {
      auto client = grpc_front::testing::H2TestClient::Connect(
          o.grpc_port, /*tls=*/true, "127.0.0.3");
      if (client == nullptr) {
        return std::string("refused at connect or handshake");
      }
      std::string bytes =
          std::string(grpc_front::kH2ClientPreface) +
          grpc_front::testing::H2Frame(grpc_front::kH2Settings, 0, 0, "");
      for (uint32_t id = 1; id < 2 * o.rapid_reset_streams; id += 2) {
        bytes += grpc_front::testing::RapidResetRound(id, block);
      }
      const bool sent = client->Send(bytes);
      const bool closed =
          client->ReadUntilClosed(std::min(absl::Seconds(2), d - absl::Now()));
      if (client->goaway_error() == grpc_front::kH2EnhanceYourCalm) {
        return std::string("GOAWAY ENHANCE_YOUR_CALM");
      }
      if (!sent || closed) return std::string("closed by server");
      return std::string("open after its resets");
    });
  });
  Kind* drop =
      AddKind("grpc: streams opened and dropped (worker, decoy)", false);
  Spawn([=, this, s = stub()] {
    RequestLoop(drop, o.interval / 4, o.timeout, [&](absl::Time d) {
      grpc::ClientContext c;
      SetDeadline(&c, d, o.worker_token);
      v1::MessageStreamRequest req;
      req.set_keyspace(o.keyspace);
      req.set_name(o.decoy);
      auto reader = s->MessageStream(&c, req);
      v1::MessageStreamResponse r;
      const bool header = reader->Read(&r);
      c.TryCancel();
      const grpc::Status end = reader->Finish();
      return header ? std::string("OK (dropped after the header)")
                    : GrpcOutcome(end);
    });
  });
  return absl::OkStatus();
}

void Hostile::Stop() {
  if (threads_.empty()) return;
  stop_.Notify();
  // Let held kinds record their connections' states before sockets are
  // shut down under them; then unblock what is still waiting.
  const absl::Time grace = absl::Now() + absl::Seconds(2);
  while (running_.load() > 0 && absl::Now() < grace) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  sockets_.ShutdownAll();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

std::vector<Hostile::KindReport> Hostile::Reports() const {
  std::vector<KindReport> reports;
  for (const auto& k : kinds_) {
    reports.push_back({k->name, k->held, k->outcomes.Summary()});
  }
  return reports;
}

std::string Hostile::Form(absl::Time deadline) {
  std::string body;
  body.reserve(options_.form_bytes + 8);
  while (body.size() < options_.form_bytes) body += "id=1&";
  body.resize(options_.form_bytes);
  const std::string request = absl::StrCat(
      "POST /api/redrive?keyspace=", options_.keyspace,
      "&table=", options_.decoy, " HTTP/1.1\r\n",
      "Host: 127.0.0.1:", options_.https_port, "\r\n", "Authorization: Bearer ",
      options_.ops_token, "\r\n", "X-Msgq-Console: 1\r\n",
      "Content-Type: application/x-www-form-urlencoded\r\n",
      "Content-Length: ", body.size(), "\r\n", "Connection: close\r\n\r\n",
      body);
  return HttpOutcome(
      HttpsExchange(*tls_, options_.https_port, request, deadline, &sockets_));
}

std::string Hostile::EvilHost(absl::Time deadline) {
  const std::string request =
      absl::StrCat("GET /api/messages?keyspace=", options_.keyspace,
                   "&table=", options_.decoy, "&payload=1 HTTP/1.1\r\n",
                   "Host: evil.example\r\n", "Authorization: Bearer ",
                   options_.ops_token, "\r\n", "Connection: close\r\n\r\n");
  return HttpOutcome(
      HttpsExchange(*tls_, options_.https_port, request, deadline, &sockets_));
}

std::string Hostile::Kill(absl::Time deadline, uint64_t n) {
  // One connection per attempt: a KILL that worked may have been of its
  // own neighbour, and a login refused is an answer too.
  MysqlClient::Login login;
  login.port = options_.mysql_port;
  login.user = "mallory";
  login.password = options_.mallory_token;
  login.ca_file = options_.ca_file;
  login.timeout = deadline - absl::Now();
  absl::StatusOr<std::unique_ptr<MysqlClient>> c =
      MysqlClient::Connect(login, &sockets_);
  if (!c.ok()) return absl::StrCat("login: ", c.status().message());
  std::vector<uint32_t> victims;
  if (options_.victims) victims = options_.victims();
  const uint32_t victim =
      victims.empty() ? (*c)->id() - 1 : victims[n % victims.size()];
  const bool query = n % 2 == 1;
  const std::string what = query ? "KILL QUERY" : "KILL";
  absl::StatusOr<int64_t> r = (*c)->Query(absl::StrCat(what, " ", victim));
  return absl::StrCat(what, victims.empty() ? " (own id - 1)" : " (worker)",
                      ": ", r.ok() ? "ok" : MysqlOutcome(r.status()));
}

std::string Hostile::BigQuery(absl::Time deadline) {
  MysqlClient::Login login;
  login.port = options_.mysql_port;
  login.user = "mallory";
  login.password = options_.mallory_token;
  login.ca_file = options_.ca_file;
  login.timeout = deadline - absl::Now();
  absl::StatusOr<std::unique_ptr<MysqlClient>> c =
      MysqlClient::Connect(login, &sockets_);
  if (!c.ok()) return absl::StrCat("login: ", c.status().message());
  absl::StatusOr<int64_t> r = (*c)->Query(big_query_);
  return r.ok() ? "ok" : MysqlOutcome(r.status());
}

}  // namespace msgq::chaos
