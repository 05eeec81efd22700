#include "engine/binlog_watcher.h"

// mysql.h must come before mariadb_rpl.h, which uses its types.
#include <mysql.h>
// clang-format off
#include <errmsg.h>
#include <mariadb_rpl.h>
#include <mysqld_error.h>
// clang-format on
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/binlog_decoder.h"
#include "engine/log.h"

namespace msgq {
namespace {

// The event's bytes (header, body, checksum) without the packet's OK byte.
absl::string_view RawEvent(const MARIADB_RPL_EVENT& event) {
  if (event.raw_data == nullptr || event.raw_data_size < event.event_length) {
    return absl::string_view();
  }
  return absl::string_view(
      reinterpret_cast<const char*>(event.raw_data) + event.raw_data_size -
          event.event_length,
      event.event_length);
}

// The dump was refused for lack of privileges: a configuration problem, not
// an outage.
absl::Status DumpError(unsigned int code, const std::string& message) {
  if (code == ER_SPECIFIC_ACCESS_DENIED_ERROR ||
      code == ER_ACCESS_DENIED_ERROR || code == ER_DBACCESS_DENIED_ERROR ||
      message.find("Access denied") != std::string::npos) {
    return absl::FailedPreconditionError(absl::StrCat(
        "missing privilege to read the binlog (", message,
        "); GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the msgqd "
        "user for instant delivery"));
  }
  return absl::UnavailableError(absl::StrCat("binlog stream ended: ", message));
}

struct EventDeleter {
  void operator()(MARIADB_RPL_EVENT* e) const { mariadb_free_rpl_event(e); }
};
using EventPtr = std::unique_ptr<MARIADB_RPL_EVENT, EventDeleter>;

}  // namespace

BinlogWatcher::BinlogWatcher(Options options, Listener* listener)
    : options_(std::move(options)), listener_(listener) {}

BinlogWatcher::~BinlogWatcher() { Stop(); }

uint32_t BinlogWatcher::DefaultServerId() {
  return 0x6d000000u | (static_cast<uint32_t>(getpid()) & 0x00ffffffu);
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
  absl::Duration delay = options_.retry_min;
  std::string last_problem;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    absl::Status status = StreamOnce();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    listener_->OnStreaming(false, std::string(status.message()));
    absl::Duration wait;
    if (status.code() == absl::StatusCode::kFailedPrecondition) {
      if (last_problem != status.message()) {
        LogWarning(
            "binlog: cannot follow the binary log, falling back to "
            "polling (vt_poller_interval): ",
            status.message());
      }
      wait = options_.recheck_interval;
      delay = options_.retry_min;
    } else {
      if (last_problem != status.message()) {
        LogWarning("binlog: stream interrupted, reconnecting with backoff: ",
                   status.message());
      }
      wait = delay;
      delay = std::min(delay * 2, options_.retry_max);
    }
    last_problem = std::string(status.message());
    absl::MutexLock lock(&mu_);
    if (!stopping_) wake_.WaitWithTimeout(&mu_, wait);
  }
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
  std::string last_decode_error;
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
    if (!started) {
      started = true;
      LogInfo("binlog: following from GTID '", ConnectState(),
              "' as server id ", options_.server_id);
      listener_->OnStreaming(true, "");
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
      }
      if (!decoded->changes.empty()) {
        listener_->OnRowChanges(decoded->db, decoded->table,
                                std::move(decoded->changes));
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
