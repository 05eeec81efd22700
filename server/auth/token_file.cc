#include "server/auth/token_file.h"

#include <openssl/sha.h>

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/auth/config_lines.h"

namespace msgq::auth {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseDigest(absl::string_view hex, Digest* out) {
  if (hex.size() != 2 * out->size()) return false;
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

Digest Sha256(absl::string_view data) {
  Digest out;
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         out.data());
  return out;
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text,
                                             absl::string_view file) {
  TokenTable table;
  absl::flat_hash_set<std::string> seen;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    const std::vector<absl::string_view> fields = ConfigFields(line);
    if (fields.empty()) continue;
    if (fields.size() != 2) {
      return LineError(file, number,
                       absl::StrCat("expected 'sha256-hex principal', got ",
                                    fields.size(), " fields"));
    }
    Entry entry;
    if (!ParseDigest(fields[0], &entry.digest)) {
      return LineError(file, number,
                       "the first field must be the token's SHA-256 as 64 hex "
                       "digits (printf %s \"$TOKEN\" | sha256sum), not the "
                       "token itself");
    }
    if (fields[1].find_first_of("*?") != absl::string_view::npos) {
      return LineError(file, number,
                       "a principal may not contain '*' or '?' (policy globs)");
    }
    const std::string key(entry.digest.begin(), entry.digest.end());
    if (!seen.insert(key).second) {
      return LineError(file, number, "this digest is listed twice");
    }
    entry.principal = std::string(fields[1]);
    table.entries_.push_back(std::move(entry));
  }
  return table;
}

std::optional<std::string> TokenTable::Find(absl::string_view token) const {
  return FindDigest(Sha256(token));
}

std::optional<std::string> TokenTable::FindDigest(const Digest& digest) const {
  const Entry* found = nullptr;
  for (const Entry& e : entries_) {
    uint8_t diff = 0;
    for (size_t i = 0; i < digest.size(); ++i) diff |= e.digest[i] ^ digest[i];
    // Digests are unique, so at most one entry matches; the select keeps
    // the loop free of a data-dependent early exit.
    found = diff == 0 ? &e : found;
  }
  if (found == nullptr) return std::nullopt;
  return found->principal;
}

}  // namespace msgq::auth
