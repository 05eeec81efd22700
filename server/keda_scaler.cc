#include "server/keda_scaler.h"

#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace msgq {
namespace {

// At most this many seconds in ageSeconds, so that it fits in nanoseconds.
constexpr int64_t kMaxAgeSeconds =
    std::numeric_limits<int64_t>::max() / kSecond;

// metadata[key] as an integer in [min, max], or `fallback` when absent.
absl::StatusOr<int64_t> IntegerOf(
    const std::map<std::string, std::string>& metadata, const char* key,
    int64_t min, int64_t fallback,
    int64_t max = std::numeric_limits<int64_t>::max()) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("scalerMetadata `", key, "` must be an integer from ", min,
                     " to ", max, ", got \"", it->second, "\""));
  }
  return value;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return std::numeric_limits<int64_t>::max();
  }
  return sum;
}

}  // namespace

absl::StatusOr<KedaTrigger> ParseKedaTrigger(
    const std::map<std::string, std::string>& metadata) {
  KedaTrigger trigger;
  auto table = metadata.find("table");
  if (table == metadata.end() || table->second.empty()) {
    return absl::InvalidArgumentError(
        "scalerMetadata must name the message table: `table`");
  }
  trigger.table = table->second;
  if (auto keyspace = metadata.find("keyspace"); keyspace != metadata.end()) {
    trigger.keyspace = keyspace->second;
  }
  absl::StatusOr<int64_t> target =
      IntegerOf(metadata, "targetMessagesPerReplica", 1,
                trigger.target_messages_per_replica);
  if (!target.ok()) return target.status();
  absl::StatusOr<int64_t> activation =
      IntegerOf(metadata, "activationMessages", 0, trigger.activation_messages);
  if (!activation.ok()) return activation.status();
  absl::StatusOr<int64_t> age =
      IntegerOf(metadata, "ageSeconds", 0, trigger.age_seconds, kMaxAgeSeconds);
  if (!age.ok()) return age.status();
  trigger.target_messages_per_replica = *target;
  trigger.activation_messages = *activation;
  trigger.age_seconds = *age;
  return trigger;
}

int64_t KedaMetricValue(const KedaTrigger& trigger,
                        const MessageCounts::Counts& counts) {
  int64_t value = SaturatingAdd(counts.ready, counts.in_flight);
  if (trigger.age_seconds > 0 && counts.oldest_due_ns.has_value() &&
      counts.now_ns > *counts.oldest_due_ns) {
    // Whole steps only: the term grows by one replica's worth at a time.
    const int64_t steps = (counts.now_ns - *counts.oldest_due_ns) /
                          (trigger.age_seconds * kSecond);
    int64_t term = 0;
    if (__builtin_mul_overflow(steps, trigger.target_messages_per_replica,
                               &term)) {
      term = std::numeric_limits<int64_t>::max();
    }
    value = SaturatingAdd(value, term);
  }
  return value;
}

bool KedaActive(const KedaTrigger& trigger,
                const MessageCounts::Counts& counts) {
  return KedaMetricValue(trigger, counts) > trigger.activation_messages;
}

std::string KedaMetricName(absl::string_view keyspace,
                           absl::string_view table) {
  return absl::StrCat("msgq-", keyspace, "-", table);
}

}  // namespace msgq
