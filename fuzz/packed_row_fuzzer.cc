// Fuzzes the client's packed-row decoder (msgq/message.h).
//
// Properties:
//  1. DecodeRow never crashes, and on arbitrary lengths and values it succeeds
//     exactly when the documented conditions hold (as many lengths as columns,
//     none below -1, non-NULL lengths adding up to the value bytes, a non-NULL
//     id); a decoded Message then returns each column's exact bytes.
//  2. Round trip: values packed the way msgqd packs them (server/
//     stream_reactor.cc: text values back to back, a length per column, -1 for
//     NULL) decode to the same values, by position and by name.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/internal/decode_row.h"
#include "msgq/message.h"
#include "msgq/v1/messaging.pb.h"

namespace {

void Check(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "packed_row_fuzzer: property violated: %s\n", what);
    abort();
  }
}

std::shared_ptr<const msgq::Schema> MakeSchema(size_t n) {
  std::vector<msgq::Schema::Column> columns;
  for (size_t i = 0; i < n; ++i) {
    columns.push_back({absl::StrCat("c", i), i == 0 ? "bigint" : "text"});
  }
  auto schema = msgq::Schema::FromColumns(std::move(columns));
  Check(schema.ok(), "a schema of named columns builds");
  return *schema;
}

// Property 1: arbitrary lengths and values.
void DecodeArbitrary(FuzzedDataProvider& in) {
  const size_t columns = in.ConsumeIntegralInRange<size_t>(1, 8);
  const size_t count = in.ConsumeIntegralInRange<size_t>(0, 10);
  msgq::v1::Row row;
  for (size_t i = 0; i < count; ++i) {
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:  // any int64
        row.add_lengths(in.ConsumeIntegral<int64_t>());
        break;
      case 1:
        row.add_lengths(-1);
        break;
      default:  // small, plausible
        row.add_lengths(in.ConsumeIntegralInRange<int64_t>(-2, 16));
    }
  }
  row.set_values(in.ConsumeRandomLengthString(64));

  // What the contract says, computed without overflow.
  bool valid = count == columns;
  unsigned __int128 sum = 0;
  for (int i = 0; i < row.lengths_size(); ++i) {
    if (row.lengths(i) < -1) valid = false;
    if (row.lengths(i) > 0) sum += static_cast<uint64_t>(row.lengths(i));
  }
  if (sum != row.values().size()) valid = false;
  if (count > 0 && row.lengths(0) == -1) valid = false;

  absl::StatusOr<msgq::Message> msg = msgq::DecodeRow(MakeSchema(columns), row);
  Check(msg.ok() == valid, "DecodeRow succeeds exactly on valid rows");
  if (!msg.ok()) {
    Check(msg.status().code() == absl::StatusCode::kInternal,
          "a malformed row is INTERNAL");
    return;
  }
  Check(msg->size() == columns, "one value per column");
  size_t offset = 0;
  for (size_t i = 0; i < columns; ++i) {
    const int64_t length = row.lengths(static_cast<int>(i));
    std::optional<absl::string_view> v = msg->Get(i);
    if (length == -1) {
      Check(!v.has_value(), "NULL stays NULL");
      Check(msg->IsNull(absl::StrCat("c", i)), "IsNull on a NULL column");
      continue;
    }
    Check(v.has_value(), "a non-NULL value is present");
    Check(*v == absl::string_view(row.values())
                    .substr(offset, static_cast<size_t>(length)),
          "a value is its bytes");
    offset += static_cast<size_t>(length);
  }
  Check(msg->id() == *msg->Get(size_t{0}), "id() is column 0");
  Check(!msg->Get(columns).has_value(), "out of range is nullopt");
}

// Property 2: encode -> decode.
void RoundTrip(FuzzedDataProvider& in) {
  const size_t columns = in.ConsumeIntegralInRange<size_t>(1, 8);
  std::vector<std::optional<std::string>> values;
  msgq::v1::Row row;
  for (size_t i = 0; i < columns; ++i) {
    std::optional<std::string> v;
    if (i == 0 || in.ConsumeBool()) v = in.ConsumeRandomLengthString(32);
    if (v.has_value()) {
      row.add_lengths(static_cast<int64_t>(v->size()));
      row.mutable_values()->append(*v);
    } else {
      row.add_lengths(-1);
    }
    values.push_back(std::move(v));
  }
  absl::StatusOr<msgq::Message> msg = msgq::DecodeRow(MakeSchema(columns), row);
  Check(msg.ok(), "a packed row decodes");
  Check(msg->id() == *values[0], "the id round-trips");
  for (size_t i = 0; i < columns; ++i) {
    std::optional<absl::string_view> by_index = msg->Get(i);
    std::optional<absl::string_view> by_name = msg->Get(absl::StrCat("c", i));
    Check(by_index.has_value() == values[i].has_value(), "NULL round-trips");
    Check(by_name == by_index, "by name equals by position");
    if (values[i].has_value()) {
      Check(*by_index == *values[i], "a value round-trips");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    DecodeArbitrary(in);
  } else {
    RoundTrip(in);
  }
  return 0;
}
