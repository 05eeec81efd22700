// The campaign's progress lines: "HH:MM:SS.mmm  LINE" on stderr.
// Thread-safe (one fprintf per line).
#ifndef MSGQ_TOOLS_CHAOS_CAMPAIGN_LOG_H_
#define MSGQ_TOOLS_CHAOS_CAMPAIGN_LOG_H_

#include <cstdio>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace msgq::chaos {

inline void Log(const std::string& line) {
  fprintf(
      stderr, "%s  %s\n",
      absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone()).c_str(),
      line.c_str());
}

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_CAMPAIGN_LOG_H_
