#include "tools/launch/msgqd_process.h"

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace msgq::launch {

absl::StatusOr<std::unique_ptr<MsgqdProcess>> MsgqdProcess::Start(
    const Options& options) {
  std::vector<std::string> argv = {
      options.path,
      absl::StrCat("--mysql_socket=", options.mysql_socket),
      "--listen=127.0.0.1:0",
      // Off unless the caller asks (a later flag wins): parallel test
      // servers would all race for the default ports 15306 and 15998 (the
      // one that won the HTTP port would also sample queue depths by SQL).
      "--mysql_protocol_listen=",
      "--http_listen=",
  };
  argv.insert(argv.end(), options.args.begin(), options.args.end());
  if (!options.env.empty()) {
    std::vector<std::string> with_env = {"env"};
    with_env.insert(with_env.end(), options.env.begin(), options.env.end());
    with_env.insert(with_env.end(), argv.begin(), argv.end());
    argv = std::move(with_env);
  }
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Start(argv, options.log_path);
  if (!child.ok()) return child.status();
  std::unique_ptr<MsgqdProcess> p(new MsgqdProcess(*std::move(child)));
  const absl::Time deadline = absl::Now() + options.start_timeout;
  const std::string kListening = "msgqd listening on ";
  while (absl::Now() < deadline) {
    std::string log = p->child_->Log();
    size_t at = log.find(kListening);
    if (at != std::string::npos) {
      size_t end = log.find('\n', at);
      if (end != std::string::npos) {
        p->address_ =
            log.substr(at + kListening.size(), end - at - kListening.size());
        return p;
      }
    }
    if (!p->child_->running()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::string log = p->child_->Log();
  p->Stop();
  return absl::UnavailableError(
      absl::StrCat("msgqd did not start listening; log tail: ",
                   log.substr(log.size() > 2000 ? log.size() - 2000 : 0)));
}

int MsgqdProcess::Stop(absl::Duration timeout, int sig) {
  return child_->Stop(sig, timeout);
}

void MsgqdProcess::Kill() { child_->Stop(SIGKILL, absl::Seconds(10)); }

}  // namespace msgq::launch
