#include "tools/chaos/soak_files.h"

#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "tools/launch/child_process.h"

namespace msgq::chaos {
namespace {

std::string Hex(const unsigned char* data, size_t n) {
  std::string hex;
  for (size_t i = 0; i < n; ++i) absl::StrAppendFormat(&hex, "%02x", data[i]);
  return hex;
}

std::string RandomToken(const std::string& principal) {
  unsigned char bytes[16];
  RAND_bytes(bytes, sizeof(bytes));
  return absl::StrCat("tok-", principal, "-", Hex(bytes, sizeof(bytes)));
}

// "sha256hex principal\n", a line of the token file.
std::string TokenLine(const std::string& token, const std::string& principal) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d);
  return absl::StrCat(Hex(d, sizeof(d)), " ", principal, "\n");
}

// Writes `path` with mode 0600 (msgqd refuses tokens or a policy that
// group or others may write).
bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  return static_cast<bool>(out) && chmod(path.c_str(), 0600) == 0;
}

}  // namespace

absl::StatusOr<SoakFiles> MakeSoakFiles(const std::string& dir,
                                        const std::string& keyspace,
                                        const std::vector<std::string>& tables,
                                        const std::string& decoy) {
  SoakFiles f;
  f.ca_file = dir + "/ca.pem";
  f.cert_file = dir + "/server.pem";
  f.key_file = dir + "/server.key";
  f.tokens_file = dir + "/tokens";
  f.policy_file = dir + "/policy";
  if (!Write(dir + "/san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")) {
    return absl::InternalError(absl::StrCat("cannot write in ", dir));
  }
  const std::string cmd = absl::StrReplaceAll(
      "cd DIR && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
      "-days 2 -subj /CN=msgq-soak-ca && "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
      "-subj /CN=msgqd-soak && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out server.pem -days 2 -extfile san.ext",
      {{"DIR", launch::ShellQuote(dir)}});
  if (system(("(" + cmd + ") >" + launch::ShellQuote(dir + "/openssl.log") +
              " 2>&1")
                 .c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("openssl failed; see ", dir, "/openssl.log"));
  }
  f.worker_token = RandomToken("worker");
  f.idler_token = RandomToken("idler");
  f.ops_token = RandomToken("ops");
  f.mallory_token = RandomToken("mallory");
  f.hog_token = RandomToken("hog");
  std::string policy =
      "# principal  keyspace/table  actions (msgq-chaos --hostile)\n";
  for (const std::string& t : tables) {
    absl::StrAppend(&policy, "worker ", keyspace, "/", t, " stream,ack\n");
  }
  absl::StrAppend(&policy, "idler ", keyspace, "/", decoy, " stream\n",
                  "ops */* admin\n",
                  "# mallory, hog: a valid token, no grant\n");
  if (!Write(f.tokens_file, TokenLine(f.worker_token, "worker") +
                                TokenLine(f.idler_token, "idler") +
                                TokenLine(f.ops_token, "ops") +
                                TokenLine(f.mallory_token, "mallory") +
                                TokenLine(f.hog_token, "hog")) ||
      !Write(f.policy_file, policy)) {
    return absl::InternalError(absl::StrCat("cannot write in ", dir));
  }
  return f;
}

}  // namespace msgq::chaos
