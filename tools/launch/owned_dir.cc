#include "tools/launch/owned_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace msgq::launch {
namespace {

namespace fs = std::filesystem;

constexpr char kLockName[] = ".owner.lock";

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
}

// Running and not a zombie.
bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ||
         stat[paren + 2] != 'Z';
}

// True when `pid`'s command line or stdout names something inside `dir`.
bool BelongsTo(pid_t pid, const std::string& dir) {
  std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  if (absl::StrContains(cmdline, dir + "/") ||
      absl::StrContains(cmdline, dir + std::string(1, '\0')) ||
      absl::EndsWith(cmdline, dir)) {
    return true;
  }
  std::error_code ec;
  fs::path out = fs::read_symlink(absl::StrCat("/proc/", pid, "/fd/1"), ec);
  return !ec && absl::StartsWith(out.string(), dir + "/");
}

// The live processes that the pid files in `dir` name and that run for
// `dir`.
std::vector<pid_t> Leftovers(const std::string& dir) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".pid") continue;
    int pid = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(e.path())),
                         &pid) &&
        pid > 1 && Alive(pid) && BelongsTo(pid, dir)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

// Kills the leftovers of `dir` and waits (up to 10 s) until they are gone.
void KillLeftovers(const std::string& dir) {
  std::vector<pid_t> killed;
  for (pid_t pid : Leftovers(dir)) {
    if (kill(pid, SIGKILL) == 0) killed.push_back(pid);
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (pid_t pid : killed) {
    while (Alive(pid) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<OwnedDir>> OwnedDir::Create(
    const std::string& prefix) {
  std::string templ = absl::StrCat("/tmp/", prefix, "-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, " failed"));
  }
  // The lock file appears already locked: it is locked under another name
  // and renamed into place. Created under its own name, a sweep could lock
  // it between its creation and our flock, take the directory for a dead
  // owner's and remove it. Until the rename the directory has no lock file
  // and is young, which a sweep leaves alone.
  const std::string lock = absl::StrCat(templ, "/", kLockName);
  const std::string pending = absl::StrCat(lock, ".new");
  int fd = open(pending.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 ||
      rename(pending.c_str(), lock.c_str()) != 0) {
    if (fd >= 0) close(fd);
    std::error_code ec;
    fs::remove_all(templ, ec);
    return absl::InternalError(absl::StrCat("cannot lock ", lock));
  }
  std::string pid = absl::StrCat(getpid(), "\n");
  (void)!write(fd, pid.data(), pid.size());  // for people, not for the sweep
  return std::unique_ptr<OwnedDir>(new OwnedDir(std::move(templ), fd));
}

OwnedDir::~OwnedDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  close(lock_fd_);
}

int SweepStaleDirs(const std::string& prefix, int unlocked_grace_seconds) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/tmp", ec)) {
    const std::string name = e.path().filename().string();
    std::error_code dir_ec;
    if (!absl::StartsWith(name, prefix) || !e.is_directory(dir_ec) ||
        e.is_symlink(dir_ec)) {
      continue;
    }
    const std::string dir = e.path().string();
    const std::string lock = absl::StrCat(dir, "/", kLockName);
    int fd = open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      if (flock(fd, LOCK_EX | LOCK_NB) != 0) {  // its owner lives
        close(fd);
        continue;
      }
    } else {
      struct stat st;
      // Without a lock nothing tells a dead owner from a live one: only a
      // directory that is old and runs nothing goes.
      if (stat(dir.c_str(), &st) != 0 ||
          time(nullptr) - st.st_mtime < unlocked_grace_seconds ||
          !Leftovers(dir).empty()) {
        continue;
      }
    }
    KillLeftovers(dir);
    std::error_code rm_ec;
    // 0 when a concurrent sweep removed it first.
    if (fs::remove_all(dir, rm_ec) > 0 && !rm_ec) ++removed;
    if (fd >= 0) close(fd);
  }
  return removed;
}

}  // namespace msgq::launch
