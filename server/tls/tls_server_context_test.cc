#include "server/tls/tls_server_context.h"

#include <openssl/x509.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "server/tls/tls_test_util.h"

namespace msgq::tls {
namespace {

using testing::CopyFile;

std::string CommonNameOf(SSL_CTX* ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (cert == nullptr) return "";
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn,
                            sizeof(cn));
  return cn;
}

class TlsServerContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(testing::MakeTempDir());
    ASSERT_TRUE(testing::MakeCertificates(*certs_)) << *certs_;
  }
  static void TearDownTestSuite() {
    testing::RemoveTempDir(*certs_);
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    CopyFile(*certs_ + "/server1.pem", dir_ + "/cert.pem");
    CopyFile(*certs_ + "/server1.key", dir_ + "/key.pem");
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }
  TlsServerFiles Files() const {
    return {dir_ + "/cert.pem", dir_ + "/key.pem", "", absl::Seconds(60)};
  }

  static std::string* certs_;
  std::string dir_;
};
std::string* TlsServerContextTest::certs_ = nullptr;

TEST_F(TlsServerContextTest, LoadsThePairAndSpeaksTls12AndUp) {
  auto ctx = TlsServerContext::Create(Files());
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  SslCtxPtr acquired = (*ctx)->Acquire();
  EXPECT_EQ(CommonNameOf(acquired.get()), "msgqd-1");
  EXPECT_EQ(SSL_CTX_get_min_proto_version(acquired.get()), TLS1_2_VERSION);
  EXPECT_FALSE((*ctx)->requires_client_certificate());
  EXPECT_EQ(SSL_CTX_get_verify_mode(acquired.get()), SSL_VERIFY_NONE);
}

TEST_F(TlsServerContextTest, ClientCaRequiresAndVerifiesClientCertificates) {
  TlsServerFiles files = Files();
  files.client_ca = *certs_ + "/ca.pem";
  auto ctx = TlsServerContext::Create(files);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_TRUE((*ctx)->requires_client_certificate());
  EXPECT_EQ(SSL_CTX_get_verify_mode((*ctx)->Acquire().get()),
            SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
}

TEST_F(TlsServerContextTest, RejectsBadFilesNamingTheFileAndProblem) {
  TlsServerFiles files = Files();
  files.cert = dir_ + "/missing.pem";
  auto missing = TlsServerContext::Create(files);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(),
            absl::StrCat("TLS certificate ", files.cert, ": cannot read ",
                         files.cert, ": No such file or directory"));

  files = Files();
  files.cert = dir_ + "/key.pem";  // a key, not a certificate
  EXPECT_EQ(TlsServerContext::Create(files).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "TLS certificate ", files.cert, ": holds no PEM certificate")));

  files = Files();
  files.key = dir_ + "/cert.pem";
  EXPECT_EQ(
      TlsServerContext::Create(files).status(),
      absl::InvalidArgumentError(absl::StrCat(
          "TLS key ", files.key, ": holds no unencrypted PEM private key")));

  files = Files();
  files.key = *certs_ + "/server2.key";
  EXPECT_EQ(TlsServerContext::Create(files).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "TLS key ", files.key,
                ": is not the key of the certificate in ", files.cert)));

  files = Files();
  files.client_ca = *certs_ + "/ca.key";
  EXPECT_EQ(
      TlsServerContext::Create(files).status(),
      absl::InvalidArgumentError(absl::StrCat("TLS client CA ", files.client_ca,
                                              ": holds no PEM certificate")));

  files = Files();
  files.key = "";
  EXPECT_EQ(TlsServerContext::Create(files).status(),
            absl::InvalidArgumentError(
                "TLS needs both a certificate and a key file"));
}

TEST_F(TlsServerContextTest, PicksUpNewFilesOnlyAfterTheReloadInterval) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  auto ctx = TlsServerContext::Create(Files(), {.clock = &clock});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  SslCtxPtr before = (*ctx)->Acquire();
  CopyFile(*certs_ + "/server2.key", dir_ + "/key.pem");
  CopyFile(*certs_ + "/server2.pem", dir_ + "/cert.pem");

  clock.Advance(absl::Seconds(59));
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-1");
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-2");
  EXPECT_EQ((*ctx)->reloads(), 1);
  // A connection's context outlives the rotation.
  EXPECT_EQ(CommonNameOf(before.get()), "msgqd-1");
  // Unchanged files are not reloaded.
  clock.Advance(absl::Seconds(60));
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-2");
  EXPECT_EQ((*ctx)->reloads(), 1);
}

TEST_F(TlsServerContextTest, KeepsTheOldPairWhileTheNewOneDoesNotMatch) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  auto ctx = TlsServerContext::Create(Files(), {.clock = &clock});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  // Half a rotation: the new certificate, the old key.
  CopyFile(*certs_ + "/server2.pem", dir_ + "/cert.pem");
  EXPECT_EQ((*ctx)->ReloadNow(), absl::InvalidArgumentError(absl::StrCat(
                                     "TLS key ", dir_,
                                     "/key.pem: is not the key of the "
                                     "certificate in ",
                                     dir_, "/cert.pem")));
  // Reported once per change; the old pair serves meanwhile.
  EXPECT_EQ((*ctx)->ReloadNow(), absl::OkStatus());
  clock.Advance(absl::Seconds(60));
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-1");
  EXPECT_EQ((*ctx)->reloads(), 0);

  CopyFile(*certs_ + "/server2.key", dir_ + "/key.pem");
  clock.Advance(absl::Seconds(60));
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-2");
  EXPECT_EQ((*ctx)->reloads(), 1);
}

// A key group or others may read is refused at start, and at a reload
// keeps the old pair (reported once per change); a chmod alone is a change.
TEST_F(TlsServerContextTest, AKeyOthersMayReadIsRefused) {
  const std::string key = dir_ + "/key.pem";
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  const absl::Status loose = absl::FailedPreconditionError(
      absl::StrCat("TLS key ", key,
                   ": mode 0644 lets group or others read it; chmod 600 it"));
  EXPECT_EQ(TlsServerContext::Create(Files()).status(), loose);
  ASSERT_EQ(chmod(key.c_str(), 0640), 0);
  EXPECT_EQ(TlsServerContext::Create(Files()).status(),
            absl::FailedPreconditionError(absl::StrCat(
                "TLS key ", key,
                ": mode 0640 lets group or others read it; chmod 600 it")));
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  auto ctx = TlsServerContext::Create(Files());
  ASSERT_TRUE(ctx.ok()) << ctx.status();

  CopyFile(*certs_ + "/server2.pem", dir_ + "/cert.pem");
  CopyFile(*certs_ + "/server2.key", key);
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  EXPECT_EQ((*ctx)->ReloadNow(), loose);
  EXPECT_EQ((*ctx)->ReloadNow(), absl::OkStatus());
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-1");
  EXPECT_EQ((*ctx)->reloads(), 0);
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  EXPECT_EQ((*ctx)->ReloadNow(), absl::OkStatus());
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-2");
  EXPECT_EQ((*ctx)->reloads(), 1);
}

TEST_F(TlsServerContextTest, AMissingFileKeepsTheOldPair) {
  auto ctx = TlsServerContext::Create(Files());
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  std::remove((dir_ + "/cert.pem").c_str());
  EXPECT_EQ((*ctx)->ReloadNow().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CommonNameOf((*ctx)->Acquire().get()), "msgqd-1");
}

}  // namespace
}  // namespace msgq::tls
