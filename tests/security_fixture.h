// Helpers of the security tests (docs/security.md): test certificates made with
// the openssl CLI, TLS channels, and calls carrying a bearer token.
#ifndef MSGQ_TESTS_SECURITY_FIXTURE_H_
#define MSGQ_TESTS_SECURITY_FIXTURE_H_

#include <openssl/sha.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "grpcpp/grpcpp.h"
#include "tests/fixture.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces `path` atomically (a new file renamed over it), of mode 0600 as
// msgqd wants its tokens, policy and keys.
inline void ReplaceFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  chmod((path + ".tmp").c_str(), 0600);
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// "sha256hex principal\n" for a token file.
inline std::string TokenLine(const std::string& token,
                             const std::string& principal) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d);
  std::string hex;
  for (unsigned char b : d) hex += absl::StrFormat("%02x", b);
  return absl::StrCat(hex, " ", principal, "\n");
}

// In `dir`: ca.pem (msgq-test-ca) signing server1 (CN msgqd-1), server2
// (CN msgqd-2, both for IP 127.0.0.1) and client "reader"; other.pem, an
// unrelated CA, signing client "intruder". Each NAME.pem has NAME.key.
inline bool MakeTestCertificates(const std::string& dir) {
  std::ofstream(dir + "/san.ext")
      << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  std::string cmd =
      "cd DIR && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
      "-days 2 -subj /CN=msgq-test-ca && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key "
      "-out other.pem -days 2 -subj /CN=msgq-other-ca";
  auto sign = [&](const std::string& name, const std::string& ca,
                  const std::string& cn, bool server) {
    absl::StrAppend(&cmd, " && openssl req -newkey rsa:2048 -nodes -keyout ",
                    name, ".key -out ", name, ".csr -subj /CN=", cn,
                    " && openssl x509 -req -in ", name, ".csr -CA ", ca,
                    ".pem -CAkey ", ca, ".key -CAcreateserial -out ", name,
                    ".pem -days 2", server ? " -extfile san.ext" : "");
  };
  sign("server1", "ca", "msgqd-1", true);
  sign("server2", "ca", "msgqd-2", true);
  sign("reader", "ca", "reader", false);
  sign("intruder", "other", "intruder", false);
  cmd = absl::StrReplaceAll(cmd, {{"DIR", dir}});
  return system(("(" + cmd + ") >" + dir + "/openssl.log 2>&1").c_str()) == 0;
}

// A TLS channel trusting `dir`/ca.pem, with client certificate `client`
// (a NAME of MakeTestCertificates) unless empty. Its own subchannel pool:
// each channel makes a new connection (and handshake).
inline std::shared_ptr<grpc::Channel> TlsChannel(
    const std::string& address, const std::string& dir,
    const std::string& client = "") {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadText(dir + "/ca.pem");
  if (!client.empty()) {
    o.pem_cert_chain = ReadText(dir + "/" + client + ".pem");
    o.pem_private_key = ReadText(dir + "/" + client + ".key");
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(o), args);
}

inline std::shared_ptr<grpc::Channel> PlainChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

inline void Prepare(grpc::ClientContext* ctx, const std::string& token) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(10));
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
}

inline grpc::Status ListTables(v1::Messaging::Stub* stub,
                               const std::string& token,
                               v1::ListTablesResponse* response,
                               std::string* server_cn = nullptr) {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  grpc::Status s = stub->ListTables(&ctx, v1::ListTablesRequest(), response);
  if (server_cn != nullptr && ctx.auth_context() != nullptr) {
    for (const grpc::string_ref& v :
         ctx.auth_context()->FindPropertyValues("x509_common_name")) {
      *server_cn = std::string(v.data(), v.size());
    }
  }
  return s;
}

// Opens a MessageStream of msgq.`table` and returns OK once its first
// response (the fields) arrived, else the status it ended with.
inline grpc::Status OpenStream(v1::Messaging::Stub* stub,
                               const std::string& table,
                               const std::string& token) {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  v1::MessageStreamRequest request;
  request.set_keyspace("msgq");
  request.set_name(table);
  auto reader = stub->MessageStream(&ctx, request);
  v1::MessageStreamResponse response;
  if (reader->Read(&response)) {
    ctx.TryCancel();
    reader->Finish();
    return grpc::Status::OK;
  }
  return reader->Finish();
}

inline grpc::Status Ack(v1::Messaging::Stub* stub, const std::string& table,
                        const std::string& token) {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  v1::MessageAckRequest request;
  request.set_keyspace("msgq");
  request.set_name(table);
  request.add_ids("1");
  v1::MessageAckResponse response;
  return stub->MessageAck(&ctx, request, &response);
}

inline grpc::Status Pause(v1::Messaging::Stub* stub, const std::string& table,
                          const std::string& token) {
  grpc::ClientContext ctx;
  Prepare(&ctx, token);
  v1::SetPausedRequest request;
  request.set_keyspace("msgq");
  request.set_name(table);
  request.set_paused(true);
  v1::SetPausedResponse response;
  return stub->SetPaused(&ctx, request, &response);
}

inline std::vector<std::string> TableNames(
    const v1::ListTablesResponse& response) {
  std::vector<std::string> names;
  for (const v1::TableStatus& t : response.tables()) {
    names.push_back(t.name());
  }
  return names;
}

class SecurityTest : public MsgqTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MsgqTest::SetUp());
    auto dir = launch::OwnedDir::Create("msgq-test-sec");
    ASSERT_TRUE(dir.ok()) << dir.status();
    files_ = *std::move(dir);
  }
  std::string Path(const std::string& name) const {
    return files_->path() + "/" + name;
  }
  // Waits until msgqd has loaded msgq.`table`.
  void WaitForTable(v1::Messaging::Stub* stub, const std::string& table,
                    const std::string& token) {
    ASSERT_TRUE(Eventually(
        [&] {
          v1::ListTablesResponse r;
          if (!ListTables(stub, token, &r).ok()) return false;
          for (const auto& t : r.tables()) {
            if (t.name() == table && t.loaded()) return true;
          }
          return false;
        },
        absl::Seconds(20)))
        << server_->Log();
  }
  std::unique_ptr<launch::OwnedDir> files_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_SECURITY_FIXTURE_H_
