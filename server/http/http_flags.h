// msgqd's --http_* flags other than --http_listen (server/main.cc): the
// HTTP port's limits and its Host check, as HttpServer::Options. The
// defaults are HttpServer::Options's; http_server.h says what a client
// over each limit gets.
//
// Not thread-safe: call from main after parsing the command line.
#ifndef MSGQ_SERVER_HTTP_HTTP_FLAGS_H_
#define MSGQ_SERVER_HTTP_HTTP_FLAGS_H_

#include "absl/status/statusor.h"
#include "server/http/http_server.h"

namespace msgq {

// The options from the flags (TLS not set: main takes it from the
// security flags). INVALID_ARGUMENT naming the flag when one is out of
// range.
absl::StatusOr<HttpServer::Options> HttpOptionsFromFlags();

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HTTP_FLAGS_H_
