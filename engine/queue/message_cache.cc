#include "engine/queue/message_cache.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "engine/message_table.h"
#include "engine/queue/fair_key.h"

namespace msgq {
namespace {

// The value of `id` when it is the canonical decimal form of an integer of
// `kind` ("-7", "0", "18446744073709551615"; never "07", "+7", "-0", " 7").
std::optional<absl::int128> CanonicalIntegerValue(IdKind kind,
                                                  absl::string_view id) {
  if (!IsCanonicalInteger(kind, id)) return std::nullopt;
  if (kind == IdKind::kUnsignedInteger) {
    uint64_t v = 0;
    (void)absl::SimpleAtoi(id, &v);
    return absl::int128(v);
  }
  int64_t v = 0;
  (void)absl::SimpleAtoi(id, &v);
  return absl::int128(v);
}

}  // namespace

MessageCache::Key MessageCache::KeyOf(const Message& m, int64_t tag) const {
  const std::optional<absl::int128> n = CanonicalIntegerValue(id_kind_, m.id);
  return Key{m.priority, tag, m.time_next, !n.has_value(), n.value_or(0), m.id};
}

int64_t MessageCache::TagForAdd(const Message& m) {
  Rounds& rounds = rounds_[m.priority];
  KeyRound& key = rounds.keys[FairKeyTag(m.fair_key)];
  key.last_tag = std::max(rounds.virtual_tag, key.last_tag) + 1;
  ++key.queued;
  ++rounds.queued;
  return key.last_tag;
}

void MessageCache::Leave(const Key& key, const Message& m, bool popped) {
  auto r = rounds_.find(m.priority);
  if (r == rounds_.end()) return;
  Rounds& rounds = r->second;
  if (popped) rounds.virtual_tag = std::get<1>(key);
  auto k = rounds.keys.find(FairKeyTag(m.fair_key));
  if (k != rounds.keys.end() && --k->second.queued == 0) rounds.keys.erase(k);
  if (--rounds.queued == 0) rounds_.erase(r);
}

size_t MessageCache::fair_keys() const {
  size_t n = 0;
  for (const auto& [priority, rounds] : rounds_) n += rounds.keys.size();
  return n;
}

MessageCache::AddResult MessageCache::Add(Message message) {
  if (queued_.contains(message.id)) return AddResult::kAlreadyPresent;
  const size_t size = message.WireBytes();
  if (full() || (!order_.empty() && bytes_ + size > max_bytes_)) {
    return AddResult::kFull;
  }
  Key key = KeyOf(message, fair_ ? TagForAdd(message) : 0);
  std::string id = message.id;
  auto [it, inserted] = order_.emplace(std::move(key), std::move(message));
  if (!inserted) {
    // Impossible while keys end with the id and queued_ is consistent: a
    // broken invariant, and carrying on would leave a dangling index entry.
    LogError("MessageCache: order key of id \"", absl::CHexEscape(id),
             "\" already taken; cache invariant broken");
    std::abort();
  }
  queued_.emplace(std::move(id), it);
  bytes_ += size;
  assert(queued_.size() == order_.size());
  return AddResult::kAdded;
}

MessageCache::Order::iterator MessageCache::Erase(Order::iterator it,
                                                  bool popped, Message* out) {
  if (fair_) Leave(it->first, it->second, popped);
  assert(bytes_ >= it->second.WireBytes());
  bytes_ -= it->second.WireBytes();
  queued_.erase(it->second.id);
  if (out != nullptr) *out = std::move(it->second);
  return order_.erase(it);
}

MessageBatch MessageCache::PopBatch(size_t max, size_t max_bytes) {
  MessageBatch batch;
  batch.reserve(std::min(max, order_.size()));
  size_t bytes = 0;
  while (batch.size() < max && !order_.empty()) {
    auto it = order_.begin();
    const size_t size = it->second.WireBytes();
    if (!batch.empty() && (size > max_bytes || bytes + size > max_bytes)) {
      break;
    }
    bytes += size;
    Erase(it, /*popped=*/true, &batch.emplace_back());
  }
  return batch;
}

MessageBatch MessageCache::PopAdmitted(
    size_t max, size_t max_bytes,
    const std::function<bool(const Message&)>& admit) {
  MessageBatch batch;
  size_t bytes = 0;
  for (auto it = order_.begin(); it != order_.end() && batch.size() < max;) {
    const size_t size = it->second.WireBytes();
    if (!batch.empty() && (size > max_bytes || bytes + size > max_bytes)) {
      break;
    }
    if (!admit(it->second)) {
      ++it;
      continue;
    }
    bytes += size;
    it = Erase(it, /*popped=*/true, &batch.emplace_back());
  }
  return batch;
}

bool MessageCache::Any(
    const std::function<bool(const Message&)>& can_send) const {
  for (const auto& [key, m] : order_) {
    if (can_send(m)) return true;
  }
  return false;
}

bool MessageCache::RemoveQueued(absl::string_view id) {
  auto it = queued_.find(id);
  if (it == queued_.end()) return false;
  Erase(it->second, /*popped=*/false, nullptr);
  return true;
}

}  // namespace msgq
