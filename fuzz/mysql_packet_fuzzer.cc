// Fuzzes the MySQL-protocol port's parsing (server/mysql_protocol/): the
// packet framing, the SSLRequest check, the handshake response, and command
// dispatch with the statement recognizer, over arbitrary client bytes.
//
// Properties: nothing crashes or reads out of bounds; a parsed packet
// consumed exactly its header plus payload, and none is over the
// connection's cap (MaxCommandPayload of kDefaultMaxQueryBytes); the
// statement tokenizer builds at most kMaxStatementTokens tokens, whatever
// the input; every reply is a sequence of well-framed packets starting at
// sequence id 1 (or the ERR for an out-of-order command, which closes); a
// stream request names a table; the first byte of each reply packet is OK
// (0x00), ERR (0xFF), EOF (0xFE) or a result set's column count.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "server/mysql_protocol/command.h"
#include "server/mysql_protocol/handshake.h"
#include "server/mysql_protocol/packet.h"
#include "server/mysql_protocol/statement.h"

namespace {

namespace mp = ::msgq::mysql_protocol;

void Check(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "mysql_packet_fuzzer: property violated: %s\n", what);
    abort();
  }
}

void CheckReply(const mp::CommandResult& r) {
  absl::string_view rest = r.reply;
  bool first = true;
  while (!rest.empty()) {
    size_t consumed = 0;
    auto p = mp::ParsePacket(rest, mp::kMaxPayloadPerPacket - 1, &consumed);
    Check(p.ok() && p->has_value(), "a reply is whole packets");
    Check(consumed == mp::kHeaderBytes + (*p)->payload.size(),
          "consumed = header + payload");
    if (first && r.action != mp::CommandResult::Action::kClose) {
      Check((*p)->seq == 1, "a reply starts at sequence id 1");
    }
    Check(!(*p)->payload.empty(), "no empty reply packet");
    first = false;
    rest.remove_prefix(consumed);
  }
  if (r.action == mp::CommandResult::Action::kStream) {
    Check(!r.table.empty(), "a stream names its table");
    Check(r.reply.empty(), "a stream's result set is the connection's");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const mp::StatementTokens split = mp::TokenizeStatement(input);
  Check(split.tokens.size() <= mp::kMaxStatementTokens,
        "at most kMaxStatementTokens tokens");
  Check(!split.truncated || split.tokens.size() == mp::kMaxStatementTokens,
        "only a full token list is truncated");
  (void)mp::RecognizeStatement(input);
  (void)mp::ParseHandshakeResponse(input);
  (void)mp::IsSslRequest(input);

  // The input as a client's byte stream: a handshake response, then
  // commands, as a connection would read them.
  mp::Session session;
  absl::string_view rest = input;
  bool handshake = true;
  for (int i = 0; i < 64 && !rest.empty(); ++i) {
    size_t consumed = 0;
    auto p = mp::ParsePacket(
        rest, mp::MaxCommandPayload(mp::kDefaultMaxQueryBytes), &consumed);
    if (!p.ok()) {
      Check(p.status().code() == absl::StatusCode::kResourceExhausted,
            "a refused packet is RESOURCE_EXHAUSTED");
      break;
    }
    if (!p->has_value()) break;
    Check(consumed == mp::kHeaderBytes + (*p)->payload.size() &&
              consumed <= rest.size(),
          "a packet consumes header + payload");
    Check((*p)->payload.size() <=
              mp::MaxCommandPayload(mp::kDefaultMaxQueryBytes),
          "no packet over the statement cap");
    rest.remove_prefix(consumed);
    if (handshake) {
      handshake = false;
      auto response = mp::ParseHandshakeResponse((*p)->payload);
      if (response.ok()) {
        Check((response->capabilities & mp::kClientProtocol41) != 0,
              "only 4.1 clients pass");
        session.database = response->database;
        (void)mp::CheckNativePassword("abcdefghijklmnopqrst", "pw",
                                      response->auth_response);
      }
      continue;
    }
    const mp::CommandResult r = mp::DispatchCommand(session, **p);
    CheckReply(r);
    if (r.action == mp::CommandResult::Action::kClose) break;
  }
  return 0;
}
