// The client side of msgqd's security (docs/security.md#5-clients): the msgq
// CLI's --tls_ca, --tls_cert/--tls_key, --token_file and $MSGQ_TOKEN, and the
// C++ client's NewSecureChannel, against a real msgqd with TLS, mTLS and
// tokens.
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "msgq/client.h"
#include "msgq/credentials.h"
#include "msgq/subscriber.h"
#include "tests/security_fixture.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif
#ifndef MSGQ_PYTHON_STUBS
#error "MSGQ_PYTHON_STUBS must be defined"
#endif

namespace msgq::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct ToolResult {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs `cmd` (a shell command line) with stderr merged into stdout.
ToolResult RunCommand(std::string cmd) {
  absl::StrAppend(&cmd, " 2>&1");
  ToolResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

ToolResult RunCli(const std::string& prefix,
                  const std::vector<std::string>& args) {
  std::string cmd = absl::StrCat(prefix, MSGQ_CLI_PATH);
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  return RunCommand(std::move(cmd));
}

class SecurityClientTest : public SecurityTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(SecurityTest::SetUp());
    ASSERT_TRUE(MakeTestCertificates(files_->path()))
        << ReadText(Path("openssl.log"));
    ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
    ASSERT_NO_FATAL_FAILURE(CreateTable("b"));
    ReplaceFile(Path("tokens"), TokenLine("tok-worker", "worker"));
    ReplaceFile(Path("worker.token"), "tok-worker\n");
    ReplaceFile(Path("policy"),
                "worker msgq/a stream,ack\nreader msgq/* admin\n");
  }
  void Start(bool mtls) {
    std::vector<std::string> args = {
        "--tls_cert=" + Path("server1.pem"), "--tls_key=" + Path("server1.key"),
        "--auth_tokens_file=" + Path("tokens"),
        "--auth_policy_file=" + Path("policy"), "--http_listen="};
    if (mtls) args.push_back("--tls_client_ca=" + Path("ca.pem"));
    ASSERT_NO_FATAL_FAILURE(StartServer(args));
    auto stub = v1::Messaging::NewStub(
        TlsChannel(server_->address(), files_->path(), mtls ? "reader" : ""));
    ASSERT_NO_FATAL_FAILURE(WaitForTable(stub.get(), "a", "tok-worker"));
  }
};

TEST_F(SecurityClientTest, CliWithTlsAndToken) {
  ASSERT_NO_FATAL_FAILURE(Start(/*mtls=*/false));
  const std::string server = "--server=" + server_->address();
  const std::string ca = "--tls_ca=" + Path("ca.pem");
  ToolResult ok = RunCli(
      "", {"tables", server, ca, "--token_file=" + Path("worker.token")});
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("a"));
  EXPECT_THAT(ok.output, Not(HasSubstr(" b ")));
  ToolResult env = RunCli("MSGQ_TOKEN=tok-worker ", {"tables", server, ca});
  EXPECT_EQ(env.code, 0) << env.output;
  ToolResult no_token = RunCli("MSGQ_TOKEN= ", {"tables", server, ca});
  EXPECT_NE(no_token.code, 0);
  EXPECT_THAT(no_token.output,
              HasSubstr("UNAUTHENTICATED: missing or invalid credentials"));
  ToolResult plaintext = RunCli("MSGQ_TOKEN=tok-worker ", {"tables", server});
  EXPECT_NE(plaintext.code, 0);
  EXPECT_THAT(plaintext.output, HasSubstr("is unavailable"));
  ToolResult pause = RunCli("MSGQ_TOKEN=tok-worker ",
                            {"pause", server, ca, "--keyspace=msgq", "a"});
  EXPECT_NE(pause.code, 0);
  EXPECT_THAT(pause.output,
              HasSubstr("PERMISSION_DENIED: permission denied: 'worker' may "
                        "not admin msgq.a"));
}

// The line of `msgq tables` in `output` (its stderr holds gRPC's own log
// lines too), without its newline; "" when absent.
std::string TablesLine(const std::string& output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, "msgq tables: ")) return std::string(line);
  }
  return "";
}

// docs/security.md#5-clients, errors: gRPC says "Socket closed" for a
// refused handshake; msgq says why after it. Against msgqd with mTLS
// (server1 names IP:127.0.0.1 and DNS:localhost) and a plaintext msgqd.
TEST_F(SecurityClientTest, CliSaysWhyTheHandshakeFailed) {
  ASSERT_NO_FATAL_FAILURE(Start(/*mtls=*/true));
  const std::string server = "--server=" + server_->address();
  const std::string ca = "--tls_ca=" + Path("ca.pem");
  const std::string cert = "--tls_cert=" + Path("reader.pem");
  const std::string key = "--tls_key=" + Path("reader.key");
  const std::string unavailable = absl::StrCat(
      "msgq tables: server ", server_->address(), " is unavailable: ");

  ToolResult plain = RunCli("MSGQ_TOKEN=tok-worker ", {"tables", server});
  EXPECT_EQ(plain.code, 3) << plain.output;
  EXPECT_THAT(TablesLine(plain.output), StartsWith(unavailable));
  EXPECT_THAT(TablesLine(plain.output),
              EndsWith("; the server speaks TLS and asks for a client "
                       "certificate: give --tls_ca, --tls_cert and "
                       "--tls_key"));

  ToolResult no_cert = RunCli("MSGQ_TOKEN=tok-worker ", {"tables", server, ca});
  EXPECT_EQ(no_cert.code, 3) << no_cert.output;
  EXPECT_THAT(TablesLine(no_cert.output),
              EndsWith("; the server asks for a client certificate (mTLS) and "
                       "none was sent: give --tls_cert and --tls_key"));

  ToolResult other_name = RunCli(
      "", {"tables", server, ca, cert, key, "--tls_server_name=msgq.internal"});
  EXPECT_EQ(other_name.code, 3) << other_name.output;
  EXPECT_THAT(TablesLine(other_name.output),
              EndsWith("Peer name msgq.internal is not in peer certificate; "
                       "the server's certificate names IP:127.0.0.1, "
                       "DNS:localhost, not msgq.internal: dial one of those "
                       "or give --tls_server_name=NAME with one of them"));

  // A name the certificate has, while dialing 127.0.0.1: served.
  ToolResult named = RunCli(
      "", {"tables", server, ca, cert, key, "--tls_server_name=localhost"});
  EXPECT_EQ(named.code, 0) << named.output;
  EXPECT_THAT(named.output, HasSubstr("\nmsgq      a "));

  // A name without TLS is a usage error.
  ToolResult name_only =
      RunCli("", {"tables", server, "--tls_server_name=localhost"});
  EXPECT_EQ(name_only.code, 2) << name_only.output;
  EXPECT_THAT(name_only.output,
              HasSubstr("a TLS server name needs TLS: give --tls_ca too"));

  // TLS against a plaintext port.
  absl::StatusOr<std::unique_ptr<Msgqd>> plaintext =
      Msgqd::Start(*db_, {"--databases=msgq"});
  ASSERT_TRUE(plaintext.ok()) << plaintext.status();
  ToolResult tls_to_plain = RunCli(
      "", {"tables", "--server=" + (*plaintext)->address(), ca, cert, key});
  EXPECT_EQ(tls_to_plain.code, 3) << tls_to_plain.output;
  EXPECT_THAT(TablesLine(tls_to_plain.output),
              EndsWith("; the server does not speak TLS: leave out --tls_ca, "
                       "--tls_cert and --tls_key (or it is not msgqd)"));
}

// The first sh block of `page` after the heading `heading`.
std::string ShBlockAfter(const std::string& page, const std::string& heading) {
  const size_t at = page.find("\n" + heading + "\n");
  if (at == std::string::npos) return "";
  const size_t open = page.find("```sh\n", at);
  if (open == std::string::npos) return "";
  const size_t body = open + 6;
  const size_t close = page.find("\n```", body);
  return close == std::string::npos ? "" : page.substr(body, close - body);
}

// docs/security.md's walkthrough on one machine, its commands as written
// but for /etc/msgq (a directory of the test's) and the port: the
// certificates of "1. Certificates", msgqd with them and --tls_client_ca,
// and the client of "5. Clients" that dials 127.0.0.1 with mTLS.
TEST_F(SecurityClientTest, DocWalkthroughWorksOnLocalhost) {
  const std::string page =
      ReadText(absl::StrCat(MSGQ_SOURCE_DIR, "/docs/security.md"));
  const std::string etc = files_->path() + "/etc-msgq";
  const std::string certificates = absl::StrReplaceAll(
      ShBlockAfter(page, "## 1. Certificates"), {{"/etc/msgq", etc}});
  ASSERT_THAT(certificates, HasSubstr("DNS:localhost,IP:127.0.0.1"));
  ReplaceFile(Path("certificates.sh"), "set -e\n" + certificates + "\n");
  ToolResult made = RunCommand("bash " + Path("certificates.sh"));
  ASSERT_EQ(made.code, 0) << made.output;

  ASSERT_NO_FATAL_FAILURE(StartServer(
      {"--tls_cert=" + etc + "/server.pem", "--tls_key=" + etc + "/server.key",
       "--tls_client_ca=" + etc + "/ca.pem", "--http_listen="}));

  // "# on the server's machine ...": the command after that comment.
  const std::string clients = ShBlockAfter(page, "## 5. Clients");
  const size_t at = clients.find("# on the server's machine");
  ASSERT_NE(at, std::string::npos) << clients;
  const size_t start = clients.find('\n', at) + 1;
  const size_t end = clients.find('\n', clients.find("\\\n", start) + 2);
  std::string command = clients.substr(start, end - start);
  ASSERT_THAT(command, StartsWith("msgq tables --server=127.0.0.1:15999 "));
  command = absl::StrReplaceAll(
      command, {{"msgq tables", absl::StrCat(MSGQ_CLI_PATH, " tables")},
                {"127.0.0.1:15999", server_->address()},
                {"/etc/msgq", etc}});
  ToolResult listed = RunCommand(absl::StrCat("cd ", etc, " && ", command));
  EXPECT_EQ(listed.code, 0) << command << "\n" << listed.output;
  EXPECT_THAT(listed.output, StartsWith("KEYSPACE  NAME  STATUS"));
  EXPECT_THAT(listed.output, HasSubstr("\nmsgq      a     loaded"));
  EXPECT_THAT(listed.output, HasSubstr("\nmsgq      b     loaded"));
}

// msgq tail and msgq stats take the same TLS and token flags as the other
// commands (they ignored them before cli_tail.cc/cli_stats.cc used
// ChannelsFor/ConnectTo).
TEST_F(SecurityClientTest, CliTailAndStatsWithTlsAndToken) {
  ASSERT_NO_FATAL_FAILURE(Start(/*mtls=*/false));
  ASSERT_NO_FATAL_FAILURE(InsertRange("a", 1, 2));
  const std::string server = "--server=" + server_->address();
  const std::string ca = "--tls_ca=" + Path("ca.pem");
  ToolResult tail =
      RunCli("", {"tail", "a", "--keyspace=msgq", "--count=2", "--ack", server,
                  ca, "--token_file=" + Path("worker.token")});
  EXPECT_EQ(tail.code, 0) << tail.output;
  EXPECT_THAT(tail.output, HasSubstr("id=2 "));
  ToolResult stats = RunCli("MSGQ_TOKEN=tok-worker ", {"stats", server, ca});
  EXPECT_EQ(stats.code, 0) << stats.output;
  ToolResult denied =
      RunCli("MSGQ_TOKEN=tok-worker ",
             {"tail", "b", "--keyspace=msgq", "--count=1", server, ca});
  EXPECT_NE(denied.code, 0);
  EXPECT_THAT(denied.output, HasSubstr("may not stream msgq.b"));
}

// The Python package (client/python/msgq, run as `python3 -m msgq`) against
// the same msgqd: TLS plus the worker's token streams and acks a; a wrong
// token is UNAUTHENTICATED and b is PERMISSION_DENIED, both exit 1 at once
// (no reconnect loop).
TEST_F(SecurityClientTest, PythonConsumerWithTlsAndToken) {
  ASSERT_NO_FATAL_FAILURE(Start(/*mtls=*/false));
  ASSERT_NO_FATAL_FAILURE(InsertRange("a", 1, 3));
  ASSERT_NO_FATAL_FAILURE(InsertRange("b", 1, 1));
  ReplaceFile(Path("wrong.token"), "tok-nobody\n");
  const std::string python =
      absl::StrCat("PYTHONPATH=", MSGQ_PYTHON_STUBS, ":", MSGQ_SOURCE_DIR,
                   "/client/python PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "
                   "-m msgq");
  auto consume = [&](const std::string& table, const std::string& token,
                     int count) {
    return RunCommand(absl::StrCat(
        python, " --server=", server_->address(), " --tls_ca=", Path("ca.pem"),
        " --token_file=", Path(token), " --count=", count, " ", table));
  };
  const ToolResult ok = consume("a", "worker.token", 3);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(ok.output,
            "{\"id\":1,\"message\":\"{\\\"n\\\": 1}\"}\n"
            "{\"id\":2,\"message\":\"{\\\"n\\\": 2}\"}\n"
            "{\"id\":3,\"message\":\"{\\\"n\\\": 3}\"}\n");
  EXPECT_TRUE(Eventually(
      [&] {
        return db_->Scalar(
                   "SELECT COUNT(*) FROM msgq.a WHERE time_acked IS "
                   "NOT NULL") == "3";
      },
      absl::Seconds(10)));

  const ToolResult wrong = consume("a", "wrong.token", 1);
  EXPECT_EQ(wrong.code, 1) << wrong.output;
  EXPECT_THAT(wrong.output, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(wrong.output, Not(HasSubstr("tok-nobody")));
  const ToolResult denied = consume("b", "worker.token", 1);
  EXPECT_EQ(denied.code, 1) << denied.output;
  EXPECT_THAT(denied.output,
              HasSubstr("permission denied: 'worker' may not stream msgq.b"));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.b WHERE time_acked IS "
                        "NOT NULL"),
            "0");
}

// A Subscriber over SecureChannelsTo: streams and acks with TLS and the
// worker's token (stream,ack on a); on b it ends with PERMISSION_DENIED.
TEST_F(SecurityClientTest, SubscriberWithTlsAndToken) {
  ASSERT_NO_FATAL_FAILURE(Start(/*mtls=*/false));
  ASSERT_NO_FATAL_FAILURE(InsertRange("a", 1, 3));
  const ChannelSecurity worker{.tls_ca_file = Path("ca.pem"),
                               .token = "tok-worker"};
  auto servers = SecureChannelsTo({server_->address()}, worker);
  ASSERT_TRUE(servers.ok()) << servers.status();
  absl::Mutex mu;
  std::vector<std::string> ids;
  auto subscriber =
      Subscriber::Start(*servers, TableRef("msgq", "a"), [&](const Message& m) {
        absl::MutexLock lock(&mu);
        ids.push_back(std::string(m.id()));
        return HandlerResult::Ack();
      });
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  EXPECT_TRUE(Eventually([&] { return (*subscriber)->stats().acked == 3; },
                         absl::Seconds(20)))
      << server_->Log();
  (*subscriber)->Stop();
  {
    absl::MutexLock lock(&mu);
    EXPECT_THAT(ids, ::testing::UnorderedElementsAre("1", "2", "3"));
  }
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.a WHERE time_acked IS "
                        "NOT NULL"),
            "3");

  auto denied = Subscriber::Start(
      *SecureChannelsTo({server_->address()}, worker), TableRef("msgq", "b"),
      [](const Message&) { return HandlerResult::Ack(); },
      SubscriberOptions{.retry_initial_connect = false});
  ASSERT_TRUE(denied.ok()) << denied.status();
  absl::Status ended = (*denied)->Wait();
  EXPECT_EQ(ended.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ended.message(),
            "permission denied: 'worker' may not stream msgq.b");
}

TEST_F(SecurityClientTest, CppClientWithMutualTlsAndToken) {
  ASSERT_NO_FATAL_FAILURE(Start(/*mtls=*/true));
  ChannelSecurity reader{.tls_ca_file = Path("ca.pem"),
                         .tls_cert_file = Path("reader.pem"),
                         .tls_key_file = Path("reader.key")};
  auto channel = NewSecureChannel(server_->address(), reader);
  ASSERT_TRUE(channel.ok()) << channel.status();
  Client as_reader(*channel);
  // reader (the certificate) administers; the token makes it worker.
  absl::StatusOr<std::vector<DeadMessage>> dead =
      as_reader.ListDead(TableRef("msgq", "b"));
  EXPECT_TRUE(dead.ok()) << dead.status();
  ChannelSecurity worker = reader;
  worker.token = "tok-worker";
  auto worker_channel = NewSecureChannel(server_->address(), worker);
  ASSERT_TRUE(worker_channel.ok()) << worker_channel.status();
  Client as_worker(*worker_channel);
  absl::StatusOr<int64_t> acked = as_worker.Ack(TableRef("msgq", "a"), {"1"});
  EXPECT_TRUE(acked.ok()) << acked.status();
  absl::StatusOr<std::vector<DeadMessage>> denied =
      as_worker.ListDead(TableRef("msgq", "b"));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.status().message(),
            "permission denied: 'worker' may not admin msgq.b");
  // No client certificate: the handshake fails.
  auto anonymous = NewSecureChannel(
      server_->address(),
      ChannelSecurity{.tls_ca_file = Path("ca.pem"), .token = "tok-worker"});
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(Client(*anonymous).ListTables().status().code(),
            absl::StatusCode::kUnavailable);
  // A certificate without its key is refused before any call.
  EXPECT_EQ(
      NewSecureChannel(server_->address(),
                       ChannelSecurity{.tls_ca_file = Path("ca.pem"),
                                       .tls_cert_file = Path("reader.pem")})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace msgq::testing
