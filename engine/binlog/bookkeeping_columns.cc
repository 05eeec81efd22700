#include "engine/binlog/bookkeeping_columns.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace msgq {

binlog::TextForm TextFormOf(const Column& c) {
  using binlog::TextForm;
  if (c.generated) return TextForm::kNone;
  const std::string type = absl::AsciiStrToLower(c.column_type);
  if (absl::StrContains(type, "zerofill")) return TextForm::kNone;
  const absl::string_view t = c.data_type;
  if (t == "tinyint" || t == "smallint" || t == "mediumint" || t == "int" ||
      t == "bigint") {
    return absl::StrContains(type, "unsigned") ? TextForm::kUnsigned
                                               : TextForm::kSigned;
  }
  if (t == "decimal") return TextForm::kDecimal;
  if (t == "date") return TextForm::kDate;
  if (t == "datetime") return TextForm::kDateTime;
  if (t == "time") return TextForm::kTime;
  if (t == "year") return TextForm::kYear;
  if (t == "varchar" || t == "varbinary" || t == "tinytext" || t == "text" ||
      t == "mediumtext" || t == "longtext" || t == "tinyblob" || t == "blob" ||
      t == "mediumblob" || t == "longblob" || t == "json") {
    // The connection is utf8mb4: these arrive unconverted.
    const std::string& cs = c.charset;
    if (cs.empty() || cs == "binary" || cs == "utf8mb4" || cs == "utf8mb3" ||
        cs == "utf8") {
      return TextForm::kBytes;
    }
  }
  return TextForm::kNone;
}

BookkeepingColumns BookkeepingOf(const MessageTable& table, bool row_images) {
  BookkeepingColumns b;
  b.column_count = static_cast<uint32_t>(table.columns.size());
  for (uint32_t i = 0; i < table.columns.size(); ++i) {
    const std::string& name = table.columns[i].name;
    const bool is_unsigned = absl::StrContains(
        absl::AsciiStrToLower(table.columns[i].column_type), "unsigned");
    if (absl::EqualsIgnoreCase(name, "id")) {
      b.id = i;
      b.id_unsigned = is_unsigned;
    }
    if (absl::EqualsIgnoreCase(name, "priority")) {
      b.priority = i;
      b.priority_unsigned = is_unsigned;
    }
    if (absl::EqualsIgnoreCase(name, "time_next")) b.time_next = i;
    if (absl::EqualsIgnoreCase(name, "time_acked")) b.time_acked = i;
    if (absl::EqualsIgnoreCase(name, "epoch")) b.epoch = i;
  }
  // msgq_order_by and msgq_concurrency_by: a due row must be read by a poll
  // (which checks headship, or reads no more than a key's room), so an
  // image would only be rendered to be dropped.
  if (!row_images || !table.settings.order_by.empty() ||
      table.settings.concurrency > 0) {
    return b;
  }
  auto rendered = [&](const std::string& name)
      -> std::optional<BookkeepingColumns::Rendered> {
    for (uint32_t i = 0; i < table.columns.size(); ++i) {
      if (!absl::EqualsIgnoreCase(table.columns[i].name, name)) continue;
      const binlog::TextForm form = TextFormOf(table.columns[i]);
      if (form == binlog::TextForm::kNone) return std::nullopt;
      return BookkeepingColumns::Rendered{i, form};
    }
    return std::nullopt;
  };
  std::vector<BookkeepingColumns::Rendered> streamed;
  for (const Column& c : table.streamed) {
    std::optional<BookkeepingColumns::Rendered> r = rendered(c.name);
    if (!r.has_value()) return b;
    streamed.push_back(*r);
  }
  if (!table.settings.fair_by.empty()) {
    b.fair = rendered(table.settings.fair_by);
    if (!b.fair.has_value()) return b;
  }
  if (table.has_time_created) {
    for (uint32_t i = 0; i < table.columns.size(); ++i) {
      if (absl::EqualsIgnoreCase(table.columns[i].name, "time_created")) {
        b.time_created = i;
      }
    }
  }
  b.streamed = std::move(streamed);
  return b;
}

}  // namespace msgq
