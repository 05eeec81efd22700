// Pieces shared by the msgq subcommands (internal to the tool): the flags
// every command takes, error reporting and exit codes.
//
// Example:
//   CommonFlags common{.server = env.default_server};
//   FlagParser flags;
//   AddCommonFlags(flags, &common);
//   ...
//   if (!tables.ok()) return ReportError(err, "tables", common,
//   tables.status());
//
// Thread-compatible.
#ifndef MSGQ_CLIENT_CLI_COMMON_H_
#define MSGQ_CLIENT_CLI_COMMON_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/cli.h"
#include "client/cli_flags.h"
#include "client/client.h"
#include "client/credentials.h"

namespace msgq {

struct CommonFlags {
  std::string server = "127.0.0.1:15999";
  absl::Duration timeout = absl::Seconds(10);
  // TLS and credentials (client/credentials.h).
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string token_file;
};

// Declares --server, --timeout, --tls_ca, --tls_cert, --tls_key and
// --token_file.
void AddCommonFlags(FlagParser& flags, CommonFlags* common);

// The ChannelSecurity of the flags: the token from --token_file, else from
// $MSGQ_TOKEN. INVALID_ARGUMENT when the token file cannot be read.
absl::StatusOr<ChannelSecurity> SecurityOf(const CommonFlags& common);

// A ServerChannel per server of --server, with the flags' security (for a
// Subscriber); the errors of SecurityOf and NewSecureChannel.
absl::StatusOr<std::vector<ServerChannel>> ChannelsFor(
    const CommonFlags& common);

// A Client of `server` with the flags' timeout and security; the errors of
// SecurityOf and NewSecureChannel.
absl::StatusOr<std::unique_ptr<Client>> ConnectTo(const std::string& server,
                                                  const CommonFlags& common);

// The servers of --server: a comma-separated list ("a:1,b:2"), empty entries
// dropped.
std::vector<std::string> ServerList(const CommonFlags& common);

// A Client of the one server of --server. Returns INVALID_ARGUMENT for an
// empty --server, and for a list of several: commands that take message ids
// (ack, nack, extend, redrive) or page through one table's dead messages
// must talk to the one server the messages live on, because ids are unique
// only within a shard (id 5 acked on another shard is another message).
absl::StatusOr<std::unique_ptr<Client>> ConnectOne(const CommonFlags& common);

// kExitUnavailable, kExitNotFound, kExitUsage (INVALID_ARGUMENT raised by the
// tool itself is reported by the caller) or kExitError.
int ExitCodeFor(const absl::Status& status);

// Writes "msgq COMMAND: <explanation>" to `err` and returns ExitCodeFor().
// UNAVAILABLE and DEADLINE_EXCEEDED name the server; other codes show the
// server's code and message.
int ReportError(std::ostream& err, absl::string_view command,
                const CommonFlags& common, const absl::Status& status);

// Writes "msgq COMMAND: MESSAGE" and a hint to `err`; returns kExitUsage.
int ReportUsageError(std::ostream& err, absl::string_view command,
                     absl::string_view message);

// The subcommands; `args` excludes the command name.
int RunTables(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env);
int RunTail(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err, const CliEnvironment& env);
int RunAck(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err, const CliEnvironment& env);
// cli_pause.cc
int RunPause(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err, const CliEnvironment& env);
int RunResume(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env);
// cli_stats.cc
int RunStats(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err, const CliEnvironment& env);
// cli_failure.cc
int RunNack(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err, const CliEnvironment& env);
int RunExtend(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env);
int RunDead(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err, const CliEnvironment& env);
int RunRedrive(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err, const CliEnvironment& env);

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLI_COMMON_H_
