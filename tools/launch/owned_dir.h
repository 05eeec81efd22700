// OwnedDir: a temporary directory that belongs to this process. It holds an
// exclusive flock(2) on DIR/.owner.lock for as long as the object lives; the
// kernel drops the lock when the process dies, however it dies (SIGKILL,
// abort, a ctest timeout). The destructor removes the directory tree.
//
// SweepStaleDirs() is the cleanup for the deaths no destructor saw: it finds
// /tmp/PREFIX* directories whose lock nobody holds, kills the processes they
// still run (named by DIR/*.pid files, and only when the process's command
// line or stdout refers to DIR, so a reused pid is left alone), and removes
// them. A directory whose owner is alive is never touched, so parallel tests
// can sweep each other's leftovers safely.
//
// Not thread-safe per object; SweepStaleDirs() may run concurrently in many
// processes (the lock decides who removes a directory).
//
// Example:
//   (void)SweepStaleDirs("msgq-test-");
//   auto dir = OwnedDir::Create("msgq-test-db");  // /tmp/msgq-test-db-XXXXXX
//   if (!dir.ok()) return dir.status();
//   Start a server in (*dir)->path(); it is removed with *dir.
#ifndef MSGQ_TOOLS_LAUNCH_OWNED_DIR_H_
#define MSGQ_TOOLS_LAUNCH_OWNED_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace msgq::launch {

class OwnedDir {
 public:
  // Creates /tmp/PREFIX-XXXXXX and takes its lock. INTERNAL on failure.
  static absl::StatusOr<std::unique_ptr<OwnedDir>> Create(
      const std::string& prefix);
  ~OwnedDir();  // removes the tree, then releases the lock
  OwnedDir(const OwnedDir&) = delete;
  OwnedDir& operator=(const OwnedDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  OwnedDir(std::string path, int lock_fd)
      : path_(std::move(path)), lock_fd_(lock_fd) {}

  std::string path_;
  int lock_fd_;
};

// Removes the stale /tmp/PREFIX* directories as described above and returns
// how many it removed. A directory without a lock file (one being created
// right now, or left by an older harness) counts as stale only when it was
// last modified more than `unlocked_grace_seconds` ago and no process runs
// in it (it might have a live owner of an older harness). Create makes the
// lock file appear already locked, so a sweep never races a creation.
int SweepStaleDirs(const std::string& prefix, int unlocked_grace_seconds = 600);

}  // namespace msgq::launch

#endif  // MSGQ_TOOLS_LAUNCH_OWNED_DIR_H_
