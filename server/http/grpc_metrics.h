// GrpcMetrics: counts msgqd's gRPC calls by service, method and status code
// and the server streams open, through a server interceptor (so no handler
// has to remember to count).
//
// Usage: builder.experimental().SetInterceptorCreators(...) with
// metrics.InterceptorFactory(); Collect() renders the families on /metrics.
// A call that ends without a status being sent (cancelled by the client)
// is counted with code CANCELLED.
//
// Only the methods of the services registered on the server are labelled
// by name; the set is gRPC's own (the methods it routes to a service), not
// a copy. A call to any other name, which the client chooses freely (and
// gRPC answers UNIMPLEMENTED), is counted under grpc_service and
// grpc_method "unknown": the label sets stay bounded by what msgqd serves.
//
// Thread-safety: all methods are thread-safe; the interceptor only takes a
// short lock when a call ends, never blocks.
#ifndef MSGQ_SERVER_HTTP_GRPC_METRICS_H_
#define MSGQ_SERVER_HTTP_GRPC_METRICS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/metrics.h"
#include "grpcpp/support/server_interceptor.h"

namespace msgq {

class GrpcMetrics {
 public:
  // The grpc_service and grpc_method of calls to methods no service has.
  static constexpr char kUnknownMethod[] = "unknown";

  GrpcMetrics();

  // A factory whose interceptors count into this object, which must
  // outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  InterceptorFactory();

  // Calls of `service` ("msgq.v1.Messaging") `method` ended with `code`
  // ("OK", "UNAVAILABLE", ...).
  int64_t requests(const std::string& service, const std::string& method,
                   const std::string& code) const {
    return requests_.Get({service, method, code});
  }
  int64_t streams_open() const { return streams_open_.load(); }

  // msgq_grpc_requests_total and msgq_grpc_streams_open.
  void Collect(MetricsText& text) const;

  // Used by the interceptor. `full_method` is "/service/method" of a
  // registered method, or empty for any other name.
  void CallEnded(const std::string& full_method, const char* code);
  void StreamOpened() { ++streams_open_; }
  void StreamClosed() { --streams_open_; }

 private:
  CounterVec requests_;
  std::atomic<int64_t> streams_open_{0};
};

// "UNAVAILABLE" for grpc::StatusCode::UNAVAILABLE.
const char* GrpcCodeName(grpc::StatusCode code);

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_GRPC_METRICS_H_
