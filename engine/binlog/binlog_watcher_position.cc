// BinlogWatcher's GTID positions: comparing the resume position with the
// server's, and starting at the server's current one (binlog_watcher.h).
#include <map>
#include <string>
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
