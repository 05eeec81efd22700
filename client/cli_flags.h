// FlagParser parses the command-line flags of one msgq subcommand.
//
// Accepted forms: --name=value, --name value, and for booleans --name,
// --name=true|false. "-h" and "--help" set help(); "--" ends the flags.
// Anything else is a positional argument, in order. Flags may appear before,
// between or after positional arguments.
//
// Example:
//   std::string keyspace;
//   bool ack = false;
//   FlagParser flags;
//   flags.AddString("keyspace", &keyspace, "K", "keyspace (database) of
//   TABLE"); flags.AddBool("ack", &ack, "acknowledge printed messages");
//   absl::StatusOr<std::vector<std::string>> args = flags.Parse(argv_rest);
//   if (!args.ok()) { /* print args.status().message() and usage */ }
//
// Thread-compatible. The destinations must outlive the parser.
#ifndef MSGQ_CLIENT_CLI_FLAGS_H_
#define MSGQ_CLIENT_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace msgq {

class FlagParser {
 public:
  // Declare a flag named `name` (without dashes); its current value is the
  // default shown in Usage(). `value_name` names the argument in Usage().
  void AddString(std::string name, std::string* value, std::string value_name,
                 std::string help);
  void AddBool(std::string name, bool* value, std::string help);
  // Accepts a non-negative integer.
  void AddCount(std::string name, int64_t* value, std::string value_name,
                std::string help);
  // Accepts absl::ParseDuration syntax ("500ms", "10s"); must be positive.
  void AddDuration(std::string name, absl::Duration* value, std::string help);
  // Accepts a number of seconds ("1.5") or absl::ParseDuration syntax; must
  // not be negative. Left nullopt when the flag is absent.
  void AddSeconds(std::string name, std::optional<absl::Duration>* value,
                  std::string help);

  // Parses `args` (without the program and command names) into the declared
  // destinations and returns the positional arguments. With
  // `stop_at_positional`, parsing stops at the first positional argument,
  // which is returned with everything after it untouched.
  // Returns INVALID_ARGUMENT, naming the flag, for an unknown flag, a missing
  // value or a value of the wrong form. Destinations parsed before the error
  // keep their new values.
  absl::StatusOr<std::vector<std::string>> Parse(
      absl::Span<const std::string> args, bool stop_at_positional = false);

  // True when -h or --help was seen.
  bool help() const { return help_; }

  // One line per flag: "  --name=VALUE   help (default: ...)".
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty for booleans
    std::string help;
    std::string default_text;
    std::function<absl::Status(absl::string_view)> set;
  };

  const Flag* Find(absl::string_view name) const;

  std::vector<Flag> flags_;
  bool help_ = false;
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLI_FLAGS_H_
