#include "engine/sql/mysql_primary.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace msgq {

std::string MysqlEndpoint::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return v6 ? absl::StrCat("[", host, "]:", port)
            : absl::StrCat(host, ":", port);
}

absl::StatusOr<std::vector<MysqlEndpoint>> ParseMysqlEndpoints(
    absl::string_view hosts, int default_port) {
  std::vector<MysqlEndpoint> out;
  for (absl::string_view entry : absl::StrSplit(hosts, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mysql_host entry '", entry, "': ", why,
          " (expected host, host:port or [ipv6]:port, comma-separated)"));
    };
    MysqlEndpoint endpoint;
    endpoint.port = default_port;
    absl::string_view port;
    if (absl::ConsumePrefix(&entry, "[")) {
      const size_t close = entry.find(']');
      if (close == absl::string_view::npos) return bad("no closing ']'");
      endpoint.host = std::string(entry.substr(0, close));
      absl::string_view rest = entry.substr(close + 1);
      if (!rest.empty()) {
        if (!absl::ConsumePrefix(&rest, ":")) return bad("text after ']'");
        if (rest.empty()) return bad("empty port");
        port = rest;
      }
    } else {
      const size_t colon = entry.rfind(':');
      if (colon != absl::string_view::npos &&
          entry.find(':') != colon) {  // bare IPv6 without brackets
        return bad("put an IPv6 address in brackets");
      }
      endpoint.host = std::string(entry.substr(0, colon));
      if (colon != absl::string_view::npos) {
        port = entry.substr(colon + 1);
        if (port.empty()) return bad("empty port");
      }
    }
    if (endpoint.host.empty()) return bad("empty host");
    if (!port.empty()) {
      int value = 0;
      if (!absl::SimpleAtoi(port, &value) || value < 1 || value > 65535) {
        return bad("the port is not a number in 1..65535");
      }
      endpoint.port = value;
    }
    out.push_back(std::move(endpoint));
  }
  return out;
}

MysqlPrimary::MysqlPrimary(std::vector<MysqlEndpoint> endpoints)
    : endpoints_(std::move(endpoints)), failing_(endpoints_.size(), false) {}

std::vector<size_t> MysqlPrimary::Order() const {
  absl::MutexLock lock(&mu_);
  std::vector<size_t> order;
  order.reserve(endpoints_.size());
  for (bool failing : {false, true}) {
    if (primary_ >= 0 && failing_[primary_] == failing) {
      order.push_back(static_cast<size_t>(primary_));
    }
    for (size_t i = 0; i < endpoints_.size(); ++i) {
      if (static_cast<int>(i) != primary_ && failing_[i] == failing) {
        order.push_back(i);
      }
    }
  }
  return order;
}

uint64_t MysqlPrimary::Found(size_t i) {
  absl::MutexLock lock(&mu_);
  failing_[i] = false;
  if (primary_ == static_cast<int>(i)) return generation_.load();
  // No primary known (at start, or after Lost(), which already moved the
  // generation on): this one is it. Another one known: the primary moved.
  if (primary_ >= 0) generation_.fetch_add(1);
  primary_ = static_cast<int>(i);
  return generation_.load();
}

void MysqlPrimary::Failed(size_t i) {
  absl::MutexLock lock(&mu_);
  failing_[i] = true;
}

void MysqlPrimary::Lost(size_t i) {
  absl::MutexLock lock(&mu_);
  failing_[i] = true;
  if (primary_ != static_cast<int>(i)) return;
  primary_ = -1;
  generation_.fetch_add(1);
}

int MysqlPrimary::primary() const {
  absl::MutexLock lock(&mu_);
  return primary_;
}

}  // namespace msgq
