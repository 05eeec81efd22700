#include "engine/sql/sql_literal.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace msgq {
namespace {

constexpr size_t kMaxIdInMessage = 64;

const char* KindName(IdKind kind) {
  switch (kind) {
    case IdKind::kSignedInteger:
      return "a signed integer";
    case IdKind::kUnsignedInteger:
      return "an unsigned integer";
    case IdKind::kBinary:
      return "binary";
    case IdKind::kText:
      return "text (UTF-8)";
  }
  return "unknown";
}

void AppendHex(absl::string_view bytes, std::string* out) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  const size_t start = out->size();
  out->resize(start + 2 * bytes.size());
  char* p = out->data() + start;
  for (unsigned char c : bytes) {
    *p++ = kDigits[c >> 4];
    *p++ = kDigits[c & 0xF];
  }
}

}  // namespace

absl::Status AppendIdLiteral(IdKind kind, absl::string_view id,
                             std::string* out) {
  bool valid = false;
  switch (kind) {
    case IdKind::kSignedInteger:
    case IdKind::kUnsignedInteger:
      valid = IsCanonicalInteger(kind, id);
      if (valid) out->append(id.data(), id.size());
      break;
    case IdKind::kBinary:
      valid = true;
      out->append("X'");
      AppendHex(id, out);
      out->push_back('\'');
      break;
    case IdKind::kText:
      valid = IsValidUtf8(id);
      if (valid) {
        out->append("_utf8mb4 X'");
        AppendHex(id, out);
        out->push_back('\'');
      }
      break;
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "id \"", absl::CHexEscape(id.substr(0, kMaxIdInMessage)),
      id.size() > kMaxIdInMessage ? "\"... (" : "\" (", id.size(),
      " bytes) is not a valid id of an id column that is ", KindName(kind)));
}

absl::StatusOr<std::string> IdLiteral(IdKind kind, absl::string_view id) {
  std::string out;
  if (absl::Status s = AppendIdLiteral(kind, id, &out); !s.ok()) return s;
  return out;
}

std::string NowOperand(std::optional<int64_t> now_ns) {
  if (!now_ns.has_value()) return kMysqlNowNs;
  return absl::StrCat(*now_ns);
}

}  // namespace msgq
