#include "tools/launch/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"

namespace msgq::launch {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> cargv;
  for (const std::string& a : argv)
    cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int fd =
      open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", log_path));
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    // The bench blocks SIGINT/SIGTERM for its signal thread; children must
    // not inherit that.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);  // a terminal's Ctrl-C reaches only the bench
    // Dies with the thread that started it (a crashed or killed test or
    // bench), even where no destructor runs. The check after the prctl closes
    // the race with a parent that died before it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execvp(cargv[0], cargv.data());
    std::string msg = absl::StrCat("exec ", argv[0], " failed\n");
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  close(fd);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, log_path));
}

ChildProcess::~ChildProcess() {
  if (!exited_) Stop(SIGTERM, absl::Seconds(10));
}

bool ChildProcess::Reap(bool block) {
  if (exited_) return true;
  int status = 0;
  pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_) {
    exited_ = true;
    exit_code_ =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  if (r < 0) {
    exited_ = true;  // not our child any more
    exit_code_ = -1;
    return true;
  }
  return false;
}

bool ChildProcess::running() { return !Reap(false); }

int ChildProcess::Stop(int sig, absl::Duration timeout) {
  if (Reap(false)) return exit_code_;
  kill(pid_, sig);
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (Reap(false)) return exit_code_;
    absl::SleepFor(absl::Milliseconds(20));
  }
  kill(pid_, SIGKILL);
  Reap(true);
  return exit_code_;
}

std::string ChildProcess::Log() const {
  std::ifstream f(log_path_);
  return std::string((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
}

absl::StatusOr<std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("popen failed");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int rc = pclose(pipe);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("`", command, "` failed (status ", rc, "): ", out));
  }
  return out;
}

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

}  // namespace msgq::launch
