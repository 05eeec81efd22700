#include "engine/message_table.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/utf8.h"
#include "engine/concurrency_column.h"
#include "engine/directives.h"
#include "engine/status_macros.h"

namespace msgq {
namespace {

constexpr const char* kRequiredColumns[] = {"id", "priority", "time_next",
                                            "epoch", "time_acked"};

const Column* FindColumn(const std::vector<Column>& columns,
                         absl::string_view name) {
  for (const Column& c : columns) {
    if (absl::EqualsIgnoreCase(c.name, name)) return &c;
  }
  return nullptr;
}

bool IsBookkeeping(absl::string_view name) {
  for (const char* n :
       {"priority", "time_next", "epoch", "time_acked", "time_dead"}) {
    if (absl::EqualsIgnoreCase(name, n)) return true;
  }
  return false;
}

bool IsIntegerType(const std::string& type) {
  return type == "tinyint" || type == "smallint" || type == "mediumint" ||
         type == "int" || type == "bigint";
}

// How many characters of a reason fit in a last_error column (text types
// are sized in bytes: at most 4 per utf8mb4 character); 0 when the type is
// not text.
int LastErrorChars(const Column& c) {
  const std::string type = absl::AsciiStrToLower(c.data_type);
  if (type == "char" || type == "varchar") {
    const std::string full = absl::AsciiStrToLower(c.column_type);
    const size_t open = full.find('(');
    const size_t close = full.find(')', open);
    int n = 0;
    if (open == std::string::npos || close == std::string::npos ||
        !absl::SimpleAtoi(full.substr(open + 1, close - open - 1), &n)) {
      return 0;
    }
    return std::clamp(n, 1, 65535);
  }
  if (type == "tinytext") return 63;
  if (type == "text") return 16383;
  if (type == "mediumtext" || type == "longtext") return 65535;
  return 0;
}

IdKind KindOf(const Column& id) {
  const std::string type = absl::AsciiStrToLower(id.data_type);
  if (IsIntegerType(type)) {
    return absl::StrContains(absl::AsciiStrToLower(id.column_type), "unsigned")
               ? IdKind::kUnsignedInteger
               : IdKind::kSignedInteger;
  }
  if (type == "binary" || type == "varbinary" || absl::EndsWith(type, "blob")) {
    return IdKind::kBinary;
  }
  return IdKind::kText;
}

// msgq's optional columns: their types, and the directives that need them.
absl::Status CheckOptionalColumns(const std::string& where,
                                  MessageTable& table) {
  for (const char* col : {"time_created", "time_dead"}) {
    const Column* c = FindColumn(table.columns, col);
    if (c == nullptr) continue;
    if (!IsIntegerType(absl::AsciiStrToLower(c->data_type))) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": column ", col, " is ", c->column_type,
                       "; msgq needs an integer (Unix ns, e.g. bigint)"));
    }
  }
  table.has_time_created = FindColumn(table.columns, "time_created") != nullptr;
  table.has_time_dead = FindColumn(table.columns, "time_dead") != nullptr;
  if (const Column* c = FindColumn(table.columns, "last_error"); c != nullptr) {
    table.last_error_chars = LastErrorChars(*c);
    if (table.last_error_chars == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": column last_error is ", c->column_type,
                       "; msgq needs char, varchar or text"));
    }
  }
  if (table.settings.max_age > absl::ZeroDuration() &&
      !table.has_time_created) {
    return absl::FailedPreconditionError(absl::StrCat(
        where,
        ": msgq_max_age needs a time_created column (bigint, Unix ns "
        "of the first enqueue)"));
  }
  if (table.settings.dead_retention > absl::ZeroDuration() &&
      !table.has_time_dead) {
    return absl::FailedPreconditionError(absl::StrCat(
        where,
        ": msgq_dead_retention needs a time_dead column (bigint, Unix "
        "ns; msgq sets it when a message dies)"));
  }
  return absl::OkStatus();
}

// msgq_dedup_window: a text or binary dedup_key column whose own unique
// index makes MySQL refuse a second row with the same key, and
// time_created, from which the window counts.
absl::Status CheckDedupKey(const std::string& where,
                           const MessageTable& table) {
  if (table.settings.dedup_window == absl::ZeroDuration()) {
    return absl::OkStatus();
  }
  constexpr absl::string_view kFix =
      "; add UNIQUE KEY dedup_key (dedup_key) so that MySQL refuses a second "
      "row with the same key";
  const Column* c = FindColumn(table.columns, "dedup_key");
  if (c == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        where,
        ": msgq_dedup_window needs a dedup_key column (varchar or "
        "varbinary, NULL = not deduplicated) with a unique index of its own"));
  }
  const std::string type = absl::AsciiStrToLower(c->data_type);
  if (type != "char" && type != "varchar" && type != "binary" &&
      type != "varbinary") {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": column dedup_key is ", c->column_type,
                     "; msgq needs char, varchar, binary or varbinary"));
  }
  if (c->key == "pri") {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": column dedup_key is in the primary key", kFix));
  }
  if (c->key == "mul") {
    return absl::FailedPreconditionError(
        absl::StrCat(where,
                     ": column dedup_key has no unique index of its own (its "
                     "index is not unique or spans more columns)",
                     kFix));
  }
  if (c->key != "uni") {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": column dedup_key has no unique index", kFix));
  }
  if (!table.has_time_created) {
    return absl::FailedPreconditionError(absl::StrCat(
        where,
        ": msgq_dedup_window needs a time_created column (bigint, Unix ns "
        "of the enqueue; the window counts from it)"));
  }
  return absl::OkStatus();
}

// The column a key directive (msgq_order_by, msgq_fair_by) names: one of
// the table's, not one of msgq's own. `what` is what the key stands for.
absl::StatusOr<const Column*> KeyColumn(const std::string& where,
                                        const MessageTable& table,
                                        absl::string_view directive,
                                        const std::string& name,
                                        absl::string_view what) {
  const Column* c = FindColumn(table.columns, name);
  if (c == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": ", directive, " names column ", name,
                     " which the table does not have"));
  }
  if (IsBookkeeping(c->name) || absl::EqualsIgnoreCase(c->name, "id")) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": ", directive, " names ", c->name,
        ", one of msgq's own columns; name a column of yours (", what, ")"));
  }
  return c;
}

// msgq_order_by, msgq_fair_by and msgq_concurrency_by: their columns, as
// the table spells them.
absl::Status ResolveKeys(const std::string& where, MessageTable& table) {
  TableSettings& settings = table.settings;
  if (!settings.order_by.empty()) {
    ASSIGN_OR_RETURN(const Column* c, KeyColumn(where, table, "msgq_order_by",
                                                settings.order_by, "the key"));
    settings.order_by = c->name;
  }
  if (!settings.fair_by.empty()) {
    ASSIGN_OR_RETURN(const Column* c,
                     KeyColumn(where, table, "msgq_fair_by", settings.fair_by,
                               "the tenant"));
    const std::string type = absl::AsciiStrToLower(c->data_type);
    if (!IsIntegerType(type) && type != "char" && type != "varchar" &&
        type != "binary" && type != "varbinary") {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": msgq_fair_by column ", c->name, " is ", c->column_type,
          "; msgq needs an integer, char, varchar, binary or varbinary "
          "column (one that an index holds whole)"));
    }
    settings.fair_by = c->name;
    table.fair_kind = KindOf(*c);
  }
  if (settings.concurrency > 0) {
    ASSIGN_OR_RETURN(const ConcurrencyKey key, ResolveConcurrencyKey(table));
    settings.concurrency_by = key.column;
  }
  return absl::OkStatus();
}

// The streamed columns: vt_message_cols', or id and every column of yours.
absl::Status ChooseStreamed(const std::string& where, MessageTable& table) {
  const Column* id = FindColumn(table.columns, "id");
  if (!table.settings.message_cols.empty()) {
    for (const std::string& col : table.settings.message_cols) {
      const Column* c = FindColumn(table.columns, col);
      if (c == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(where, ": vt_message_cols names column ", col,
                         " which the table does not have"));
      }
      table.streamed.push_back(*c);
    }
    return absl::OkStatus();
  }
  table.streamed.push_back(*id);
  for (const Column& c : table.columns) {
    if (&c == id || IsBookkeeping(c.name)) continue;
    table.streamed.push_back(c);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MessageTable> BuildMessageTable(absl::string_view keyspace,
                                               absl::string_view name,
                                               absl::string_view comment,
                                               std::vector<Column> columns) {
  const std::string where = absl::StrCat("table `", keyspace, "`.`", name, "`");
  absl::StatusOr<TableSettings> settings = ParseDirectives(comment);
  if (!settings.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": ", settings.status().message()));
  }
  std::vector<std::string> missing;
  for (const char* required : kRequiredColumns) {
    if (FindColumn(columns, required) == nullptr) missing.push_back(required);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": missing required column", missing.size() > 1 ? "s " : " ",
        absl::StrJoin(missing, ", ")));
  }
  MessageTable table;
  table.keyspace = std::string(keyspace);
  table.name = std::string(name);
  table.settings = *std::move(settings);
  table.columns = std::move(columns);
  const Column* id = FindColumn(table.columns, "id");
  table.id_kind = KindOf(*id);
  table.id_in_primary_key = id->key == "pri";
  table.primary_key_is_id =
      table.id_in_primary_key &&
      absl::c_count_if(table.columns,
                       [](const Column& c) { return c.key == "pri"; }) == 1;
  RETURN_IF_ERROR(CheckOptionalColumns(where, table));
  RETURN_IF_ERROR(CheckDedupKey(where, table));
  RETURN_IF_ERROR(ResolveKeys(where, table));
  RETURN_IF_ERROR(ChooseStreamed(where, table));
  return table;
}

namespace {

// Digits with an optional leading '-': no spaces, no '+', nothing else.
bool IsPlainInteger(absl::string_view s, bool allow_minus) {
  if (allow_minus && !s.empty() && s[0] == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool IsCanonicalInteger(IdKind kind, absl::string_view s) {
  if (kind != IdKind::kSignedInteger && kind != IdKind::kUnsignedInteger) {
    return false;
  }
  absl::string_view digits = s;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) {
    if (kind == IdKind::kUnsignedInteger) return false;
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.size() > 20) return false;
  if (digits[0] == '0' && (digits.size() > 1 || negative)) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  if (kind == IdKind::kUnsignedInteger) {
    uint64_t v = 0;
    return absl::SimpleAtoi(digits, &v);
  }
  int64_t v = 0;
  return absl::SimpleAtoi(s, &v);
}

absl::StatusOr<std::string> CanonicalId(IdKind kind, absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("empty message id");
  switch (kind) {
    case IdKind::kSignedInteger: {
      int64_t v;
      if (!IsPlainInteger(id, true) || !absl::SimpleAtoi(id, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("malformed message id \"", absl::CHexEscape(id),
                         "\": the id column is an integer"));
      }
      return absl::StrCat(v);
    }
    case IdKind::kUnsignedInteger: {
      uint64_t v;
      if (!IsPlainInteger(id, false) || !absl::SimpleAtoi(id, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("malformed message id \"", absl::CHexEscape(id),
                         "\": the id column is an unsigned integer"));
      }
      return absl::StrCat(v);
    }
    case IdKind::kText:
      if (!IsValidUtf8(id)) {
        return absl::InvalidArgumentError(
            absl::StrCat("malformed message id \"", absl::CHexEscape(id),
                         "\": the id column is text and the id is not UTF-8"));
      }
      return std::string(id);
    case IdKind::kBinary:
      return std::string(id);
  }
  return std::string(id);
}

absl::Status CanonicalizeIds(IdKind kind, std::vector<std::string>& ids) {
  for (std::string& id : ids) {
    absl::StatusOr<std::string> canonical = CanonicalId(kind, id);
    if (!canonical.ok()) return canonical.status();
    id = *std::move(canonical);
  }
  return absl::OkStatus();
}

}  // namespace msgq
