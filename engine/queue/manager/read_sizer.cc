// ReadSizer: see read_sizer.h.
#include "engine/queue/manager/read_sizer.h"

#include <algorithm>
#include <cstdint>

namespace msgq {

int64_t ReadSizer::RowsFor(size_t bytes) const {
  if (largest_row_ == 0) return INT32_MAX;
  return static_cast<int64_t>(
      std::clamp<size_t>(bytes / largest_row_, 1, INT32_MAX));
}

bool ReadSizer::Note(const std::vector<Message>& rows) {
  size_t bytes = 0;
  size_t largest = 0;
  for (const Message& m : rows) {
    bytes += m.WireBytes();
    largest = std::max(largest, m.WireBytes());
  }
  if (!rows.empty()) largest_row_ = largest;
  return bytes >= max_bytes_;
}

}  // namespace msgq
