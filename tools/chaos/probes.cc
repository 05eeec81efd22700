#include "tools/chaos/probes.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/chaos/mysql_client.h"
#include "tools/chaos/subscribers.h"

namespace msgq::chaos {

template <typename F>
void Probes::Loop(Kind* kind, F attempt) {
  absl::Time next = absl::Now();
  while (!stop_.HasBeenNotified()) {
    const absl::Time t0 = absl::Now();
    const std::string outcome = attempt(t0 + options_.timeout);
    // An attempt cut short by Stop() is not a measurement.
    if (stop_.HasBeenNotified()) break;
    kind->outcomes.Record(absl::Now() - t0, outcome);
    next = std::max(next + options_.interval, absl::Now());
    if (stop_.WaitForNotificationWithTimeout(next - absl::Now())) break;
  }
}

absl::Status Probes::Start() {
  absl::StatusOr<std::unique_ptr<TlsClientContext>> tls =
      TlsClientContext::Create(options_.ca_file);
  if (!tls.ok()) return tls.status();
  tls_ = *std::move(tls);
  for (const char* name :
       {"https: GET /readyz", "mysql: login + select 1", "grpc: ListTables"}) {
    kinds_.push_back(std::make_unique<Kind>());
    kinds_.back()->name = name;
  }
  threads_.emplace_back([this, k = kinds_[0].get()] {
    const std::string request = absl::StrCat(
        "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:", options_.https_port,
        "\r\nConnection: close\r\n\r\n");
    Loop(k, [&](absl::Time deadline) {
      absl::StatusOr<HttpAnswer> a = HttpsExchange(
          *tls_, options_.https_port, request, deadline, &sockets_);
      if (!a.ok()) {
        return a.status().code() == absl::StatusCode::kDeadlineExceeded
                   ? std::string("no answer in time")
                   : std::string(a.status().message());
      }
      return absl::StrCat("HTTP ", a->status);
    });
  });
  threads_.emplace_back([this, k = kinds_[1].get()] {
    Loop(k, [&](absl::Time deadline) {
      MysqlClient::Login login;
      login.port = options_.mysql_port;
      login.user = options_.user;
      login.password = options_.token;
      login.ca_file = options_.ca_file;
      login.timeout = deadline - absl::Now();
      absl::StatusOr<std::unique_ptr<MysqlClient>> c =
          MysqlClient::Connect(login, &sockets_);
      if (!c.ok()) return absl::StrCat("login: ", c.status().message());
      absl::StatusOr<int64_t> rows = (*c)->Query("select 1");
      if (!rows.ok()) return MysqlOutcome(rows.status());
      return std::string(*rows == 1 ? "ok" : "not one row");
    });
  });
  threads_.emplace_back([this, k = kinds_[2].get()] {
    std::ifstream in(options_.ca_file, std::ios::binary);
    std::stringstream ca;
    ca << in.rdbuf();
    grpc::SslCredentialsOptions creds;
    creds.pem_root_certs = ca.str();
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = v1::Messaging::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", options_.grpc_port),
        grpc::SslCredentials(creds), args));
    Loop(k, [&](absl::Time deadline) {
      grpc::ClientContext c;
      c.set_deadline(absl::ToChronoTime(deadline));
      c.AddMetadata("authorization", "Bearer " + options_.token);
      v1::ListTablesResponse r;
      const grpc::Status s = stub->ListTables(&c, v1::ListTablesRequest(), &r);
      return s.ok() ? std::string("OK") : GrpcCodeName(s.error_code());
    });
  });
  return absl::OkStatus();
}

void Probes::Stop() {
  if (threads_.empty()) return;
  stop_.Notify();
  sockets_.ShutdownAll();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

std::vector<Probes::KindReport> Probes::Reports() const {
  std::vector<KindReport> reports;
  for (const auto& k : kinds_) {
    reports.push_back({k->name, k->outcomes.Summary()});
  }
  return reports;
}

}  // namespace msgq::chaos
