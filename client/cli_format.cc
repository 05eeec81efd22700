#include "client/cli_format.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/utf8.h"
#include "google/protobuf/util/json_util.h"

namespace msgq {
namespace {

bool IsNumericType(absl::string_view type) {
  static constexpr absl::string_view kTypes[] = {
      "tinyint", "smallint", "mediumint", "int",   "integer",
      "bigint",  "decimal",  "numeric",   "float", "double"};
  return std::find(std::begin(kTypes), std::end(kTypes), type) !=
         std::end(kTypes);
}

// True when `s` matches JSON's number grammar.
bool IsJsonNumber(absl::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && absl::ascii_isdigit(s[i])) ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (i >= s.size() || s[i] < '1' || s[i] > '9' || !digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

bool IsBareWord(absl::string_view s) {
  if (s.empty() || s == "NULL") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(c) ||
           absl::string_view("._:/@+-").find(c) != absl::string_view::npos;
  });
}

std::string Seconds(double seconds) { return absl::StrFormat("%gs", seconds); }

// Rows of cells as lines with columns padded to the widest cell plus two
// spaces; the last column is not padded.
std::string Align(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i + 1 == row.size()) {
        absl::StrAppend(&line, row[i]);  // no trailing padding
      } else {
        absl::StrAppendFormat(&line, "%-*s  ", static_cast<int>(widths[i]),
                              row[i]);
      }
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return out;
}

// A bare word as is, anything else as a JSON string.
std::string Word(absl::string_view text) {
  return IsBareWord(text) ? std::string(text) : JsonQuote(text);
}

// Valid UTF-8 without control characters as is, anything else as a JSON
// string (for a last column, where spaces do no harm).
std::string Printable(absl::string_view text) {
  for (absl::string_view rest = text; !rest.empty();) {
    const auto c = static_cast<unsigned char>(rest[0]);
    const size_t n = Utf8SequenceLength(rest);
    if (c < 0x20 || c == 0x7F || n == 0) return JsonQuote(text);
    rest.remove_prefix(n);
  }
  return std::string(text);
}

}  // namespace

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text[0]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else if (c < 0x80) {
          out += static_cast<char>(c);
        } else if (size_t n = Utf8SequenceLength(text); n > 0) {
          out.append(text.data(), n);
          text.remove_prefix(n);
          continue;
        } else {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        }
    }
    text.remove_prefix(1);
  }
  out += '"';
  return out;
}

std::string FormatSettings(const v1::TableSettings& s) {
  std::string out = absl::StrCat(
      "ack_wait=", Seconds(s.ack_wait()),
      " purge_after=", Seconds(s.purge_after()), " batch_size=", s.batch_size(),
      " cache_size=", s.cache_size(),
      " poller_interval=", Seconds(s.poller_interval()));
  if (s.min_backoff() > 0) {
    absl::StrAppend(&out, " min_backoff=", Seconds(s.min_backoff()));
  }
  if (s.max_backoff() > 0) {
    absl::StrAppend(&out, " max_backoff=", Seconds(s.max_backoff()));
  }
  if (!s.message_cols().empty()) {
    absl::StrAppend(&out,
                    " message_cols=", absl::StrJoin(s.message_cols(), ","));
  }
  if (s.max_attempts() > 0) {
    absl::StrAppend(&out, " max_attempts=", s.max_attempts());
  }
  if (s.max_age() > 0) absl::StrAppend(&out, " max_age=", Seconds(s.max_age()));
  if (s.dead_retention() > 0) {
    absl::StrAppend(&out, " dead_retention=", Seconds(s.dead_retention()));
  }
  if (!s.order_by().empty()) absl::StrAppend(&out, " order_by=", s.order_by());
  if (!s.fair_by().empty()) absl::StrAppend(&out, " fair_by=", s.fair_by());
  return out;
}

std::string FormatTablesText(const std::vector<v1::TableStatus>& tables) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KEYSPACE", "NAME", "STATUS", "DISCOVERY", "SUBSCRIBERS",
                  "CACHED", "IN_FLIGHT", "DEAD", "DETAILS"});
  for (const v1::TableStatus& t : tables) {
    if (t.loaded()) {
      rows.push_back({t.keyspace(), t.name(), t.paused() ? "paused" : "loaded",
                      t.discovery().empty() ? "-" : t.discovery(),
                      absl::StrCat(t.subscribers()), absl::StrCat(t.cached()),
                      absl::StrCat(t.in_flight()),
                      // -1: not counted yet (no subscriber so far).
                      t.dead() < 0 ? "-" : absl::StrCat(t.dead()),
                      FormatSettings(t.settings())});
    } else {
      rows.push_back({t.keyspace(), t.name(), "error", "-",
                      absl::StrCat(t.subscribers()), "-", "-", "-", t.error()});
    }
  }
  return Align(rows);
}

std::string FormatTablesJson(const std::vector<v1::TableStatus>& tables) {
  v1::ListTablesResponse response;
  for (const v1::TableStatus& t : tables) *response.add_tables() = t;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  // Cannot fail for a message without Any fields.
  (void)google::protobuf::util::MessageToJsonString(response, &out, options);
  return out;
}

std::string FormatMessageJson(const Message& message) {
  std::string out = "{";
  for (size_t i = 0; i < message.size(); ++i) {
    const Schema::Column& column = message.schema().column(i);
    if (i > 0) out += ',';
    absl::StrAppend(&out, JsonQuote(column.name), ":");
    std::optional<absl::string_view> value = message.Get(i);
    if (!value.has_value()) {
      out += "null";
    } else if (IsNumericType(column.type) && IsJsonNumber(*value)) {
      out.append(value->data(), value->size());
    } else {
      out += JsonQuote(*value);
    }
  }
  out += '}';
  return out;
}

std::string FormatMessageText(const Message& message) {
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    if (i > 0) out += ' ';
    absl::StrAppend(&out, message.schema().column(i).name, "=");
    std::optional<absl::string_view> value = message.Get(i);
    if (!value.has_value()) {
      out += "NULL";
    } else if (IsBareWord(*value)) {
      out.append(value->data(), value->size());
    } else {
      out += JsonQuote(*value);
    }
  }
  return out;
}

std::string FormatMessageTextWithEpoch(const Message& message) {
  if (message.epoch() == 0) return FormatMessageText(message);
  return absl::StrCat(FormatMessageText(message), " epoch=", message.epoch());
}

std::string FormatDeadText(const std::vector<v1::DeadMessage>& messages,
                           absl::Time now) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "EPOCH", "DIED", "LAST_ERROR"});
  for (const v1::DeadMessage& m : messages) {
    std::string died = "-";
    if (m.time_dead() != 0) {
      const absl::Duration ago =
          std::max(absl::ZeroDuration(),
                   absl::Trunc(now - absl::FromUnixNanos(m.time_dead()),
                               absl::Seconds(1)));
      died = absl::StrCat(
          ago == absl::ZeroDuration() ? "0s" : absl::FormatDuration(ago),
          " ago");
    }
    rows.push_back({Word(m.id()), absl::StrCat(m.epoch()), died,
                    m.last_error().empty() ? "-" : Printable(m.last_error())});
  }
  return Align(rows);
}

std::string FormatDeadJson(const std::vector<v1::DeadMessage>& messages) {
  std::string out = "{\"messages\":[";
  for (size_t i = 0; i < messages.size(); ++i) {
    const v1::DeadMessage& m = messages[i];
    absl::StrAppend(&out, i > 0 ? "," : "", "{\"id\":", JsonQuote(m.id()),
                    ",\"epoch\":", m.epoch(),
                    ",\"last_error\":", JsonQuote(m.last_error()),
                    ",\"time_dead\":", m.time_dead(),
                    ",\"time_created\":", m.time_created(), "}");
  }
  out += "]}";
  return out;
}

std::string FormatGroupsText(const std::vector<v1::Group>& groups) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KEYSPACE", "TABLE", "GROUP", "FLOOR", "CREATED", "FILTER"});
  for (const v1::Group& g : groups) {
    rows.push_back({g.keyspace(), g.table(), g.name(),
                    g.floor_gtid().empty() ? "earliest" : g.floor_gtid(),
                    absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                                     absl::FromUnixNanos(g.created_at_ns()),
                                     absl::UTCTimeZone()),
                    g.filter().empty() ? "-" : g.filter()});
  }
  return Align(rows);
}

std::string FormatGroupsJson(const std::vector<v1::Group>& groups) {
  std::string out = "{\"groups\":[";
  for (size_t i = 0; i < groups.size(); ++i) {
    const v1::Group& g = groups[i];
    absl::StrAppend(
        &out, i > 0 ? "," : "", "{\"keyspace\":", JsonQuote(g.keyspace()),
        ",\"table\":", JsonQuote(g.table()), ",\"name\":", JsonQuote(g.name()),
        ",\"floor_gtid\":", JsonQuote(g.floor_gtid()),
        ",\"filter\":", JsonQuote(g.filter()),
        ",\"created_at_ns\":", g.created_at_ns(),
        ",\"paused\":", g.paused() ? "true" : "false", "}");
  }
  out += "]}";
  return out;
}

}  // namespace msgq
