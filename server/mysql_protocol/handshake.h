// The connection phase of the MySQL protocol as msgq serves it: the
// server's HandshakeV10 (protocol 10), the client's HandshakeResponse41, the
// AuthSwitchRequest sent to clients that offer another plugin (or to
// mysql_clear_password when the password is a bearer token), and the
// mysql_native_password check:
//   client sends SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))
// (an empty password sends an empty response).
//
// TLS: when the server offers CLIENT_SSL (HandshakePayload's
// `capabilities`), a client may answer with a 32-byte SSLRequest
// (IsSslRequest), do the TLS handshake, and send its HandshakeResponse41
// inside TLS. No compression, no CLIENT_DEPRECATE_EOF: otherwise the
// capabilities are kServerCapabilities. Pure functions: thread-compatible.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_HANDSHAKE_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_HANDSHAKE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq::mysql_protocol {

inline constexpr uint32_t kClientLongPassword = 0x00000001;
inline constexpr uint32_t kClientLongFlag = 0x00000004;
inline constexpr uint32_t kClientConnectWithDb = 0x00000008;
inline constexpr uint32_t kClientProtocol41 = 0x00000200;
inline constexpr uint32_t kClientSsl = 0x00000800;
inline constexpr uint32_t kClientTransactions = 0x00002000;
inline constexpr uint32_t kClientSecureConnection = 0x00008000;
inline constexpr uint32_t kClientPluginAuth = 0x00080000;
inline constexpr uint32_t kClientConnectAttrs = 0x00100000;
inline constexpr uint32_t kClientPluginAuthLenencData = 0x00200000;

inline constexpr uint32_t kServerCapabilities =
    kClientLongPassword | kClientLongFlag | kClientConnectWithDb |
    kClientProtocol41 | kClientTransactions | kClientSecureConnection |
    kClientPluginAuth | kClientConnectAttrs | kClientPluginAuthLenencData;

inline constexpr char kServerVersion[] = "8.0.30-msgq";
inline constexpr char kNativePassword[] = "mysql_native_password";
// The password as typed, NUL-terminated: how a client gives a bearer token.
inline constexpr char kClearPassword[] = "mysql_clear_password";
inline constexpr size_t kScrambleBytes = 20;
// utf8mb4_general_ci: the engine reads rows as utf8mb4.
inline constexpr uint8_t kUtf8mb4GeneralCi = 45;
inline constexpr uint8_t kBinaryCharset = 63;

// The HandshakeV10 payload. `scramble` must be kScrambleBytes bytes with no
// NUL (see MakeScramble). `capabilities`: kServerCapabilities, with
// kClientSsl when TLS is offered.
std::string HandshakePayload(uint32_t connection_id, absl::string_view scramble,
                             uint32_t capabilities = kServerCapabilities);

// Whether a client's first answer is an SSLRequest: the 32 bytes of a
// HandshakeResponse41 up to the user name, with CLIENT_SSL set.
bool IsSslRequest(absl::string_view payload);

// kScrambleBytes printable ASCII bytes (0x21..0x7E) from `random_bytes`
// (any bytes; e.g. from RAND_bytes), as MySQL servers send.
std::string MakeScramble(absl::string_view random_bytes);

struct HandshakeResponse {
  uint32_t capabilities = 0;
  std::string user;
  std::string auth_response;
  std::string database;     // empty when not given
  std::string auth_plugin;  // empty when not given
};

// Parses a HandshakeResponse41 (CLIENT_SSL may be set: the response sent
// inside TLS). INVALID_ARGUMENT when it is truncated or malformed (an
// SSLRequest has no user name), or when the client lacks
// CLIENT_PROTOCOL_41 (pre-4.1 clients).
absl::StatusOr<HandshakeResponse> ParseHandshakeResponse(
    absl::string_view payload);

// AuthSwitchRequest to mysql_native_password with `scramble`.
std::string AuthSwitchPayload(absl::string_view scramble);

// AuthSwitchRequest to mysql_clear_password (no plugin data).
std::string ClearPasswordSwitchPayload();

// The password of a mysql_clear_password answer: `response` without its
// terminating NUL (clients send strlen + 1 bytes; a missing NUL is taken
// as is).
std::string ClearPassword(absl::string_view response);

// Whether `response` proves knowledge of `password` for `scramble`
// (constant-time compare). An empty password matches only an empty
// response.
bool CheckNativePassword(absl::string_view scramble, absl::string_view password,
                         absl::string_view response);

// What a client computes (for tests and the fuzzer).
std::string NativePasswordResponse(absl::string_view scramble,
                                   absl::string_view password);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_HANDSHAKE_H_
