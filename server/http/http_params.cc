#include "server/http/http_params.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace msgq {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Counts the segments of `text` ('&'-separated, empty ones skipped): what
// Parse would look at, found without allocating.
size_t CountSegments(absl::string_view text) {
  size_t n = 0;
  bool in_segment = false;
  for (char c : text) {
    if (c == '&') {
      in_segment = false;
    } else if (!in_segment) {
      in_segment = true;
      ++n;
    }
  }
  return n;
}

void Append(absl::string_view text,
            std::vector<std::pair<std::string, std::string>>* out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('&', start);
    if (end == absl::string_view::npos) end = text.size();
    const absl::string_view segment = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = segment.find('=');
    if (eq == absl::string_view::npos) continue;  // also the empty segment
    out->emplace_back(UrlDecode(segment.substr(0, eq)),
                      UrlDecode(segment.substr(eq + 1)));
  }
}

}  // namespace

std::string UrlDecode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
               HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 +
                                      HexValue(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<HttpParams> HttpParams::Parse(absl::string_view query,
                                             absl::string_view body,
                                             size_t max_params) {
  const size_t segments = CountSegments(query) + CountSegments(body);
  if (segments > max_params) {
    return absl::ResourceExhaustedError(
        absl::StrCat("more than ", max_params, " parameters"));
  }
  HttpParams params;
  params.pairs_.reserve(segments);
  Append(query, &params.pairs_);
  Append(body, &params.pairs_);
  return params;
}

std::optional<std::string> HttpParams::Get(absl::string_view name,
                                           int occurrence) const {
  if (occurrence < 0) return std::nullopt;
  for (const auto& [n, v] : pairs_) {
    if (n == name && occurrence-- == 0) return v;
  }
  return std::nullopt;
}

std::vector<std::string> HttpParams::GetAll(absl::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [n, v] : pairs_) {
    if (n == name) out.push_back(v);
  }
  return out;
}

}  // namespace msgq
