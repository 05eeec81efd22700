// Bearer tokens (--auth_tokens_file): the SHA-256 of each token and the
// principal it authenticates.
//
// The file is text, one token per line; '#' starts a comment, blank lines
// are ignored:
//
//   # sha256(token) in hex                                          principal
//   9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 billing
//
// Make a line with:  printf %s "$TOKEN" | sha256sum | cut -d' ' -f1
// The file holds no token, only digests: reading it does not let anyone in.
//
// Thread-safety: TokenTable is immutable after Parse and safe to share.
#ifndef MSGQ_SERVER_AUTH_TOKEN_FILE_H_
#define MSGQ_SERVER_AUTH_TOKEN_FILE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq::auth {

using Digest = std::array<uint8_t, 32>;

// SHA-256 of `data` (OpenSSL's libcrypto).
Digest Sha256(absl::string_view data);

class TokenTable {
 public:
  struct Entry {
    Digest digest;
    std::string principal;
  };

  // Parses a token file's text; `file` names it in errors. Errors are
  // INVALID_ARGUMENT "FILE:LINE: what is wrong" (never quoting the line,
  // which may hold a pasted token): a line without exactly two fields, a
  // digest that is not 64 hex digits, the principal "*" (reserved for
  // policy globs) or one with a glob character, a digest listed twice.
  static absl::StatusOr<TokenTable> Parse(absl::string_view text,
                                          absl::string_view file);

  // The principal of `token`, or nullopt. Hashes the token and compares the
  // digest with every entry in constant time (no early exit, no
  // data-dependent branch per byte), so timing tells nothing about how
  // close a guess came.
  std::optional<std::string> Find(absl::string_view token) const;
  // The principal of the token whose digest is `digest`, compared as Find
  // does.
  std::optional<std::string> FindDigest(const Digest& digest) const;

  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_TOKEN_FILE_H_
