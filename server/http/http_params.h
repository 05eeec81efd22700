// HttpParams: the parameters of an HTTP request, parsed once from its
// query string and its URL-encoded form body, in one pass linear in their
// length and with a cap on how many there are.
//
// The rules are those msgqd's HTTP port always had (civetweb's
// mg_get_var2), so that HttpRequest::Param keeps its meaning:
//   - pairs are separated by '&'; a pair is NAME=VALUE, split at its first
//     '='; a segment without '=' (e.g. "flag") is no parameter, and empty
//     segments ("a=1&&b=2") are skipped;
//   - names and values are URL-decoded: '+' is a space, %XY (two hex
//     digits, either case) is that byte; a '%' not followed by two hex
//     digits is kept as it is ("%zz" stays "%zz", "100%" stays "100%"),
//     as civetweb did, rather than refusing the request; decoded bytes are
//     not checked for UTF-8 and may include NUL;
//   - the query's parameters come first, then the body's.
// One difference: names are matched exactly, after decoding (civetweb
// compared the still-encoded name, ignoring case).
//
// Parsing never allocates more than the input's size plus a fixed amount
// per parameter, and at most `max_params` parameters are kept: a request
// with more is refused as a whole (RESOURCE_EXHAUSTED), since a truncated
// list would silently drop what the client asked for.
//
// Example:
//   absl::StatusOr<HttpParams> p =
//       HttpParams::Parse("table=a&id=1", "id=2&id=3", 100000);
//   p->Get("id", 2);   // "3"
//   p->GetAll("id");   // {"1", "2", "3"}
//
// Thread-safety: immutable after Parse; const methods may be called
// concurrently.
#ifndef MSGQ_SERVER_HTTP_HTTP_PARAMS_H_
#define MSGQ_SERVER_HTTP_HTTP_PARAMS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq {

// `text` URL-decoded with the rules above ('+' = space, bad escapes kept).
std::string UrlDecode(absl::string_view text);

class HttpParams {
 public:
  HttpParams() = default;

  // Parses `query` (after '?', still encoded) and then `body` (a form).
  // RESOURCE_EXHAUSTED "more than N parameters" when the two together hold
  // more than `max_params` (segments without '=' count too: they cost a
  // scan each).
  static absl::StatusOr<HttpParams> Parse(absl::string_view query,
                                          absl::string_view body,
                                          size_t max_params);

  // The `occurrence`th value of `name` (0 = the first), nullopt when there
  // are not that many. Linear in the number of parameters.
  std::optional<std::string> Get(absl::string_view name,
                                 int occurrence = 0) const;
  // Every value of `name`, in order. Linear in the number of parameters.
  std::vector<std::string> GetAll(absl::string_view name) const;

  const std::vector<std::pair<std::string, std::string>>& pairs() const {
    return pairs_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HTTP_PARAMS_H_
