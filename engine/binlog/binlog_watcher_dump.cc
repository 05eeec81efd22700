// One binlog dump of BinlogWatcher (binlog_watcher.h): connect, check the
// server can be followed, open COM_BINLOG_DUMP at the resume position, and
// read events until an error or Stop(), handing committed changes to the
// listener.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// mysql.h must come before mariadb_rpl.h, which uses its types.
#include <mysql.h>
// clang-format off
#include <errmsg.h>
#include <mariadb_rpl.h>
// clang-format on

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "engine/binlog/binlog_decoder.h"
#include "engine/binlog/binlog_watcher.h"
#include "engine/binlog/dump_error.h"
#include "engine/binlog/transaction_changes.h"

namespace msgq {
namespace {

// One event of the dump as its packet carries it, read straight from the
// connection's buffer (mariadb_rpl_fetch would copy an event several times
// over, which costs several times the largest row in memory).
struct DumpEvent {
  uint8_t type = 0;
  uint32_t timestamp = 0;  // the server's clock, whole seconds; 0: none
  // Header, body and checksum, without the packet's OK byte; valid until
  // the next read on the connection.
  absl::string_view bytes;
};

// The v4 event header: timestamp (4), type (1), server id (4), size (4),
// next position (4), flags (2).
constexpr size_t kEventHeaderBytes = 19;

// The largest event after which the dump's connection is kept.
constexpr size_t kKeptBufferBytes = size_t{16} << 20;

uint32_t Le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

// Reads the dump's next event; nullopt when the stream ended or broke
// (mysql_errno says why; 0 for the server's end of the stream).
std::optional<DumpEvent> ReadEvent(MYSQL* mysql) {
  const unsigned long length = mysql_net_read_packet(mysql);
  if (length == packet_error || length < 1) return std::nullopt;
  const unsigned char* packet = mysql->net.read_pos;
  if (packet[0] != 0) return std::nullopt;  // EOF: the server ended it
  DumpEvent event;
  event.bytes =
      absl::string_view(reinterpret_cast<const char*>(packet) + 1, length - 1);
  if (event.bytes.size() >= kEventHeaderBytes) {
    event.timestamp = Le32(packet + 1);
    event.type = packet[5];
  }
  return event;
}

// Whether the next event's bytes are already on the socket (so a read
// would not wait for the server).
bool EventWaiting(MYSQL* mysql) {
  pollfd p{static_cast<int>(mysql_get_socket(mysql)), POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

struct RplCloser {
  void operator()(MARIADB_RPL* r) const { mariadb_rpl_close(r); }
};

}  // namespace

// The event loop of one open dump. Watcher thread only.
class BinlogWatcher::Dump {
 public:
  Dump(BinlogWatcher* watcher, MysqlConnection* conn, MARIADB_RPL* rpl,
       MysqlOptions control_options)
      : w_(watcher),
        conn_(conn),
        rpl_(rpl),
        control_options_(std::move(control_options)),
        decoder_([watcher](const std::string& db, const std::string& table) {
          return watcher->listener_->Columns(db, table);
        }) {
    decoder_.set_server(conn->server_identity());
  }

  // Reads events until the stream breaks (errors as StreamOnce) or Stop()
  // (OK).
  absl::Status Follow();

 private:
  // The server refuses a dump (privileges) only at the first read, so the
  // stream counts as started once the first event arrived.
  void Started();
  void NoteTime(const DumpEvent& event);
  // An idle stream: a RESET MASTER leaves the dump waiting on a file that
  // no longer exists, so compare positions now and then.
  absl::Status OnHeartbeat();
  // Decodes `event` and hands out what is ready; true when it ended a
  // transaction (or the binlog file).
  bool Decode(const DumpEvent& event);
  absl::Status FetchError() const;
  void Hand(std::vector<TransactionChanges::TableChanges> tables);
  // Asks the listener for a poll once a snapshot includes the transaction
  // of `gtid` (the stream gets its events before reads see its rows), or
  // once it cannot tell or has waited about 5 s.
  void PollOnceVisible(const std::string& gtid);

  BinlogWatcher* const w_;
  MysqlConnection* const conn_;
  MARIADB_RPL* const rpl_;
  const MysqlOptions control_options_;
  bool started_ = false;
  BinlogDecoder decoder_;
  // Changes reach the listener after their transaction's commit, when no
  // further event is waiting (several transactions at once under load); a
  // stream cut mid-transaction drops the open one (the resume position is
  // its start). At most 10,000 changes or 8 MiB of row images are held.
  TransactionChanges transaction_{10'000, size_t{8} << 20};
  std::string last_decode_error_;
  // The open transaction's rows must be found by a poll (an event that
  // could not be decoded, an XA COMMIT of rows not held): it runs when the
  // transaction's commit is visible.
  bool poll_at_commit_ = false;
  // An event over kKeptBufferBytes was read: end the dump at the next
  // commit, so that its connection's buffer goes.
  bool release_buffer_ = false;
  std::string last_snapshot_error_;
  std::unique_ptr<MysqlConnection> control_;  // for position checks
  absl::Time last_position_check_ = absl::Now();
};

absl::Status BinlogWatcher::Dump::Follow() {
  absl::Cleanup hand_ready = [this] { Hand(transaction_.TakeReady()); };
  while (true) {
    std::optional<DumpEvent> event = ReadEvent(conn_->raw());
    if (!event.has_value()) return FetchError();
    if (conn_->stale()) {
      // The primary moved (mysql_primary.h): resume there by GTID.
      return absl::UnavailableError(
          absl::StrCat("the MySQL primary moved away from ", conn_->server()));
    }
    if (!started_) Started();
    NoteTime(*event);
    if (event->type == HEARTBEAT_LOG_EVENT) {
      if (absl::Status s = OnHeartbeat(); !s.ok()) return s;
    }
    // The connection keeps a buffer as large as the largest packet it
    // read: after a huge event, the next commit ends the dump, and the
    // watcher resumes at once on a new connection.
    if (event->bytes.size() > kKeptBufferBytes) release_buffer_ = true;
    const bool ended = Decode(*event);
    if (w_->Stopping()) return absl::OkStatus();
    if (ended && release_buffer_) {
      return absl::ResourceExhaustedError(
          "the dump connection read an event larger than 16 MiB");
    }
  }
}

void BinlogWatcher::Dump::Started() {
  started_ = true;
  w_->stream_started_ = true;
  LogInfo("binlog: following from GTID '", w_->ConnectState(),
          "' as server id ", w_->options_.server_id);
  w_->SetStreaming(true);
  w_->listener_->OnStreaming(true, "");
}

void BinlogWatcher::Dump::NoteTime(const DumpEvent& event) {
  absl::MutexLock lock(&w_->mu_);
  if (event.type == HEARTBEAT_LOG_EVENT) {
    w_->caught_up_ = true;
  } else if (event.timestamp != 0) {
    w_->caught_up_ = false;
    w_->status_.last_event_time = absl::FromUnixSeconds(event.timestamp);
  }
}

void BinlogWatcher::Dump::PollOnceVisible(const std::string& gtid) {
  // A commit becomes visible within milliseconds of its binlog write; the
  // bound keeps a server that never shows it from stalling the stream.
  constexpr int kAttempts = 1000;
  for (int i = 0; i < kAttempts && !w_->Stopping(); ++i) {
    absl::StatusOr<bool> visible =
        w_->SnapshotIncludes(gtid, control_options_, &control_);
    if (!visible.ok()) {
      if (last_snapshot_error_ != visible.status().message()) {
        last_snapshot_error_ = std::string(visible.status().message());
        LogWarning(
            "binlog: cannot tell when ", gtid,
            " is visible, polling at once: ", visible.status().message());
      }
      break;
    }
    if (*visible) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  w_->listener_->OnStreaming(true, "");
}

absl::Status BinlogWatcher::Dump::OnHeartbeat() {
  const absl::Time now = absl::Now();
  if (now - last_position_check_ < absl::Seconds(1)) return absl::OkStatus();
  last_position_check_ = now;
  return w_->CheckPosition(control_options_, &control_);
}

bool BinlogWatcher::Dump::Decode(const DumpEvent& event) {
  absl::StatusOr<DecodedEvent> decoded = decoder_.Decode(event.bytes);
  if (!decoded.ok()) {
    if (last_decode_error_ != decoded.status().message()) {
      last_decode_error_ = std::string(decoded.status().message());
      LogWarning("binlog: cannot decode a ", int{event.type},
                 " event, polling instead: ", decoded.status().message());
    }
    // Its rows, if any, are found by a poll: one now, for an event outside
    // a transaction, and one once its transaction's commit is visible.
    w_->listener_->OnStreaming(true, "");
    poll_at_commit_ = true;
    return false;
  }
  if (decoded->committed_gtid.has_value()) {
    w_->resume_[decoded->committed_domain] = *decoded->committed_gtid;
    absl::MutexLock lock(&w_->mu_);
    w_->status_.position = w_->ConnectState();
  }
  for (const TableName& name : decoded->resets) {
    LogTableInfo(name.db, name.table, "binlog: `", name.db, "`.`", name.table,
                 "` was truncated, altered, renamed or dropped; resetting it");
    w_->listener_->OnTableReset(name.db, name.table);
  }
  if (!decoded->defined.empty())
    w_->listener_->OnTablesDefined(decoded->defined);
  if (decoded->step == TransactionStep::kXaStart) transaction_.StartXa();
  Hand(transaction_.Add(decoded->db, decoded->table,
                        std::move(decoded->changes)));
  bool ended = decoded->rotated;
  switch (decoded->step) {
    case TransactionStep::kCommit:
      ended = true;
      break;
    case TransactionStep::kXaPrepare:
      transaction_.Prepare(decoded->xid);
      break;
    case TransactionStep::kXaCommit:
      ended = true;
      if (!transaction_.CommitPrepared(decoded->xid)) {
        // Prepared before this stream was followed, or past a bound: its
        // rows, if any, are found by a poll.
        poll_at_commit_ = true;
      }
      break;
    case TransactionStep::kXaRollback:
      transaction_.RollbackPrepared(decoded->xid);
      break;
    case TransactionStep::kNone:
    case TransactionStep::kXaStart:
      break;
  }
  if (ended && poll_at_commit_ && decoded->committed_gtid.has_value()) {
    poll_at_commit_ = false;
    PollOnceVisible(*decoded->committed_gtid);
  }
  if (ended) {
    transaction_.Commit();
    if (transaction_.ready() >= 1'000 || !EventWaiting(conn_->raw())) {
      Hand(transaction_.TakeReady());
    }
  }
  return ended;
}

absl::Status BinlogWatcher::Dump::FetchError() const {
  MYSQL* mysql = conn_->raw();
  unsigned int code = mysql_errno(mysql);
  std::string message = mysql_error(mysql);
  if (message.empty()) {
    code = mariadb_rpl_errno(rpl_);
    message = mariadb_rpl_error(rpl_);
  }
  return DumpError(code, message);
}

void BinlogWatcher::Dump::Hand(
    std::vector<TransactionChanges::TableChanges> tables) {
  for (auto& t : tables) {
    w_->listener_->OnRowChanges(t.db, t.table, std::move(t.changes));
  }
}

MysqlOptions BinlogWatcher::DumpOptions() const {
  MysqlOptions mysql = options_.mysql;
  // Heartbeats arrive every heartbeat_period while the binlog is idle: a
  // server silent for several of them is dead (or the path to it is).
  mysql.io_timeout =
      std::max(options_.dead_after, 3 * options_.heartbeat_period);
  return mysql;
}

absl::Status BinlogWatcher::CheckServer(MysqlConnection& conn) {
  absl::StatusOr<QueryResult> vars = conn.Query(
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
  const std::string server_position = row[3].value_or("");
  if (!resume_.empty() && PositionGone(ConnectState(), server_position)) {
    return absl::OutOfRangeError(absl::StrCat("the server's binlog position '",
                                              server_position, "' is behind '",
                                              ConnectState(), "'"));
  }
  // Without a position, start at the current one: what came before is
  // found by polls.
  if (resume_.empty()) ResumeFrom(server_position);
  return absl::OkStatus();
}

absl::Status BinlogWatcher::PrepareDump(MysqlConnection& conn) {
  const int64_t heartbeat_ns =
      std::max<int64_t>(1, absl::ToInt64Nanoseconds(options_.heartbeat_period));
  for (const std::string& sql :
       {absl::StrCat("SET @master_heartbeat_period=", heartbeat_ns),
        std::string("SET @master_binlog_checksum=@@global.binlog_checksum"),
        std::string("SET @mariadb_slave_capability=4"),
        absl::StrCat("SET @slave_connect_state=",
                     conn.QuoteString(ConnectState())),
        std::string("SET @slave_gtid_strict_mode=0")}) {
    if (auto s = conn.Execute(sql); !s.ok()) {
      return absl::UnavailableError(s.status().message());
    }
  }
  return absl::OkStatus();
}

absl::Status BinlogWatcher::StreamOnce() {
  const MysqlOptions mysql = DumpOptions();
  absl::StatusOr<std::unique_ptr<MysqlConnection>> conn_or =
      MysqlConnection::Connect(mysql);
  if (!conn_or.ok()) return absl::UnavailableError(conn_or.status().message());
  std::unique_ptr<MysqlConnection> conn = *std::move(conn_or);
  if (absl::Status s = CheckServer(*conn); !s.ok()) return s;
  if (absl::Status s = PrepareDump(*conn); !s.ok()) return s;

  MYSQL* mysql_handle = conn->raw();
  std::unique_ptr<MARIADB_RPL, RplCloser> rpl(
      mariadb_rpl_init_ex(mysql_handle, MARIADB_RPL_VERSION));
  if (rpl == nullptr) return absl::InternalError("mariadb_rpl_init failed");
  mariadb_rpl_optionsv(rpl.get(), MARIADB_RPL_SERVER_ID, options_.server_id);
  mariadb_rpl_optionsv(rpl.get(), MARIADB_RPL_START, 4);
  mariadb_rpl_optionsv(rpl.get(), MARIADB_RPL_FLAGS, 0);
  if (mariadb_rpl_open(rpl.get()) != 0) {
    return DumpError(mysql_errno(mysql_handle), mysql_error(mysql_handle));
  }
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::OkStatus();
    socket_ = static_cast<int>(mysql_get_socket(mysql_handle));
  }
  absl::Status status = Dump(this, conn.get(), rpl.get(), mysql).Follow();
  // Before the connection closes: Stop() must not shut down a reused fd.
  absl::MutexLock lock(&mu_);
  socket_ = -1;
  return status;
}

}  // namespace msgq
