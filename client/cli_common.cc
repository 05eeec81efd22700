#include "client/cli_common.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli_tls_diagnosis.h"

namespace msgq {

void AddCommonFlags(FlagParser& flags, CommonFlags* common) {
  flags.AddString("server", &common->server, "HOST:PORT",
                  "msgqd to talk to; tables and tail take a list A,B,... "
                  "($MSGQ_SERVER overrides the default)");
  flags.AddDuration("timeout", &common->timeout,
                    "deadline of each call to the server");
  flags.AddString("tls_ca", &common->tls_ca, "PEM",
                  "CA that signed the server's certificate; turns TLS on");
  flags.AddString("tls_cert", &common->tls_cert, "PEM",
                  "client certificate (mTLS; with --tls_key and --tls_ca)");
  flags.AddString("tls_key", &common->tls_key, "PEM", "key of --tls_cert");
  flags.AddString("tls_server_name", &common->tls_server_name, "NAME",
                  "name to check in the server's certificate instead of "
                  "--server's host (with --tls_ca)");
  flags.AddString("token_file", &common->token_file, "FILE",
                  "file holding the bearer token sent to the server "
                  "($MSGQ_TOKEN when not given)");
}

absl::StatusOr<ChannelSecurity> SecurityOf(const CommonFlags& common) {
  ChannelSecurity security{.tls_ca_file = common.tls_ca,
                           .tls_cert_file = common.tls_cert,
                           .tls_key_file = common.tls_key,
                           .tls_server_name = common.tls_server_name};
  if (!common.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(common.token_file);
    if (!token.ok()) return token.status();
    security.token = *std::move(token);
  } else if (const char* env = std::getenv("MSGQ_TOKEN"); env != nullptr) {
    security.token = std::string(absl::StripAsciiWhitespace(env));
  }
  return security;
}

absl::StatusOr<std::vector<ServerChannel>> ChannelsFor(
    const CommonFlags& common) {
  absl::StatusOr<ChannelSecurity> security = SecurityOf(common);
  if (!security.ok()) return security.status();
  if (security->empty()) return ChannelsTo(ServerList(common));
  return SecureChannelsTo(ServerList(common), *security);
}

absl::StatusOr<std::unique_ptr<Client>> ConnectTo(const std::string& server,
                                                  const CommonFlags& common) {
  const ClientOptions options{.timeout = common.timeout};
  absl::StatusOr<ChannelSecurity> security = SecurityOf(common);
  if (!security.ok()) return security.status();
  if (security->empty()) return Client::Connect(server, options);
  if (server.empty()) return absl::InvalidArgumentError("empty server address");
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      NewSecureChannel(server, *security);
  if (!channel.ok()) return channel.status();
  return std::make_unique<Client>(*std::move(channel), options);
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
  return ConnectTo(common.server, common);
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
    case absl::StatusCode::kUnavailable: {
      text = absl::StrCat("server ", common.server,
                          " is unavailable: ", status.message());
      // gRPC's text for a refused handshake is often "Socket closed": say
      // what is wrong when a handshake of our own shows it.
      const ChannelSecurity security{.tls_ca_file = common.tls_ca,
                                     .tls_cert_file = common.tls_cert,
                                     .tls_key_file = common.tls_key};
      const std::string why =
          DiagnoseTlsFailure(common.server, security, status.message());
      if (!why.empty()) absl::StrAppend(&text, "; ", why);
      break;
    }
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

CliCommand::CliCommand(absl::string_view name, absl::string_view usage,
                       Target target, const CliEnvironment& env,
                       std::ostream& out, std::ostream& err)
    : name_(name), usage_(usage), out_(out), err_(err) {
  common_.server = env.default_server;
  AddCommonFlags(flags_, &common_);
  if (target == Target::kTable) {
    flags_.AddString(
        "keyspace", &keyspace_, "K",
        "keyspace (database) of TABLE; empty = the server's default");
  }
}

std::optional<int> CliCommand::Parse(absl::Span<const std::string> args) {
  absl::StatusOr<std::vector<std::string>> positional = flags_.Parse(args);
  if (!positional.ok()) return UsageError(positional.status().message());
  if (flags_.help()) {
    out_ << usage_ << flags_.Usage();
    return kExitOk;
  }
  positional_ = *std::move(positional);
  return std::nullopt;
}

TableRef CliCommand::table(size_t index) const {
  return TableRef(keyspace_, positional_.at(index));
}

std::unique_ptr<Client> CliCommand::ConnectOne() {
  absl::StatusOr<std::unique_ptr<Client>> client = msgq::ConnectOne(common_);
  if (!client.ok()) {
    UsageError(client.status().message());
    return nullptr;
  }
  return *std::move(client);
}

int CliCommand::UsageError(absl::string_view message) const {
  return ReportUsageError(err_, name_, message);
}

int CliCommand::Error(const absl::Status& status) const {
  return ReportError(err_, name_, common_, status);
}

}  // namespace msgq
