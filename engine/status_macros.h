// Tiny helpers for propagating absl::Status, in the style of Abseil's internal
// macros (which Abseil 20220623 does not export).
//
//   RETURN_IF_ERROR(DoThing());
//   ASSIGN_OR_RETURN(auto value, ComputeValue());
#ifndef MSGQ_ENGINE_STATUS_MACROS_H_
#define MSGQ_ENGINE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MSGQ_CONCAT_INNER_(a, b) a##b
#define MSGQ_CONCAT_(a, b) MSGQ_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    const ::absl::Status msgq_status_ = (expr);  \
    if (!msgq_status_.ok()) return msgq_status_; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(*tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(MSGQ_CONCAT_(msgq_statusor_, __LINE__), lhs, expr)

#endif  // MSGQ_ENGINE_STATUS_MACROS_H_
