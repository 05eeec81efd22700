#include "server/mysql_protocol/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "server/mysql_protocol/packet.h"

namespace msgq::mysql_protocol {
namespace {

std::string Sha1(absl::string_view a, absl::string_view b = {}) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  const bool ok = ctx != nullptr &&
                  EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, a.data(), a.size()) == 1 &&
                  EVP_DigestUpdate(ctx, b.data(), b.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest, &n) == 1;
  EVP_MD_CTX_free(ctx);
  // Only allocation can fail here; an empty digest then matches nothing.
  if (!ok) return std::string();
  return std::string(reinterpret_cast<const char*>(digest), n);
}

}  // namespace

std::string MakeScramble(absl::string_view random_bytes) {
  std::string out(kScrambleBytes, 'a');
  for (size_t i = 0; i < kScrambleBytes && i < random_bytes.size(); ++i) {
    out[i] = char(0x21 + static_cast<uint8_t>(random_bytes[i]) % 94);
  }
  return out;
}

bool IsSslRequest(absl::string_view payload) {
  PayloadReader r(payload);
  uint32_t capabilities = 0;
  return payload.size() == 32 && r.ReadInt4(capabilities) &&
         (capabilities & kClientSsl) && (capabilities & kClientProtocol41);
}

std::string HandshakePayload(uint32_t connection_id, absl::string_view scramble,
                             uint32_t capabilities) {
  std::string out;
  AppendInt1(out, 10);
  AppendNulString(out, kServerVersion);
  AppendInt4(out, connection_id);
  const absl::string_view first = scramble.substr(0, 8);
  out.append(first.data(), first.size());
  AppendInt1(out, 0);
  AppendInt2(out, uint16_t(capabilities & 0xFFFF));
  AppendInt1(out, kUtf8mb4GeneralCi);
  AppendInt2(out, kServerStatusAutocommit);
  AppendInt2(out, uint16_t(capabilities >> 16));
  AppendInt1(out, uint8_t(kScrambleBytes + 1));
  out.append(10, '\0');
  AppendNulString(out, scramble.substr(8));
  AppendNulString(out, kNativePassword);
  return out;
}

absl::StatusOr<HandshakeResponse> ParseHandshakeResponse(
    absl::string_view payload) {
  PayloadReader r(payload);
  HandshakeResponse out;
  uint32_t max_packet = 0;
  uint8_t charset = 0;
  if (!r.ReadInt4(out.capabilities)) {
    return absl::InvalidArgumentError("handshake response too short");
  }
  if ((out.capabilities & kClientProtocol41) == 0) {
    return absl::InvalidArgumentError(
        "client does not speak protocol 4.1 (CLIENT_PROTOCOL_41)");
  }
  if (!r.ReadInt4(max_packet) || !r.ReadInt1(charset) || !r.Skip(23)) {
    return absl::InvalidArgumentError("handshake response too short");
  }
  absl::string_view user, auth;
  if (!r.ReadNulString(user)) {
    return absl::InvalidArgumentError("handshake response: no user name");
  }
  bool ok = true;
  if (out.capabilities & kClientPluginAuthLenencData) {
    ok = r.ReadLenEncString(auth);
  } else if (out.capabilities & kClientSecureConnection) {
    uint8_t n = 0;
    ok = r.ReadInt1(n) && r.ReadBytes(n, auth);
  } else {
    ok = r.ReadNulString(auth);
  }
  if (!ok) {
    return absl::InvalidArgumentError("handshake response: bad auth data");
  }
  out.user = std::string(user);
  out.auth_response = std::string(auth);
  if ((out.capabilities & kClientConnectWithDb) && !r.empty()) {
    absl::string_view db;
    if (!r.ReadNulString(db)) {
      return absl::InvalidArgumentError("handshake response: bad database");
    }
    out.database = std::string(db);
  }
  if ((out.capabilities & kClientPluginAuth) && !r.empty()) {
    // Some clients omit the final NUL.
    const absl::string_view rest = r.Rest();
    out.auth_plugin = std::string(rest.substr(0, rest.find('\0')));
  }
  // Connection attributes (CLIENT_CONNECT_ATTRS) are ignored.
  return out;
}

std::string AuthSwitchPayload(absl::string_view scramble) {
  std::string out;
  AppendInt1(out, 0xFE);
  AppendNulString(out, kNativePassword);
  AppendNulString(out, scramble);
  return out;
}

std::string ClearPasswordSwitchPayload() {
  std::string out;
  AppendInt1(out, 0xFE);
  AppendNulString(out, kClearPassword);
  return out;
}

std::string ClearPassword(absl::string_view response) {
  if (!response.empty() && response.back() == '\0') response.remove_suffix(1);
  return std::string(response);
}

std::string NativePasswordResponse(absl::string_view scramble,
                                   absl::string_view password) {
  if (password.empty()) return "";
  const std::string stage1 = Sha1(password);
  const std::string stage2 = Sha1(stage1);
  std::string out = Sha1(scramble, stage2);
  if (stage1.size() != out.size()) return "";
  for (size_t i = 0; i < out.size(); ++i) out[i] ^= stage1[i];
  return out;
}

bool CheckNativePassword(absl::string_view scramble, absl::string_view password,
                         absl::string_view response) {
  const std::string expected = NativePasswordResponse(scramble, password);
  if (expected.empty() != password.empty()) return false;
  if (expected.size() != response.size()) return false;
  return CRYPTO_memcmp(expected.data(), response.data(), expected.size()) == 0;
}

}  // namespace msgq::mysql_protocol
