#include "client/cli_flags.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq {

void FlagParser::AddString(std::string name, std::string* value,
                           std::string value_name, std::string help) {
  std::string default_text = value->empty() ? "" : *value;
  flags_.push_back({std::move(name), std::move(value_name), std::move(help),
                    std::move(default_text), [value](absl::string_view v) {
                      *value = std::string(v);
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddBool(std::string name, bool* value, std::string help) {
  flags_.push_back(
      {std::move(name), "", std::move(help), "", [value](absl::string_view v) {
         if (v == "true" || v == "1") {
           *value = true;
         } else if (v == "false" || v == "0") {
           *value = false;
         } else {
           return absl::InvalidArgumentError(
               absl::StrCat("expected true or false, got '", v, "'"));
         }
         return absl::OkStatus();
       }});
}

void FlagParser::AddCount(std::string name, int64_t* value,
                          std::string value_name, std::string help) {
  std::string default_text = absl::StrCat(*value);
  flags_.push_back({std::move(name), std::move(value_name), std::move(help),
                    std::move(default_text), [value](absl::string_view v) {
                      int64_t parsed;
                      if (!absl::SimpleAtoi(v, &parsed) || parsed < 0) {
                        return absl::InvalidArgumentError(absl::StrCat(
                            "expected a non-negative integer, got '", v, "'"));
                      }
                      *value = parsed;
                      return absl::OkStatus();
                    }});
}

void FlagParser::AddDuration(std::string name, absl::Duration* value,
                             std::string help) {
  std::string default_text = absl::FormatDuration(*value);
  flags_.push_back(
      {std::move(name), "DURATION", std::move(help), std::move(default_text),
       [value](absl::string_view v) {
         absl::Duration parsed;
         if (!absl::ParseDuration(v, &parsed) ||
             parsed <= absl::ZeroDuration()) {
           return absl::InvalidArgumentError(absl::StrCat(
               "expected a positive duration such as 500ms or 10s, got '", v,
               "'"));
         }
         *value = parsed;
         return absl::OkStatus();
       }});
}

void FlagParser::AddSeconds(std::string name,
                            std::optional<absl::Duration>* value,
                            std::string help) {
  flags_.push_back(
      {std::move(name), "S", std::move(help), "", [value](absl::string_view v) {
         double seconds;
         absl::Duration parsed;
         if (absl::SimpleAtod(v, &seconds) && std::isfinite(seconds)) {
           parsed = absl::Seconds(seconds);
         } else if (!absl::ParseDuration(v, &parsed) ||
                    parsed == absl::InfiniteDuration()) {
           parsed = -absl::InfiniteDuration();
         }
         if (parsed < absl::ZeroDuration()) {
           return absl::InvalidArgumentError(absl::StrCat(
               "expected seconds (such as 1.5) or a duration (such as 500ms) "
               "that is not negative, got '",
               v, "'"));
         }
         *value = parsed;
         return absl::OkStatus();
       }});
}

const FlagParser::Flag* FlagParser::Find(absl::string_view name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

absl::StatusOr<std::vector<std::string>> FlagParser::Parse(
    absl::Span<const std::string> args, bool stop_at_positional) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--") {
      positional.insert(positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (stop_at_positional) {
        positional.insert(positional.end(), args.begin() + i, args.end());
        break;
      }
      positional.emplace_back(arg);
      continue;
    }
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "' (flags start with --)"));
    }
    absl::string_view body = arg.substr(2);
    absl::string_view name = body;
    std::optional<absl::string_view> value;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", name, "'"));
    }
    if (!value.has_value()) {
      if (flag->value_name.empty()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("flag '--", name, "' needs a value"));
      }
    }
    if (absl::Status s = flag->set(*value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '--", name, "': ", s.message()));
    }
  }
  return positional;
}

std::string FlagParser::Usage() const {
  std::vector<std::string> left;
  size_t width = 0;
  for (const Flag& flag : flags_) {
    left.push_back(flag.value_name.empty()
                       ? absl::StrCat("--", flag.name)
                       : absl::StrCat("--", flag.name, "=", flag.value_name));
    width = std::max(width, left.back().size());
  }
  std::string out;
  for (size_t i = 0; i < flags_.size(); ++i) {
    absl::StrAppendFormat(&out, "  %-*s  %s", static_cast<int>(width), left[i],
                          flags_[i].help);
    if (!flags_[i].default_text.empty()) {
      absl::StrAppend(&out, " (default: ", flags_[i].default_text, ")");
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppendFormat(&out, "  %-*s  %s\n", static_cast<int>(width),
                        "-h, --help", "show this help");
  return out;
}

}  // namespace msgq
