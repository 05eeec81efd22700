#include "engine/binlog/binlog_rows_event.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/binlog/binlog_row_format.h"
#include "engine/binlog/row_image_text.h"

namespace msgq::binlog {
namespace {

// The largest row image rendered (the bytes of its streamed values).
constexpr size_t kMaxImageBytes = size_t{4} << 20;

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
  // A row too large to hold is read by id instead (where the read leaves
  // out what is too large to send): rendering it would copy it whole.
  size_t bytes = 0;
  for (const BookkeepingColumns::Rendered& c : cols.streamed) {
    if (c.ordinal < values.size()) bytes += values[c.ordinal].bytes.size();
  }
  if (bytes > kMaxImageBytes) return;
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

// Whether column `i` is set in the column bitmap `map`.
bool Bit(absl::string_view map, size_t i) {
  return (static_cast<uint8_t>(map[i / 8]) >> (i % 8)) & 1;
}

// Reads one row image of `t` (its columns in `used`) into `values`.
absl::Status ReadImage(Reader& r, const MappedTable& t, absl::string_view used,
                       std::vector<Value>* values) {
  const size_t count = t.types.size();
  size_t n_present = 0;
  for (size_t i = 0; i < count; ++i) n_present += Bit(used, i);
  // An image of no bytes would never end the caller's loop.
  if (n_present == 0) return Malformed("row image without columns");
  absl::string_view nulls;
  if (!r.Bytes((n_present + 7) / 8, &nulls)) return Malformed("null bitmap");
  values->assign(count, Value{});
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!Bit(used, i)) continue;
    Value& v = (*values)[i];
    v.present = true;
    if (Bit(nulls, k++)) continue;
    const uint8_t ctype = static_cast<uint8_t>(t.types[i]);
    size_t prefix = 0, size = 0;
    if (absl::Status s = ValueSize(ctype, t.meta[i], r, &prefix, &size);
        !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(s.message(), " (", t.db, ".", t.table, ")"));
    }
    v.is_null = false;
    if (!r.Skip(prefix)) return Malformed("value");
    if (IsIntegerType(ctype)) {
      v.integer = true;
      if (!r.Uint(size, &v.bits)) return Malformed("integer");
    } else if (!r.Bytes(size, &v.bytes)) {
      return Malformed("value");
    }
  }
  return absl::OkStatus();
}

// The id of a row image as msgq writes it in SQL; UNIMPLEMENTED for an id
// column type not decoded.
absl::StatusOr<std::string> IdOf(const MappedTable& t,
                                 const std::vector<Value>& values) {
  const BookkeepingColumns& cols = *t.columns;
  const Value& id = values[cols.id];
  const uint8_t id_type = static_cast<uint8_t>(t.types[cols.id]);
  if (id.integer) {
    const bool is_unsigned =
        t.is_unsigned.empty() ? cols.id_unsigned : t.is_unsigned[cols.id];
    const size_t bytes = IntegerSize(id_type);
    return is_unsigned ? absl::StrCat(id.bits)
                       : absl::StrCat(SignExtend(id.bits, bytes));
  }
  if (id_type == kVarchar || id_type == kVarString || id_type == kString ||
      id_type == kBlob) {
    return std::string(id.bytes);
  }
  return absl::UnimplementedError(absl::StrCat("binlog: id column type ",
                                               id_type, " of ", t.db, ".",
                                               t.table, " is not decoded"));
}

// What the after image (a delete's before image) `values`, whose id is not
// NULL, says of its row. `acked_before` and `epoch_before`: an update's
// before image.
absl::StatusOr<RowChange> ChangeOf(
    RowsEventKind kind, const MappedTable& t, const std::vector<Value>& values,
    bool acked_before, std::optional<int64_t> epoch_before,
    const std::optional<std::optional<int64_t>>& time_next_before) {
  const BookkeepingColumns& cols = *t.columns;
  RowChange change;
  change.deleted = kind.deleted;
  absl::StatusOr<std::string> id = IdOf(t, values);
  if (!id.ok()) return id.status();
  change.id = *std::move(id);
  const bool priority_unsigned = t.is_unsigned.empty()
                                     ? cols.priority_unsigned
                                     : t.is_unsigned[cols.priority];
  change.priority =
      IntOf(values[cols.priority], static_cast<uint8_t>(t.types[cols.priority]),
            priority_unsigned)
          .value_or(0);
  change.time_next = IntOf(values[cols.time_next],
                           static_cast<uint8_t>(t.types[cols.time_next]));
  change.time_acked = IntOf(values[cols.time_acked],
                            static_cast<uint8_t>(t.types[cols.time_acked]));
  change.newly_acked =
      kind.update && !acked_before && change.time_acked.has_value();
  change.inserted = !kind.update && !kind.deleted;
  if (cols.epoch < values.size()) {
    change.sent =
        IntOf(values[cols.epoch], static_cast<uint8_t>(t.types[cols.epoch]))
            .value_or(0) > 0;
  }
  if (kind.update && time_next_before.has_value() && epoch_before.has_value()) {
    change.has_before = true;
    change.time_next_before = *time_next_before;
    change.acked_before = acked_before;
    change.sent_before = *epoch_before > 0;
  }
  if (!kind.deleted && !change.time_acked.has_value() &&
      change.time_next.has_value() && !cols.streamed.empty()) {
    RenderImage(t.types, t.meta, cols, values,
                kind.update ? epoch_before : std::nullopt, &change);
  }
  return change;
}

}  // namespace

absl::Status DecodeRowsEvent(RowsEventKind kind, absl::string_view body,
                             const MappedTable& t,
                             std::vector<RowChange>* changes) {
  Reader r(body);
  const BookkeepingColumns& cols = *t.columns;
  if (kind.v2) {
    uint64_t extra = 0;
    if (!r.Uint(2, &extra) || extra < 2 || !r.Skip(extra - 2)) {
      return Malformed("rows extra data");
    }
  }
  uint64_t count = 0;
  absl::string_view present[2];
  if (!r.Packed(&count) || count != t.types.size() ||
      !r.Bytes((count + 7) / 8, &present[0]) ||
      (kind.update && !r.Bytes((count + 7) / 8, &present[1]))) {
    return Malformed("rows column bitmap");
  }
  if (std::max({cols.id, cols.priority, cols.time_next, cols.time_acked}) >=
      count) {
    return absl::OkStatus();
  }
  bool acked_before = false;  // of the update's row, from its before image
  std::optional<int64_t> epoch_before;
  // The before image's time_next, when it has time_next and time_acked.
  std::optional<std::optional<int64_t>> time_next_before;
  std::vector<Value> values;
  for (int image = 0; r.left() > 0; ++image) {
    const absl::string_view used = present[kind.update ? image % 2 : 0];
    if (absl::Status s = ReadImage(r, t, used, &values); !s.ok()) return s;
    if (kind.update && image % 2 == 0) {  // before image
      acked_before = !values[cols.time_acked].is_null;
      epoch_before = cols.epoch < count
                         ? IntOf(values[cols.epoch],
                                 static_cast<uint8_t>(t.types[cols.epoch]))
                         : std::nullopt;
      time_next_before.reset();
      if (values[cols.time_next].present && values[cols.time_acked].present) {
        time_next_before = IntOf(values[cols.time_next],
                                 static_cast<uint8_t>(t.types[cols.time_next]));
      }
      continue;
    }
    if (values[cols.id].is_null) continue;
    absl::StatusOr<RowChange> change =
        ChangeOf(kind, t, values, acked_before, epoch_before, time_next_before);
    if (!change.ok()) return change.status();
    changes->push_back(*std::move(change));
  }
  return absl::OkStatus();
}

}  // namespace msgq::binlog
