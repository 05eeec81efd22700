// Test helpers: raw MariaDB binlog events (ROW format) built byte by byte, as
// a server writes them, for the decoder's tests.
#ifndef MSGQ_ENGINE_BINLOG_BINLOG_EVENT_BUILDER_H_
#define MSGQ_ENGINE_BINLOG_BINLOG_EVENT_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/binlog/binlog_decoder.h"

namespace msgq::binlog_test {

inline std::string Le(uint64_t v, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

// Header + body (+ a 4-byte checksum placeholder when `checksum`).
inline std::string Event(uint8_t type, const std::string& body,
                         bool checksum = false, uint32_t server_id = 1) {
  const size_t size = kBinlogHeaderSize + body.size() + (checksum ? 4 : 0);
  std::string e = Le(1700000000, 4) + Le(type, 1) + Le(server_id, 4) +
                  Le(size, 4) + Le(0, 4) + Le(0, 2) + body;
  if (checksum) e += "\xde\xad\xbe\xef";
  return e;
}

inline std::string FormatDescription(bool crc32) {
  std::string version = "10.11.6-MariaDB";
  version.resize(50, '\0');
  std::string post(164, '\0');
  post[kTableMapEvent - 1] = 8;
  return Event(kFormatDescriptionEvent, Le(4, 2) + version + Le(0, 4) +
                                            Le(19, 1) + post +
                                            Le(crc32 ? 1 : 0, 1) + Le(0, 4));
}

inline std::string Rotate() {
  return Event(kRotateEvent, Le(4, 8) + "binlog.000002");
}

inline std::string Gtid(uint64_t seq, uint32_t domain, bool standalone,
                        bool checksum = false, uint32_t server_id = 1) {
  return Event(kGtidEvent,
               Le(seq, 8) + Le(domain, 4) + Le(standalone ? 1 : 0, 1) +
                   std::string(6, '\0'),
               checksum, server_id);
}

// The GTID of an XA transaction's group: its prepared rows (`prepared`)
// or its XA COMMIT/ROLLBACK, with the XA id (bqual empty).
inline std::string XaGtid(uint64_t seq, bool prepared, const std::string& gtrid,
                          uint32_t format = 1) {
  const uint64_t flags = prepared ? 64 : 128 | 1;
  return Event(kGtidEvent, Le(seq, 8) + Le(0, 4) + Le(flags, 1) +
                               Le(format, 4) + Le(gtrid.size(), 1) + Le(0, 1) +
                               gtrid);
}

inline std::string XaPrepare(const std::string& gtrid, bool one_phase = false,
                             uint32_t format = 1) {
  return Event(kXaPrepareEvent, Le(one_phase ? 1 : 0, 1) + Le(format, 4) +
                                    Le(gtrid.size(), 4) + Le(0, 4) + gtrid);
}

inline std::string Xid(bool checksum = false) {
  return Event(kXidEvent, Le(77, 8), checksum);
}

inline std::string Query(const std::string& db, const std::string& sql,
                         bool checksum = false) {
  return Event(kQueryEvent,
               Le(5, 4) + Le(0, 4) + Le(db.size(), 1) + Le(0, 2) + Le(0, 2) +
                   db + std::string(1, '\0') + sql,
               checksum);
}

struct Column {
  uint8_t type;
  std::string meta;  // as written in the table map
};

inline std::string TableMap(uint64_t table_id, const std::string& db,
                            const std::string& table,
                            const std::vector<Column>& columns,
                            const std::string& optional_meta = "",
                            bool checksum = false) {
  std::string types, meta;
  for (const Column& c : columns) {
    types.push_back(static_cast<char>(c.type));
    meta += c.meta;
  }
  return Event(kTableMapEvent,
               Le(table_id, 6) + Le(0, 2) + Le(db.size(), 1) + db +
                   std::string(1, '\0') + Le(table.size(), 1) + table +
                   std::string(1, '\0') + Le(columns.size(), 1) + types +
                   Le(meta.size(), 1) + meta +
                   std::string((columns.size() + 7) / 8, '\xff') +
                   optional_meta,
               checksum);
}

// One row image with every column present: null bitmap + values.
inline std::string Image(const std::vector<std::optional<std::string>>& cells) {
  std::string nulls((cells.size() + 7) / 8, '\0');
  std::string values;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].has_value()) {
      values += *cells[i];
    } else {
      nulls[i / 8] = static_cast<char>(nulls[i / 8] | (1 << (i % 8)));
    }
  }
  return nulls + values;
}

// A rows event (v1 types 23-25, v2 types 30-32); every column present.
inline std::string Rows(uint8_t type, uint64_t table_id, size_t column_count,
                        const std::vector<std::string>& images,
                        bool checksum = false) {
  const bool update = type == kUpdateRowsV1 || type == kUpdateRowsV2;
  const std::string all((column_count + 7) / 8, '\xff');
  std::string body = Le(table_id, 6) + Le(1, 2);
  if (type >= kWriteRowsV2) body += Le(2, 2);
  body += Le(column_count, 1) + all + (update ? all : "");
  for (const std::string& image : images) body += image;
  return Event(type, body, checksum);
}

inline std::string VarStr(const std::string& s) { return Le(s.size(), 1) + s; }

}  // namespace msgq::binlog_test

#endif  // MSGQ_ENGINE_BINLOG_BINLOG_EVENT_BUILDER_H_
