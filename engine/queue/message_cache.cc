#include "engine/queue/message_cache.h"

#include <cstdlib>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "engine/log.h"
#include "engine/sql/sql_literal.h"

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

MessageCache::Key MessageCache::KeyOf(const Message& m) const {
  const std::optional<absl::int128> n = CanonicalIntegerValue(id_kind_, m.id);
  return Key{m.priority, m.time_next, !n.has_value(), n.value_or(0), m.id};
}

MessageCache::AddResult MessageCache::Add(Message message) {
  if (queued_.contains(message.id)) return AddResult::kAlreadyPresent;
  if (full()) return AddResult::kFull;
  Key key = KeyOf(message);
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
  return AddResult::kAdded;
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
    queued_.erase(it->second.id);
    batch.push_back(std::move(it->second));
    order_.erase(it);
  }
  return batch;
}

bool MessageCache::RemoveQueued(absl::string_view id) {
  auto it = queued_.find(id);
  if (it == queued_.end()) return false;
  order_.erase(it->second);
  queued_.erase(it);
  return true;
}

}  // namespace msgq
