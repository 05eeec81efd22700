#include "tests/test_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "absl/base/call_once.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/temp_dir.h"
#include "tools/launch/child_process.h"
#include "tools/launch/owned_dir.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif
#ifndef MSGQ_MSGQD_PATH
#error "MSGQ_MSGQD_PATH must be defined"
#endif

namespace msgq::testing {

absl::StatusOr<std::unique_ptr<launch::OwnedDir>> MakeTempDir(
    const char* prefix) {
  static absl::once_flag swept;
  absl::call_once(swept, [] { (void)launch::SweepStaleDirs(kTempPrefix); });
  return launch::OwnedDir::Create(absl::StrCat(kTempPrefix, prefix));
}

std::string MessageComment(const std::string& overrides) {
  // Defaults suited to tests; overrides replace same-named directives.
  std::vector<std::pair<std::string, std::string>> d = {
      {"vt_ack_wait", "30"},
      {"vt_purge_after", "86400"},
      {"vt_batch_size", "10"},
      {"vt_cache_size", "10000"},
      {"vt_poller_interval", "30"}};
  for (absl::string_view piece :
       absl::StrSplit(overrides, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(piece, absl::MaxSplits('=', 1));
    bool replaced = false;
    for (auto& [k, v] : d) {
      if (k == kv.first) {
        v = kv.second;
        replaced = true;
      }
    }
    if (!replaced) d.push_back(kv);
  }
  std::string out = "vitess_message";
  for (auto& [k, v] : d) absl::StrAppend(&out, ",", k, "=", v);
  return out;
}

std::string MessageTableDdl(const std::string& name, const std::string& comment,
                            const std::string& extra_columns) {
  return absl::StrCat(
      "CREATE TABLE `", name,
      "` (id bigint NOT NULL, priority tinyint NOT NULL DEFAULT 50, "
      "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
      "time_acked bigint DEFAULT NULL, message json, ",
      extra_columns, extra_columns.empty() ? "" : ", ",
      "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) "
      "COMMENT '",
      comment, "'");
}

int64_t NowNanos() { return absl::ToUnixNanos(absl::Now()); }

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// ---- PrivateMariaDb ----

absl::StatusOr<std::unique_ptr<PrivateMariaDb>> PrivateMariaDb::Start(
    Options options) {
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
  launch::PrivateMariaDb::Options& lo = db->launch_options_;
  lo.source_dir = MSGQ_SOURCE_DIR;
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("db");
  if (!dir.ok()) return dir.status();
  db->dir_ = *std::move(dir);
  lo.dir = db->dir_->path();
  lo.durable = false;  // tests never lose power; fsyncs only slow them
  lo.binlog = options.binlog;
  lo.extra_args = options.extra_args;
  lo.env = options.env;
  absl::StatusOr<std::unique_ptr<launch::PrivateMariaDb>> server =
      launch::PrivateMariaDb::Start(lo);
  if (!server.ok()) return server.status();
  db->server_ = *std::move(server);
  return db;
}

PrivateMariaDb::~PrivateMariaDb() {
  conn_.reset();
  // Tests leave no state behind: the data dies with the server, so killing
  // it is safe and quick. server_ goes before the directory (its destructor
  // would run the launcher, which recreates the directory). The last kill
  // also covers a stopped server_ whose failed Restart() left one running.
  if (server_ != nullptr) {
    (void)server_->Stop(launch::PrivateMariaDb::StopMode::kKill);
  }
  server_.reset();
  if (dir_ != nullptr) {
    (void)launch::RunCommand(launch::PrivateMariaDb::StopCommand(
        launch_options_, launch::PrivateMariaDb::StopMode::kKill));
  }
  dir_.reset();  // removes the directory
}

absl::Status PrivateMariaDb::Stop() {
  conn_.reset();
  return server_->Stop();
}

absl::Status PrivateMariaDb::Kill() {
  conn_.reset();
  return server_->Stop(launch::PrivateMariaDb::StopMode::kKill);
}

absl::Status PrivateMariaDb::Restart() { return server_->Restart(); }

MysqlOptions PrivateMariaDb::mysql_options() const {
  MysqlOptions o;
  o.socket = socket();
  o.port = port();
  return o;
}

absl::StatusOr<std::unique_ptr<MysqlConnection>> PrivateMariaDb::Connect()
    const {
  return MysqlConnection::Connect(mysql_options());
}

absl::StatusOr<QueryResult> PrivateMariaDb::Query(const std::string& sql) {
  if (conn_ == nullptr || conn_->broken()) {
    auto conn = Connect();
    if (!conn.ok()) return conn.status();
    conn_ = *std::move(conn);
  }
  return conn_->Query(sql);
}

absl::Status PrivateMariaDb::Exec(const std::string& sql) {
  return Query(sql).status();
}

std::string PrivateMariaDb::Scalar(const std::string& sql) {
  absl::StatusOr<QueryResult> r = Query(sql);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1) {
    fprintf(
        stderr, "Scalar(%s) failed: %s\n", sql.c_str(),
        r.ok() ? "not one value" : std::string(r.status().message()).c_str());
    abort();
  }
  return r->rows[0][0].value_or("<NULL>");
}

// ---- Msgqd ----

absl::StatusOr<std::unique_ptr<Msgqd>> Msgqd::Start(
    const PrivateMariaDb& db, const std::vector<std::string>& args,
    const std::vector<std::string>& env) {
  std::unique_ptr<Msgqd> server(new Msgqd());
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("srv");
  if (!dir.ok()) return dir.status();
  server->dir_ = *std::move(dir);
  launch::MsgqdProcess::Options o;
  o.path = MSGQ_MSGQD_PATH;
  o.mysql_socket = db.socket();
  o.args = args;
  o.env = env;
  o.log_path = server->dir_->path() + "/msgqd.log";
  o.start_timeout = absl::Seconds(20);
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

int Msgqd::RunUntilExit(const PrivateMariaDb& db,
                        const std::vector<std::string>& args,
                        absl::Duration timeout, std::string* log) {
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("srv");
  if (!dir.ok()) return -1;
  // The flags MsgqdProcess::Start passes, then `args` (a later flag wins).
  std::vector<std::string> argv = {
      MSGQ_MSGQD_PATH, absl::StrCat("--mysql_socket=", db.socket()),
      "--listen=127.0.0.1:0", "--mysql_protocol_listen=", "--http_listen="};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<std::unique_ptr<launch::ChildProcess>> child =
      launch::ChildProcess::Start(argv, (*dir)->path() + "/msgqd.log");
  if (!child.ok()) return -1;
  const bool exited = Eventually([&] { return !(*child)->running(); }, timeout);
  const int code = (*child)->Stop(SIGKILL, absl::Seconds(5));
  if (log != nullptr) *log = (*child)->Log();
  return exited ? code : -1;
}

int Msgqd::port() const {
  const size_t colon = address().rfind(':');
  int port = 0;
  if (colon != std::string::npos)
    port = std::atoi(address().c_str() + colon + 1);
  return port;
}

Msgqd::~Msgqd() {
  if (process_ != nullptr) Terminate(absl::Seconds(5));
  process_.reset();
  dir_.reset();  // removes the directory
}

std::unique_ptr<v1::Messaging::Stub> Msgqd::Stub() const {
  return v1::Messaging::NewStub(channel_);
}

int Msgqd::Terminate(absl::Duration timeout, int sig) {
  const int code = process_->Stop(timeout, sig);
  // msgqd itself exits with small codes; >= 128 means a signal ended it
  // (the SIGKILL after `timeout`, or an earlier Kill()).
  return code >= 128 ? -1 : code;
}

void Msgqd::Kill() { process_->Kill(); }

std::string Msgqd::Log() const { return process_->Log(); }

// ---- StreamCollector ----

StreamCollector::StreamCollector(v1::Messaging::Stub* stub,
                                 const std::string& name,
                                 const std::string& keyspace)
    : stub_(stub) {
  request_.set_name(name);
  request_.set_keyspace(keyspace);
  thread_ = std::thread([this] { Run(); });
}

StreamCollector::~StreamCollector() {
  Cancel();
  thread_.join();
}

void StreamCollector::Cancel() { context_.TryCancel(); }

void StreamCollector::Run() {
  std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader =
      stub_->MessageStream(&context_, request_);
  v1::MessageStreamResponse response;
  while (reader->Read(&response)) {
    absl::MutexLock lock(&mu_);
    rows_ += response.rows_size();
    responses_.push_back(std::move(response));
    response.Clear();
  }
  grpc::Status status = reader->Finish();
  absl::MutexLock lock(&mu_);
  status_ = status;
  ended_ = true;
}

bool StreamCollector::WaitForRows(size_t n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return rows_ >= n || ended_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  return rows_ >= n;
}

bool StreamCollector::WaitForEnd(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&ended_), timeout);
}

bool StreamCollector::WaitForFields(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !responses_.empty() || ended_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  return !responses_.empty();
}

grpc::Status StreamCollector::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

std::vector<v1::MessageStreamResponse> StreamCollector::responses() const {
  absl::MutexLock lock(&mu_);
  return responses_;
}

size_t StreamCollector::row_count() const {
  absl::MutexLock lock(&mu_);
  return rows_;
}

std::vector<std::string> StreamCollector::column(int col) const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& r : responses_) {
    for (const auto& row : r.rows()) out.push_back(RowValue(row, col));
  }
  return out;
}

std::vector<std::string> StreamCollector::ids() const { return column(0); }

std::string RowValue(const v1::Row& row, int col) {
  size_t offset = 0;
  for (int i = 0; i < col; ++i) {
    if (row.lengths(i) > 0) offset += static_cast<size_t>(row.lengths(i));
  }
  if (row.lengths(col) < 0) return "<NULL>";
  return row.values().substr(offset, static_cast<size_t>(row.lengths(col)));
}

grpc::Status AckIds(v1::Messaging::Stub* stub, const std::string& table,
                    const std::vector<std::string>& ids, int64_t* acked,
                    const std::string& keyspace) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  v1::MessageAckRequest request;
  request.set_name(table);
  request.set_keyspace(keyspace);
  for (const auto& id : ids) request.add_ids(id);
  v1::MessageAckResponse response;
  grpc::Status status = stub->MessageAck(&context, request, &response);
  if (acked != nullptr) *acked = response.acked();
  return status;
}

v1::TableStatus FindTable(v1::Messaging::Stub* stub, const std::string& table,
                          const std::string& keyspace) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  v1::ListTablesResponse response;
  if (!stub->ListTables(&context, v1::ListTablesRequest(), &response).ok()) {
    return v1::TableStatus();
  }
  for (const auto& t : response.tables()) {
    if (t.name() == table && t.keyspace() == keyspace) return t;
  }
  return v1::TableStatus();
}

}  // namespace msgq::testing
