// Bearer tokens and the authorization policy against a real msgqd and
// MariaDB, over plaintext gRPC, and the files' permissions.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/log_wait.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// GET (or POST with an empty form) `url` with an optional bearer token:
// "STATUS BODY" (urllib from Debian's python3).
std::string Http(const std::string& url, const std::string& token,
                 bool post = false) {
  const std::string script = absl::StrCat(
      "import sys, urllib.request, urllib.error\n"
      "r = urllib.request.Request(sys.argv[1], data=b'' if sys.argv[3] == "
      "'1' else None, headers={'X-Msgq-Console': '1'})\n"
      "if sys.argv[2]: r.add_header('Authorization', 'Bearer ' + "
      "sys.argv[2])\n"
      "try:\n  f = urllib.request.urlopen(r); print(f.status, "
      "f.read().decode())\n"
      "except urllib.error.HTTPError as e:\n  print(e.code, "
      "e.read().decode())\n");
  const std::string cmd =
      absl::StrCat("/usr/bin/python3 -c \"", script, "\" '", url, "' '", token,
                   "' ", post ? "1" : "0");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The port of "msgqd http on HOST:PORT" in `log`; 0 if absent.
int HttpPort(const std::string& log) {
  const std::string prefix = "msgqd http on 127.0.0.1:";
  const size_t at = log.find(prefix);
  return at == std::string::npos ? 0
                                 : std::atoi(log.c_str() + at + prefix.size());
}

class SecurityAuthTest : public SecurityTest {
 protected:
  // Tables a and b; tokens "tok-worker" (worker) and "tok-ops" (ops);
  // worker may stream a, ops administer everything.
  void StartWithPolicy(std::vector<std::string> extra = {}) {
    ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
    ASSERT_NO_FATAL_FAILURE(CreateTable("b"));
    ReplaceFile(Path("tokens"), "# test tokens\n" +
                                    TokenLine("tok-worker", "worker") +
                                    TokenLine("tok-ops", "ops"));
    ReplaceFile(Path("policy"), "worker msgq/a stream\nops */* admin\n");
    extra.push_back("--auth_tokens_file=" + Path("tokens"));
    extra.push_back("--auth_policy_file=" + Path("policy"));
    extra.push_back("--auth_reload_interval=100ms");
    ASSERT_NO_FATAL_FAILURE(StartServer(extra));
    ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "b", "tok-ops"));
  }
};

TEST_F(SecurityAuthTest, MissingOrWrongTokenIsUnauthenticated) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy());
  v1::ListTablesResponse r;
  grpc::Status missing = ListTables(stub_.get(), "", &r);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(missing.error_message(),
            "missing or invalid credentials: send 'authorization: Bearer "
            "<token>'");
  grpc::Status wrong = OpenStream(stub_.get(), "a", "tok-wrong");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message(),
            "missing or invalid credentials: unknown bearer token");
  EXPECT_EQ(Ack(stub_.get(), "a", "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Pause(stub_.get(), "a", "tok-wrong").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(OpenStream(stub_.get(), "a", "tok-worker").ok());
  // Tokens never reach the log.
  EXPECT_THAT(server_->Log(), Not(HasSubstr("tok-")));
}

TEST_F(SecurityAuthTest, PolicyDeniesOtherTablesAndActions) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy());
  EXPECT_TRUE(OpenStream(stub_.get(), "a", "tok-worker").ok());
  grpc::Status other = OpenStream(stub_.get(), "b", "tok-worker");
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(other.error_message(),
            "permission denied: 'worker' may not stream msgq.b");
  grpc::Status ack = Ack(stub_.get(), "a", "tok-worker");
  EXPECT_EQ(ack.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(ack.error_message(),
            "permission denied: 'worker' may not ack msgq.a");
  grpc::Status pause = Pause(stub_.get(), "a", "tok-worker");
  EXPECT_EQ(pause.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(pause.error_message(),
            "permission denied: 'worker' may not admin msgq.a");
  // ops administers but may not stream.
  EXPECT_TRUE(Pause(stub_.get(), "b", "tok-ops").ok());
  EXPECT_EQ(OpenStream(stub_.get(), "b", "tok-ops").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // ListTables shows a principal only its tables.
  v1::ListTablesResponse worker, ops;
  ASSERT_TRUE(ListTables(stub_.get(), "tok-worker", &worker).ok());
  EXPECT_THAT(TableNames(worker), ElementsAre("a"));
  ASSERT_TRUE(ListTables(stub_.get(), "tok-ops", &ops).ok());
  EXPECT_THAT(TableNames(ops), ElementsAre("a", "b"));
}

TEST_F(SecurityAuthTest, TokenAndPolicyFilesAreReloaded) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy());
  // A new token for worker; the old one stops working.
  ReplaceFile(Path("tokens"), TokenLine("tok-worker-2", "worker") +
                                  TokenLine("tok-ops", "ops"));
  EXPECT_TRUE(Eventually(
      [&] { return OpenStream(stub_.get(), "a", "tok-worker-2").ok(); },
      absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(OpenStream(stub_.get(), "a", "tok-worker").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // worker is granted ack on a.
  ReplaceFile(Path("policy"), "worker msgq/a stream,ack\nops */* admin\n");
  EXPECT_TRUE(
      Eventually([&] { return Ack(stub_.get(), "a", "tok-worker-2").ok(); },
                 absl::Seconds(10)))
      << server_->Log();
  // A broken policy is logged with file:line and the last good one stays.
  ReplaceFile(Path("policy"), "worker msgq/a stream\nops */* admin,root\n");
  EXPECT_TRUE(LogShows(*server_,
                       Path("policy") + ":2: unknown action "
                                        "'root'",
                       absl::Seconds(10)))
      << server_->Log();
  EXPECT_TRUE(Ack(stub_.get(), "a", "tok-worker-2").ok());
}

TEST_F(SecurityAuthTest, BadPolicyRefusesToStart) {
  ReplaceFile(Path("tokens"), TokenLine("t", "p"));
  ReplaceFile(Path("policy"), "p msgq/a stream\n\np msgq-a stream\n");
  absl::StatusOr<std::unique_ptr<Msgqd>> server = Msgqd::Start(
      *db_, {"--databases=msgq", "--auth_tokens_file=" + Path("tokens"),
             "--auth_policy_file=" + Path("policy")});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(),
              HasSubstr(Path("policy") + ":3: the target must be "
                                         "keyspace/table"));
}

// How many times `text` is in `log`.
int Count(const std::string& log, const std::string& text) {
  int n = 0;
  for (size_t at = log.find(text); at != std::string::npos;
       at = log.find(text, at + text.size())) {
    ++n;
  }
  return n;
}

// A token or policy file that group or others may write would let them in:
// msgqd exits 2 naming the file and its mode, and starts once it is 0600.
TEST_F(SecurityAuthTest, FilesOthersMayWriteRefuseToStart) {
  ReplaceFile(Path("tokens"), TokenLine("t", "p"));
  ReplaceFile(Path("policy"), "p msgq/a stream\n");
  const std::vector<std::string> args = {
      "--databases=msgq", "--auth_tokens_file=" + Path("tokens"),
      "--auth_policy_file=" + Path("policy")};
  ASSERT_EQ(chmod(Path("tokens").c_str(), 0666), 0);
  std::string log;
  EXPECT_EQ(Msgqd::RunUntilExit(*db_, args, absl::Seconds(30), &log), 2) << log;
  EXPECT_EQ(Count(log, "auth tokens file " + Path("tokens") +
                           ": mode 0666 lets group or others write it; "
                           "chmod 600 it\n"),
            1)
      << log;
  ASSERT_EQ(chmod(Path("tokens").c_str(), 0600), 0);
  ASSERT_EQ(chmod(Path("policy").c_str(), 0666), 0);
  EXPECT_EQ(Msgqd::RunUntilExit(*db_, args, absl::Seconds(30), &log), 2) << log;
  EXPECT_EQ(Count(log, "auth policy file " + Path("policy") +
                           ": mode 0666 lets group or others write it; "
                           "chmod 600 it\n"),
            1)
      << log;
  ASSERT_EQ(chmod(Path("policy").c_str(), 0600), 0);
  ASSERT_NO_FATAL_FAILURE(StartServer(args));
}

// After a chmod 666 of the token file the tokens loaded before stay in
// force: a token added while others may write the file does not work, and
// each change of the file is logged once. chmod 600 loads the file.
TEST_F(SecurityAuthTest, ReloadKeepsTheTokensWhileOthersMayWriteTheFile) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy());
  const std::string refused =
      "keeping the previous tokens: auth tokens file " + Path("tokens") +
      ": mode 0666 lets group or others write it; chmod 600 it\n";
  ASSERT_EQ(chmod(Path("tokens").c_str(), 0666), 0);
  EXPECT_TRUE(LogShows(*server_, refused, absl::Seconds(10))) << server_->Log();
  std::ofstream(Path("tokens"), std::ios::app)
      << TokenLine("tok-worker-2", "worker");
  EXPECT_TRUE(Eventually([&] { return Count(server_->Log(), refused) == 2; },
                         absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(OpenStream(stub_.get(), "a", "tok-worker-2").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(OpenStream(stub_.get(), "a", "tok-worker").ok());
  // Not logged again while the file stays as it is: 5 reload intervals.
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(Count(server_->Log(), refused), 2) << server_->Log();

  ASSERT_EQ(chmod(Path("tokens").c_str(), 0600), 0);
  EXPECT_TRUE(Eventually(
      [&] { return OpenStream(stub_.get(), "a", "tok-worker-2").ok(); },
      absl::Seconds(10)))
      << server_->Log();
  EXPECT_TRUE(LogShows(*server_, "reloaded " + Path("tokens") + ": 3 tokens",
                       absl::Seconds(10)))
      << server_->Log();
}

// An open stream whose token's line is removed ends with UNAUTHENTICATED
// after the reload; one whose grant is removed ends with PERMISSION_DENIED;
// a stream of a token that keeps its grant goes on.
TEST_F(SecurityAuthTest, RevokedTokenOrGrantEndsOpenStreams) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy());
  const std::string ops = TokenLine("tok-ops", "ops");
  ReplaceFile(Path("tokens"), TokenLine("tok-worker", "worker") +
                                  TokenLine("tok-other", "other") +
                                  TokenLine("tok-third", "third") + ops);
  ReplaceFile(Path("policy"),
              "worker msgq/a stream\nother msgq/a stream\n"
              "third msgq/a stream\nops */* admin\n");
  ASSERT_TRUE(
      Eventually([&] { return OpenStream(stub_.get(), "a", "tok-third").ok(); },
                 absl::Seconds(10)))
      << server_->Log();
  struct Open {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader;
  };
  auto open = [&](Open* o, const std::string& token) {
    Prepare(&o->ctx, token);
    // A stream that is never ended fails the test instead of hanging it.
    o->ctx.set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(30));
    v1::MessageStreamRequest request;
    request.set_keyspace("msgq");
    request.set_name("a");
    o->reader = stub_->MessageStream(&o->ctx, request);
    v1::MessageStreamResponse fields;
    return o->reader->Read(&fields);
  };
  auto end = [](Open* o) {
    v1::MessageStreamResponse r;
    while (o->reader->Read(&r)) {
    }
    return o->reader->Finish();
  };
  Open worker, other, third;
  ASSERT_TRUE(open(&worker, "tok-worker"));
  ASSERT_TRUE(open(&other, "tok-other"));
  ASSERT_TRUE(open(&third, "tok-third"));

  ReplaceFile(Path("tokens"), TokenLine("tok-other", "other") +
                                  TokenLine("tok-third", "third") + ops);
  grpc::Status revoked = end(&worker);
  EXPECT_EQ(revoked.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(revoked.error_message(),
            "credentials revoked: the bearer token of 'worker' is no longer "
            "in the tokens file");

  ReplaceFile(Path("policy"), "third msgq/a stream\nops */* admin\n");
  grpc::Status denied = end(&other);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(),
            "permission denied: 'other' may not stream msgq.a");

  // third keeps its stream and gets the rows.
  ASSERT_NO_FATAL_FAILURE(InsertRange("a", 1, 1));
  v1::MessageStreamResponse rows;
  ASSERT_TRUE(third.reader->Read(&rows)) << server_->Log();
  ASSERT_EQ(rows.rows_size(), 1);
  ASSERT_GE(rows.rows(0).lengths_size(), 1);
  EXPECT_EQ(rows.rows(0).values().substr(0, rows.rows(0).lengths(0)), "1");
  third.ctx.TryCancel();
  third.reader->Finish();
}

TEST_F(SecurityAuthTest, StreamsPerPrincipalAreLimited) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy({"--max_streams_per_principal=1"}));
  StreamCollector first(stub_.get(), "a", "msgq");  // no token: refused
  ASSERT_TRUE(first.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(first.status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // One stream of worker stays open while a second is refused.
  grpc::ClientContext ctx;
  Prepare(&ctx, "tok-worker");
  v1::MessageStreamRequest request;
  request.set_keyspace("msgq");
  request.set_name("a");
  auto reader = stub_->MessageStream(&ctx, request);
  v1::MessageStreamResponse fields;
  ASSERT_TRUE(reader->Read(&fields));
  grpc::Status second = OpenStream(stub_.get(), "a", "tok-worker");
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(second.error_message(),
            "'worker' already has 1 open streams "
            "(--max_streams_per_principal)");
  ctx.TryCancel();
  reader->Finish();
  EXPECT_TRUE(Eventually(
      [&] { return OpenStream(stub_.get(), "a", "tok-worker").ok(); },
      absl::Seconds(10)));
}

// By default a principal holds at most 256 streams: a client that opens
// stream after stream (each holds batches in msgqd's memory) is refused
// before it takes the server's memory.
TEST_F(SecurityAuthTest, ByDefaultAPrincipalHoldsAtMost256Streams) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy());
  struct Open {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader;
  };
  // Three connections: each carries at most --grpc_max_concurrent_streams.
  std::vector<std::unique_ptr<v1::Messaging::Stub>> stubs;
  for (int i = 0; i < 3; ++i) {
    stubs.push_back(v1::Messaging::NewStub(PlainChannel(server_->address())));
  }
  v1::MessageStreamRequest request;
  request.set_keyspace("msgq");
  request.set_name("a");
  std::vector<std::unique_ptr<Open>> open;
  absl::Cleanup close_all = [&] {
    for (auto& o : open) o->ctx.TryCancel();
    for (auto& o : open) (void)o->reader->Finish();
  };
  for (int i = 0; i < 256; ++i) {
    auto o = std::make_unique<Open>();
    o->ctx.set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(120));
    o->ctx.AddMetadata("authorization", "Bearer tok-worker");
    o->reader = stubs[i / 90]->MessageStream(&o->ctx, request);
    v1::MessageStreamResponse fields;
    ASSERT_TRUE(o->reader->Read(&fields)) << "stream " << i;
    open.push_back(std::move(o));
  }
  grpc::Status refused = OpenStream(stub_.get(), "a", "tok-worker");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(),
            "'worker' already has 256 open streams "
            "(--max_streams_per_principal)");
}

TEST_F(SecurityAuthTest, ConsoleApiNeedsATokenAndAdmin) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy({"--http_listen=127.0.0.1:0"}));
  const int port = HttpPort(server_->Log());
  ASSERT_NE(port, 0) << server_->Log();
  const std::string base = absl::StrCat("http://127.0.0.1:", port);
  EXPECT_EQ(Http(base + "/healthz", ""), "200 ok");
  EXPECT_EQ(Http(base + "/api/tables", ""),
            "401 {\"error\":\"missing or invalid credentials: send "
            "'authorization: Bearer <token>'\"}");
  EXPECT_EQ(Http(base + "/api/tables", "tok-wrong"),
            "401 {\"error\":\"missing or invalid credentials: unknown "
            "bearer token\"}");
  const std::string worker_tables = Http(base + "/api/tables", "tok-worker");
  EXPECT_THAT(worker_tables, HasSubstr("\"name\":\"a\""));
  EXPECT_THAT(worker_tables, Not(HasSubstr("\"name\":\"b\"")));
  EXPECT_EQ(Http(base + "/api/dead?keyspace=msgq&table=a", "tok-worker"),
            "403 {\"error\":\"permission denied: 'worker' may not admin "
            "msgq.a\"}");
  EXPECT_EQ(Http(base + "/api/messages?table=a", "tok-worker"),
            "403 {\"error\":\"permission denied: 'worker' may not admin "
            "msgq.a\"}");
  EXPECT_EQ(Http(base + "/api/redrive?table=a&all=1", "tok-worker", true),
            "403 {\"error\":\"permission denied: 'worker' may not admin "
            "msgq.a\"}");
  for (const std::string path :
       {"/api/message?table=a&id=1", "/api/history?table=a"}) {
    EXPECT_EQ(Http(base + path, "tok-worker"),
              "403 {\"error\":\"permission denied: 'worker' may not admin "
              "msgq.a\"}")
        << path;
  }
  EXPECT_EQ(Http(base + "/api/dead/delete?table=a&id=1", "tok-worker", true),
            "403 {\"error\":\"permission denied: 'worker' may not admin "
            "msgq.a\"}");
  EXPECT_EQ(Http(base + "/api/dead?keyspace=msgq&table=a", "tok-ops"),
            "200 {\"messages\":[]}");
  EXPECT_EQ(Http(base + "/api/redrive?table=b&all=1", "tok-ops", true),
            "200 {\"redriven\":0}");
}

// Authorization comes before the lookup
// (docs/security.md#limits-against-hostile-clients): a caller without the
// grant gets the same PERMISSION_DENIED for a served table, a table that
// failed to load and one that does not exist, on gRPC, the console's API
// and the MySQL port alike; only a caller with the grant learns which.
TEST_F(SecurityAuthTest, NoGrantLearnsNothingOfATable) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("broken", "vt_batch_size=0"));
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy({"--http_listen=127.0.0.1:0"}));
  for (const std::string table : {"b", "broken", "nosuch"}) {
    SCOPED_TRACE(table);
    grpc::Status stream = OpenStream(stub_.get(), table, "tok-worker");
    EXPECT_EQ(stream.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(stream.error_message(),
              "permission denied: 'worker' may not stream msgq." + table);
    grpc::Status pause = Pause(stub_.get(), table, "tok-worker");
    EXPECT_EQ(pause.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(pause.error_message(),
              "permission denied: 'worker' may not admin msgq." + table);
    // An empty keyspace is searched only where the caller has the grant;
    // the denial names the first served keyspace either way.
    grpc::ClientContext ctx;
    Prepare(&ctx, "tok-worker");
    v1::MessageAckRequest ack;
    ack.set_name(table);
    ack.add_ids("1");
    v1::MessageAckResponse response;
    grpc::Status acked = stub_->MessageAck(&ctx, ack, &response);
    EXPECT_EQ(acked.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(acked.error_message(),
              "permission denied: 'worker' may not ack msgq." + table);
  }
  // With the grant, the truth.
  grpc::Status missing = Pause(stub_.get(), "nosuch", "tok-ops");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(missing.error_message(), "message table `msgq`.`nosuch` not found");
  grpc::Status broken = Pause(stub_.get(), "broken", "tok-ops");
  EXPECT_EQ(broken.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(broken.error_message(), HasSubstr("vt_batch_size"));

  const int port = HttpPort(server_->Log());
  ASSERT_NE(port, 0) << server_->Log();
  const std::string base = absl::StrCat("http://127.0.0.1:", port);
  for (const std::string table : {"b", "broken", "nosuch"}) {
    EXPECT_EQ(
        Http(base + "/api/dead?keyspace=msgq&table=" + table, "tok-worker"),
        "403 {\"error\":\"permission denied: 'worker' may not admin "
        "msgq." +
            table + "\"}");
  }
  EXPECT_EQ(Http(base + "/api/dead?keyspace=msgq&table=nosuch", "tok-ops"),
            "404 {\"error\":\"message table `msgq`.`nosuch` not found\"}");
}

// /metrics needs a token when tokens are on, and its labels show only the
// caller's tables (as ListTables), so they are no way around that filter.
TEST_F(SecurityAuthTest, MetricsNeedATokenAndShowOnlyTheCallersTables) {
  ASSERT_NO_FATAL_FAILURE(StartWithPolicy({"--http_listen=127.0.0.1:0"}));
  const int port = HttpPort(server_->Log());
  ASSERT_NE(port, 0) << server_->Log();
  const std::string metrics =
      absl::StrCat("http://127.0.0.1:", port, "/metrics");
  EXPECT_EQ(Http(metrics, ""),
            "401 missing or invalid credentials: send 'authorization: Bearer "
            "<token>'");
  EXPECT_EQ(Http(metrics, "tok-wrong"),
            "401 missing or invalid credentials: unknown bearer token");
  const std::string worker = Http(metrics, "tok-worker");
  EXPECT_THAT(worker, HasSubstr("200 "));
  EXPECT_THAT(worker, HasSubstr("\nmsgq_tables 1\n"));
  EXPECT_THAT(worker, HasSubstr("table=\"a\""));
  EXPECT_THAT(worker, Not(HasSubstr("table=\"b\"")));
  const std::string ops = Http(metrics, "tok-ops");
  EXPECT_THAT(ops, HasSubstr("\nmsgq_tables 2\n"));
  EXPECT_THAT(ops, HasSubstr("table=\"a\""));
  EXPECT_THAT(ops, HasSubstr("table=\"b\""));
}

TEST_F(SecurityAuthTest, OpenAccessWarnsBeyondLoopback) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  auto server = Msgqd::Start(
      *db_, {"--databases=msgq", "--listen=0.0.0.0:0", "--http_listen="});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Log(),
              HasSubstr("with no authentication: anyone who reaches the "
                        "port may stream, ack and administer every table"));
}

}  // namespace
}  // namespace msgq::testing
