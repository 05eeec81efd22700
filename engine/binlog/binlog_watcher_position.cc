// BinlogWatcher's GTID positions: comparing the resume position with the
// server's, starting at the server's current one, and whether a snapshot
// includes a transaction (binlog_watcher.h).
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/binlog/binlog_watcher.h"

namespace msgq {

bool BinlogWatcher::PositionGone(const std::string& resume,
                                 const std::string& server) {
  auto parse = [](const std::string& list) {
    std::map<uint32_t, uint64_t> seq;
    for (absl::string_view gtid :
         absl::StrSplit(list, ',', absl::SkipEmpty())) {
      std::vector<absl::string_view> parts =
          absl::StrSplit(absl::StripAsciiWhitespace(gtid), '-');
      uint32_t domain = 0;
      uint64_t n = 0;
      if (parts.size() == 3 && absl::SimpleAtoi(parts[0], &domain) &&
          absl::SimpleAtoi(parts[2], &n)) {
        seq[domain] = n;
      }
    }
    return seq;
  };
  const std::map<uint32_t, uint64_t> ours = parse(resume);
  const std::map<uint32_t, uint64_t> theirs = parse(server);
  for (const auto& [domain, n] : ours) {
    auto it = theirs.find(domain);
    if (it == theirs.end() || it->second < n) return true;
  }
  return false;
}

absl::Status BinlogWatcher::CheckPosition(
    const MysqlOptions& mysql, std::unique_ptr<MysqlConnection>* control) {
  if (*control == nullptr) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql);
    if (!c.ok()) return absl::OkStatus();  // the dump shows real outages
    *control = *std::move(c);
  }
  absl::StatusOr<QueryResult> pos =
      (*control)->Query("SELECT @@gtid_binlog_pos");
  if (!pos.ok() || pos->rows.empty()) {
    control->reset();
    return absl::OkStatus();
  }
  const std::string server = pos->rows[0][0].value_or("");
  if (PositionGone(ConnectState(), server)) {
    return absl::OutOfRangeError(absl::StrCat("the server's binlog position '",
                                              server, "' is behind '",
                                              ConnectState(), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> BinlogWatcher::SnapshotIncludes(
    const std::string& gtid, const MysqlOptions& mysql,
    std::unique_ptr<MysqlConnection>* control) {
  if (*control == nullptr) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> c =
        MysqlConnection::Connect(mysql);
    if (!c.ok()) return c.status();
    *control = *std::move(c);
  }
  MysqlConnection& conn = **control;
  absl::StatusOr<uint64_t> begun =
      conn.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT");
  if (!begun.ok()) {
    control->reset();
    return begun.status();
  }
  absl::StatusOr<QueryResult> pos = conn.Query(
      "SELECT BINLOG_GTID_POS(f.VARIABLE_VALUE, p.VARIABLE_VALUE) "
      "FROM information_schema.SESSION_STATUS f "
      "JOIN information_schema.SESSION_STATUS p "
      "ON f.VARIABLE_NAME = 'BINLOG_SNAPSHOT_FILE' "
      "AND p.VARIABLE_NAME = 'BINLOG_SNAPSHOT_POSITION'");
  absl::StatusOr<uint64_t> ended = conn.Execute("COMMIT");
  if (!pos.ok() || !ended.ok()) {
    control->reset();
    return !pos.ok() ? pos.status() : ended.status();
  }
  if (pos->rows.empty() || !pos->rows[0][0].has_value()) {
    return absl::UnimplementedError(
        "the server does not tell a snapshot's binlog position");
  }
  return !PositionGone(gtid, *pos->rows[0][0]);
}

void BinlogWatcher::ResumeFrom(const std::string& gtid_list) {
  for (absl::string_view gtid :
       absl::StrSplit(gtid_list, ',', absl::SkipEmpty())) {
    gtid = absl::StripAsciiWhitespace(gtid);
    uint32_t domain = 0;
    if (absl::SimpleAtoi(gtid.substr(0, gtid.find('-')), &domain)) {
      resume_[domain] = std::string(gtid);
    }
  }
}

}  // namespace msgq
