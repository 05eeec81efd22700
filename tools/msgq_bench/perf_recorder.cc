#include "tools/msgq_bench/perf_recorder.h"

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace msgq::bench {

absl::StatusOr<std::unique_ptr<PerfRecorder>> PerfRecorder::Start(
    pid_t pid, const std::string& prefix) {
  absl::StatusOr<std::unique_ptr<launch::ChildProcess>> perf =
      launch::ChildProcess::Start(
          {"perf", "record", "-g", "-F", "499", "-p", absl::StrCat(pid), "-o",
           absl::StrCat(prefix, ".perf.data")},
          absl::StrCat(prefix, ".perf.log"));
  if (!perf.ok()) return perf.status();
  absl::SleepFor(absl::Milliseconds(300));  // let it attach
  if (!(*perf)->running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("perf exited at once: ", (*perf)->Log()));
  }
  return std::unique_ptr<PerfRecorder>(
      new PerfRecorder(*std::move(perf), prefix));
}

absl::StatusOr<std::string> PerfRecorder::Finish() {
  perf_->Stop(SIGINT, absl::Seconds(60));
  const std::string data = absl::StrCat(prefix_, ".perf.data");
  const std::string txt = absl::StrCat(prefix_, ".perf.txt");
  const std::string report =
      absl::StrCat("perf report -i ", launch::ShellQuote(data),
                   " --no-children -g none --stdio 2>/dev/null");
  const std::string trim = " | grep -v -e '^$' -e '^# ' -e '^#$' | cut -c1-160";
  absl::StatusOr<std::string> out = launch::RunCommand(absl::StrCat(
      "{ echo '## by thread'; ", report, " --sort pid", trim, " | head -25;",
      " echo '## by shared object'; ", report, " --sort dso", trim,
      " | head -25;", " echo '## by symbol'; ", report, " --sort dso,symbol",
      trim, " | head -80; } > ", launch::ShellQuote(txt)));
  if (!out.ok()) return out.status();
  return txt;
}

}  // namespace msgq::bench
