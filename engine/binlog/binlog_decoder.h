// BinlogDecoder: turns raw binlog events (MariaDB, ROW format) into what the
// engine needs: committed row changes of message tables, statements that
// reset a message table (TRUNCATE/DROP/ALTER/RENAME), and the GTID of each
// committed transaction.
//
// XA transactions (MariaDB 10.5+ binlogs XA PREPARE): the rows of a
// prepared transaction are in the binlog before it commits, and it may
// still roll back. The decoder marks the events that start such a group
// (kXaStart), prepare it (kXaPrepare), and commit or roll it back later
// (kXaCommit, kXaRollback), each with the transaction's XA id, so that the
// caller holds the prepared rows until the outcome (transaction_changes.h).
// Statements inside a prepared group (XA END) commit nothing.
//
// It decodes the event bytes itself (header, FORMAT_DESCRIPTION, ROTATE,
// GTID, XID, QUERY, TABLE_MAP here; WRITE/UPDATE/DELETE_ROWS v1 and v2 in
// binlog_rows_event.h), so it is pure: no connection, no I/O, no clock. Only
// the bookkeeping columns (id, priority, time_next, time_acked) are decoded;
// every other column is only measured, for every column type of MariaDB's ROW
// format except the pre-5.0 DECIMAL. Compressed events (log_bin_compress) are
// not decoded.
//
// Input is untrusted: a malformed or truncated event yields DATA_LOSS (or
// UNIMPLEMENTED for a column type it cannot measure), never a crash or an
// out-of-bounds read, and the decoder stays usable for the next event.
//
// The table-id map (TABLE_MAP events) is cleared on ROTATE and
// FORMAT_DESCRIPTION events and never holds more than `max_tables` entries
// (when full it is cleared: a rows event is always preceded by its table map
// in the same statement, so nothing needed is lost).
//
// Example:
//   BinlogDecoder decoder(lookup);
//   absl::StatusOr<DecodedEvent> d = decoder.Decode(event_bytes);
//
// Thread-compatible: one owner calls Decode().
#ifndef MSGQ_ENGINE_BINLOG_BINLOG_DECODER_H_
#define MSGQ_ENGINE_BINLOG_BINLOG_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/binlog/binlog_rows_event.h"
#include "engine/binlog/ddl_statement.h"
#include "engine/queue/row_change.h"

namespace msgq {

// Event type codes (the same numbers as mariadb_rpl.h's enum).
enum BinlogEventType : uint8_t {
  kQueryEvent = 2,
  kRotateEvent = 4,
  kFormatDescriptionEvent = 15,
  kXidEvent = 16,
  kTableMapEvent = 19,
  kWriteRowsV1 = 23,
  kUpdateRowsV1 = 24,
  kDeleteRowsV1 = 25,
  kHeartbeatEvent = 27,
  kWriteRowsV2 = 30,
  kUpdateRowsV2 = 31,
  kDeleteRowsV2 = 32,
  kXaPrepareEvent = 38,
  kGtidEvent = 162,
  // log_bin_compress: rows events with a compressed body (v1 166-168,
  // v2 169-171).
  kFirstCompressedRows = 166,
  kLastCompressedRows = 171,
};

inline constexpr size_t kBinlogHeaderSize = 19;

// What an event does to the transaction it belongs to.
enum class TransactionStep : uint8_t {
  kNone,
  kCommit,      // an XID, or a statement that commits (DDL, COMMIT)
  kXaStart,     // the GTID of an XA transaction's prepared group
  kXaPrepare,   // XA PREPARE: the group's rows wait for the outcome
  kXaCommit,    // XA COMMIT of a transaction prepared earlier
  kXaRollback,  // XA ROLLBACK of a transaction prepared earlier
};

// What one event means to the engine. Every field may be empty.
struct DecodedEvent {
  uint8_t type = 0;
  TransactionStep step = TransactionStep::kNone;
  // With the kXa* steps: the XA transaction's id (format id, gtrid and
  // bqual, as one opaque key).
  std::string xid;
  // Rows event of a message table: its changes (after images; the before
  // image for deletes), in event order.
  std::string db, table;
  std::vector<RowChange> changes;
  // A QUERY event that replaced, emptied, renamed or removed these message
  // tables (see ddl_statement.h; only names the lookup knows).
  std::vector<TableName> resets;
  // A QUERY event that created, altered, replaced or renamed (the new name)
  // these tables, which the lookup does not know: any may be a message
  // table now.
  std::vector<TableName> defined;
  // This event committed a transaction; its GTID ("domain-server-seq") and
  // domain.
  std::optional<std::string> committed_gtid;
  uint32_t committed_domain = 0;
  // A ROTATE or FORMAT_DESCRIPTION event (the table-id map was cleared).
  bool rotated = false;
};

class BinlogDecoder {
 public:
  // The bookkeeping columns of `db`.`table` if it is a message table, else
  // nullopt (its rows are skipped). Called once per TABLE_MAP event and
  // for each table a DDL statement names.
  using ColumnsLookup = std::function<std::optional<BookkeepingColumns>(
      const std::string& db, const std::string& table)>;

  explicit BinlogDecoder(ColumnsLookup lookup, size_t max_tables = 1024);

  // Decodes one event: the 19-byte header, the body and, once a
  // FORMAT_DESCRIPTION event announced CRC32, the 4-byte checksum (not
  // verified). DATA_LOSS: malformed (the size field must equal
  // event.size()); UNIMPLEMENTED: a rows event of a message table that
  // cannot be decoded (a column type that cannot be measured, an id type
  // not decoded, a compressed body): its rows must be found by a poll. On error
  // nothing is reported for the event (the message names the table of a rows
  // event).
  absl::StatusOr<DecodedEvent> Decode(absl::string_view event);

  // The server whose binlog this is (MysqlConnection::server_identity()),
  // named in every change's position; "" leaves it unnamed.
  void set_server(std::string server) { server_ = std::move(server); }

  // Entries in the table-id map (for tests and status).
  size_t mapped_tables() const { return tables_.size(); }
  bool checksum() const { return checksum_; }

 private:
  absl::Status DecodeFormatDescription(absl::string_view body);
  absl::Status DecodeQuery(uint32_t server_id, absl::string_view body,
                           DecodedEvent* out);
  absl::Status DecodeTableMap(absl::string_view body);
  // A rows event: its table's changes (binlog_rows_event.h).
  absl::Status DecodeRows(uint8_t type, absl::string_view body,
                          DecodedEvent* out);
  // A compressed rows event: UNIMPLEMENTED when of a message table.
  absl::Status CheckCompressedRows(absl::string_view body) const;
  void Commit(DecodedEvent* out);
  // The name the last ROTATE named becomes file_, without its checksum
  // when the format description says there is one.
  void ResolveFile();

  // Constant after construction.
  const ColumnsLookup lookup_;
  const size_t max_tables_;

  bool checksum_ = false;
  uint8_t table_map_post_header_ = 8;
  std::unordered_map<uint64_t, binlog::MappedTable> tables_;
  // The binlog file the events are from ("" before the first ROTATE), and
  // the name a ROTATE named, checksum and all, until resolved.
  std::string file_;
  std::string server_;
  std::string rotated_to_;
  std::string pending_gtid_;
  uint32_t pending_domain_ = 0;
  // The open group's GTID flags said XA: its prepared group (rows until
  // XA PREPARE) or the group that completes it (XA COMMIT/ROLLBACK).
  enum class PendingXa : uint8_t { kNone, kPrepared, kCompleted };
  PendingXa pending_xa_ = PendingXa::kNone;
  std::string pending_xid_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_BINLOG_DECODER_H_
