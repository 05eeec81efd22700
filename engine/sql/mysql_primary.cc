#include "engine/sql/mysql_primary.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/host_port.h"

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
    absl::StatusOr<HostPort> hp =
        ParseHostPort(entry, {.port_required = false, .min_port = 1});
    if (!hp.ok()) return bad(hp.status().message());
    if (hp->host.empty()) return bad("empty host");
    MysqlEndpoint endpoint;
    endpoint.host = std::move(hp->host);
    endpoint.port = hp->port.value_or(default_port);
    out.push_back(std::move(endpoint));
  }
  return out;
}

absl::StatusOr<WsrepState> ParseWsrepState(
    const std::vector<std::pair<std::string, std::string>>& status_rows,
    absl::string_view read_only) {
  WsrepState state;
  bool ready = false, local_state = false, cluster_status = false;
  for (const auto& [name, value] : status_rows) {
    if (absl::EqualsIgnoreCase(name, "wsrep_ready")) {
      ready = absl::EqualsIgnoreCase(value, "ON") ||
              absl::EqualsIgnoreCase(value, "OFF");
      state.ready = absl::EqualsIgnoreCase(value, "ON");
    } else if (absl::EqualsIgnoreCase(name, "wsrep_local_state")) {
      local_state = absl::SimpleAtoi(value, &state.local_state);
    } else if (absl::EqualsIgnoreCase(name, "wsrep_local_state_comment")) {
      state.state_comment = value;
    } else if (absl::EqualsIgnoreCase(name, "wsrep_cluster_status")) {
      cluster_status = !value.empty();
      state.cluster_status = value;
    }
  }
  for (auto [name, seen] : {std::pair<const char*, bool>{"wsrep_ready", ready},
                            {"wsrep_local_state", local_state},
                            {"wsrep_cluster_status", cluster_status}}) {
    if (!seen) {
      return absl::InvalidArgumentError(
          absl::StrCat("no readable ", name, " in SHOW GLOBAL STATUS"));
    }
  }
  state.read_only = read_only != "0";
  return state;
}

std::string WsrepUnservableReason(const WsrepState& state) {
  std::vector<std::string> why;
  if (state.cluster_status != "Primary") {
    why.push_back(absl::StrCat("wsrep_cluster_status ", state.cluster_status));
  }
  if (state.local_state != 4) {
    why.push_back(absl::StrCat("wsrep_local_state ", state.local_state,
                               state.state_comment.empty() ? "" : " (",
                               state.state_comment,
                               state.state_comment.empty() ? "" : ")"));
  }
  if (!state.ready) why.push_back("wsrep_ready OFF");
  if (state.read_only) why.push_back("read_only");
  return absl::StrJoin(why, ", ");
}

MysqlPrimary::MysqlPrimary(std::vector<MysqlEndpoint> endpoints)
    : endpoints_(std::move(endpoints)),
      failing_(endpoints_.size(), false),
      unservable_(endpoints_.size(), false) {}

std::vector<size_t> MysqlPrimary::Order() const {
  absl::MutexLock lock(&mu_);
  std::vector<size_t> order;
  order.reserve(endpoints_.size());
  for (bool failing : {false, true}) {
    if (primary_ >= 0 && failing_[primary_] == failing &&
        !unservable_[primary_]) {
      order.push_back(static_cast<size_t>(primary_));
    }
    for (size_t i = 0; i < endpoints_.size(); ++i) {
      if (static_cast<int>(i) != primary_ && failing_[i] == failing &&
          !unservable_[i]) {
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

void MysqlPrimary::Unservable(size_t i) {
  absl::MutexLock lock(&mu_);
  unservable_[i] = true;
  if (primary_ != static_cast<int>(i)) return;
  primary_ = -1;
  generation_.fetch_add(1);
}

void MysqlPrimary::Servable(size_t i) {
  absl::MutexLock lock(&mu_);
  unservable_[i] = false;
}

bool MysqlPrimary::servable(size_t i) const {
  absl::MutexLock lock(&mu_);
  return !unservable_[i];
}

int MysqlPrimary::primary() const {
  absl::MutexLock lock(&mu_);
  return primary_;
}

}  // namespace msgq
