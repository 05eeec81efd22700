// The values of a message table's directives: numbers of seconds, rates,
// counts and column names, each checked with an error that names the
// directive and quotes the value (e.g. `vt_ack_wait: "0" must be a positive
// number of seconds`). ParseDirectives (directives.h) is their one user.
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_DIRECTIVE_VALUES_H_
#define MSGQ_ENGINE_DIRECTIVE_VALUES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace msgq {

// A positive number (fractions allowed) up to `max`. INVALID_ARGUMENT, naming
// `name`, when it is not a plain decimal, not positive, or above `max`.
absl::StatusOr<double> ParseRate(absl::string_view name,
                                 absl::string_view value, double max);

// A positive number of seconds (fractions allowed) up to
// kMaxDurationSeconds (directives.h). INVALID_ARGUMENT, naming `name`,
// otherwise (also for values that round to zero).
absl::StatusOr<absl::Duration> ParseSeconds(absl::string_view name,
                                            absl::string_view value);

// A positive integer up to `max`. INVALID_ARGUMENT, naming `name`, otherwise.
absl::StatusOr<int> ParseCount(absl::string_view name, absl::string_view value,
                               int max);

// A plain column name (msgq_order_by, msgq_fair_by, msgq_concurrency_by):
// letters, digits, _ and $, at most 64 characters. INVALID_ARGUMENT,
// naming `name`, otherwise.
absl::StatusOr<std::string> ParseColumnName(absl::string_view name,
                                            absl::string_view col);

}  // namespace msgq

#endif  // MSGQ_ENGINE_DIRECTIVE_VALUES_H_
