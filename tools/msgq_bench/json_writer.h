// JsonWriter: builds a JSON document by appending, with commas and escaping
// handled. Enough for the bench report; not a general library.
//
// Example:
//   JsonWriter j;
//   j.BeginObject(); j.Key("n"); j.Int(3); j.EndObject();
//   std::string text = j.str();
//
// Thread-compatible. Misuse (a value where a key is due) yields invalid JSON,
// not a crash.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_JSON_WRITER_H_
#define MSGQ_TOOLS_MSGQ_BENCH_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace msgq::bench {

class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(absl::string_view key);
  void String(absl::string_view value);
  void Int(int64_t value);
  void Double(double value);  // non-finite values become null
  void Bool(bool value);
  void Null();

  // Shorthands for "key": value.
  void Field(absl::string_view key, absl::string_view value) {
    Key(key);
    String(value);
  }
  void Field(absl::string_view key, const char* value) {
    Key(key);
    String(value);
  }
  void Field(absl::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  void Field(absl::string_view key, int value) {
    Key(key);
    Int(value);
  }
  void Field(absl::string_view key, double value) {
    Key(key);
    Double(value);
  }
  void Field(absl::string_view key, bool value) {
    Key(key);
    Bool(value);
  }

  const std::string& str() const { return out_; }

 private:
  void Open(char c);
  void Close(char c);
  void BeforeValue();
  void AppendQuoted(absl::string_view value);

  std::string out_;
  // Per open container: whether it has an element yet.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_JSON_WRITER_H_
