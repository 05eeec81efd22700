// Fuzzes the HTTP port's request parsing (server/http/http_params.h, the
// query/form parser; server/http/host_check.h, the Host check): both read
// what any client sends.
//
// The input is split at its first '\n' into a query and a form body (the
// Host check gets the query part). Properties: nothing crashes; a parse
// within the cap yields one pair per segment that has a '=' and never more
// than max_params pairs; one over the cap is RESOURCE_EXHAUSTED; every
// value is found again by Get/GetAll in order; decoding never grows the
// text; text without '%' and '+' decodes to itself; the Host check is
// deterministic and its loopback names stay allowed with any valid port.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/http/host_check.h"
#include "server/http/http_params.h"

namespace {

void Check(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "http_params_fuzzer: property violated: %s\n", what);
    abort();
  }
}

size_t PairsWithEquals(absl::string_view text) {
  size_t n = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('&', start);
    if (end == absl::string_view::npos) end = text.size();
    if (text.substr(start, end - start).find('=') != absl::string_view::npos) {
      ++n;
    }
    start = end + 1;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const absl::string_view query = input.substr(0, nl);
  const absl::string_view body = nl == absl::string_view::npos
                                     ? absl::string_view()
                                     : input.substr(nl + 1);

  for (const size_t cap : {size_t{4}, size_t{1} << 20}) {
    absl::StatusOr<msgq::HttpParams> p =
        msgq::HttpParams::Parse(query, body, cap);
    const size_t expected = PairsWithEquals(query) + PairsWithEquals(body);
    if (!p.ok()) {
      Check(p.status().code() == absl::StatusCode::kResourceExhausted,
            "a refusal is RESOURCE_EXHAUSTED");
      Check(p.status().message() ==
                absl::StrCat("more than ", cap, " parameters"),
            "a refusal names the cap");
      continue;
    }
    Check(p->pairs().size() == expected, "one pair per segment with '='");
    Check(p->pairs().size() <= cap, "never more pairs than the cap");
    for (size_t i = 0; i < p->pairs().size() && i < 64; ++i) {
      const auto& [name, value] = p->pairs()[i];
      int occurrence = 0;
      for (size_t j = 0; j < i; ++j) occurrence += p->pairs()[j].first == name;
      Check(p->Get(name, occurrence) == value, "Get finds each value");
      Check(p->GetAll(name)[occurrence] == value, "GetAll keeps the order");
    }
  }

  const std::string decoded = msgq::UrlDecode(input);
  Check(decoded.size() <= input.size(), "decoding never grows the text");
  if (!absl::StrContains(input, '%') && !absl::StrContains(input, '+')) {
    Check(decoded == input, "plain text decodes to itself");
  }

  const msgq::HostCheck check("127.0.0.1:15998", {"msgq.example"});
  const bool allowed = check.Allowed(query);
  Check(check.Allowed(query) == allowed, "the Host check is deterministic");
  Check(check.Allowed("localhost:15998") && check.Allowed("[::1]:1"),
        "loopback names stay allowed");
  return 0;
}
