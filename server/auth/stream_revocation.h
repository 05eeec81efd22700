// StreamRevocation: ends an open stream when its caller loses the right to
// it, on every port that streams (gRPC MessageStream, the MySQL protocol's
// `stream * from T`).
//
// After each reload of the tokens or policy file (Authorizer's reload
// thread, every --auth_reload_interval), the stream's Credential is checked
// again: a token whose line is gone, or that names another principal now,
// closes the stream with UNAUTHENTICATED "credentials revoked: ..."; a
// policy that no longer lets the principal `stream` the table closes it
// with PERMISSION_DENIED "permission denied: 'P' may not stream K.T". The
// close is the Subscriber's own Close: its undelivered batches go back to
// the manager at once, nothing is lost. A stream is closed at most once.
//
// Example (a port's stream, after the subscriber subscribed):
//   auth::StreamRevocation revocation(authorizer, credential, "shop",
//                                     "orders", sink);
//
// Thread-safety: construct and destroy on any thread; the check runs on the
// reload thread. After the destructor the stream may still be checked once
// (it is held by a weak_ptr, so that is harmless).
#ifndef MSGQ_SERVER_AUTH_STREAM_REVOCATION_H_
#define MSGQ_SERVER_AUTH_STREAM_REVOCATION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "engine/queue/subscriber.h"
#include "server/auth/authorizer.h"

namespace msgq::auth {

// OK while `credential` may stream `keyspace`.`table`; else the status the
// stream ends with (see above). `authorizer` may be null (open access: OK).
absl::Status MayKeepStreaming(const Authorizer* authorizer,
                              const Authorizer::Credential& credential,
                              const std::string& keyspace,
                              const std::string& table);

class StreamRevocation {
 public:
  // Checks `stream` once now (a reload may have come since the caller's own
  // check) and after each reload until destroyed; nothing when `authorizer`
  // is null or requires no credentials.
  StreamRevocation(Authorizer* authorizer, Authorizer::Credential credential,
                   std::string keyspace, std::string table,
                   std::weak_ptr<Subscriber> stream);
  ~StreamRevocation();
  StreamRevocation(const StreamRevocation&) = delete;
  StreamRevocation& operator=(const StreamRevocation&) = delete;

 private:
  Authorizer* const authorizer_;
  uint64_t watcher_ = 0;  // 0: none
};

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_STREAM_REVOCATION_H_
