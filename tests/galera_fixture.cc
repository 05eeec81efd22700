#include "tests/galera_fixture.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tests/temp_dir.h"
#include "tests/test_env.h"
#include "tools/launch/child_process.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif
#ifndef MSGQ_MSGQD_PATH
#error "MSGQ_MSGQD_PATH must be defined"
#endif

namespace msgq::testing {

// ---- GaleraCluster ----

absl::StatusOr<std::unique_ptr<GaleraCluster>> GaleraCluster::Start(int nodes) {
  StartOptions options;
  options.nodes = nodes;
  return Start(options);
}

absl::StatusOr<std::unique_ptr<GaleraCluster>> GaleraCluster::Start(
    const StartOptions& options) {
  std::unique_ptr<GaleraCluster> cluster(new GaleraCluster());
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("galera");
  if (!dir.ok()) return dir.status();
  cluster->dir_ = *std::move(dir);
  std::string command =
      absl::StrCat("start ", launch::ShellQuote(cluster->dir_->path()),
                   " --nodes=", options.nodes, " --owner-pid=", getpid());
  // The launcher numbers nodes from 1.
  for (const auto& [node, address] : options.addresses) {
    absl::StrAppend(
        &command, " ",
        launch::ShellQuote(absl::StrCat("--address=", node + 1, ":", address)));
  }
  for (const auto& [node, prefix] : options.prefixes) {
    absl::StrAppend(
        &command, " ",
        launch::ShellQuote(absl::StrCat("--prefix=", node + 1, ":", prefix)));
  }
  if (!options.mariadbd_args.empty()) absl::StrAppend(&command, " --");
  for (const std::string& arg : options.mariadbd_args) {
    absl::StrAppend(&command, " ", launch::ShellQuote(arg));
  }
  absl::StatusOr<std::string> out =
      launch::RunCommand(cluster->Launcher(command));
  if (!out.ok()) return out.status();
  if (absl::Status s = cluster->ReadEnv(*out); !s.ok()) return s;
  if (cluster->size() != options.nodes) {
    return absl::InternalError(
        absl::StrCat("mariadb-galera printed ", cluster->size(), " nodes"));
  }
  return cluster;
}

std::string GaleraCluster::Launcher(const std::string& command) const {
  return absl::StrCat(launch::ShellQuote(absl::StrCat(MSGQ_SOURCE_DIR,
                                                      "/tools/mariadb-galera")),
                      " ", command);
}

absl::Status GaleraCluster::ReadEnv(const std::string& out) {
  int nodes = 0;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "MSGQ_GALERA_NODES=")) {
      if (!absl::SimpleAtoi(line, &nodes) || nodes < 1) break;
      sockets_.assign(static_cast<size_t>(nodes), "");
      ports_.assign(static_cast<size_t>(nodes), 0);
      addresses_.assign(static_cast<size_t>(nodes), "127.0.0.1");
      conns_.resize(static_cast<size_t>(nodes));
      continue;
    }
    if (!absl::ConsumePrefix(&line, "MSGQ_GALERA_NODE")) continue;
    const size_t under = line.find('_');
    int i = 0;
    if (under == absl::string_view::npos ||
        !absl::SimpleAtoi(line.substr(0, under), &i) || i < 1 || i > nodes) {
      continue;
    }
    absl::string_view rest = line.substr(under + 1);
    if (absl::ConsumePrefix(&rest, "SOCKET=")) {
      sockets_[i - 1] = std::string(rest);
    } else if (absl::ConsumePrefix(&rest, "PORT=")) {
      (void)absl::SimpleAtoi(rest, &ports_[i - 1]);
    } else if (absl::ConsumePrefix(&rest, "ADDRESS=")) {
      addresses_[i - 1] = std::string(rest);
    }
  }
  for (int i = 0; i < nodes; ++i) {
    if (sockets_[i].empty() || ports_[i] == 0) nodes = 0;
  }
  if (nodes == 0) {
    return absl::InternalError(
        absl::StrCat("mariadb-galera printed no complete node list: ", out));
  }
  return absl::OkStatus();
}

GaleraCluster::~GaleraCluster() {
  conns_.clear();
  if (dir_ != nullptr) {
    (void)launch::RunCommand(Launcher(
        absl::StrCat("stop ", launch::ShellQuote(dir_->path()), " --kill")));
  }
  dir_.reset();  // removes the directory
}

std::string GaleraCluster::Address(int node) const {
  return absl::StrCat(addresses_[node], ":", ports_[node]);
}

std::string GaleraCluster::Hosts(const std::vector<int>& order) const {
  std::vector<std::string> hosts;
  std::vector<bool> listed(ports_.size(), false);
  for (int i : order) {
    hosts.push_back(Address(i));
    listed[i] = true;
  }
  for (int i = 0; i < size(); ++i) {
    if (!listed[i]) hosts.push_back(Address(i));
  }
  return absl::StrJoin(hosts, ",");
}

int GaleraCluster::NodeAt(const std::string& address) const {
  for (int i = 0; i < size(); ++i) {
    if (Address(i) == address) return i;
  }
  return -1;
}

MysqlOptions GaleraCluster::Options(int node) const {
  MysqlOptions o;
  o.socket = sockets_[node];
  o.connect_timeout = absl::Seconds(2);
  o.io_timeout = absl::Seconds(20);
  return o;
}

absl::StatusOr<std::unique_ptr<MysqlConnection>> GaleraCluster::Connect(
    int node) const {
  return MysqlConnection::Connect(Options(node));
}

absl::StatusOr<QueryResult> GaleraCluster::Query(int node,
                                                 const std::string& sql) {
  std::unique_ptr<MysqlConnection>& conn = conns_[node];
  if (conn == nullptr || conn->broken()) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c = Connect(node);
    if (!c.ok()) return c.status();
    conn = *std::move(c);
  }
  return conn->Query(sql);
}

absl::Status GaleraCluster::Exec(int node, const std::string& sql) {
  return Query(node, sql).status();
}

std::string GaleraCluster::Scalar(int node, const std::string& sql) {
  absl::StatusOr<QueryResult> r = Query(node, sql);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1) return "";
  return r->rows[0][0].value_or("<NULL>");
}

absl::Status GaleraCluster::Kill(int node) {
  conns_[node].reset();
  return launch::RunCommand(
             Launcher(absl::StrCat("kill ", launch::ShellQuote(dir_->path()),
                                   " ", node + 1)))
      .status();
}

absl::Status GaleraCluster::Restart(int node) {
  conns_[node].reset();
  return launch::RunCommand(
             Launcher(absl::StrCat("restart ", launch::ShellQuote(dir_->path()),
                                   " ", node + 1)))
      .status();
}

// ---- GaleraMsgqd ----

absl::StatusOr<std::unique_ptr<GaleraMsgqd>> GaleraMsgqd::Start(
    const std::string& hosts, const std::vector<std::string>& args) {
  std::unique_ptr<GaleraMsgqd> server(new GaleraMsgqd());
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("srv");
  if (!dir.ok()) return dir.status();
  server->dir_ = *std::move(dir);
  launch::MsgqdProcess::Options o;
  o.path = MSGQ_MSGQD_PATH;
  o.mysql_socket = "";
  o.args = {"--mysql_socket=", absl::StrCat("--mysql_host=", hosts),
            "--databases=msgq", "--schema_reload_interval=200ms"};
  o.args.insert(o.args.end(), args.begin(), args.end());
  o.log_path = server->dir_->path() + "/msgqd.log";
  o.start_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<launch::MsgqdProcess>> process =
      launch::MsgqdProcess::Start(o);
  if (!process.ok()) return process.status();
  server->process_ = *std::move(process);
  // For the sweep, should msgqd outlive this process after all.
  FILE* pid = fopen((server->dir_->path() + "/msgqd.pid").c_str(), "w");
  if (pid != nullptr) {
    fprintf(pid, "%d\n", static_cast<int>(server->process_->pid()));
    fclose(pid);
  }
  server->channel_ = grpc::CreateChannel(server->process_->address(),
                                         grpc::InsecureChannelCredentials());
  return server;
}

GaleraMsgqd::~GaleraMsgqd() {
  if (process_ != nullptr) process_->Stop(absl::Seconds(5));
  process_.reset();
  dir_.reset();
}

std::unique_ptr<v1::Messaging::Stub> GaleraMsgqd::Stub() const {
  return v1::Messaging::NewStub(channel_);
}

std::optional<absl::Time> GaleraMsgqd::LoggedAt(absl::string_view text,
                                                absl::Time after) const {
  // A text log line: a severity letter, "YYYY-MM-DD HH:MM:SS.mmm" (UTC),
  // a space, the message.
  constexpr size_t kStamp = 23;
  const absl::Time from =
      absl::UnixEpoch() +
      absl::Floor(after - absl::UnixEpoch(), absl::Milliseconds(1));
  const std::string log = Log();
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (line.size() < 1 + kStamp || !absl::StrContains(line, text)) continue;
    absl::Time at;
    std::string error;
    if (absl::ParseTime("%Y-%m-%d %H:%M:%E3S", line.substr(1, kStamp),
                        absl::UTCTimeZone(), &at, &error) &&
        at >= from) {
      return at;
    }
  }
  return std::nullopt;
}

std::string GaleraMsgqd::ServedNode() const {
  // "MySQL primary: 127.0.0.1:PORT" or "... (was ...)"; not the lines that
  // name a node's state ("MySQL primary: Galera node ...", "... is ...").
  const std::string log = Log();
  std::string served;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    const size_t at = line.find("MySQL primary: ");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 15);
    const size_t end = rest.find_first_of(" \r");
    absl::string_view address = rest.substr(0, end);
    absl::string_view after =
        end == absl::string_view::npos ? "" : rest.substr(end);
    if (address.find(':') == absl::string_view::npos) continue;
    if (after.empty() || absl::StartsWith(after, " (was ")) {
      served = std::string(address);
    }
  }
  return served;
}

// ---- GaleraProducer ----

GaleraProducer::GaleraProducer(const GaleraCluster& cluster, int node,
                               const std::string& table, int first,
                               absl::Duration every) {
  thread_ = std::thread([this, options = cluster.Options(node), table, first,
                         every] { Run(options, table, first, every); });
}

GaleraProducer::~GaleraProducer() { Stop(); }

void GaleraProducer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::set<std::string> GaleraProducer::committed() const {
  absl::MutexLock lock(&mu_);
  return committed_;
}

std::map<std::string, absl::Time> GaleraProducer::committed_at() const {
  absl::MutexLock lock(&mu_);
  return committed_at_;
}

int GaleraProducer::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

void GaleraProducer::Run(MysqlOptions options, std::string table, int first,
                         absl::Duration every) {
  std::unique_ptr<MysqlConnection> conn;
  for (int id = first;; ++id) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), every)) return;
    }
    if (conn == nullptr || conn->broken()) {
      conn.reset();
      absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
          MysqlConnection::Connect(options);
      if (!c.ok()) {
        absl::MutexLock lock(&mu_);
        ++failures_;
        continue;
      }
      conn = *std::move(c);
    }
    absl::StatusOr<uint64_t> r = conn->Execute(
        absl::StrCat("INSERT INTO msgq.`", table, "` (id, message) VALUES (",
                     id, ", '{\"n\": ", id, "}')"));
    const absl::Time at = absl::Now();
    absl::MutexLock lock(&mu_);
    if (r.ok()) {
      committed_.insert(std::to_string(id));
      committed_at_.emplace(std::to_string(id), at);
    } else {
      ++failures_;
    }
  }
}

}  // namespace msgq::testing
