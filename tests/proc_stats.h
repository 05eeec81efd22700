// What /proc says of a process: its resident memory and CPU time, for
// tests that hold msgqd to a bound while a hostile client works on it.
//
// Thread-safe (reads /proc only).
#ifndef MSGQ_TESTS_PROC_STATS_H_
#define MSGQ_TESTS_PROC_STATS_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace msgq::testing {

// VmRSS of `pid` in kB; -1 when unknown.
inline int64_t RssKb(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::vector<std::string> parts =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      int64_t kb = -1;
      if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &kb)) return -1;
      return kb;
    }
  }
  return -1;
}

// utime + stime of `pid`, in seconds; -1 when unknown.
inline double CpuSeconds(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::vector<std::string> fields =
      absl::StrSplit(stat.substr(paren + 2), ' ', absl::SkipEmpty());
  // Fields from the state (3rd of the file): utime is the 14th, stime 15th.
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return -1;
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_PROC_STATS_H_
