#include "client/cli_common.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace msgq {

void AddCommonFlags(FlagParser& flags, CommonFlags* common) {
  flags.AddString("server", &common->server, "HOST:PORT",
                  "msgqd to talk to; tables and tail take a list A,B,... "
                  "($MSGQ_SERVER overrides the default)");
  flags.AddDuration("timeout", &common->timeout,
                    "deadline of each call to the server");
}

std::vector<std::string> ServerList(const CommonFlags& common) {
  return absl::StrSplit(common.server, ',', absl::SkipEmpty());
}

absl::StatusOr<std::unique_ptr<Client>> ConnectOne(const CommonFlags& common) {
  if (ServerList(common).size() > 1) {
    return absl::InvalidArgumentError(
        "this command takes one --server, the one the messages came from: "
        "ids are unique only within a shard, so the same id on another "
        "server is another message");
  }
  return Client::Connect(common.server,
                         ClientOptions{.timeout = common.timeout});
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    default:
      return kExitError;
  }
}

int ReportError(std::ostream& err, absl::string_view command,
                const CommonFlags& common, const absl::Status& status) {
  std::string text;
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      text = absl::StrCat("server ", common.server,
                          " is unavailable: ", status.message());
      break;
    case absl::StatusCode::kDeadlineExceeded:
      text = absl::StrCat("server ", common.server, " did not answer within ",
                          absl::FormatDuration(common.timeout), ": ",
                          status.message());
      break;
    default:
      text = absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                          status.message());
  }
  err << "msgq " << command << ": " << text << "\n";
  return ExitCodeFor(status);
}

int ReportUsageError(std::ostream& err, absl::string_view command,
                     absl::string_view message) {
  err << "msgq " << command << ": " << message << "\n"
      << "Run 'msgq " << command << " --help' for usage.\n";
  return kExitUsage;
}

}  // namespace msgq
