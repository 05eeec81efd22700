#include "tools/msgq_bench/probe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

absl::Status ProbeFsync(const std::string& dir, int samples,
                        pb::Machine* machine) {
  machine->set_fsync_dir(dir);
  std::string path = absl::StrCat(dir, "/msgq-bench-fsync-XXXXXX");
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create a file in ", dir, ": ", strerror(errno)));
  }
  const std::vector<char> block(4096, 'x');
  std::vector<int64_t> ns;
  ns.reserve(samples);
  absl::Status status;
  for (int i = 0; i < samples; ++i) {
    const int64_t start = NowNs();
    if (pwrite(fd, block.data(), block.size(), 0) !=
            static_cast<ssize_t>(block.size()) ||
        fdatasync(fd) != 0) {
      status = absl::InternalError(
          absl::StrCat("write+fdatasync in ", dir, ": ", strerror(errno)));
      break;
    }
    ns.push_back(NowNs() - start);
  }
  close(fd);
  unlink(path.c_str());
  RETURN_IF_ERROR(status);
  const pb::Latency l = Summarize(ns);
  machine->set_fsync_samples(l.count());
  machine->set_fsync_p50_ms(l.p50_ms());
  machine->set_fsync_p99_ms(l.p99_ms());
  machine->set_fsync_max_ms(l.max_ms());
  return absl::OkStatus();
}

absl::StatusOr<pb::Machine> ProbeMachine(MysqlConnection& conn,
                                         const std::string& scratch_table,
                                         absl::Duration commit_duration) {
  pb::Machine machine;
  ASSIGN_OR_RETURN(QueryResult v,
                   conn.Query("SELECT @@datadir, @@innodb_buffer_pool_size"));
  if (v.rows.empty() || !v.rows[0][0] || !v.rows[0][1]) {
    return absl::InternalError("no @@datadir / @@innodb_buffer_pool_size");
  }
  double pool_bytes = 0;
  (void)absl::SimpleAtod(*v.rows[0][1], &pool_bytes);
  machine.set_buffer_pool_mib(pool_bytes / 1048576);
  if (absl::Status s = ProbeFsync(*v.rows[0][0], kFsyncSamples, &machine);
      !s.ok()) {
    machine.set_fsync_error(std::string(s.message()));
  }

  RETURN_IF_ERROR(
      conn.Execute(absl::StrCat("DROP TABLE IF EXISTS ", scratch_table))
          .status());
  RETURN_IF_ERROR(
      conn.Execute(absl::StrCat("CREATE TABLE ", scratch_table,
                                " (id bigint NOT NULL AUTO_INCREMENT PRIMARY "
                                "KEY, v int NOT NULL) ENGINE=InnoDB"))
          .status());
  const std::string insert =
      absl::StrCat("INSERT INTO ", scratch_table, " (v) VALUES (1)");
  const int64_t start = NowNs();
  const int64_t deadline = start + absl::ToInt64Nanoseconds(commit_duration);
  int64_t commits = 0;
  absl::Status status;
  int64_t now = start;
  while (now < deadline) {
    status = conn.Execute(insert).status();
    if (!status.ok()) break;
    ++commits;
    now = NowNs();
  }
  (void)conn.Execute(absl::StrCat("DROP TABLE IF EXISTS ", scratch_table));
  RETURN_IF_ERROR(status);
  machine.set_commits(static_cast<int32_t>(commits));
  machine.set_commit_probe_s(NsToSeconds(now - start));
  machine.set_commits_per_s(now > start ? static_cast<double>(commits) /
                                              NsToSeconds(now - start)
                                        : 0);
  return machine;
}

}  // namespace msgq::bench
