#include "tools/msgq_bench/proc_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace msgq::bench {
namespace {

int64_t StatusKib(const std::string& status, absl::string_view key) {
  size_t at = absl::string_view(status).find(key);
  if (at == std::string::npos) return 0;
  absl::string_view rest(status);
  rest.remove_prefix(at + key.size());
  rest = absl::StripLeadingAsciiWhitespace(rest);
  size_t end = rest.find(' ');
  int64_t v = 0;
  (void)absl::SimpleAtoi(rest.substr(0, end), &v);
  return v;
}

}  // namespace

absl::StatusOr<ProcSample> ReadProc(pid_t pid) {
  std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(stat_file)),
                   std::istreambuf_iterator<char>());
  if (stat.empty()) {
    return absl::NotFoundError(absl::StrCat("no /proc/", pid, "/stat"));
  }
  // Fields after the parenthesised command name; utime and stime are the
  // 14th and 15th fields overall, i.e. the 12th and 13th after ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return absl::NotFoundError("bad stat");
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(close + 2), ' ', absl::SkipEmpty());
  if (fields.size() < 13) return absl::NotFoundError("short stat");
  int64_t utime = 0, stime = 0;
  (void)absl::SimpleAtoi(fields[11], &utime);
  (void)absl::SimpleAtoi(fields[12], &stime);
  ProcSample s;
  s.cpu_s = static_cast<double>(utime + stime) /
            static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream status_file(absl::StrCat("/proc/", pid, "/status"));
  std::string status((std::istreambuf_iterator<char>(status_file)),
                     std::istreambuf_iterator<char>());
  s.rss_kib = StatusKib(status, "VmRSS:");
  s.peak_rss_kib = StatusKib(status, "VmHWM:");
  return s;
}

absl::Status ResetPeakRss(pid_t pid) {
  std::ofstream f(absl::StrCat("/proc/", pid, "/clear_refs"));
  f << "5";
  f.flush();
  if (!f) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write /proc/", pid, "/clear_refs"));
  }
  return absl::OkStatus();
}

}  // namespace msgq::bench
