#include "engine/log.h"

#include <unistd.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace msgq {

void LogLine(absl::string_view severity, absl::string_view message) {
  std::string line = absl::StrCat(
      severity,
      absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(), absl::UTCTimeZone()),
      " ", message, "\n");
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace msgq
