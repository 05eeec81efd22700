#include "engine/queue/own_echoes.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace msgq {

std::optional<OwnEchoes::Gtid> OwnEchoes::Parse(absl::string_view gtid) {
  const std::vector<absl::string_view> parts = absl::StrSplit(gtid, '-');
  Gtid g;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &g.domain) ||
      !absl::SimpleAtoi(parts[2], &g.seq)) {
    return std::nullopt;
  }
  g.known = true;
  return g;
}

namespace {

// Drops from `facts` (of one id, in `map`) the first fact that `is` picks.
template <typename Map, typename Pick>
bool EraseFact(Map& map, absl::string_view id, Pick is) {
  auto it = map.find(id);
  if (it == map.end()) return false;
  auto fact = std::find_if(it->second.begin(), it->second.end(), is);
  if (fact == it->second.end()) return false;
  it->second.erase(fact);
  if (it->second.empty()) map.erase(it);
  return true;
}

}  // namespace

void OwnEchoes::Committed(const std::optional<std::string>& gtid,
                          const std::vector<std::string>& acked,
                          const std::vector<Postponement>& postponed,
                          const std::vector<Postponement>& written) {
  if (acked.empty() && postponed.empty() && written.empty()) return;
  Write w;
  if (gtid.has_value()) {
    if (gtid->empty()) return;  // it wrote nothing: no echo comes
    if (std::optional<Gtid> g = Parse(*gtid); g.has_value()) {
      w.gtid = *g;
      // A later transaction of its domain was shown: its echo passed.
      auto shown = shown_.find(g->domain);
      if (shown != shown_.end() && shown->second > g->seq) return;
    }
  }
  for (const std::string& id : acked) {
    acks_[id].push_back(w.gtid);
    ++facts_;
  }
  for (const Postponement& p : postponed) {
    postpones_[p.id].emplace_back(w.gtid, p.time_next);
    ++facts_;
  }
  for (const Postponement& p : written) {
    written_[p.id].emplace_back(w.gtid, p.time_next);
  }
  w.acked = acked;
  w.postponed = postponed;
  w.written = written;
  held_ += w.ids();
  if (w.gtid.known) {
    Write& kept = by_gtid_[{w.gtid.domain, w.gtid.seq}];
    kept.gtid = w.gtid;
    kept.acked.insert(kept.acked.end(), w.acked.begin(), w.acked.end());
    kept.postponed.insert(kept.postponed.end(), w.postponed.begin(),
                          w.postponed.end());
    kept.written.insert(kept.written.end(), w.written.begin(), w.written.end());
  } else {
    unnamed_.push_back(std::move(w));
  }
  Trim();
}

void OwnEchoes::Shown(absl::string_view gtid) {
  const std::optional<Gtid> g = Parse(gtid);
  if (!g.has_value()) return;
  uint64_t& shown = shown_[g->domain];
  shown = std::max(shown, g->seq);
  auto end = by_gtid_.lower_bound({g->domain, g->seq});
  for (auto it = by_gtid_.lower_bound({g->domain, 0}); it != end;) {
    Forget(it->second);
    held_ -= it->second.ids();
    it = by_gtid_.erase(it);
  }
}

bool OwnEchoes::TakeAck(const RowChange& c) {
  auto it = acks_.find(c.id);
  if (it == acks_.end()) return false;
  std::vector<Gtid>& gtids = it->second;
  const std::optional<Gtid> g = Parse(c.gtid);
  auto fact = gtids.end();
  if (g.has_value()) fact = std::find(gtids.begin(), gtids.end(), *g);
  if (fact == gtids.end()) {
    fact = std::find_if(gtids.begin(), gtids.end(),
                        [](const Gtid& x) { return !x.known; });
  }
  if (fact == gtids.end()) return false;
  gtids.erase(fact);
  --facts_;
  if (gtids.empty()) acks_.erase(it);
  return true;
}

bool OwnEchoes::TakePostpone(const RowChange& c) {
  auto it = postpones_.find(c.id);
  if (it == postpones_.end()) return false;
  auto& facts = it->second;
  const std::optional<Gtid> g = Parse(c.gtid);
  bool own = false;
  for (auto f = facts.begin(); f != facts.end();) {
    if (f->first.known) {
      if (g.has_value() && f->first == *g) {
        own = true;
        f = facts.erase(f);
        --facts_;
      } else {
        ++f;
      }
      continue;
    }
    // Without GTIDs: the id's next change is its echo or newer than it.
    own |= c.time_next.has_value() && f->second == *c.time_next;
    f = facts.erase(f);
    --facts_;
  }
  if (facts.empty()) postpones_.erase(it);
  return own;
}

bool OwnEchoes::OlderThanWrite(const RowChange& c) {
  auto it = written_.find(c.id);
  if (it == written_.end()) return false;
  const std::optional<Gtid> g = Parse(c.gtid);
  const bool gone =
      c.deleted || c.time_acked.has_value() || !c.time_next.has_value();
  bool older = false;
  auto& facts = it->second;
  for (auto f = facts.begin(); f != facts.end();) {
    const bool echo = f->first.known ? g.has_value() && f->first == *g
                                     : gone || (c.time_next.has_value() &&
                                                f->second == *c.time_next);
    if (echo) {
      f = facts.erase(f);
    } else {
      older = true;
      ++f;
    }
  }
  if (facts.empty()) written_.erase(it);
  return older && !gone;
}

void OwnEchoes::Forget(const Write& w) {
  for (const std::string& id : w.acked) {
    auto it = acks_.find(id);
    if (it == acks_.end()) continue;
    auto fact = std::find(it->second.begin(), it->second.end(), w.gtid);
    if (fact == it->second.end()) continue;
    it->second.erase(fact);
    --facts_;
    if (it->second.empty()) acks_.erase(it);
  }
  for (const Postponement& p : w.postponed) {
    auto it = postpones_.find(p.id);
    if (it == postpones_.end()) continue;
    auto fact = std::find_if(it->second.begin(), it->second.end(),
                             [&](const auto& f) { return f.first == w.gtid; });
    if (fact == it->second.end()) continue;
    it->second.erase(fact);
    --facts_;
    if (it->second.empty()) postpones_.erase(it);
  }
  auto same = [&](const auto& f) { return f.first == w.gtid; };
  for (const Postponement& p : w.written) EraseFact(written_, p.id, same);
}

void OwnEchoes::Trim() {
  // The writes hold their ids after the facts were used up: they count
  // towards the bound too.
  while (held_ > capacity_) {
    const Write* oldest = !unnamed_.empty()   ? &unnamed_.front()
                          : !by_gtid_.empty() ? &by_gtid_.begin()->second
                                              : nullptr;
    if (oldest == nullptr) break;
    Forget(*oldest);
    held_ -= oldest->ids();
    if (!unnamed_.empty()) {
      unnamed_.pop_front();
    } else {
      by_gtid_.erase(by_gtid_.begin());
    }
  }
}

}  // namespace msgq
