#include "tools/msgq_bench/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/launch/child_process.h"

namespace msgq::bench {
namespace {

std::string FirstLine(const std::string& s) {
  return std::string(absl::StripAsciiWhitespace(s.substr(0, s.find('\n'))));
}

}  // namespace

pb::Environment DescribeEnvironment(const BenchOptions& o,
                                    MysqlConnection& admin, int argc,
                                    char** argv) {
  pb::Environment e;
  e.set_date_utc(
      absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::Now(), absl::UTCTimeZone()));
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  e.set_host(host);
  e.set_cpus(static_cast<int>(std::thread::hardware_concurrency()));
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      e.set_cpu_model(std::string(
          absl::StripAsciiWhitespace(line.substr(line.find(':') + 1))));
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  if (meminfo >> key >> kib) e.set_mem_total_mib(kib / 1024);
  utsname u;
  if (uname(&u) == 0) e.set_kernel(absl::StrCat(u.sysname, " ", u.release));
  absl::StatusOr<QueryResult> v = admin.Query(
      "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@sync_binlog, "
      "@@log_bin, @@binlog_format, @@innodb_buffer_pool_size DIV 1048576");
  if (v.ok() && !v->rows.empty()) {
    auto s = [&](int i) { return v->rows[0][i].value_or("NULL"); };
    e.set_mysql_version(s(0));
    e.set_mysql_settings(
        absl::StrCat("innodb_flush_log_at_trx_commit=", s(1),
                     ", sync_binlog=", s(2), ", log_bin=", s(3),
                     ", binlog_format=", s(4), ", buffer pool ", s(5), " MiB"));
  }
  const std::string git =
      absl::StrCat("git -C ", launch::ShellQuote(o.source_dir));
  e.set_msgq_commit(
      FirstLine(launch::RunCommand(
                    absl::StrCat(git, " describe --always --dirty 2>/dev/null"))
                    .value_or("unknown")));
  if (absl::EndsWith(e.msgq_commit(), "-dirty")) {
    // Identify the uncommitted state too: a hash of the diff.
    absl::StrAppend(
        e.mutable_msgq_commit(), " (diff sha1 ",
        FirstLine(launch::RunCommand(
                      absl::StrCat(git,
                                   " diff HEAD 2>/dev/null | sha1sum | "
                                   "cut -c1-12"))
                      .value_or("?")),
        ")");
  }
  e.set_command(absl::StrJoin(argv, argv + argc, " "));
  e.set_msgqd(o.msgq_server.empty() ? o.msgqd_path
                                    : absl::StrCat("external ", o.msgq_server));
  return e;
}

}  // namespace msgq::bench
