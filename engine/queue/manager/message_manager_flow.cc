// MessageManager: flow control (pause/resume; see SetPaused in
// message_manager.h).
#include "engine/queue/manager/message_manager.h"

namespace msgq {

void MessageManager::SetPaused(bool paused) {
  absl::MutexLock lock(&mu_);
  if (paused_ == paused) return;
  paused_ = paused;
  // Paused: what is queued stays due in MySQL. Resumed: rows queued by a
  // poll that ran across the pause may be stale; read the table afresh.
  cache_.Clear();
  if (!paused) scheduler_.RequestPoll();
  WakeLocked();
}

}  // namespace msgq
