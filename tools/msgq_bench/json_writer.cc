#include "tools/msgq_bench/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq::bench {

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_.push_back(',');
    has_element_.back() = true;
  }
}

void JsonWriter::Open(char c) {
  BeforeValue();
  out_.push_back(c);
  has_element_.push_back(false);
}

void JsonWriter::Close(char c) {
  out_.push_back(c);
  if (!has_element_.empty()) has_element_.pop_back();
}

void JsonWriter::Key(absl::string_view key) {
  BeforeValue();
  AppendQuoted(key);
  out_.push_back(':');
  after_key_ = true;
}

void JsonWriter::String(absl::string_view value) {
  BeforeValue();
  AppendQuoted(value);
}

void JsonWriter::AppendQuoted(absl::string_view value) {
  out_.push_back('"');
  for (char ch : value) {
    switch (ch) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\t':
        out_ += "\\t";
        break;
      case '\r':
        out_ += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          out_ += absl::StrFormat("\\u%04x", ch);
        } else {
          out_.push_back(ch);
        }
    }
  }
  out_.push_back('"');
}

void JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
}

void JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_ += "null";
    return;
  }
  absl::StrAppend(&out_, absl::StrFormat("%.6g", value));
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

}  // namespace msgq::bench
