// FairKeyTag: a msgq_fair_by value (Message::fair_key) as a map key, so
// that NULL and every value, the empty string included, stay distinct.
// Used by the fair poll (engine/sql/mysql_message_store_fair.cc) and the
// cache's rounds (message_cache.cc). Thread-safe (a pure function).
#ifndef MSGQ_ENGINE_QUEUE_FAIR_KEY_H_
#define MSGQ_ENGINE_QUEUE_FAIR_KEY_H_

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace msgq {

inline std::string FairKeyTag(const std::optional<std::string>& key) {
  return key.has_value() ? absl::StrCat("v", *key) : std::string("n");
}

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_FAIR_KEY_H_
