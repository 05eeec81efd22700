#include "engine/directives.h"
namespace msgq {
bool IsMessageTableComment(absl::string_view comment) { return false; }
absl::StatusOr<TableSettings> ParseDirectives(absl::string_view) { return TableSettings{}; }
}  // namespace msgq
