#include "engine/concurrency_column.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace msgq {
namespace {

bool IsIntegerType(const std::string& type) {
  return type == "tinyint" || type == "smallint" || type == "mediumint" ||
         type == "int" || type == "bigint";
}

bool IsOwnColumn(absl::string_view name) {
  for (const char* n : {"id", "priority", "time_next", "epoch", "time_acked",
                        "time_dead", "time_created", "last_error"}) {
    if (absl::EqualsIgnoreCase(name, n)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<ConcurrencyKey> ResolveConcurrencyKey(
    const MessageTable& table) {
  const std::string where =
      absl::StrCat("table `", table.keyspace, "`.`", table.name, "`");
  const std::string& name = table.settings.concurrency_by;
  const Column* c = nullptr;
  for (const Column& col : table.columns) {
    if (absl::EqualsIgnoreCase(col.name, name)) c = &col;
  }
  if (c == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": msgq_concurrency_by names column ", name,
                     " which the table does not have"));
  }
  if (IsOwnColumn(c->name)) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": msgq_concurrency_by names ", c->name,
        ", one of msgq's own columns; name a column of yours (the key)"));
  }
  const std::string type = absl::AsciiStrToLower(c->data_type);
  ConcurrencyKey key;
  key.column = c->name;
  if (IsIntegerType(type)) {
    key.kind =
        absl::StrContains(absl::AsciiStrToLower(c->column_type), "unsigned")
            ? IdKind::kUnsignedInteger
            : IdKind::kSignedInteger;
  } else if (type == "binary" || type == "varbinary") {
    key.kind = IdKind::kBinary;
  } else if (type == "char" || type == "varchar") {
    key.kind = IdKind::kText;
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": msgq_concurrency_by column ", c->name, " is ", c->column_type,
        "; msgq needs an integer, char, varchar, binary or varbinary column "
        "(one that an index holds whole)"));
  }
  return key;
}

}  // namespace msgq
