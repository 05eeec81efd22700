#include "engine/queue/binlog_position.h"

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace msgq {
namespace {

struct FileNumber {
  absl::string_view base;
  uint64_t number = 0;
};

std::optional<FileNumber> Parse(const std::string& file) {
  const size_t dot = file.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  FileNumber f;
  f.base = absl::string_view(file).substr(0, dot);
  if (!absl::SimpleAtoi(absl::string_view(file).substr(dot + 1), &f.number)) {
    return std::nullopt;
  }
  return f;
}

}  // namespace

std::optional<bool> IncludedIn(const BinlogPosition& change,
                               const BinlogPosition& read) {
  if (!change.known() || !read.known()) return std::nullopt;
  if (!change.server.empty() && !read.server.empty() &&
      change.server != read.server) {
    return std::nullopt;
  }
  if (change.file == read.file) return change.offset <= read.offset;
  const std::optional<FileNumber> c = Parse(change.file);
  const std::optional<FileNumber> r = Parse(read.file);
  if (!c.has_value() || !r.has_value() || c->base != r->base) {
    return std::nullopt;
  }
  return c->number < r->number;
}

}  // namespace msgq
