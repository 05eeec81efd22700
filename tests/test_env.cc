#include "tests/test_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/base/call_once.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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

namespace {

// The first harness start of a test process removes what dead ones left.
void SweepOnce() {
  static absl::once_flag swept;
  absl::call_once(swept, [] { (void)launch::SweepStaleDirs(kTempPrefix); });
}

}  // namespace

absl::StatusOr<std::unique_ptr<launch::OwnedDir>> MakeTempDir(
    const char* prefix) {
  SweepOnce();
  return launch::OwnedDir::Create(absl::StrCat(kTempPrefix, prefix));
}

namespace {

constexpr int kPoolSlots = 16;
constexpr char kSystemDatabases[][19] = {"information_schema", "mysql",
                                         "performance_schema", "sys"};
// What a pooled server's directory holds besides what its borrowers add.
constexpr char kServerFiles[][17] = {
    ".owner.lock",  "slot.lock",    "keeper.pid",  "watchdog.pid",
    "mariadbd.pid", "mariadbd.err", "mysqld.sock", "mysqld.sock.lock",
    "data",         "tmp",          "ready",       "baseline",
    "install.log"};

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
}

// Writes `path` whole or not at all (a borrower never reads half of it).
bool WriteAll(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".new";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << content;
    if (!f.flush()) return false;
  }
  return rename(tmp.c_str(), path.c_str()) == 0;
}

// The process the pool belongs to: ctest when it runs this test (the pool
// then serves all its tests), this process otherwise.
int PoolOwner() {
  const pid_t parent = getppid();
  std::string comm = ReadAll(absl::StrCat("/proc/", parent, "/comm"));
  return absl::StripAsciiWhitespace(comm) == "ctest" ? parent : getpid();
}

// Opens `path` and takes flock `op` (LOCK_SH or LOCK_EX) without waiting;
// -1 when it is missing, locked, or was removed or replaced meanwhile.
int OpenLocked(const std::string& path, int op, int flags) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  struct stat held, now;
  if (flock(fd, op | LOCK_NB) != 0 || fstat(fd, &held) != 0 ||
      stat(path.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
      held.st_dev != now.st_dev) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string QuoteIdentifier(const std::string& name) {
  return absl::StrCat("`", absl::StrReplaceAll(name, {{"`", "``"}}), "`");
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
  const char* pool = getenv("MSGQ_TEST_SERVER_POOL");
  if (options.shared && options.extra_args.empty() && options.env.empty() &&
      (pool == nullptr || std::string(pool) != "off")) {
    absl::StatusOr<std::unique_ptr<PrivateMariaDb>> db = Borrow(options);
    if (!db.ok() || *db != nullptr) return db;
  }
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
  launch::PrivateMariaDb::Options& lo = db->launch_options_;
  lo.source_dir = MSGQ_SOURCE_DIR;
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("db");
  if (!dir.ok()) return dir.status();
  db->dir_ = *std::move(dir);
  db->dir_path_ = db->dir_->path();
  lo.dir = db->dir_path_;
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

absl::StatusOr<std::unique_ptr<PrivateMariaDb>> PrivateMariaDb::Borrow(
    const Options& options) {
  SweepOnce();
  const std::string prefix =
      absl::StrCat("/tmp/", kTempPrefix, "pool-", PoolOwner(), "-",
                   options.binlog ? "binlog" : "nobinlog", "-");
  for (int i = 0; i < kPoolSlots; ++i) {
    const std::string path = absl::StrCat(prefix, i);
    if (mkdir(path.c_str(), 0700) == 0) return StartIntoPool(path, options);
    if (errno != EEXIST) {
      return absl::InternalError(absl::StrCat("mkdir ", path, " failed"));
    }
    std::unique_ptr<PrivateMariaDb> db = TryBorrow(path, options);
    if (db != nullptr) return db;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<PrivateMariaDb>> PrivateMariaDb::StartIntoPool(
    const std::string& path, const Options& options) {
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
  db->dir_path_ = path;
  // slot.lock is held before .owner.lock appears, so no borrower takes the
  // slot before `ready` and `clean` exist. .owner.lock appears already
  // locked (as launch::OwnedDir's does), so no sweep takes the directory.
  const std::string owner_lock = path + "/.owner.lock";
  const std::string pending = owner_lock + ".new";
  db->slot_lock_fd_ = open((path + "/slot.lock").c_str(),
                           O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  db->owner_lock_fd_ =
      open(pending.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (db->slot_lock_fd_ < 0 || db->owner_lock_fd_ < 0 ||
      flock(db->slot_lock_fd_, LOCK_EX | LOCK_NB) != 0 ||
      flock(db->owner_lock_fd_, LOCK_SH | LOCK_NB) != 0 ||
      rename(pending.c_str(), owner_lock.c_str()) != 0) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    return absl::InternalError(absl::StrCat("cannot lock ", path));
  }
  launch::PrivateMariaDb::Options& lo = db->launch_options_;
  lo.source_dir = MSGQ_SOURCE_DIR;
  lo.dir = path;
  lo.durable = false;
  lo.binlog = options.binlog;
  lo.owner_pid = PoolOwner();
  absl::StatusOr<std::unique_ptr<launch::PrivateMariaDb>> server =
      launch::PrivateMariaDb::Start(lo);
  if (!server.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    return server.status();
  }
  db->server_ = *std::move(server);
  // From here on the server ends with the keeper (or, should the keeper
  // die, with the sweep of the first test process after the last borrower).
  absl::StatusOr<std::string> keeper = launch::RunCommand(absl::StrCat(
      "setsid ", launch::ShellQuote(lo.source_dir + "/tools/mariadb-private"),
      " keep ", launch::ShellQuote(path),
      " --idle=", absl::ToInt64Seconds(kPoolIdle),
      " --owner-pid=", lo.owner_pid, " </dev/null >/dev/null 2>&1 &"));
  absl::StatusOr<std::string> fingerprint = db->Fingerprint();
  if (!keeper.ok() || !fingerprint.ok() ||
      !WriteAll(path + "/baseline", *fingerprint) ||
      !WriteAll(path + "/ready",
                absl::StrCat(db->socket(), "\n", db->port(), "\n"))) {
    db->touched_ = true;  // given back dirty: killed
    return !keeper.ok() ? keeper.status()
           : !fingerprint.ok()
               ? fingerprint.status()
               : absl::InternalError(absl::StrCat("cannot write to ", path));
  }
  return db;
}

std::unique_ptr<PrivateMariaDb> PrivateMariaDb::TryBorrow(
    const std::string& path, const Options& options) {
  const int owner_lock = OpenLocked(path + "/.owner.lock", LOCK_SH, O_RDONLY);
  if (owner_lock < 0) return nullptr;
  const int slot_lock = OpenLocked(path + "/slot.lock", LOCK_EX, O_RDWR);
  if (slot_lock < 0) {
    close(owner_lock);
    return nullptr;
  }
  // Without `clean` its last borrower died or gave it back dirty: its
  // keeper is removing it.
  if (unlink((path + "/clean").c_str()) != 0) {
    close(slot_lock);
    close(owner_lock);
    return nullptr;
  }
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
  db->dir_path_ = path;
  db->owner_lock_fd_ = owner_lock;
  db->slot_lock_fd_ = slot_lock;
  launch::PrivateMariaDb::Options& lo = db->launch_options_;
  lo.source_dir = MSGQ_SOURCE_DIR;
  lo.dir = path;
  lo.durable = false;
  lo.binlog = options.binlog;
  lo.owner_pid = PoolOwner();
  std::vector<std::string> ready =
      absl::StrSplit(ReadAll(path + "/ready"), '\n', absl::SkipWhitespace());
  int port = 0;
  if (ready.size() != 2 || !absl::SimpleAtoi(ready[1], &port)) {
    db->touched_ = true;
    return nullptr;  // the destructor gives it back dirty
  }
  db->server_ = launch::PrivateMariaDb::Adopt(lo, ready[0], port);
  if (!db->Exec("SELECT 1").ok()) {
    db->touched_ = true;
    return nullptr;
  }
  return db;
}

absl::StatusOr<std::string> PrivateMariaDb::Fingerprint() {
  std::string out;
  auto add = [&](const std::string& sql) -> absl::Status {
    absl::StatusOr<QueryResult> r = Query(sql);
    if (!r.ok()) return r.status();
    std::vector<std::string> rows;
    for (const auto& row : r->rows) {
      std::vector<std::string> cells;
      for (const auto& cell : row) cells.push_back(cell.value_or("<NULL>"));
      rows.push_back(absl::StrJoin(cells, "\t"));
    }
    std::sort(rows.begin(), rows.end());
    absl::StrAppend(&out, sql, "\n", absl::StrJoin(rows, "\n"), "\n");
    return absl::OkStatus();
  };
  absl::Status s =
      add("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM "
          "information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME NOT LIKE "
          "'GTID\\_%'");
  for (const char* table :
       {"global_priv", "db", "tables_priv", "columns_priv", "procs_priv",
        "proxies_priv", "roles_mapping", "plugin", "func", "servers"}) {
    if (s.ok()) s = add(absl::StrCat("SELECT * FROM mysql.", table));
  }
  for (const char* sql : {"SELECT COUNT(*) FROM mysql.general_log",
                          "SELECT COUNT(*) FROM mysql.slow_log",
                          "SELECT COUNT(*) FROM mysql.gtid_slave_pos",
                          "SHOW ALL SLAVES STATUS"}) {
    if (s.ok()) s = add(sql);
  }
  if (!s.ok()) return s;
  return out;
}

bool PrivateMariaDb::Clean() {
  // A server the test froze (SIGSTOP) and left so would hang the checks.
  int pid = 0;
  if (!absl::SimpleAtoi(
          absl::StripAsciiWhitespace(ReadAll(dir_path_ + "/mariadbd.pid")),
          &pid) ||
      pid <= 1) {
    return false;
  }
  const std::string stat = ReadAll(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size() ||
      absl::string_view("TtZX").find(stat[paren + 2]) !=
          absl::string_view::npos) {
    return false;
  }
  // msgqd and the test's clients are gone; their disconnects may still be
  // on their way to the server.
  const bool alone = Eventually(
      [&] {
        absl::StatusOr<QueryResult> r = Query(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE ID <> CONNECTION_ID()");
        return r.ok() && r->rows.size() == 1 && r->rows[0][0] == "0";
      },
      absl::Seconds(5));
  if (!alone) return false;
  absl::StatusOr<QueryResult> xa = Query("XA RECOVER");
  if (!xa.ok() || !xa->rows.empty()) return false;  // prepared: they stay
  absl::StatusOr<std::string> fingerprint = Fingerprint();
  if (!fingerprint.ok() || *fingerprint != ReadAll(dir_path_ + "/baseline")) {
    return false;
  }
  absl::StatusOr<QueryResult> dbs = Query("SHOW DATABASES");
  if (!dbs.ok()) return false;
  for (const auto& row : dbs->rows) {
    const std::string name = row[0].value_or("");
    if (std::find(std::begin(kSystemDatabases), std::end(kSystemDatabases),
                  name) != std::end(kSystemDatabases)) {
      continue;
    }
    if (!Exec(absl::StrCat("DROP DATABASE ", QuoteIdentifier(name))).ok()) {
      return false;
    }
  }
  // The binlog as a fresh server's: RESET MASTER, then what the launcher
  // ran after the start (binlogged, GTIDs 0-1-1 and 0-1-2).
  if (launch_options_.binlog &&
      (!Exec("RESET MASTER").ok() ||
       !Exec("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'").ok() ||
       !Exec("GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
            .ok())) {
    return false;
  }
  if (!Exec("FLUSH LOCAL STATUS").ok()) return false;
  // Files the test put into dir() (logs of its clients, password files).
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_path_, ec)) {
    const std::string name = e.path().filename().string();
    if (std::find(std::begin(kServerFiles), std::end(kServerFiles), name) ==
        std::end(kServerFiles)) {
      std::error_code rm_ec;
      std::filesystem::remove_all(e.path(), rm_ec);
      if (rm_ec) return false;
    }
  }
  return !ec;
}

void PrivateMariaDb::GiveBack() {
  conn_.reset();  // the checks run on a connection without the test's state
  const bool clean = server_ != nullptr && !touched_ && Clean();
  conn_.reset();
  if (clean) {
    server_->Release();
    // Its mtime tells the keeper when the server was last given back.
    std::ofstream(dir_path_ + "/clean", std::ios::trunc);
  } else if (server_ != nullptr) {
    (void)server_->Stop(launch::PrivateMariaDb::StopMode::kKill);
  }
  server_.reset();
  if (slot_lock_fd_ >= 0) close(slot_lock_fd_);
  if (owner_lock_fd_ >= 0) close(owner_lock_fd_);
  slot_lock_fd_ = owner_lock_fd_ = -1;
}

PrivateMariaDb::~PrivateMariaDb() {
  if (slot_lock_fd_ >= 0 || owner_lock_fd_ >= 0) {
    GiveBack();
    return;
  }
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
  touched_ = true;
  return server_->Stop();
}

absl::Status PrivateMariaDb::Kill() {
  conn_.reset();
  touched_ = true;
  return server_->Stop(launch::PrivateMariaDb::StopMode::kKill);
}

absl::Status PrivateMariaDb::Restart() {
  touched_ = true;
  return server_->Restart();
}

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

StreamCollector::StreamCollector(v1::Messaging::Stub* stub,
                                 v1::MessageStreamRequest request)
    : stub_(stub), request_(std::move(request)) {
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
