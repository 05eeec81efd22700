#include "engine/binlog/binlog_watcher.h"

#include <algorithm>

// mysql.h must come before mariadb_rpl.h, which uses its types.
#include <mysql.h>
// clang-format off
#include <errmsg.h>
#include <mariadb_rpl.h>
// clang-format on
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <random>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/backoff.h"
#include "engine/binlog/binlog_decoder.h"
#include "engine/binlog/dump_error.h"
#include "engine/binlog/transaction_changes.h"
#include "engine/log.h"

namespace msgq {
namespace {

// The event's bytes (header, body, checksum) without the packet's OK byte.
absl::string_view RawEvent(const MARIADB_RPL_EVENT& event) {
  if (event.raw_data == nullptr || event.raw_data_size < event.event_length) {
    return absl::string_view();
  }
  return absl::string_view(reinterpret_cast<const char*>(event.raw_data) +
                               event.raw_data_size - event.event_length,
                           event.event_length);
}

// Whether the next event's bytes are already on the socket (so a
// mariadb_rpl_fetch would not wait for the server).
bool EventWaiting(MYSQL* mysql) {
  pollfd p{static_cast<int>(mysql_get_socket(mysql)), POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

struct EventDeleter {
  void operator()(MARIADB_RPL_EVENT* e) const { mariadb_free_rpl_event(e); }
};
using EventPtr = std::unique_ptr<MARIADB_RPL_EVENT, EventDeleter>;

}  // namespace

BinlogWatcher::BinlogWatcher(Options options, Listener* listener)
    : options_(std::move(options)), listener_(listener) {}

BinlogWatcher::~BinlogWatcher() { Stop(); }

bool BinlogWatcher::PositionGone(const std::string& resume,
                                 const std::string& server) {
  auto parse = [](const std::string& list) {
    std::map<uint32_t, uint64_t> seq;
    for (absl::string_view gtid :
         absl::StrSplit(list, ',', absl::SkipEmpty())) {
      std::vector<absl::string_view> parts =
          absl::StrSplit(absl::StripAsciiWhitespace(gtid), '-');
      uint32_t domain = 0;
      uint64_t n = 0;
      if (parts.size() == 3 && absl::SimpleAtoi(parts[0], &domain) &&
          absl::SimpleAtoi(parts[2], &n)) {
        seq[domain] = n;
      }
    }
    return seq;
  };
  const std::map<uint32_t, uint64_t> ours = parse(resume);
  const std::map<uint32_t, uint64_t> theirs = parse(server);
  for (const auto& [domain, n] : ours) {
    auto it = theirs.find(domain);
    if (it == theirs.end() || it->second < n) return true;
  }
  return false;
}

BinlogWatcher::Status BinlogWatcher::status() const {
  absl::MutexLock lock(&mu_);
  Status s = status_;
  s.server_id = options_.server_id;
  s.lag_seconds = LagSeconds(s, caught_up_, absl::Now());
  return s;
}

double BinlogWatcher::LagSeconds(const Status& status, bool caught_up,
                                 absl::Time now) {
  if (!status.streaming || caught_up ||
      status.last_event_time == absl::InfinitePast()) {
    return 0;
  }
  return std::max(0.0, absl::ToDoubleSeconds(now - status.last_event_time));
}

void BinlogWatcher::SetStreaming(bool streaming) {
  absl::MutexLock lock(&mu_);
  status_.streaming = streaming;
  caught_up_ = true;
  if (streaming) status_.position = ConnectState();
}

void BinlogWatcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void BinlogWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // Unblocks a fetch waiting for the next event.
    if (socket_ >= 0) shutdown(socket_, SHUT_RDWR);
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

std::string BinlogWatcher::ConnectState() const {
  std::vector<std::string> parts;
  for (const auto& [domain, gtid] : resume_) parts.push_back(gtid);
  return absl::StrJoin(parts, ",");
}

void BinlogWatcher::Run() {
  Backoff backoff(BackoffOptions{.initial = options_.retry_min,
                                 .multiplier = 2,
                                 .max = options_.retry_max,
                                 .jitter = 0.2},
                  options_.jitter_seed != 0 ? options_.jitter_seed
                                            : std::random_device{}());
  std::string last_problem;
  bool just_reset = false;  // reset the position, no stream started since
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    stream_started_ = false;
    absl::Status status = StreamOnce();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    SetStreaming(false);
    listener_->OnStreaming(false, std::string(status.message()));
    if (stream_started_) {
      backoff.Reset();
      just_reset = false;
    }
    absl::Duration wait;
    bool position_reset = false;
    switch (status.code()) {
      case absl::StatusCode::kFailedPrecondition:
        if (last_problem != status.message()) {
          LogWarning(
              "binlog: cannot follow the binary log, falling back to "
              "polling (vt_poller_interval): ",
              status.message());
        }
        wait = options_.recheck_interval;
        backoff.Reset();
        break;
      case absl::StatusCode::kOutOfRange:
        if (resume_.empty() || just_reset) {
          // Already at the server's own position: resetting again at once
          // would spin.
          if (last_problem != status.message()) {
            LogWarning(
                "binlog: stream interrupted, reconnecting with "
                "backoff: ",
                status.message());
          }
          wait = backoff.Next();
          break;
        }
        // The resume position is gone: start over at once from the
        // server's current position; the restart polls.
        LogWarning("binlog: resume position is gone (", status.message(),
                   "); following from the server's current position and "
                   "polling once to cover the gap");
        resume_.clear();
        position_reset = true;
        just_reset = true;
        wait = absl::ZeroDuration();
        break;
      case absl::StatusCode::kAlreadyExists:
        if (evictions_logged_++ == 0) {
          LogWarning(
              "binlog: dump evicted by another replica with the same "
              "server id ",
              options_.server_id,
              " (another msgqd or a real replica); give each msgqd "
              "its own --binlog_server_id: ",
              status.message());
        }
        wait = backoff.Next();
        break;
      default:
        if (last_problem != status.message()) {
          LogWarning("binlog: stream interrupted, reconnecting with backoff: ",
                     status.message());
        }
        wait = backoff.Next();
    }
    last_problem = std::string(status.message());
    absl::MutexLock lock(&mu_);
    status_.last_error = last_problem;
    if (position_reset) ++status_.position_resets;
    if (status.code() == absl::StatusCode::kAlreadyExists) ++status_.evictions;
    if (!stopping_) wake_.WaitWithTimeout(&mu_, wait);
  }
}

absl::Status BinlogWatcher::CheckPosition(
    const MysqlOptions& mysql, std::unique_ptr<MysqlConnection>* control) {
  if (*control == nullptr) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql);
    if (!c.ok()) return absl::OkStatus();  // the dump shows real outages
    *control = *std::move(c);
  }
  absl::StatusOr<QueryResult> pos =
      (*control)->Query("SELECT @@gtid_binlog_pos");
  if (!pos.ok() || pos->rows.empty()) {
    control->reset();
    return absl::OkStatus();
  }
  const std::string server = pos->rows[0][0].value_or("");
  if (PositionGone(ConnectState(), server)) {
    return absl::OutOfRangeError(absl::StrCat("the server's binlog position '",
                                              server, "' is behind '",
                                              ConnectState(), "'"));
  }
  return absl::OkStatus();
}

absl::Status BinlogWatcher::StreamOnce() {
  MysqlOptions mysql = options_.mysql;
  // Heartbeats arrive every second; a silent server for longer is dead.
  mysql.io_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<MysqlConnection>> conn_or =
      MysqlConnection::Connect(mysql);
  if (!conn_or.ok()) return absl::UnavailableError(conn_or.status().message());
  std::unique_ptr<MysqlConnection> conn = *std::move(conn_or);

  absl::StatusOr<QueryResult> vars = conn->Query(
      "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, "
      "@@gtid_binlog_pos");
  if (!vars.ok()) return absl::UnavailableError(vars.status().message());
  const auto& row = vars->rows.at(0);
  if (row[0].value_or("0") != "1") {
    return absl::FailedPreconditionError(
        "the binary log is off; start the server with --log-bin "
        "--binlog-format=ROW for instant delivery");
  }
  const std::string format = absl::AsciiStrToUpper(row[1].value_or(""));
  if (format != "ROW") {
    return absl::FailedPreconditionError(absl::StrCat(
        "binlog_format is ", format,
        "; set binlog_format=ROW (SET GLOBAL "
        "binlog_format='ROW' or --binlog-format=ROW) for instant delivery"));
  }
  const std::string image = absl::AsciiStrToUpper(row[2].value_or(""));
  if (image == "MINIMAL") {
    return absl::FailedPreconditionError(
        "binlog_row_image is MINIMAL; set it to FULL or NOBLOB for instant "
        "delivery");
  }
  if (!resume_.empty() && PositionGone(ConnectState(), row[3].value_or(""))) {
    return absl::OutOfRangeError(
        absl::StrCat("the server's binlog position '", row[3].value_or(""),
                     "' is behind '", ConnectState(), "'"));
  }
  if (resume_.empty()) {
    // Start at the current position: what came before is found by polls.
    for (absl::string_view gtid :
         absl::StrSplit(row[3].value_or(""), ',', absl::SkipEmpty())) {
      gtid = absl::StripAsciiWhitespace(gtid);
      uint32_t domain = 0;
      if (absl::SimpleAtoi(gtid.substr(0, gtid.find('-')), &domain)) {
        resume_[domain] = std::string(gtid);
      }
    }
  }
  for (const std::string& sql :
       {std::string("SET @master_heartbeat_period=1000000000"),
        std::string("SET @master_binlog_checksum=@@global.binlog_checksum"),
        std::string("SET @mariadb_slave_capability=4"),
        absl::StrCat("SET @slave_connect_state=",
                     conn->QuoteString(ConnectState())),
        std::string("SET @slave_gtid_strict_mode=0")}) {
    if (auto s = conn->Execute(sql); !s.ok()) {
      return absl::UnavailableError(s.status().message());
    }
  }
  MYSQL* mysql_handle = conn->raw();
  MARIADB_RPL* rpl = mariadb_rpl_init_ex(mysql_handle, MARIADB_RPL_VERSION);
  if (rpl == nullptr) return absl::InternalError("mariadb_rpl_init failed");
  std::unique_ptr<MARIADB_RPL, void (*)(MARIADB_RPL*)> rpl_guard(
      rpl, [](MARIADB_RPL* r) { mariadb_rpl_close(r); });
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_SERVER_ID, options_.server_id);
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_START, 4);
  mariadb_rpl_optionsv(rpl, MARIADB_RPL_FLAGS, 0);
  if (mariadb_rpl_open(rpl) != 0) {
    return DumpError(mysql_errno(mysql_handle), mysql_error(mysql_handle));
  }
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::OkStatus();
    socket_ = static_cast<int>(mysql_get_socket(mysql_handle));
  }
  auto clear_socket = [this] {
    absl::MutexLock lock(&mu_);
    socket_ = -1;
  };
  // The server refuses a dump (privileges) only at the first read, so the
  // stream counts as started once the first event arrived.
  bool started = false;

  BinlogDecoder decoder(
      [this](const std::string& db, const std::string& table) {
        return listener_->Columns(db, table);
      });
  // Changes reach the listener after their transaction's commit, when no
  // further event is waiting (several transactions at once under load); a
  // stream cut mid-transaction drops the open one (the resume position is
  // its start). At most 10,000 changes or 8 MiB of row images are held.
  TransactionChanges transaction(10'000, size_t{8} << 20);
  auto hand = [this](std::vector<TransactionChanges::TableChanges> tables) {
    for (auto& t : tables)
      listener_->OnRowChanges(t.db, t.table, std::move(t.changes));
  };
  absl::Cleanup hand_ready = [&] { hand(transaction.TakeReady()); };
  std::string last_decode_error;
  std::unique_ptr<MysqlConnection> control;  // for position checks
  absl::Time last_position_check = absl::Now();
  while (true) {
    EventPtr event(mariadb_rpl_fetch(rpl, nullptr));
    if (event == nullptr) {
      clear_socket();
      unsigned int code = mysql_errno(mysql_handle);
      std::string message = mysql_error(mysql_handle);
      if (message.empty()) {
        code = mariadb_rpl_errno(rpl);
        message = mariadb_rpl_error(rpl);
      }
      return DumpError(code, message);
    }
    if (conn->stale()) {
      // The primary moved (mysql_primary.h): resume there by GTID.
      clear_socket();
      return absl::UnavailableError(
          absl::StrCat("the MySQL primary moved away from ", conn->server()));
    }
    if (!started) {
      started = true;
      stream_started_ = true;
      LogInfo("binlog: following from GTID '", ConnectState(),
              "' as server id ", options_.server_id);
      SetStreaming(true);
      listener_->OnStreaming(true, "");
    }
    {
      absl::MutexLock lock(&mu_);
      if (event->event_type == HEARTBEAT_LOG_EVENT) {
        caught_up_ = true;
      } else if (event->timestamp != 0) {
        caught_up_ = false;
        status_.last_event_time = absl::FromUnixSeconds(event->timestamp);
      }
    }
    if (event->event_type == HEARTBEAT_LOG_EVENT) {
      // An idle stream: a RESET MASTER leaves the dump waiting on a file
      // that no longer exists, so compare positions now and then.
      const absl::Time now = absl::Now();
      if (now - last_position_check >= absl::Seconds(1)) {
        last_position_check = now;
        if (absl::Status s = CheckPosition(mysql, &control); !s.ok()) {
          clear_socket();
          return s;
        }
      }
    }
    absl::StatusOr<DecodedEvent> decoded = decoder.Decode(RawEvent(*event));
    if (!decoded.ok()) {
      if (last_decode_error != decoded.status().message()) {
        last_decode_error = std::string(decoded.status().message());
        LogWarning("binlog: cannot decode a ", int{event->event_type},
                   " event, polling instead: ", decoded.status().message());
      }
      // Its rows, if any, are found by a poll.
      listener_->OnStreaming(true, "");
    } else {
      if (decoded->committed_gtid.has_value()) {
        resume_[decoded->committed_domain] = *decoded->committed_gtid;
        absl::MutexLock lock(&mu_);
        status_.position = ConnectState();
      }
      for (const TableName& name : decoded->resets) {
        LogTableInfo(
            name.db, name.table, "binlog: `", name.db, "`.`", name.table,
            "` was truncated, altered, renamed or dropped; resetting it");
        listener_->OnTableReset(name.db, name.table);
      }
      hand(transaction.Add(decoded->db, decoded->table,
                           std::move(decoded->changes)));
      if (decoded->type == kXidEvent || decoded->type == kQueryEvent ||
          decoded->rotated) {
        transaction.Commit();
        if (transaction.ready() >= 1'000 || !EventWaiting(mysql_handle)) {
          hand(transaction.TakeReady());
        }
      }
    }
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      socket_ = -1;
      return absl::OkStatus();
    }
  }
}

}  // namespace msgq
