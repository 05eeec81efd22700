// Fuzzes the directive parser (engine/directives.h) with arbitrary comments.
//
// Properties: ParseDirectives never crashes; an error is INVALID_ARGUMENT;
// a successful parse satisfies the documented invariants (every duration and
// count positive, min_backoff <= max_backoff, vt_message_cols empty or
// starting with id, in any case), is deterministic, and is unchanged by an
// extra piece that does not start with "vt_" (such pieces are documented as
// ignored).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/directives.h"

namespace {

void Check(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "directives_fuzzer: property violated: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view comment(reinterpret_cast<const char*>(data), size);
  (void)msgq::IsMessageTableComment(comment);
  absl::StatusOr<msgq::TableSettings> s = msgq::ParseDirectives(comment);
  if (!s.ok()) {
    Check(s.status().code() == absl::StatusCode::kInvalidArgument,
          "a rejected comment is INVALID_ARGUMENT");
    Check(!s.status().message().empty(), "an error names its cause");
    return 0;
  }
  const absl::Duration zero = absl::ZeroDuration();
  Check(s->ack_wait > zero, "vt_ack_wait > 0");
  Check(s->purge_after > zero, "vt_purge_after > 0");
  Check(s->poller_interval > zero, "vt_poller_interval > 0");
  Check(s->batch_size > 0, "vt_batch_size > 0");
  Check(s->cache_size > 0, "vt_cache_size > 0");
  Check(s->min_backoff > zero, "min backoff > 0");
  Check(s->max_backoff > zero, "max backoff > 0");
  Check(s->min_backoff <= s->max_backoff, "min backoff <= max backoff");
  Check(s->ack_wait != absl::InfiniteDuration(), "vt_ack_wait finite");
  Check(s->poller_interval != absl::InfiniteDuration(),
        "vt_poller_interval finite");
  // Column names are case-insensitive in MySQL: "ID" is the id too.
  Check(s->message_cols.empty() ||
            absl::EqualsIgnoreCase(s->message_cols[0], "id"),
        "vt_message_cols starts with id");
  for (const std::string& c : s->message_cols) {
    Check(!c.empty(), "no empty column name");
  }

  absl::StatusOr<msgq::TableSettings> again = msgq::ParseDirectives(comment);
  Check(again.ok() && *again == *s, "deterministic");
  const std::string noted = std::string(comment) + ",app_note=1";
  absl::StatusOr<msgq::TableSettings> with_note = msgq::ParseDirectives(noted);
  Check(with_note.ok() && *with_note == *s, "a non-vt_ piece is ignored");
  return 0;
}
