#include "server/http/gnutls_credentials.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/tls/tls_test_util.h"

namespace msgq {
namespace {

using tls::testing::CopyFile;

// The CN of a set's leaf certificate.
std::string CommonNameOf(const GnutlsCredentials::Set& set) {
  gnutls_x509_crt_t crt;
  gnutls_x509_crt_init(&crt);
  std::string cn;
  if (gnutls_x509_crt_import(crt, &set.chain()[0].cert, GNUTLS_X509_FMT_DER) >=
      0) {
    char buf[256];
    size_t size = sizeof(buf);
    if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0,
                                      buf, &size) >= 0) {
      cn.assign(buf, size);
    }
  }
  gnutls_x509_crt_deinit(crt);
  return cn;
}

class GnutlsCredentialsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(tls::testing::MakeTempDir());
    ASSERT_TRUE(tls::testing::MakeCertificates(*certs_)) << *certs_;
  }
  static void TearDownTestSuite() {
    tls::testing::RemoveTempDir(*certs_);
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override {
    dir_ = tls::testing::MakeTempDir();
    CopyFile(*certs_ + "/server1.pem", dir_ + "/cert.pem");
    CopyFile(*certs_ + "/server1.key", dir_ + "/key.pem");
  }
  void TearDown() override { tls::testing::RemoveTempDir(dir_); }
  tls::TlsServerFiles Files() const {
    return {dir_ + "/cert.pem", dir_ + "/key.pem", "", absl::Seconds(60)};
  }

  static std::string* certs_;
  std::string dir_;
  FakeClock clock_{absl::FromUnixSeconds(1000)};
};
std::string* GnutlsCredentialsTest::certs_ = nullptr;

TEST_F(GnutlsCredentialsTest, LoadsThePair) {
  auto creds = GnutlsCredentials::Create(Files());
  ASSERT_TRUE(creds.ok()) << creds.status();
  std::shared_ptr<const GnutlsCredentials::Set> set = (*creds)->Acquire();
  EXPECT_EQ(set->chain_length(), 1u);
  EXPECT_EQ(CommonNameOf(*set), "msgqd-1");
  EXPECT_NE(set->key(), nullptr);
  EXPECT_EQ(set->client_ca(), nullptr);
  EXPECT_FALSE((*creds)->requires_client_certificate());
}

TEST_F(GnutlsCredentialsTest, RejectsBadFilesNamingTheFileAndProblem) {
  tls::TlsServerFiles files = Files();
  files.cert = dir_ + "/missing.pem";
  EXPECT_EQ(GnutlsCredentials::Create(files).status(),
            absl::InvalidArgumentError(
                absl::StrCat("TLS certificate ", files.cert, ": cannot read ",
                             files.cert, ": No such file or directory")));
  files = Files();
  files.cert = files.key;
  EXPECT_EQ(GnutlsCredentials::Create(files).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "TLS certificate ", files.cert, ": holds no PEM certificate")));
  files = Files();
  files.key = files.cert;
  EXPECT_EQ(
      GnutlsCredentials::Create(files).status(),
      absl::InvalidArgumentError(absl::StrCat(
          "TLS key ", files.key, ": holds no unencrypted PEM private key")));
  files = Files();
  files.key = *certs_ + "/server2.key";
  EXPECT_EQ(GnutlsCredentials::Create(files).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "TLS key ", files.key,
                ": is not the key of the certificate in ", files.cert)));
  files = Files();
  files.client_ca = files.key;
  EXPECT_EQ(GnutlsCredentials::Create(files).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "TLS client CA ", files.key, ": holds no PEM certificate")));
}

TEST_F(GnutlsCredentialsTest, ReloadsChangedFilesAfterTheIntervalOnly) {
  auto creds = GnutlsCredentials::Create(Files(), {&clock_});
  ASSERT_TRUE(creds.ok()) << creds.status();
  CopyFile(*certs_ + "/server2.pem", dir_ + "/cert.pem");
  CopyFile(*certs_ + "/server2.key", dir_ + "/key.pem");
  clock_.Advance(absl::Seconds(59));
  EXPECT_EQ(CommonNameOf(*(*creds)->Acquire()), "msgqd-1");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(CommonNameOf(*(*creds)->Acquire()), "msgqd-2");
  EXPECT_EQ((*creds)->reloads(), 1);
}

TEST_F(GnutlsCredentialsTest, APairThatDoesNotMatchKeepsTheOldOne) {
  auto creds = GnutlsCredentials::Create(Files(), {&clock_});
  ASSERT_TRUE(creds.ok()) << creds.status();
  std::shared_ptr<const GnutlsCredentials::Set> before = (*creds)->Acquire();
  CopyFile(*certs_ + "/server2.key", dir_ + "/key.pem");
  EXPECT_EQ((*creds)->ReloadNow(),
            absl::InvalidArgumentError(absl::StrCat(
                "TLS key ", dir_, "/key.pem",
                ": is not the key of the certificate in ", dir_, "/cert.pem")));
  EXPECT_EQ((*creds)->ReloadNow(), absl::OkStatus());  // reported once
  EXPECT_EQ((*creds)->Acquire(), before);
  CopyFile(*certs_ + "/server2.pem", dir_ + "/cert.pem");
  EXPECT_EQ((*creds)->ReloadNow(), absl::OkStatus());
  EXPECT_EQ(CommonNameOf(*(*creds)->Acquire()), "msgqd-2");
  // The set handed out before stays usable while held.
  EXPECT_EQ(CommonNameOf(*before), "msgqd-1");
}

// A key group or others may read is refused at start, and at a reload
// keeps the old set (reported once per change).
TEST_F(GnutlsCredentialsTest, AKeyOthersMayReadIsRefused) {
  const std::string key = dir_ + "/key.pem";
  ASSERT_EQ(chmod(key.c_str(), 0604), 0);
  EXPECT_EQ(GnutlsCredentials::Create(Files()).status(),
            absl::FailedPreconditionError(absl::StrCat(
                "TLS key ", key,
                ": mode 0604 lets group or others read it; chmod 600 it")));
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  auto creds = GnutlsCredentials::Create(Files(), {&clock_});
  ASSERT_TRUE(creds.ok()) << creds.status();
  std::shared_ptr<const GnutlsCredentials::Set> before = (*creds)->Acquire();
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  EXPECT_EQ((*creds)->ReloadNow(),
            absl::FailedPreconditionError(absl::StrCat(
                "TLS key ", key,
                ": mode 0644 lets group or others read it; chmod 600 it")));
  EXPECT_EQ((*creds)->ReloadNow(), absl::OkStatus());  // reported once
  EXPECT_EQ((*creds)->Acquire(), before);
}

TEST_F(GnutlsCredentialsTest, TheClientCaIsLoaded) {
  tls::TlsServerFiles files = Files();
  files.client_ca = *certs_ + "/ca.pem";
  auto creds = GnutlsCredentials::Create(files);
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_TRUE((*creds)->requires_client_certificate());
  EXPECT_NE((*creds)->Acquire()->client_ca(), nullptr);
}

}  // namespace
}  // namespace msgq
