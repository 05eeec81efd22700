#include "common/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace msgq {

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text,
                                       HostPortRules rules) {
  auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(why);
  };
  HostPort out;
  std::optional<absl::string_view> port;
  if (absl::ConsumePrefix(&text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) return bad("no closing ']'");
    out.host = std::string(text.substr(0, close));
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":")) return bad("text after ']'");
      port = rest;
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon != absl::string_view::npos && text.find(':') != colon) {
      return bad("put an IPv6 address in brackets");
    }
    out.host = std::string(text.substr(0, colon));
    if (colon != absl::string_view::npos) port = text.substr(colon + 1);
  }
  if (!port.has_value()) {
    if (rules.port_required) return bad("want HOST:PORT");
    return out;
  }
  if (port->empty()) return bad("empty port");
  int value = 0;
  if (!absl::SimpleAtoi(*port, &value) || value < rules.min_port ||
      value > 65535) {
    return bad(absl::StrCat("the port is not a number in ", rules.min_port,
                            "..65535"));
  }
  out.port = value;
  return out;
}

bool IsLoopbackHost(absl::string_view host) {
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  const std::string text(host);
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 &&
         IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string ClientAddressKey(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr == nullptr) return text;
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr,
              text, sizeof(text));
    return text;
  }
  if (addr->sa_family != AF_INET6) return text;
  in6_addr a = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof(text));
    return text;
  }
  std::memset(&a.s6_addr[8], 0, 8);
  inet_ntop(AF_INET6, &a, text, sizeof(text));
  return absl::StrCat(text, "/64");
}

}  // namespace msgq
