#include "engine/binlog/binlog_decoder.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/binlog/binlog_row_format.h"
#include "engine/binlog/binlog_rows_event.h"

namespace msgq {
namespace {

using binlog::IsNumericType;
using binlog::Malformed;
using binlog::Reader;
using binlog::ReadMeta;

constexpr uint8_t kChecksumCrc32 = 1;
// GTID event flags (MariaDB's Gtid_log_event::flags2).
constexpr uint64_t kGtidGroupCommitId = 2;
constexpr uint64_t kGtidPreparedXa = 64;
constexpr uint64_t kGtidCompletedXa = 128;

// An XA id as the GTID event carries it: format id (4), gtrid length (1),
// bqual length (1), gtrid and bqual. One opaque key for both ends.
bool ReadGtidXid(Reader* r, std::string* xid) {
  uint64_t format = 0, gtrid_len = 0, bqual_len = 0;
  absl::string_view data;
  if (!r->Uint(4, &format) || !r->Uint(1, &gtrid_len) ||
      !r->Uint(1, &bqual_len) || gtrid_len > 64 || bqual_len > 64 ||
      !r->Bytes(gtrid_len + bqual_len, &data)) {
    return false;
  }
  *xid = absl::StrCat(format, ":", gtrid_len, ":", data);
  return true;
}

}  // namespace

BinlogDecoder::BinlogDecoder(ColumnsLookup lookup, size_t max_tables)
    : lookup_(std::move(lookup)),
      max_tables_(std::max<size_t>(1, max_tables)) {}

absl::StatusOr<DecodedEvent> BinlogDecoder::Decode(absl::string_view event) {
  Reader header(event);
  uint64_t timestamp = 0, type = 0, server_id = 0, size = 0, next = 0;
  if (!header.Uint(4, &timestamp) || !header.Uint(1, &type) ||
      !header.Uint(4, &server_id) || !header.Uint(4, &size) ||
      !header.Uint(4, &next) || !header.Skip(2)) {
    return Malformed("short header");
  }
  if (size != event.size()) return Malformed("size field");
  DecodedEvent out;
  out.type = static_cast<uint8_t>(type);
  absl::string_view body = event.substr(kBinlogHeaderSize);
  if (type == kFormatDescriptionEvent) {
    out.rotated = true;
    tables_.clear();
    if (absl::Status s = DecodeFormatDescription(body); !s.ok()) return s;
    ResolveFile();
    return out;
  }
  if (type == kRotateEvent) {
    out.rotated = true;
    tables_.clear();
    // position (8), then the next file's name. Whether a checksum follows
    // is said by the format description that comes next (the dump's first
    // rotate comes before any).
    if (body.size() > 8) {
      rotated_to_ = std::string(body.substr(8));
    }
    return out;
  }
  if (checksum_) {
    if (body.size() < 4) return Malformed("no room for the checksum");
    body.remove_suffix(4);
  }
  Reader r(body);
  switch (type) {
    case kGtidEvent: {
      uint64_t seq = 0, domain = 0, flags = 0;
      if (!r.Uint(8, &seq) || !r.Uint(4, &domain) || !r.Uint(1, &flags)) {
        return Malformed("GTID");
      }
      pending_domain_ = static_cast<uint32_t>(domain);
      pending_gtid_ = absl::StrCat(domain, "-", server_id, "-", seq);
      pending_xa_ = PendingXa::kNone;
      pending_xid_.clear();
      if ((flags & (kGtidPreparedXa | kGtidCompletedXa)) != 0) {
        if (((flags & kGtidGroupCommitId) != 0 && !r.Skip(8)) ||
            !ReadGtidXid(&r, &pending_xid_)) {
          return Malformed("GTID of an XA transaction");
        }
        pending_xa_ = (flags & kGtidPreparedXa) != 0 ? PendingXa::kPrepared
                                                     : PendingXa::kCompleted;
      }
      if (pending_xa_ == PendingXa::kPrepared) {
        out.step = TransactionStep::kXaStart;
        out.xid = pending_xid_;
      }
      // A standalone GTID (DDL) completes with its query event.
      return out;
    }
    case kXidEvent:
      out.step = TransactionStep::kCommit;
      Commit(&out);
      return out;
    case kXaPrepareEvent: {
      // one_phase (1), format id (4), gtrid length (4), bqual length (4),
      // gtrid and bqual. Unless one phase, its rows are not committed: they
      // wait for XA COMMIT. The group is done, so the stream resumes after
      // it either way.
      uint64_t one_phase = 0, format = 0, gtrid_len = 0, bqual_len = 0;
      absl::string_view data;
      if (!r.Uint(1, &one_phase) || !r.Uint(4, &format) ||
          !r.Uint(4, &gtrid_len) || !r.Uint(4, &bqual_len) || gtrid_len > 64 ||
          bqual_len > 64 || !r.Bytes(gtrid_len + bqual_len, &data)) {
        return Malformed("XA PREPARE");
      }
      if (one_phase != 0) {
        out.step = TransactionStep::kCommit;
      } else {
        out.step = TransactionStep::kXaPrepare;
        out.xid = absl::StrCat(format, ":", gtrid_len, ":", data);
      }
      Commit(&out);
      return out;
    }
    case kQueryEvent:
      if (absl::Status s =
              DecodeQuery(static_cast<uint32_t>(server_id), body, &out);
          !s.ok()) {
        return s;
      }
      return out;
    case kTableMapEvent:
      if (absl::Status s = DecodeTableMap(body); !s.ok()) return s;
      return out;
    case kWriteRowsV1:
    case kUpdateRowsV1:
    case kDeleteRowsV1:
    case kWriteRowsV2:
    case kUpdateRowsV2:
    case kDeleteRowsV2:
      if (absl::Status s = DecodeRows(out.type, body, &out); !s.ok()) {
        return s;
      }
      ResolveFile();
      for (RowChange& c : out.changes) {
        c.event_time = static_cast<int64_t>(timestamp);
        c.gtid = pending_gtid_;
        c.position = BinlogPosition{file_, next, server_};
      }
      return out;
    default:
      if (type >= kFirstCompressedRows && type <= kLastCompressedRows) {
        if (absl::Status s = CheckCompressedRows(body); !s.ok()) return s;
      }
      return out;
  }
}

void BinlogDecoder::ResolveFile() {
  if (rotated_to_.empty()) return;
  if (checksum_ && rotated_to_.size() > 4)
    rotated_to_.resize(rotated_to_.size() - 4);
  file_ = std::move(rotated_to_);
  rotated_to_.clear();
}

void BinlogDecoder::Commit(DecodedEvent* out) {
  pending_xa_ = PendingXa::kNone;
  pending_xid_.clear();
  if (pending_gtid_.empty()) return;
  out->committed_gtid = std::move(pending_gtid_);
  out->committed_domain = pending_domain_;
  pending_gtid_.clear();
}

absl::Status BinlogDecoder::DecodeFormatDescription(absl::string_view body) {
  // binlog_version(2) server_version(50) timestamp(4) header_length(1)
  // post_header_lengths(n) checksum_alg(1) checksum(4)
  constexpr size_t kFixed = 2 + 50 + 4 + 1;
  if (body.size() < kFixed + 5) return Malformed("format description");
  const uint8_t alg = static_cast<uint8_t>(body[body.size() - 5]);
  checksum_ = alg == kChecksumCrc32;
  const absl::string_view post = body.substr(kFixed, body.size() - kFixed - 5);
  table_map_post_header_ = 8;
  if (post.size() >= kTableMapEvent) {
    table_map_post_header_ = static_cast<uint8_t>(post[kTableMapEvent - 1]);
  }
  return absl::OkStatus();
}

absl::Status BinlogDecoder::DecodeQuery(uint32_t /*server_id*/,
                                        absl::string_view body,
                                        DecodedEvent* out) {
  Reader r(body);
  uint64_t db_len = 0, status_len = 0;
  absl::string_view db, query;
  if (!r.Skip(8) || !r.Uint(1, &db_len) || !r.Skip(2) ||
      !r.Uint(2, &status_len) || !r.Skip(status_len) || !r.Bytes(db_len, &db) ||
      !r.Skip(1)) {
    return Malformed("query");
  }
  query = r.rest();
  if (query == "BEGIN") return absl::OkStatus();
  // XA END inside a prepared group commits nothing.
  if (pending_xa_ == PendingXa::kPrepared) return absl::OkStatus();
  if (pending_xa_ == PendingXa::kCompleted) {
    out->step = absl::StartsWithIgnoreCase(query, "XA ROLLBACK")
                    ? TransactionStep::kXaRollback
                    : TransactionStep::kXaCommit;
    out->xid = std::move(pending_xid_);
    pending_xa_ = PendingXa::kNone;
    Commit(out);
    return absl::OkStatus();
  }
  out->step = TransactionStep::kCommit;
  Commit(out);
  DdlStatement ddl = ParseDdl(db, query);
  // Partitions added or dropped (msgqd's own partition purge among them)
  // leave the table's manager and its cache alone.
  if (ddl.kind == DdlStatement::kPartitionMaintenance) return absl::OkStatus();
  const bool defines = ddl.kind == DdlStatement::kCreate ||
                       ddl.kind == DdlStatement::kCreateOrReplace ||
                       ddl.kind == DdlStatement::kAlter ||
                       ddl.kind == DdlStatement::kRename;
  for (size_t i = 0; i < ddl.tables.size(); ++i) {
    TableName& name = ddl.tables[i];
    if (lookup_(name.db, name.table).has_value()) {
      // CREATE TABLE (IF NOT EXISTS) of a table that exists changes nothing.
      if (ddl.kind != DdlStatement::kCreate) {
        out->resets.push_back(std::move(name));
      }
    } else if (defines && (ddl.kind != DdlStatement::kRename || i % 2 == 1)) {
      out->defined.push_back(std::move(name));  // a RENAME's new names only
    }
  }
  return absl::OkStatus();
}

absl::Status BinlogDecoder::DecodeTableMap(absl::string_view body) {
  Reader r(body);
  uint64_t table_id = 0, db_len = 0, table_len = 0, count = 0, meta_len = 0;
  absl::string_view db, table, types, meta_block;
  const size_t id_size = table_map_post_header_ == 6 ? 4 : 6;
  if (!r.Uint(id_size, &table_id) || !r.Skip(2) || !r.Uint(1, &db_len) ||
      !r.Bytes(db_len, &db) || !r.Skip(1) || !r.Uint(1, &table_len) ||
      !r.Bytes(table_len, &table) || !r.Skip(1) || !r.Packed(&count) ||
      count > 4096 || !r.Bytes(count, &types) || !r.Packed(&meta_len) ||
      !r.Bytes(meta_len, &meta_block) || !r.Skip((count + 7) / 8)) {
    return Malformed("table map");
  }
  binlog::MappedTable mapped;
  mapped.db = std::string(db);
  mapped.table = std::string(table);
  mapped.types = std::string(types);
  mapped.meta.resize(count);
  Reader meta(meta_block);
  for (size_t i = 0; i < count; ++i) {
    if (!ReadMeta(static_cast<uint8_t>(types[i]), &meta, &mapped.meta[i])) {
      return Malformed("table map metadata");
    }
  }
  // Optional metadata (binlog_row_metadata): only SIGNEDNESS (type 1), a
  // bitmap over the numeric columns, most significant bit first.
  while (r.left() > 0) {
    uint64_t field = 0, len = 0;
    absl::string_view value;
    if (!r.Uint(1, &field) || !r.Packed(&len) || !r.Bytes(len, &value)) break;
    if (field != 1) continue;
    mapped.is_unsigned.assign(count, false);
    size_t numeric = 0;
    for (size_t i = 0; i < count; ++i) {
      if (!IsNumericType(static_cast<uint8_t>(types[i]))) continue;
      const size_t byte = numeric / 8, bit = 7 - numeric % 8;
      ++numeric;
      if (byte >= value.size()) break;
      mapped.is_unsigned[i] = (static_cast<uint8_t>(value[byte]) >> bit) & 1;
    }
  }
  mapped.columns = lookup_(mapped.db, mapped.table);
  if (mapped.columns.has_value() && mapped.columns->column_count != count) {
    // The table changed under us; the schema reload catches up and the poll
    // covers the rows.
    mapped.columns.reset();
  }
  if (tables_.size() >= max_tables_ && tables_.count(table_id) == 0) {
    tables_.clear();
  }
  tables_[table_id] = std::move(mapped);
  return absl::OkStatus();
}

absl::Status BinlogDecoder::DecodeRows(uint8_t type, absl::string_view body,
                                       DecodedEvent* out) {
  Reader r(body);
  uint64_t table_id = 0;
  if (!r.Uint(6, &table_id) || !r.Skip(2)) return Malformed("rows header");
  auto it = tables_.find(table_id);
  if (it == tables_.end() || !it->second.columns.has_value()) {
    return absl::OkStatus();
  }
  const binlog::MappedTable& t = it->second;
  binlog::RowsEventKind kind;
  kind.v2 = type >= kWriteRowsV2;
  kind.update = type == kUpdateRowsV1 || type == kUpdateRowsV2;
  kind.deleted = type == kDeleteRowsV1 || type == kDeleteRowsV2;
  if (absl::Status s =
          binlog::DecodeRowsEvent(kind, r.rest(), t, &out->changes);
      !s.ok()) {
    return s;
  }
  if (!out->changes.empty()) {
    out->db = t.db;
    out->table = t.table;
  }
  return absl::OkStatus();
}

absl::Status BinlogDecoder::CheckCompressedRows(absl::string_view body) const {
  Reader r(body);
  uint64_t table_id = 0;
  if (!r.Uint(6, &table_id)) return Malformed("rows header");
  auto it = tables_.find(table_id);
  if (it != tables_.end() && it->second.columns.has_value()) {
    return absl::UnimplementedError(
        absl::StrCat("compressed rows events (log_bin_compress) of ",
                     it->second.db, ".", it->second.table, " are not decoded"));
  }
  return absl::OkStatus();
}

}  // namespace msgq
