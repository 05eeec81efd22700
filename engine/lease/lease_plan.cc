#include "engine/lease/lease_plan.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace msgq {
namespace {

// FNV-1a, then a 64-bit finalizer (splitmix64) so that similar names
// spread.
uint64_t Mix(uint64_t h) {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

uint64_t LeasePreference(const std::string& self, const std::string& table) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    h ^= 0xff;  // separator: ("ab","c") != ("a","bc")
    h *= 0x100000001b3ULL;
  };
  add(self);
  add(table);
  return Mix(h);
}

LeasePlan PlanLeases(const std::vector<std::string>& tables,
                     const LeaseWatch& watch, absl::Duration grace) {
  using State = TableLease::State;
  const std::string& self = watch.self();
  LeasePlan plan;
  const std::vector<std::string> alive = watch.Alive();
  const int64_t n = static_cast<int64_t>(alive.size());
  const int64_t t = static_cast<int64_t>(tables.size());
  plan.share = static_cast<int>((t + n - 1) / n);

  // (preference, table), best first.
  using Ranked = std::pair<uint64_t, std::string>;
  std::vector<Ranked> mine, free, stale;
  // Leases held, by holder: lapsed ones count for nobody.
  absl::flat_hash_map<std::string, size_t> held;
  for (const std::string& table : tables) {
    const TableLease lease = watch.Table(table);
    const Ranked ranked{LeasePreference(self, table), table};
    switch (lease.state) {
      case State::kMine:
        mine.push_back(ranked);
        ++held[self];
        break;
      case State::kHeld:
        ++held[lease.owner];
        break;
      case State::kFree:
      case State::kLapsed:
        (lease.free_for > grace ? stale : free).push_back(ranked);
        break;
    }
  }
  auto best_first = [](const Ranked& a, const Ranked& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::sort(mine.begin(), mine.end(), best_first);
  std::sort(free.begin(), free.end(), best_first);
  std::sort(stale.begin(), stale.end(), best_first);

  const size_t share = static_cast<size_t>(plan.share);
  // Room the other live instances have below their share: what I hand
  // over must have a taker, or it would only sit unserved until `grace`.
  size_t room = 0;
  for (const std::string& other : alive) {
    if (other == self) continue;
    auto it = held.find(other);
    const size_t h = it == held.end() ? 0 : it->second;
    if (h < share) room += share - h;
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    const bool over = i >= share && plan.release.size() < room;
    (over ? plan.release : plan.keep).push_back(mine[i].second);
  }
  size_t count = plan.keep.size();
  // Under my share: the free tables I prefer, the long-free ones first.
  for (auto* list : {&stale, &free}) {
    for (const Ranked& r : *list) {
      if (count >= share) break;
      plan.acquire.push_back(r.second);
      ++count;
    }
  }
  // Long free and nobody took it: take it even at my share. Never while I
  // hand tables over, so a rebalance is not undone at once.
  if (plan.release.empty()) {
    for (const Ranked& r : stale) {
      if (std::find(plan.acquire.begin(), plan.acquire.end(), r.second) ==
          plan.acquire.end()) {
        plan.acquire.push_back(r.second);
      }
    }
  }
  return plan;
}

}  // namespace msgq
