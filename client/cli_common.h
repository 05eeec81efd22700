// Pieces shared by the msgq subcommands (internal to the tool): the flags
// every command takes, the preamble every command runs (CliCommand: flags,
// --help, connecting, the table named), error reporting and exit codes.
//
// Example:
//   CliCommand cmd("ack", kAckUsage, CliCommand::Target::kTable, env, out,
//                  err);
//   if (std::optional<int> done = cmd.Parse(args)) return *done;
//   if (cmd.positional().size() < 2) return cmd.UsageError("missing ID");
//   std::unique_ptr<Client> client = cmd.ConnectOne();
//   if (client == nullptr) return kExitUsage;
//   absl::StatusOr<int64_t> acked = client->Ack(cmd.table(), ids);
//   if (!acked.ok()) return cmd.Error(acked.status());
//
// Thread-compatible.
#ifndef MSGQ_CLIENT_CLI_COMMON_H_
#define MSGQ_CLIENT_CLI_COMMON_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/cli.h"
#include "client/cli_flags.h"
#include "msgq/client.h"
#include "msgq/credentials.h"
#include "msgq/table_ref.h"

namespace msgq {

struct CommonFlags {
  std::string server = "127.0.0.1:15999";
  absl::Duration timeout = absl::Seconds(10);
  // TLS and credentials (msgq/credentials.h).
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  std::string token_file;
};

// Declares --server, --timeout, --tls_ca, --tls_cert, --tls_key,
// --tls_server_name and --token_file.
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

// The preamble of one subcommand: declares the common flags (and, for a
// command on one table, --keyspace) before the command's own, parses the
// arguments, answers --help, and connects; errors are reported as
// "msgq NAME: ..." on `err` (see ReportError, ReportUsageError).
// Not copyable: the flags point into it.
class CliCommand {
 public:
  // kTable: the command acts on the table named by its first positional
  // argument and takes --keyspace.
  enum class Target { kServers, kTable };

  // `out` and `err` must outlive the command; --server defaults to
  // env.default_server. `usage` is printed before the flags by --help.
  CliCommand(absl::string_view name, absl::string_view usage, Target target,
             const CliEnvironment& env, std::ostream& out, std::ostream& err);
  CliCommand(const CliCommand&) = delete;
  CliCommand& operator=(const CliCommand&) = delete;

  // For the command's own flags, declared before Parse.
  FlagParser& flags() { return flags_; }

  // Parses `args`. The exit code when the command is done without running:
  // kExitUsage after reporting a malformed flag, kExitOk after printing
  // the usage for --help; nullopt when it is to run.
  std::optional<int> Parse(absl::Span<const std::string> args);

  // After Parse: the flags every command takes, and the arguments that are
  // not flags.
  const CommonFlags& common() const { return common_; }
  const std::vector<std::string>& positional() const { return positional_; }
  // The table of a kTable command: --keyspace and positional()[index],
  // which must exist.
  TableRef table(size_t index = 0) const;
  // --keyspace of a kTable command.
  const std::string& keyspace() const { return keyspace_; }

  // ConnectOne(common()); null after reporting why as a usage error (exit
  // with kExitUsage).
  std::unique_ptr<Client> ConnectOne();

  // ReportUsageError and ReportError for this command.
  int UsageError(absl::string_view message) const;
  int Error(const absl::Status& status) const;

 private:
  const std::string name_;
  const std::string usage_;
  std::ostream& out_;
  std::ostream& err_;
  CommonFlags common_;
  std::string keyspace_;
  FlagParser flags_;
  std::vector<std::string> positional_;
};

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
// cli_groups.cc
int RunGroups(absl::Span<const std::string> args, std::ostream& out,
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
