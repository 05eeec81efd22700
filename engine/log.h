// Minimal logging to stderr (Abseil 20220623 has no absl/log):
//   LogInfo("table ", name, " loaded");
// Thread-safe: each call writes one line with a single write().
#ifndef MSGQ_ENGINE_LOG_H_
#define MSGQ_ENGINE_LOG_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace msgq {

void LogLine(absl::string_view severity, absl::string_view message);

template <typename... Args>
void LogInfo(const Args&... args) {
  LogLine("I", absl::StrCat(args...));
}
template <typename... Args>
void LogWarning(const Args&... args) {
  LogLine("W", absl::StrCat(args...));
}
template <typename... Args>
void LogError(const Args&... args) {
  LogLine("E", absl::StrCat(args...));
}

}  // namespace msgq

#endif  // MSGQ_ENGINE_LOG_H_
