#include "engine/sql/mysql_primary_monitor.h"

#include <utility>

#include "engine/log.h"

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
    CheckOnce();
    absl::MutexLock lock(&mu_);
    if (!stopping_) wake_.WaitWithTimeout(&mu_, interval_);
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

}  // namespace msgq
