// Test helpers shared by the directives_*_test.cc files (test-only): a table
// comment with every required vt_* directive, that comment with more
// directives appended, and a check that ParseDirectives refuses a comment
// with INVALID_ARGUMENT and a message naming what is wrong. Header-only.
#ifndef MSGQ_ENGINE_DIRECTIVES_TEST_UTIL_H_
#define MSGQ_ENGINE_DIRECTIVES_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/directives.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::directives_test {

inline constexpr char kRequired[] =
    "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
    "vt_cache_size=10000,vt_poller_interval=30";

// The required directives plus `extra` (a comma-separated tail).
inline std::string WithRequired(const std::string& extra) {
  return absl::StrCat(kRequired, ",", extra);
}

// Asserts that `comment` is rejected with INVALID_ARGUMENT and that the
// message contains every string in `substrings`.
inline void ExpectInvalid(const std::string& comment,
                          const std::vector<std::string>& substrings) {
  SCOPED_TRACE(comment);
  const absl::StatusOr<TableSettings> settings = ParseDirectives(comment);
  ASSERT_FALSE(settings.ok());
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& s : substrings) {
    EXPECT_THAT(settings.status().message(), ::testing::HasSubstr(s));
  }
}

}  // namespace msgq::directives_test

#endif  // MSGQ_ENGINE_DIRECTIVES_TEST_UTIL_H_
