#include "tests/test_env.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif
#ifndef MSGQ_MSGQD_PATH
#error "MSGQ_MSGQD_PATH must be defined"
#endif

namespace msgq::testing {
namespace {

absl::StatusOr<std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("popen failed");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int rc = pclose(pipe);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("command failed (", rc, "): ", command, "\n", out));
  }
  return out;
}

std::string MakeTempDir(const char* prefix) {
  std::string templ = absl::StrCat("/tmp/", prefix, "-XXXXXX");
  char* dir = mkdtemp(templ.data());
  return dir == nullptr ? std::string() : std::string(dir);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

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

// ---- PrivateMariaDb ----

absl::StatusOr<std::unique_ptr<PrivateMariaDb>> PrivateMariaDb::Start(
    Options options) {
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
  db->options_ = options;
  db->dir_ = MakeTempDir("msgq-test-db");
  if (db->dir_.empty()) return absl::InternalError("mkdtemp failed");
  if (absl::Status s = db->RunLauncher(""); !s.ok()) return s;
  return db;
}

absl::Status PrivateMariaDb::RunLauncher(const std::string& args) {
  absl::StatusOr<std::string> out = RunCommand(absl::StrCat(
      MSGQ_SOURCE_DIR, "/tools/mariadb-private start ", dir_,
      options_.binlog ? "" : " --binlog=off",
      port_ ? absl::StrCat(" --port=", port_) : "", args, " 2>&1"));
  if (!out.ok()) return out.status();
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_SOCKET="))
      socket_ = std::string(line);
    if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_PORT=")) {
      (void)absl::SimpleAtoi(line, &port_);
    }
  }
  if (socket_.empty() || port_ == 0) {
    return absl::InternalError(absl::StrCat("launcher said: ", *out));
  }
  return absl::OkStatus();
}

PrivateMariaDb::~PrivateMariaDb() {
  conn_.reset();
  (void)RunCommand(absl::StrCat(MSGQ_SOURCE_DIR, "/tools/mariadb-private stop ",
                                dir_, " --kill 2>&1"));
  (void)RunCommand(absl::StrCat("rm -rf ", dir_));
}

absl::Status PrivateMariaDb::Stop() {
  conn_.reset();
  return RunCommand(absl::StrCat(MSGQ_SOURCE_DIR,
                                 "/tools/mariadb-private stop ", dir_, " 2>&1"))
      .status();
}

absl::Status PrivateMariaDb::Restart() { return RunLauncher(""); }

MysqlOptions PrivateMariaDb::mysql_options() const {
  MysqlOptions o;
  o.socket = socket_;
  o.port = port_;
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
    const PrivateMariaDb& db, const std::vector<std::string>& args) {
  std::unique_ptr<Msgqd> server(new Msgqd());
  server->dir_ = MakeTempDir("msgq-test-srv");
  server->log_path_ = server->dir_ + "/msgqd.log";
  std::vector<std::string> argv = {
      MSGQ_MSGQD_PATH, "--mysql_socket=" + db.socket(), "--listen=127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    int fd =
        open(server->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    dup2(fd, STDOUT_FILENO);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  server->pid_ = pid;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    std::string log = ReadFile(server->log_path_);
    size_t at = log.find("msgqd listening on ");
    if (at != std::string::npos) {
      size_t end = log.find('\n', at);
      if (end != std::string::npos) {
        server->address_ = log.substr(at + 19, end - at - 19);
        server->channel_ = grpc::CreateChannel(
            server->address_, grpc::InsecureChannelCredentials());
        return server;
      }
    }
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = -1;
      return absl::InternalError("msgqd exited at start: " + log);
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError("msgqd did not start: " +
                                     ReadFile(server->log_path_));
}

Msgqd::~Msgqd() {
  if (pid_ > 0) Terminate(absl::Seconds(5));
  if (!dir_.empty()) (void)RunCommand("rm -rf " + dir_);
}

std::unique_ptr<v1::Messaging::Stub> Msgqd::Stub() const {
  return v1::Messaging::NewStub(channel_);
}

int Msgqd::Terminate(absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (absl::Now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  Kill();
  return -1;
}

void Msgqd::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Msgqd::Log() const { return ReadFile(log_path_); }

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
