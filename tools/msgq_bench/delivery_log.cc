#include "tools/msgq_bench/delivery_log.h"

namespace msgq::bench {

DeliveryLog::DeliveryLog(int64_t max_id)
    : max_id_(max_id),
      count_(static_cast<size_t>(max_id + 1)),
      first_ns_(static_cast<size_t>(max_id + 1)) {}

void DeliveryLog::Record(int64_t id, int64_t now_ns) {
  if (id < 1 || id > max_id_) {
    unexpected_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const size_t i = static_cast<size_t>(id);
  uint8_t seen = count_[i].load(std::memory_order_relaxed);
  // Saturating increment: the count only distinguishes 0, 1 and more.
  while (seen < 255 && !count_[i].compare_exchange_weak(
                           seen, seen + 1, std::memory_order_relaxed)) {
  }
  if (seen > 0) {
    duplicates_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  first_ns_[i].store(now_ns, std::memory_order_relaxed);
  unique_.fetch_add(1, std::memory_order_relaxed);
  int64_t earliest = earliest_ns_.load(std::memory_order_relaxed);
  while ((earliest == 0 || now_ns < earliest) &&
         !earliest_ns_.compare_exchange_weak(earliest, now_ns,
                                             std::memory_order_relaxed)) {
  }
}

}  // namespace msgq::bench
