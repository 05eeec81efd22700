#include "engine/binlog/binlog_decoder.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/binlog/binlog_row_format.h"
#include "engine/binlog/row_image_text.h"

namespace msgq {
namespace {

using binlog::IntegerSize;
using binlog::IsIntegerType;
using binlog::IsNumericType;
using binlog::kBlob;
using binlog::kString;
using binlog::kVarchar;
using binlog::kVarString;
using binlog::Malformed;
using binlog::Reader;
using binlog::ReadMeta;
using binlog::ValueSize;

constexpr uint8_t kChecksumCrc32 = 1;

struct Value {
  bool present = false;  // in the image (binlog_row_image)
  bool is_null = true;
  bool integer = false;
  uint64_t bits = 0;        // integer: raw little-endian bits
  absl::string_view bytes;  // string types
};

int64_t SignExtend(uint64_t bits, size_t size) {
  if (size >= 8) return static_cast<int64_t>(bits);
  const uint64_t sign = uint64_t{1} << (8 * size - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

std::optional<int64_t> IntOf(const Value& v, uint8_t type,
                             bool is_unsigned = false) {
  if (v.is_null) return std::nullopt;
  if (v.integer) {
    return is_unsigned ? static_cast<int64_t>(v.bits)
                       : SignExtend(v.bits, IntegerSize(type));
  }
  int64_t n = 0;
  if (absl::SimpleAtoi(v.bytes, &n)) return n;
  return std::nullopt;
}

// Renders the streamed columns of a due row's after image into
// change->row (row_change.h); leaves it null when any cannot be rendered.
void RenderImage(const std::string& types, const std::vector<uint16_t>& meta,
                 const BookkeepingColumns& cols,
                 const std::vector<Value>& values,
                 std::optional<int64_t> epoch_before, RowChange* change) {
  const std::optional<int64_t> epoch =
      cols.epoch < values.size()
          ? IntOf(values[cols.epoch], static_cast<uint8_t>(types[cols.epoch]))
          : std::nullopt;
  // msgq's own postpones raise the epoch: their rows are in flight, and
  // rendering them would only cost.
  if (!epoch.has_value() ||
      (epoch_before.has_value() && *epoch > *epoch_before)) {
    return;
  }
  auto render = [&](const BookkeepingColumns::Rendered& c, std::string* out) {
    const Value& v = values[c.ordinal];
    return binlog::AppendText(c.form, static_cast<uint8_t>(types[c.ordinal]),
                              meta[c.ordinal], v.bytes, v.bits, out);
  };
  auto row = std::make_shared<PackedRow>();
  row->lengths.reserve(cols.streamed.size());
  for (const BookkeepingColumns::Rendered& c : cols.streamed) {
    if (c.ordinal >= values.size() || !values[c.ordinal].present) return;
    if (values[c.ordinal].is_null) {
      row->lengths.push_back(-1);
      continue;
    }
    const size_t before = row->values.size();
    if (!render(c, &row->values)) return;
    row->lengths.push_back(static_cast<int64_t>(row->values.size() - before));
  }
  if (cols.time_created.has_value()) {
    const uint32_t i = *cols.time_created;
    if (i >= values.size() || !values[i].present) return;
    change->time_created =
        IntOf(values[i], static_cast<uint8_t>(types[i])).value_or(0);
  }
  if (cols.fair.has_value()) {
    const uint32_t i = cols.fair->ordinal;
    if (i >= values.size() || !values[i].present) return;
    if (!values[i].is_null) {
      std::string key;
      if (!render(*cols.fair, &key)) return;
      change->fair_key = std::move(key);
    }
  }
  change->epoch = *epoch;
  change->row = std::move(row);
}

}  // namespace

BinlogDecoder::BinlogDecoder(ColumnsLookup lookup, size_t max_tables)
    : lookup_(std::move(lookup)),
      max_tables_(std::max<size_t>(1, max_tables)) {}

absl::StatusOr<DecodedEvent> BinlogDecoder::Decode(absl::string_view event) {
  Reader header(event);
  uint64_t timestamp = 0, type = 0, server_id = 0, size = 0;
  if (!header.Uint(4, &timestamp) || !header.Uint(1, &type) ||
      !header.Uint(4, &server_id) || !header.Uint(4, &size) ||
      !header.Skip(6)) {
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
    return out;
  }
  if (type == kRotateEvent) {
    out.rotated = true;
    tables_.clear();
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
      // A standalone GTID (DDL) completes with its query event.
      return out;
    }
    case kXidEvent:
      Commit(&out);
      return out;
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
      for (RowChange& c : out.changes) {
        c.event_time = static_cast<int64_t>(timestamp);
      }
      return out;
    default:
      if (type >= kFirstCompressedRows && type <= kLastCompressedRows) {
        uint64_t table_id = 0;
        if (!r.Uint(6, &table_id)) return Malformed("rows header");
        auto it = tables_.find(table_id);
        if (it != tables_.end() && it->second.columns.has_value()) {
          return absl::UnimplementedError(absl::StrCat(
              "compressed rows events (log_bin_compress) of ", it->second.db,
              ".", it->second.table, " are not decoded"));
        }
      }
      return out;
  }
}

void BinlogDecoder::Commit(DecodedEvent* out) {
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
  Commit(out);
  DdlStatement ddl = ParseDdl(db, query);
  // Partitions added or dropped (msgqd's own partition purge among them)
  // leave the table's manager and its cache alone.
  if (ddl.kind == DdlStatement::kPartitionMaintenance) return absl::OkStatus();
  for (TableName& name : ddl.tables) {
    if (lookup_(name.db, name.table).has_value()) {
      out->resets.push_back(std::move(name));
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
  MappedTable mapped;
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
  const MappedTable& t = it->second;
  const BookkeepingColumns& cols = *t.columns;
  const bool v2 = type >= kWriteRowsV2;
  const bool update = type == kUpdateRowsV1 || type == kUpdateRowsV2;
  const bool deleted = type == kDeleteRowsV1 || type == kDeleteRowsV2;
  if (v2) {
    uint64_t extra = 0;
    if (!r.Uint(2, &extra) || extra < 2 || !r.Skip(extra - 2)) {
      return Malformed("rows extra data");
    }
  }
  uint64_t count = 0;
  absl::string_view present[2];
  if (!r.Packed(&count) || count != t.types.size() ||
      !r.Bytes((count + 7) / 8, &present[0]) ||
      (update && !r.Bytes((count + 7) / 8, &present[1]))) {
    return Malformed("rows column bitmap");
  }
  if (std::max({cols.id, cols.priority, cols.time_next, cols.time_acked}) >=
      count) {
    return absl::OkStatus();
  }
  auto bit = [](absl::string_view map, size_t i) {
    return (static_cast<uint8_t>(map[i / 8]) >> (i % 8)) & 1;
  };
  bool acked_before = false;  // of the update's row, from its before image
  std::optional<int64_t> epoch_before;
  for (int image = 0; r.left() > 0; ++image) {
    const absl::string_view used = present[update ? image % 2 : 0];
    size_t n_present = 0;
    for (size_t i = 0; i < count; ++i) n_present += bit(used, i);
    // An image of no bytes would never end the loop.
    if (n_present == 0) return Malformed("row image without columns");
    absl::string_view nulls;
    if (!r.Bytes((n_present + 7) / 8, &nulls)) return Malformed("null bitmap");
    std::vector<Value> values(count);
    size_t k = 0;
    for (size_t i = 0; i < count; ++i) {
      if (!bit(used, i)) continue;
      values[i].present = true;
      if (bit(nulls, k++)) continue;
      const uint8_t ctype = static_cast<uint8_t>(t.types[i]);
      size_t prefix = 0, size = 0;
      if (absl::Status s = ValueSize(ctype, t.meta[i], r, &prefix, &size);
          !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat(s.message(), " (", t.db, ".", t.table, ")"));
      }
      Value& v = values[i];
      v.is_null = false;
      if (!r.Skip(prefix)) return Malformed("value");
      if (IsIntegerType(ctype)) {
        v.integer = true;
        if (!r.Uint(size, &v.bits)) return Malformed("integer");
      } else if (!r.Bytes(size, &v.bytes)) {
        return Malformed("value");
      }
    }
    if (update && image % 2 == 0) {  // before image
      acked_before = !values[cols.time_acked].is_null;
      epoch_before = cols.epoch < count
                         ? IntOf(values[cols.epoch],
                                 static_cast<uint8_t>(t.types[cols.epoch]))
                         : std::nullopt;
      continue;
    }
    const Value& id = values[cols.id];
    if (id.is_null) continue;
    const uint8_t id_type = static_cast<uint8_t>(t.types[cols.id]);
    RowChange change;
    change.deleted = deleted;
    if (id.integer) {
      const bool is_unsigned =
          t.is_unsigned.empty() ? cols.id_unsigned : t.is_unsigned[cols.id];
      const size_t bytes = IntegerSize(id_type);
      change.id = is_unsigned ? absl::StrCat(id.bits)
                              : absl::StrCat(SignExtend(id.bits, bytes));
    } else if (id_type == kVarchar || id_type == kVarString ||
               id_type == kString || id_type == kBlob) {
      change.id = std::string(id.bytes);
    } else {
      return absl::UnimplementedError(absl::StrCat("binlog: id column type ",
                                                   id_type, " of ", t.db, ".",
                                                   t.table, " is not decoded"));
    }
    const bool priority_unsigned = t.is_unsigned.empty()
                                       ? cols.priority_unsigned
                                       : t.is_unsigned[cols.priority];
    change.priority =
        IntOf(values[cols.priority],
              static_cast<uint8_t>(t.types[cols.priority]), priority_unsigned)
            .value_or(0);
    change.time_next = IntOf(values[cols.time_next],
                             static_cast<uint8_t>(t.types[cols.time_next]));
    change.time_acked = IntOf(values[cols.time_acked],
                              static_cast<uint8_t>(t.types[cols.time_acked]));
    change.newly_acked =
        update && !acked_before && change.time_acked.has_value();
    if (!deleted && !change.time_acked.has_value() &&
        change.time_next.has_value() && !cols.streamed.empty()) {
      RenderImage(t.types, t.meta, cols, values,
                  update ? epoch_before : std::nullopt, &change);
    }
    out->changes.push_back(std::move(change));
  }
  if (!out->changes.empty()) {
    out->db = t.db;
    out->table = t.table;
  }
  return absl::OkStatus();
}

}  // namespace msgq
