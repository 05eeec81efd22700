// Decoded messages of a msgq message table.
//
// MessageStream first sends the table's columns (`Schema`), then rows packed as
// the concatenation of each column's text-protocol bytes with one length per
// column (-1 for NULL). The library decodes such a row into a `Message`
// whose columns are reachable by name or position; NULL stays
// distinguishable from the empty string.
//
// Example (in a Subscriber's handler):
//   std::optional<absl::string_view> body = msg.Get("message");
//   if (!body.has_value()) { /* NULL, or no column "message" */ }
//   Ack(table, {msg.id()});
//
// A Message also knows which delivery it is: its epoch (the sends of the
// message before this one, Row.epoch) names the delivery together with the
// id, and only the holder of the latest delivery can nack or extend it:
//   client->Nack(table, {msg->delivery()}, {.reason = "backend down"});
//
// A Message received by a Subscriber of several servers also remembers the
// server it came from (server()): its ack, nack and extends must go to that
// server only, because ids are unique only within one shard (id 5 on another
// shard is another message).
//
// Schema, Message and Delivery are immutable after construction (Delivery is
// a plain value) and safe to read from many threads. A Message shares its
// Schema and owns a copy of its bytes.
#ifndef MSGQ_MESSAGE_H_
#define MSGQ_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq {
namespace internal {
struct MessageAccess;  // for DecodeRow (client/internal/decode_row.h)
}  // namespace internal

// The columns of a message table, as announced by the first
// MessageStreamResponse. Column 0 is the message id.
class Schema {
 public:
  struct Column {
    std::string name;
    // information_schema.COLUMNS.DATA_TYPE, lower case ("bigint", "json"...).
    std::string type;
  };

  // Builds a schema of `columns`, in order.
  // Returns INVALID_ARGUMENT when `columns` is empty or a name is empty.
  static absl::StatusOr<std::shared_ptr<const Schema>> FromColumns(
      std::vector<Column> columns);

  size_t size() const { return columns_.size(); }
  const Column& column(size_t i) const { return columns_[i]; }
  const std::vector<Column>& columns() const { return columns_; }

  // Position of the column called `name` (exact, case-sensitive match; the
  // first one if the server ever sent duplicates), or nullopt.
  std::optional<size_t> IndexOf(absl::string_view name) const;

 private:
  explicit Schema(std::vector<Column> columns);

  std::vector<Column> columns_;
  absl::flat_hash_map<std::string, size_t> index_;
};

// One delivery of a message: its id (column 0, text form) and the epoch it
// was streamed with. What MessageNack and MessageExtend take.
struct Delivery {
  std::string id;
  int64_t epoch = 0;

  bool operator==(const Delivery& other) const {
    return id == other.id && epoch == other.epoch;
  }
  bool operator!=(const Delivery& other) const { return !(*this == other); }
};

// One message: a row of the table, decoded.
class Message {
 public:
  // The id as streamed in column 0 (text form); what MessageAck takes.
  const std::string& id() const { return id_; }
  // Sends of this message before this delivery (0 on the first one).
  int64_t epoch() const { return epoch_; }
  // {id(), epoch()}: what names this delivery to MessageNack/MessageExtend.
  Delivery delivery() const { return {id_, epoch_}; }

  // The server the message came from, as given to the Subscriber ("" for a
  // Subscriber started on one channel, or a row decoded without one).
  const std::string& server() const { return server_; }

  const Schema& schema() const { return *schema_; }
  size_t size() const { return offsets_.size(); }

  // The text form of the column called `name`. nullopt when the value is NULL
  // or there is no such column; use HasColumn() to tell the two apart.
  // The view points into this Message and lives as long as it does.
  std::optional<absl::string_view> Get(absl::string_view name) const;
  // The same by position; nullopt when NULL or `index` >= size().
  std::optional<absl::string_view> Get(size_t index) const;

  bool HasColumn(absl::string_view name) const {
    return schema_->IndexOf(name).has_value();
  }
  // True when the column exists and its value is NULL.
  bool IsNull(absl::string_view name) const;

 private:
  friend struct internal::MessageAccess;
  struct Span {
    size_t offset;
    int64_t length;  // -1 = NULL
  };
  Message(std::shared_ptr<const Schema> schema, std::string values,
          std::vector<Span> offsets, int64_t epoch, std::string server);

  std::shared_ptr<const Schema> schema_;
  std::string values_;
  std::vector<Span> offsets_;
  std::string id_;
  int64_t epoch_;
  std::string server_;
};

}  // namespace msgq

#endif  // MSGQ_MESSAGE_H_
