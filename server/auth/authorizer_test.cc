#include "server/auth/authorizer.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/queue/subscriber.h"
#include "gtest/gtest.h"
#include "server/auth/stream_revocation.h"

namespace msgq::auth {
namespace {

std::string Hex(const Digest& d) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

class AuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/msgq-authz-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    tokens_ = dir_ + "/tokens";
    policy_ = dir_ + "/policy";
    Write(tokens_, Hex(Sha256("t-billing")) + " billing\n" +
                       Hex(Sha256("t-ops")) + " ops\n");
    Write(policy_, "billing shop/invoices stream\nops */* admin\n");
  }
  void TearDown() override {
    std::remove(tokens_.c_str());
    std::remove(policy_.c_str());
    rmdir(dir_.c_str());
  }
  // Replaces `path` the way a deployment should: a new file of mode 0600
  // renamed over.
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path + ".new") << text;
    chmod((path + ".new").c_str(), 0600);
    std::rename((path + ".new").c_str(), path.c_str());
  }
  std::unique_ptr<Authorizer> Make(bool certs = false, int max_streams = 0) {
    AuthOptions o;
    o.tokens_file = tokens_;
    o.policy_file = policy_;
    o.client_certificates = certs;
    o.reload_interval = absl::Hours(1);  // the tests call RefreshNow
    o.max_streams_per_principal = max_streams;
    absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::Create(o);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }
  std::string dir_, tokens_, policy_;
};

TEST_F(AuthorizerTest, BearerTokenNamesThePrincipal) {
  auto a = Make();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a->Authenticate("Bearer t-billing", {}), "billing");
  EXPECT_EQ(*a->Authenticate("bearer  t-ops", {}), "ops");
  absl::StatusOr<std::string> wrong = a->Authenticate("Bearer t-nobody", {});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong.status().message(),
            "missing or invalid credentials: unknown bearer token");
  absl::StatusOr<std::string> missing = a->Authenticate(std::nullopt, {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(missing.status().message(),
            "missing or invalid credentials: send 'authorization: Bearer "
            "<token>'");
  absl::StatusOr<std::string> basic = a->Authenticate("Basic t-ops", {});
  EXPECT_EQ(basic.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(basic.status().message().find("t-ops"), std::string::npos);
}

TEST_F(AuthorizerTest, CertificateIdentityWithoutToken) {
  auto a = Make(/*certs=*/true);
  ASSERT_NE(a, nullptr);
  const std::vector<std::string> ids = {"client-a"};
  EXPECT_EQ(*a->Authenticate(std::nullopt, ids), "client-a");
  // A token wins over the certificate; a bad one is refused.
  EXPECT_EQ(*a->Authenticate("Bearer t-ops", ids), "ops");
  EXPECT_EQ(a->Authenticate("Bearer bad", ids).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthorizerTest, PermissionDeniedNamesActionAndTable) {
  auto a = Make();
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(
      a->Authorize("billing", Action::kStream, "shop", "invoices").ok());
  absl::Status ack = a->Authorize("billing", Action::kAck, "shop", "invoices");
  EXPECT_EQ(ack.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ack.message(),
            "permission denied: 'billing' may not ack shop.invoices");
  EXPECT_EQ(a->Authorize("billing", Action::kStream, "shop", "orders").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(a->MayList("billing", "shop", "invoices"));
  EXPECT_FALSE(a->MayList("billing", "shop", "orders"));
  EXPECT_TRUE(a->MayList("ops", "shop", "orders"));
}

TEST_F(AuthorizerTest, ReloadsChangedFilesAndKeepsTheOldOnError) {
  auto a = Make();
  ASSERT_NE(a, nullptr);
  Write(tokens_, Hex(Sha256("t-new")) + " billing\n");
  Write(policy_, "billing shop/invoices stream,ack\n");
  a->RefreshNow();
  EXPECT_EQ(*a->Authenticate("Bearer t-new", {}), "billing");
  EXPECT_EQ(a->Authenticate("Bearer t-billing", {}).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(a->Authorize("billing", Action::kAck, "shop", "invoices").ok());

  Write(policy_, "billing shop/invoices stream,bogus\n");
  Write(tokens_, "not-a-digest x\n");
  a->RefreshNow();
  EXPECT_EQ(*a->Authenticate("Bearer t-new", {}), "billing");
  EXPECT_TRUE(a->Authorize("billing", Action::kAck, "shop", "invoices").ok());
}

// A stream's subscriber that records how it was closed.
class ClosedSubscriber : public Subscriber {
 public:
  void Send(uint64_t, MessageBatch) override {}
  void Close(absl::Status status) override { closes.push_back(status); }
  std::vector<absl::Status> closes;
};

TEST_F(AuthorizerTest, RevokedTokenOrGrantClosesTheWatchedStreamOnce) {
  auto a = Make(/*certs=*/true);
  ASSERT_NE(a, nullptr);
  absl::StatusOr<Authorizer::Credential> billing =
      a->AuthenticateCredential("Bearer t-billing", {});
  ASSERT_TRUE(billing.ok()) << billing.status();
  EXPECT_EQ(billing->principal, "billing");
  EXPECT_EQ(billing->token, Sha256("t-billing"));
  absl::StatusOr<Authorizer::Credential> cert =
      a->AuthenticateCredential(std::nullopt, {"client-a"});
  ASSERT_TRUE(cert.ok()) << cert.status();
  EXPECT_EQ(cert->token, std::nullopt);

  int reloads = 0;
  const uint64_t id = a->AddReloadWatcher([&] { ++reloads; });
  auto stream = std::make_shared<ClosedSubscriber>();
  StreamRevocation revocation(a.get(), *billing, "shop", "invoices", stream);
  a->RefreshNow();  // nothing changed
  EXPECT_EQ(reloads, 0);

  // The policy grows: the stream goes on.
  Write(policy_, "billing shop/* stream\nops */* admin\n");
  a->RefreshNow();
  EXPECT_EQ(reloads, 1);
  EXPECT_TRUE(stream->closes.empty());
  EXPECT_TRUE(a->StillAuthenticates(*billing).ok());

  // The token's digest now names another principal: revoked.
  Write(tokens_, Hex(Sha256("t-billing")) + " other\n");
  a->RefreshNow();
  EXPECT_EQ(reloads, 2);
  const absl::Status revoked = absl::UnauthenticatedError(
      "credentials revoked: the bearer token of 'billing' is no longer in "
      "the tokens file");
  EXPECT_EQ(a->StillAuthenticates(*billing), revoked);
  EXPECT_TRUE(a->StillAuthenticates(*cert).ok());
  ASSERT_EQ(stream->closes.size(), 1u);
  EXPECT_EQ(stream->closes[0], revoked);
  Write(tokens_, Hex(Sha256("t-ops")) + " ops\n");
  a->RefreshNow();
  EXPECT_EQ(stream->closes.size(), 1u) << "closed twice";

  // A removed grant closes a stream of a certificate's identity.
  Write(policy_, "client-a shop/invoices stream\n");
  a->RefreshNow();
  auto cert_stream = std::make_shared<ClosedSubscriber>();
  StreamRevocation cert_revocation(a.get(), *cert, "shop", "invoices",
                                   cert_stream);
  Write(policy_, "ops */* admin\n");
  a->RefreshNow();
  ASSERT_EQ(cert_stream->closes.size(), 1u);
  EXPECT_EQ(cert_stream->closes[0],
            absl::PermissionDeniedError(
                "permission denied: 'client-a' may not stream shop.invoices"));

  a->RemoveReloadWatcher(id);
  Write(policy_, "ops */* *\n");
  a->RefreshNow();
  EXPECT_EQ(reloads, 5) << "a removed watcher ran";
}

TEST_F(AuthorizerTest, StartRefusesABadPolicyWithFileAndLine) {
  Write(policy_, "ops */* admin\nops */*\n");
  AuthOptions o;
  o.tokens_file = tokens_;
  o.policy_file = policy_;
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::Create(o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a.status().message(),
            absl::StrCat(policy_,
                         ":2: expected 'principal keyspace/table actions', "
                         "got 2 fields"));
}

TEST_F(AuthorizerTest, StartRefusesFilesOthersMayWrite) {
  AuthOptions o;
  o.tokens_file = tokens_;
  o.policy_file = policy_;
  ASSERT_EQ(chmod(tokens_.c_str(), 0666), 0);
  EXPECT_EQ(Authorizer::Create(o).status(),
            absl::FailedPreconditionError(absl::StrCat(
                "auth tokens file ", tokens_,
                ": mode 0666 lets group or others write it; chmod 600 it")));
  // Readable by all is fine: the file holds only digests.
  ASSERT_EQ(chmod(tokens_.c_str(), 0644), 0);
  ASSERT_EQ(chmod(policy_.c_str(), 0620), 0);
  EXPECT_EQ(Authorizer::Create(o).status(),
            absl::FailedPreconditionError(absl::StrCat(
                "auth policy file ", policy_,
                ": mode 0620 lets group or others write it; chmod 600 it")));
  ASSERT_EQ(chmod(policy_.c_str(), 0644), 0);
  EXPECT_TRUE(Authorizer::Create(o).ok());
}

// At a reload a file others may write keeps the previous version, even
// when its text changed too; chmod 600 loads it.
TEST_F(AuthorizerTest, ReloadKeepsTheOldFileWhileOthersMayWriteIt) {
  auto a = Make();
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(chmod(tokens_.c_str(), 0666), 0);
  std::ofstream(tokens_, std::ios::app) << Hex(Sha256("t-new")) << " ops\n";
  a->RefreshNow();
  EXPECT_EQ(*a->Authenticate("Bearer t-billing", {}), "billing");
  EXPECT_EQ(a->Authenticate("Bearer t-new", {}).status().code(),
            absl::StatusCode::kUnauthenticated);
  ASSERT_EQ(chmod(tokens_.c_str(), 0600), 0);
  a->RefreshNow();
  EXPECT_EQ(*a->Authenticate("Bearer t-new", {}), "ops");
  EXPECT_EQ(*a->Authenticate("Bearer t-billing", {}), "billing");
}

TEST_F(AuthorizerTest, PolicyNeedsAuthentication) {
  AuthOptions o;
  o.policy_file = policy_;
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::Create(o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AuthorizerTest, OpenWithoutFiles) {
  absl::StatusOr<std::unique_ptr<Authorizer>> a =
      Authorizer::Create(AuthOptions());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE((*a)->required());
  EXPECT_EQ(*(*a)->Authenticate(std::nullopt, {}), "");
  EXPECT_TRUE((*a)->Authorize("", Action::kAdmin, "k", "t").ok());
}

TEST_F(AuthorizerTest, StreamSlotsPerPrincipal) {
  auto a = Make(false, /*max_streams=*/2);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->AcquireStream("billing").ok());
  EXPECT_TRUE(a->AcquireStream("billing").ok());
  absl::Status third = a->AcquireStream("billing");
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(third.message(),
            "'billing' already has 2 open streams "
            "(--max_streams_per_principal)");
  EXPECT_TRUE(a->AcquireStream("ops").ok());
  a->ReleaseStream("billing");
  EXPECT_TRUE(a->AcquireStream("billing").ok());
}

}  // namespace
}  // namespace msgq::auth
