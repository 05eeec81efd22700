#include "server/http/host_check.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "common/host_port.h"

namespace msgq {
namespace {

bool IsIpv4(const std::string& host) {
  in_addr a;
  return inet_pton(AF_INET, host.c_str(), &a) == 1;
}

bool IsIpv6(const std::string& host) {
  in6_addr a;
  return inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

bool IsPort(absl::string_view port) {
  return !port.empty() && port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), absl::ascii_isdigit);
}

}  // namespace

std::string HostCheck::Normalize(absl::string_view host_and_port) {
  absl::string_view host = absl::StripAsciiWhitespace(host_and_port);
  absl::string_view port;
  bool has_port = false;
  if (absl::StartsWith(host, "[")) {  // [v6] or [v6]:port
    const size_t close = host.find(']');
    if (close == absl::string_view::npos) return "";
    absl::string_view rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":")) return "";
      port = rest;
      has_port = true;
    }
  } else if (const size_t colon = host.rfind(':');
             colon != absl::string_view::npos && host.find(':') == colon) {
    port = host.substr(colon + 1);
    has_port = true;
    host = host.substr(0, colon);
  }
  // (Several colons without brackets: a bare IPv6 address, taken as is.)
  if (has_port && !IsPort(port)) return "";
  absl::ConsumeSuffix(&host, ".");
  return absl::AsciiStrToLower(host);
}

HostCheck::HostCheck(absl::string_view listen, std::vector<std::string> extra) {
  // The listen address's host: what is before the port.
  const absl::StatusOr<HostPort> address =
      ParseHostPort(listen, {.port_required = false});
  const std::string listen_host =
      Normalize(address.ok() ? absl::string_view(address->host) : listen);
  if (listen_host.empty() || listen_host == "0.0.0.0" || listen_host == "::") {
    any_ip_literal_ = true;
  } else {
    names_.push_back(listen_host);
  }
  for (const std::string& name : extra) {
    if (absl::StripAsciiWhitespace(name) == "*") {
      any_ = true;
      continue;
    }
    const std::string n = Normalize(name);
    if (!n.empty()) names_.push_back(n);
  }
}

bool HostCheck::Allowed(absl::string_view host) const {
  if (any_) return true;
  const std::string name = Normalize(host);
  if (name.empty()) return false;
  if (IsLoopbackHost(name)) return true;
  if (any_ip_literal_ && (IsIpv4(name) || IsIpv6(name))) return true;
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

}  // namespace msgq
