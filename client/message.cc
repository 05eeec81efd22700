#include "msgq/message.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/internal/decode_row.h"

namespace msgq {

namespace internal {

// The row decoder's access to Message's private constructor.
struct MessageAccess {
  static Message Make(std::shared_ptr<const Schema> schema, std::string values,
                      std::vector<Message::Span> offsets, int64_t epoch,
                      std::string server) {
    return Message(std::move(schema), std::move(values), std::move(offsets),
                   epoch, std::move(server));
  }
  using Span = Message::Span;
};

}  // namespace internal

absl::StatusOr<std::shared_ptr<const Schema>> SchemaFromFields(
    const google::protobuf::RepeatedPtrField<v1::Field>& fields) {
  std::vector<Schema::Column> columns;
  columns.reserve(fields.size());
  for (const v1::Field& f : fields) columns.push_back({f.name(), f.type()});
  return Schema::FromColumns(std::move(columns));
}

absl::StatusOr<std::shared_ptr<const Schema>> Schema::FromColumns(
    std::vector<Column> columns) {
  if (columns.empty()) {
    return absl::InvalidArgumentError("schema has no columns");
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("schema column ", i, " has an empty name"));
    }
  }
  return std::shared_ptr<const Schema>(new Schema(std::move(columns)));
}

Schema::Schema(std::vector<Column> columns) : columns_(std::move(columns)) {
  for (size_t i = 0; i < columns_.size(); ++i) {
    index_.try_emplace(columns_[i].name, i);
  }
}

std::optional<size_t> Schema::IndexOf(absl::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

Message::Message(std::shared_ptr<const Schema> schema, std::string values,
                 std::vector<Span> offsets, int64_t epoch, std::string server)
    : schema_(std::move(schema)),
      values_(std::move(values)),
      offsets_(std::move(offsets)),
      epoch_(epoch),
      server_(std::move(server)) {
  id_ = std::string(*Get(size_t{0}));
}

std::optional<absl::string_view> Message::Get(absl::string_view name) const {
  std::optional<size_t> index = schema_->IndexOf(name);
  if (!index.has_value()) return std::nullopt;
  return Get(*index);
}

std::optional<absl::string_view> Message::Get(size_t index) const {
  if (index >= offsets_.size() || offsets_[index].length < 0) {
    return std::nullopt;
  }
  return absl::string_view(values_).substr(
      offsets_[index].offset, static_cast<size_t>(offsets_[index].length));
}

bool Message::IsNull(absl::string_view name) const {
  std::optional<size_t> index = schema_->IndexOf(name);
  return index.has_value() && offsets_[*index].length < 0;
}

absl::StatusOr<Message> DecodeRow(std::shared_ptr<const Schema> schema,
                                  const v1::Row& row, std::string server) {
  if (static_cast<size_t>(row.lengths_size()) != schema->size()) {
    return absl::InternalError(
        absl::StrCat("malformed row: ", row.lengths_size(), " lengths for ",
                     schema->size(), " columns"));
  }
  std::vector<internal::MessageAccess::Span> offsets;
  offsets.reserve(schema->size());
  size_t offset = 0;
  for (int i = 0; i < row.lengths_size(); ++i) {
    const int64_t length = row.lengths(i);
    if (length < -1) {
      return absl::InternalError(
          absl::StrCat("malformed row: column ", i, " has length ", length));
    }
    if (length > 0 &&
        static_cast<uint64_t>(length) > row.values().size() - offset) {
      return absl::InternalError(
          absl::StrCat("malformed row: column ", i, " overruns the ",
                       row.values().size(), " value bytes"));
    }
    offsets.push_back({offset, length});
    if (length > 0) offset += static_cast<size_t>(length);
  }
  if (offset != row.values().size()) {
    return absl::InternalError(absl::StrCat("malformed row: lengths add up to ",
                                            offset, " but values has ",
                                            row.values().size(), " bytes"));
  }
  if (offsets[0].length < 0) {
    return absl::InternalError("malformed row: the id (column 0) is NULL");
  }
  if (row.epoch() < 0) {
    return absl::InternalError(
        absl::StrCat("malformed row: negative epoch ", row.epoch()));
  }
  return internal::MessageAccess::Make(std::move(schema), row.values(),
                                       std::move(offsets), row.epoch(),
                                       std::move(server));
}

}  // namespace msgq
