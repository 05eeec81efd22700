#include "engine/queue/last_changes.h"

namespace msgq {

void LastChanges::Shown(absl::string_view id, const BinlogPosition& at,
                        uint64_t number, bool reading) {
  // With no read running, only a later read can show the row: one at or
  // after the floor, which has every change at or before it.
  if (!reading && !AfterFloor(at)) {
    last_.erase(id);
    return;
  }
  if (last_.size() >= capacity_ && !last_.contains(id)) {
    last_.clear();
    forgotten_ = Change{at, number};
  }
  last_.insert_or_assign(id, Change{at, number});
}

bool LastChanges::Stale(absl::string_view id, uint64_t read,
                        const BinlogPosition& at) const {
  if (forgotten_.has_value() &&
      (forgotten_->number > read || IncludedIn(forgotten_->at, at) == false)) {
    return true;  // its last change may have been forgotten
  }
  auto it = last_.find(id);
  if (it == last_.end()) return false;
  if (std::optional<bool> in = IncludedIn(it->second.at, at); in.has_value()) {
    return !*in;
  }
  return it->second.number > read;  // shown while the read ran
}

void LastChanges::ReadEnded(const BinlogPosition& at, bool returned,
                            bool last) {
  if (returned) {
    reads_lack_positions_ = !at.known();
    if (at.known() && IncludedIn(floor_, at) != false) floor_ = at;
  }
  if (!last) return;
  absl::erase_if(last_,
                 [&](const auto& e) { return !AfterFloor(e.second.at); });
  if (forgotten_.has_value() && !AfterFloor(forgotten_->at)) {
    forgotten_.reset();
  }
}

}  // namespace msgq
