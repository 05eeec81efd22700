// Fuzzes BinlogDecoder with raw binlog bytes: the input is a stream of events
// as in a binlog file after its magic (each event's size field says where the
// next one starts; the last may be cut). Any input must decode or be refused
// with a status, never crash. Seeds: fuzz/corpus/binlog_decoder/ (events
// written by MariaDB 10.11: all column types, inserts, updates, deletes, DDL).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/binlog/binlog_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  msgq::BinlogDecoder decoder(
      [](const std::string& db, const std::string& table) {
        // The layouts of the seed corpus' tables, so their rows are decoded.
        std::optional<msgq::BookkeepingColumns> cols;
        if (db != "msgq") return cols;
        if (table == "q") cols = msgq::BookkeepingColumns{6, 0, 1, 3, 4};
        if (table == "t") cols = msgq::BookkeepingColumns{19, 0, 1, 3, 4};
        if (table == "u") cols = msgq::BookkeepingColumns{5, 0, 1, 3, 4, true};
        return cols;
      },
      /*max_tables=*/8);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t at = 0;
  while (at < input.size()) {
    size_t len = input.size() - at;
    if (len >= msgq::kBinlogHeaderSize) {
      const auto* p = data + at + 9;
      const size_t declared =
          p[0] | p[1] << 8 | p[2] << 16 | static_cast<size_t>(p[3]) << 24;
      if (declared >= msgq::kBinlogHeaderSize && declared <= len) {
        len = declared;
      }
    }
    absl::StatusOr<msgq::DecodedEvent> d =
        decoder.Decode(absl::string_view(input.data() + at, len));
    if (d.ok()) {
      for (const msgq::RowChange& c : d->changes) {
        // Touch what the engine reads.
        if (c.id.size() > size) __builtin_trap();
      }
    }
    at += len;
  }
  return 0;
}
