// The decoding of MessageStream's answers into the public Schema and
// Message (msgq/message.h): the schema from the first answer's fields, and
// each packed row (the concatenation of each column's text-protocol bytes,
// with one length per column, -1 for NULL).
//
// Example:
//   absl::StatusOr<std::shared_ptr<const Schema>> schema =
//       SchemaFromFields(first_response.fields());
//   absl::StatusOr<Message> msg = DecodeRow(*schema, response.rows(0));
//
// Errors: SchemaFromFields returns INVALID_ARGUMENT as Schema::FromColumns
// does (no fields, or an empty name). DecodeRow returns INTERNAL (the server
// broke the protocol) when the number of lengths differs from the number of
// columns, a length is below -1, the lengths do not add up to the size of
// `values`, the id (column 0) is NULL or the epoch is negative; nothing is
// returned then.
//
// Thread-safe (pure functions).
#ifndef MSGQ_CLIENT_INTERNAL_DECODE_ROW_H_
#define MSGQ_CLIENT_INTERNAL_DECODE_ROW_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_field.h"
#include "msgq/message.h"
#include "msgq/v1/messaging.pb.h"

namespace msgq {

// The schema of the stream's `fields`, in order.
absl::StatusOr<std::shared_ptr<const Schema>> SchemaFromFields(
    const google::protobuf::RepeatedPtrField<v1::Field>& fields);

// One packed row of a table with `schema`; `server` becomes the message's
// server().
absl::StatusOr<Message> DecodeRow(std::shared_ptr<const Schema> schema,
                                  const v1::Row& row, std::string server = {});

}  // namespace msgq

#endif  // MSGQ_CLIENT_INTERNAL_DECODE_ROW_H_
