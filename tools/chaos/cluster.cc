#include "tools/chaos/cluster.h"

#include <signal.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace msgq::chaos {
namespace {

int64_t NowNs() { return absl::ToUnixNanos(absl::Now()); }

// Whether `pid` (our child, not yet reaped) is still running: a child that
// exited stays a zombie until reaped.
bool Alive(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string pid_field, comm, state;
  if (!(stat >> pid_field >> comm >> state)) return false;
  return state != "Z" && state != "X";
}

// The rest of the line of `log` that starts with `prefix`, or "".
std::string LineAfter(const std::string& log, const std::string& prefix) {
  size_t at = log.rfind("\n" + prefix);
  if (at != std::string::npos) {
    ++at;
  } else if (log.rfind(prefix, 0) == 0) {
    at = 0;
  } else {
    return "";
  }
  at += prefix.size();
  const size_t end = log.find('\n', at);
  return log.substr(at,
                    end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Cluster>> Cluster::Start(Options options,
                                                        Ledger* ledger) {
  std::unique_ptr<Cluster> c(new Cluster(std::move(options), ledger));
  launch::PrivateMariaDb::Options db;
  db.source_dir = c->options_.source_dir;
  db.dir = c->options_.work_dir + "/mariadb";
  db.durable = true;
  db.binlog = true;
  absl::StatusOr<std::unique_ptr<launch::PrivateMariaDb>> started =
      launch::PrivateMariaDb::Start(db);
  if (!started.ok()) return started.status();
  c->db_ = *std::move(started);
  for (const std::string& sql : c->options_.setup_sql) {
    absl::StatusOr<QueryResult> r = c->Query(sql);
    if (!r.ok()) return r.status();
  }
  if (absl::Status s = c->StartMsgqd(); !s.ok()) return s;
  return c;
}

Cluster::~Cluster() {
  if (msgqd_ != nullptr) msgqd_->Kill();
  control_.reset();
}

MysqlOptions Cluster::mysql() const {
  MysqlOptions o;
  o.socket = db_->socket();
  o.port = db_->port();
  o.io_timeout = absl::Seconds(20);
  return o;
}

absl::StatusOr<QueryResult> Cluster::Query(const std::string& sql) {
  if (control_ == nullptr || control_->broken()) {
    control_.reset();
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql());
    if (!c.ok()) return c.status();
    control_ = *std::move(c);
  }
  return control_->Query(sql);
}

absl::Status Cluster::StartMsgqd() {
  launch::MsgqdProcess::Options o;
  o.path = options_.msgqd_path;
  o.mysql_socket = db_->socket();
  o.args = options_.msgqd_args;
  // The first run picks a free port; later runs take the same one.
  if (!address_.empty()) o.args.push_back("--listen=" + address_);
  if (!http_address_.empty()) {
    o.args.push_back("--http_listen=" + http_address_);
  }
  if (!mysql_protocol_address_.empty()) {
    o.args.push_back("--mysql_protocol_listen=" + mysql_protocol_address_);
  }
  o.log_path =
      absl::StrFormat("%s/msgqd-%03d.log", options_.work_dir, msgqd_starts_);
  o.start_timeout = absl::Seconds(60);
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ++msgqd_starts_;
    absl::StatusOr<std::unique_ptr<launch::MsgqdProcess>> p =
        launch::MsgqdProcess::Start(o);
    if (p.ok()) {
      msgqd_ = *std::move(p);
      if (options_.msgqd_pid != nullptr)
        options_.msgqd_pid->store(msgqd_->pid());
      if (address_.empty()) {
        address_ = msgqd_->address();
        const std::string log = msgqd_->Log();
        http_address_ = LineAfter(log, "msgqd http on ");
        mysql_protocol_address_ = LineAfter(log, "msgqd mysql protocol on ");
      }
      return absl::OkStatus();
    }
    last = p.status();
    o.log_path =
        absl::StrFormat("%s/msgqd-%03d.log", options_.work_dir, msgqd_starts_);
    absl::SleepFor(absl::Seconds(1));
  }
  return last;
}

absl::Status Cluster::CheckMsgqdAlive() {
  if (msgqd_ != nullptr && Alive(msgqd_->pid())) return absl::OkStatus();
  if (msgqd_ != nullptr) {
    const int code = msgqd_->Stop(absl::Seconds(1));
    ledger_->Violation(absl::StrCat("msgqd (run ", msgqd_starts_,
                                    ") exited by itself with code ", code,
                                    "; see its log in ", options_.work_dir));
    msgqd_.reset();
  }
  return StartMsgqd();
}

absl::Status Cluster::KillMsgqd(absl::Duration down) {
  if (absl::Status s = CheckMsgqdAlive(); !s.ok()) return s;
  const int64_t from = NowNs();
  msgqd_->Kill();
  msgqd_.reset();
  absl::SleepFor(down);
  absl::Status s = StartMsgqd();
  ledger_->Fault(FaultKind::kMsgqdKill, from, NowNs());
  return s;
}

absl::Status Cluster::RestartMariaDb(bool kill, absl::Duration down) {
  const int64_t from = NowNs();
  control_.reset();
  absl::Status s = db_->Stop(kill ? launch::PrivateMariaDb::StopMode::kKill
                                  : launch::PrivateMariaDb::StopMode::kClean);
  if (!s.ok()) return s;
  absl::SleepFor(down);
  for (int attempt = 0; attempt < 3; ++attempt) {
    s = db_->Restart();
    if (s.ok()) break;
    absl::SleepFor(absl::Seconds(1));
  }
  ledger_->Fault(FaultKind::kMariaDbRestart, from, NowNs());
  return s;
}

absl::Status Cluster::CrashBoth(absl::Duration down) {
  if (absl::Status s = CheckMsgqdAlive(); !s.ok()) return s;
  const int64_t from = NowNs();
  msgqd_->Kill();
  msgqd_.reset();
  control_.reset();
  absl::Status s = db_->Stop(launch::PrivateMariaDb::StopMode::kKill);
  if (s.ok()) s = StartMsgqd();
  absl::SleepFor(down);
  for (int attempt = 0; s.ok() && attempt < 3; ++attempt) {
    s = db_->Restart();
    if (s.ok()) break;
    absl::SleepFor(absl::Seconds(1));
  }
  const int64_t to = NowNs();
  ledger_->Fault(FaultKind::kMsgqdKill, from, to);
  ledger_->Fault(FaultKind::kMariaDbRestart, from, to);
  return s;
}

absl::Status Cluster::StopMsgqd(absl::Duration stopped) {
  if (absl::Status s = CheckMsgqdAlive(); !s.ok()) return s;
  const int64_t from = NowNs();
  kill(msgqd_->pid(), SIGSTOP);
  absl::SleepFor(stopped);
  kill(msgqd_->pid(), SIGCONT);
  ledger_->Fault(FaultKind::kSigstop, from, NowNs());
  return absl::OkStatus();
}

absl::Status Cluster::KillDumpThread() {
  const int64_t from = NowNs();
  absl::StatusOr<QueryResult> r = Query(
      "SELECT id FROM information_schema.processlist "
      "WHERE command LIKE 'Binlog Dump%'");
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return absl::NotFoundError("no Binlog Dump connection");
  for (const auto& row : r->rows) {
    // The connection may have ended meanwhile (ER_NO_SUCH_THREAD): fine.
    (void)Query(absl::StrCat("KILL ", row[0].value_or("0")));
  }
  ledger_->Fault(FaultKind::kDumpKill, from, NowNs());
  return absl::OkStatus();
}

absl::Status Cluster::ReloadTable(const std::string& alter,
                                  absl::Duration reload_within) {
  const int64_t from = NowNs();
  absl::StatusOr<QueryResult> r = Query(alter);
  if (!r.ok()) return r.status();
  ledger_->Fault(FaultKind::kTableReload, from,
                 from + absl::ToInt64Nanoseconds(reload_within));
  return absl::OkStatus();
}

int Cluster::StopMsgqdCleanly() {
  if (msgqd_ == nullptr) return -1;
  return msgqd_->Stop(absl::Seconds(30));
}

}  // namespace msgq::chaos
