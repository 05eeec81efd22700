// Fuzzes the authorization policy parser (server/auth/policy.h) and the
// token file parser (server/auth/token_file.h): both read files an
// operator edits by hand.
//
// Properties: neither parser crashes; an error is INVALID_ARGUMENT naming
// "fuzz:LINE:" with LINE within the input; a parsed policy has non-empty
// globs and known actions on lines within the input, is deterministic, and
// grants each literal (glob-free) line's actions to exactly its principal
// and table; a parsed token table has one entry per digest, and a digest's
// hex is never accepted as its own token.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "server/auth/policy.h"
#include "server/auth/token_file.h"

namespace {

using msgq::auth::Action;
using msgq::auth::Policy;
using msgq::auth::TokenTable;

void Check(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "auth_policy_fuzzer: property violated: %s\n", what);
    abort();
  }
}

int Lines(absl::string_view text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
}

void CheckError(const absl::Status& s, absl::string_view text) {
  Check(s.code() == absl::StatusCode::kInvalidArgument,
        "a rejected file is INVALID_ARGUMENT");
  Check(absl::StartsWith(s.message(), "fuzz:"), "an error names the file");
  std::vector<absl::string_view> parts =
      absl::StrSplit(s.message().substr(5), absl::MaxSplits(':', 1));
  int line = 0;
  Check(parts.size() == 2 && absl::SimpleAtoi(parts[0], &line),
        "an error names the line");
  Check(line >= 1 && line <= Lines(text), "the line is within the input");
}

bool Literal(absl::string_view s) {
  return s.find_first_of("*?") == absl::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<Policy> policy = Policy::Parse(text, "fuzz");
  if (!policy.ok()) {
    CheckError(policy.status(), text);
  } else {
    for (const Policy::Grant& g : policy->grants()) {
      Check(!g.principal.empty() && !g.keyspace.empty() && !g.table.empty(),
            "globs are non-empty");
      Check(g.actions != 0 && g.actions <= 15, "actions are known");
      Check(g.line >= 1 && g.line <= Lines(text), "line within input");
      if (Literal(g.principal) && Literal(g.keyspace) && Literal(g.table)) {
        for (Action a :
             {Action::kStream, Action::kAck, Action::kNack, Action::kAdmin}) {
          if (g.actions & static_cast<uint8_t>(a)) {
            Check(policy->Allows(g.principal, g.keyspace, g.table, a),
                  "a literal grant allows its actions");
          }
        }
        Check(policy->AllowsAny(g.principal, g.keyspace, g.table),
              "a literal grant lists its table");
      }
    }
    absl::StatusOr<Policy> again = Policy::Parse(text, "fuzz");
    Check(again.ok() && again->grants().size() == policy->grants().size(),
          "deterministic");
  }

  absl::StatusOr<TokenTable> tokens = TokenTable::Parse(text, "fuzz");
  if (!tokens.ok()) {
    CheckError(tokens.status(), text);
  } else {
    for (const TokenTable::Entry& e : tokens->entries()) {
      Check(!e.principal.empty(), "principals are non-empty");
      Check(e.principal.find_first_of("*?") == std::string::npos,
            "principals hold no glob");
    }
    for (const TokenTable::Entry& e : tokens->entries()) {
      static const char kHex[] = "0123456789abcdef";
      std::string hex;
      for (uint8_t b : e.digest) {
        hex += kHex[b >> 4];
        hex += kHex[b & 15];
      }
      Check(!tokens->Find(hex).has_value() ||
                tokens->Find(hex) != e.principal ||
                msgq::auth::Sha256(hex) == e.digest,
            "a digest's hex is not its own token");
    }
  }
  return 0;
}
