// DeliveryLog: what the subscribers received, per message id 1..max_id: how
// often (for duplicates and loss) and when first (for latency). Lock-free;
// Record is called by every stream's reader (thread or gRPC callback).
//
// Thread-safe. Memory: 9 bytes per id.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_DELIVERY_LOG_H_
#define MSGQ_TOOLS_MSGQ_BENCH_DELIVERY_LOG_H_

#include <atomic>
#include <cstdint>
#include <vector>

namespace msgq::bench {

class DeliveryLog {
 public:
  explicit DeliveryLog(int64_t max_id);

  // Notes that `id` arrived at `now_ns` (bench clock).
  void Record(int64_t id, int64_t now_ns);

  int64_t max_id() const { return max_id_; }
  // Ids received at least once / receipts beyond the first / ids outside
  // 1..max_id.
  int64_t unique() const { return unique_.load(std::memory_order_relaxed); }
  int64_t duplicates() const {
    return duplicates_.load(std::memory_order_relaxed);
  }
  int64_t unexpected() const {
    return unexpected_.load(std::memory_order_relaxed);
  }
  // First receipt of `id`, 0 if never received (requires 1 <= id <= max_id).
  int64_t first_ns(int64_t id) const {
    return first_ns_[static_cast<size_t>(id)].load(std::memory_order_relaxed);
  }
  // Earliest receipt of any id; 0 before the first.
  int64_t earliest_ns() const {
    return earliest_ns_.load(std::memory_order_relaxed);
  }

 private:
  const int64_t max_id_;
  std::vector<std::atomic<uint8_t>> count_;
  std::vector<std::atomic<int64_t>> first_ns_;
  std::atomic<int64_t> unique_{0};
  std::atomic<int64_t> duplicates_{0};
  std::atomic<int64_t> unexpected_{0};
  std::atomic<int64_t> earliest_ns_{0};
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_DELIVERY_LOG_H_
