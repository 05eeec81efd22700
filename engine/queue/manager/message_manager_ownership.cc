// MessageManager: ownership of the table (see Own in message_manager.h).
#include "engine/queue/manager/message_manager.h"

namespace msgq {

void MessageManager::Own(absl::Time until) {
  absl::MutexLock lock(&mu_);
  if (!OwnsLocked()) {
    // Rows queued before (or read while not owning) may have been sent by
    // another owner since: read the table afresh.
    cache_.Clear();
    scheduler_.RequestPoll();
    ImagesWaitLocked();
  }
  owned_until_ = until;
  WakeLocked();
}

void MessageManager::Disown() {
  absl::MutexLock lock(&mu_);
  owned_until_ = absl::InfinitePast();
  cache_.Clear();
}

bool MessageManager::Quiesced() const {
  absl::MutexLock lock(&mu_);
  return !ledger_.PostponesPending();
}

}  // namespace msgq
