#include "engine/lease/lease_watch.h"

#include <algorithm>
#include <utility>

namespace msgq {

LeaseWatch::LeaseWatch(std::string self, absl::Duration lease)
    : self_(std::move(self)), lease_(lease) {}

void LeaseWatch::Observe(const LeaseView& view, absl::Time seen) {
  last_ = seen;
  // A version read before keeps the time it was first read; a new one
  // starts now; rows gone are forgotten.
  auto update = [](absl::flat_hash_map<std::string, Seen>& map,
                   const std::vector<std::pair<std::string, Seen>>& rows) {
    absl::flat_hash_map<std::string, Seen> next;
    for (const auto& [key, row] : rows) {
      auto it = map.find(key);
      const bool same = it != map.end() && it->second.owner == row.owner &&
                        it->second.version == row.version;
      next[key] = same ? it->second : row;
    }
    map = std::move(next);
  };
  std::vector<std::pair<std::string, Seen>> rows;
  for (const LeaseRow& row : view.leases) {
    rows.push_back({row.table, Seen{row.owner, row.expires, seen}});
  }
  update(leases_, rows);
  rows.clear();
  for (const InstanceRow& row : view.instances) {
    rows.push_back({row.instance, Seen{"", row.expires, seen}});
  }
  update(instances_, rows);
}

TableLease LeaseWatch::Table(const std::string& table) const {
  TableLease out;
  auto it = leases_.find(table);
  if (it == leases_.end()) {
    out.free_for = absl::InfiniteDuration();
    return out;
  }
  const Seen& seen = it->second;
  out.row = true;
  out.owner = seen.owner;
  out.version = seen.version;
  const absl::Duration unchanged = last_ - seen.since;
  if (seen.owner.empty()) {
    // Every write of a holder raises the version above 0: a row at 0 was
    // only ever inserted. A release came after its holder's last send.
    out.free_for = seen.version == 0 ? absl::InfiniteDuration() : unchanged;
  } else if (seen.owner == self_) {
    out.state = TableLease::State::kMine;
  } else if (unchanged >= lease_) {
    // Its holder stopped within three quarters of a lease of the first
    // read; counting from a whole lease keeps the margin of a quarter.
    out.state = TableLease::State::kLapsed;
    out.free_for = unchanged - lease_;
  } else {
    out.state = TableLease::State::kHeld;
  }
  return out;
}

std::vector<std::string> LeaseWatch::Alive() const {
  std::vector<std::string> out = {self_};
  for (const auto& [instance, seen] : instances_) {
    if (instance != self_ && last_ - seen.since < lease_) {
      out.push_back(instance);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace msgq
