#include "engine/sql/mysql_primary_monitor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace msgq {

MysqlPrimaryMonitor::MysqlPrimaryMonitor(MysqlOptions options,
                                         absl::Duration interval)
    : options_(std::move(options)), interval_(interval) {}

MysqlPrimaryMonitor::~MysqlPrimaryMonitor() { Stop(); }

void MysqlPrimaryMonitor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void MysqlPrimaryMonitor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void MysqlPrimaryMonitor::Loop() {
  while (true) {
    if (galera_) {
      CheckNodes();
    } else {
      CheckOnce();
    }
    absl::MutexLock lock(&mu_);
    if (!stopping_) wake_.WaitFor(&mu_, interval_);
    if (stopping_) return;
  }
}

void MysqlPrimaryMonitor::CheckOnce() {
  MysqlPrimary& primary = *options_.primary;
  if (conn_ != nullptr && conn_->broken()) conn_.reset();
  if (conn_ == nullptr) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(options_);
    if (!conn.ok()) {
      if (!last_primary_.empty()) {
        LogWarning("MySQL primary: none writable now (",
                   conn.status().message(), ")");
        last_primary_.clear();
      }
      return;
    }
    conn_ = *std::move(conn);
    // A server without Galera has no wsrep_on (MySQL) or has it OFF.
    absl::StatusOr<QueryResult> wsrep =
        conn_->Query("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'");
    if (wsrep.ok() && wsrep->rows.size() == 1 && wsrep->rows[0].size() == 2 &&
        absl::EqualsIgnoreCase(wsrep->rows[0][1].value_or(""), "ON")) {
      LogInfo("MySQL primary: ", conn_->server(),
              " is a Galera node (wsrep_on); serving a synced node of the "
              "primary component");
      galera_ = true;
      nodes_.resize(primary.endpoints().size());
      conn_.reset();
      CheckNodes();
      return;
    }
  }
  if (conn_->server() != last_primary_) {
    LogInfo("MySQL primary: ", conn_->server(),
            last_primary_.empty() ? "" : " (was ", last_primary_,
            last_primary_.empty() ? "" : ")");
    last_primary_ = conn_->server();
  }
  absl::StatusOr<QueryResult> r = conn_->Query("SELECT @@read_only");
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1) {
    conn_.reset();
    return;
  }
  if (r->rows[0][0].value_or("0") != "0") {
    LogWarning("MySQL primary: ", conn_->server(),
               " turned read-only; moving to the writable server");
    primary.Lost(static_cast<size_t>(conn_->endpoint()));
    conn_.reset();
  }
}

absl::StatusOr<WsrepState> MysqlPrimaryMonitor::CheckNode(size_t i) {
  Node& node = nodes_[i];
  if (node.conn != nullptr && node.conn->broken()) node.conn.reset();
  if (node.conn == nullptr) {
    const MysqlEndpoint& endpoint = options_.primary->endpoints()[i];
    MysqlOptions one = options_;
    one.primary = nullptr;  // this very node, whatever its state
    one.socket.clear();
    one.host = endpoint.host;
    one.port = endpoint.port;
    // A node cut off must not hold up the others' checks for long.
    const absl::Duration timeout = std::max(interval_, absl::Seconds(1));
    one.connect_timeout = std::min(one.connect_timeout, timeout);
    one.io_timeout = std::min(one.io_timeout, timeout);
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(one);
    if (!conn.ok()) return absl::UnavailableError(conn.status().message());
    node.conn = *std::move(conn);
  }
  absl::StatusOr<QueryResult> status = node.conn->Query(
      "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', "
      "'wsrep_local_state', 'wsrep_local_state_comment', "
      "'wsrep_cluster_status')");
  absl::StatusOr<QueryResult> read_only =
      status.ok() ? node.conn->Query("SELECT @@read_only") : status;
  if (!read_only.ok() || read_only->rows.size() != 1 ||
      read_only->rows[0].size() != 1) {
    node.conn.reset();
    return absl::UnavailableError(
        read_only.ok() ? "no @@read_only" : read_only.status().message());
  }
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& row : status->rows) {
    if (row.size() == 2) {
      rows.emplace_back(row[0].value_or(""), row[1].value_or(""));
    }
  }
  return ParseWsrepState(rows, read_only->rows[0][0].value_or("0"));
}

void MysqlPrimaryMonitor::CheckNodes() {
  MysqlPrimary& primary = *options_.primary;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::string name = primary.endpoints()[i].ToString();
    absl::StatusOr<WsrepState> state = CheckNode(i);
    std::string why;
    if (!state.ok()) {
      // Down or cut off: its own connections notice; tried last from now.
      primary.Failed(i);
      why = absl::StrCat("not answering (", state.status().message(), ")");
    } else {
      why = WsrepUnservableReason(*state);
      if (why.empty()) {
        primary.Servable(i);
      } else {
        const bool was_primary = primary.primary() == static_cast<int>(i);
        primary.Unservable(i);
        if (was_primary) {
          LogWarning("MySQL primary: ", name,
                     " is no synced node of the primary component (", why,
                     "); moving to another node");
        }
      }
    }
    if (why != nodes_[i].last) {
      if (why.empty()) {
        LogInfo("MySQL primary: Galera node ", name, " may be served");
      } else {
        LogInfo("MySQL primary: Galera node ", name, " not served: ", why);
      }
      nodes_[i].last = why;
    }
  }
  const int now = primary.primary();
  const std::string serving =
      now >= 0 ? primary.endpoints()[static_cast<size_t>(now)].ToString() : "";
  if (!serving.empty() && serving != last_primary_) {
    LogInfo("MySQL primary: ", serving, last_primary_.empty() ? "" : " (was ",
            last_primary_, last_primary_.empty() ? "" : ")");
    last_primary_ = serving;
  }
}

}  // namespace msgq
