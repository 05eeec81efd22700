// Engine::GroupLags (engine.h): each loaded consumer group's lag, from its
// feed's in-memory state, for /metrics.
#include <memory>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace msgq {

std::vector<Engine::GroupLag> Engine::GroupLags() const {
  // Copied out: a feed's stats() takes its own lock, never under groups_mu_.
  std::vector<std::pair<Key, std::shared_ptr<GroupFeed>>> feeds;
  {
    absl::MutexLock lock(&groups_mu_);
    for (const auto& [key, groups] : feeds_) {
      for (const auto& [name, feed] : groups) feeds.emplace_back(key, feed);
    }
  }
  const int64_t now_ns = clock_->NowNanos();
  std::vector<GroupLag> out;
  out.reserve(feeds.size());
  for (const auto& [key, feed] : feeds) {
    const GroupFeed::Stats stats = feed->stats();
    GroupLag lag;
    lag.keyspace = key.first;
    lag.table = key.second;
    lag.group = feed->row().name;
    lag.messages = static_cast<int64_t>(stats.pending);
    lag.in_flight = static_cast<int64_t>(stats.pending - stats.queued);
    lag.oldest_event_ns = stats.oldest_event_ns;
    lag.now_ns = now_ns;
    out.push_back(std::move(lag));
  }
  return out;
}

}  // namespace msgq
