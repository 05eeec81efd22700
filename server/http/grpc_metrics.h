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
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
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

  // What the gRPC port's front (server/grpc_front/grpc_front.h) counted.
  struct PortCounters {
    int64_t open = 0;
    int64_t accepted = 0;
    int64_t refused_max_connections = 0;
    int64_t closed_stream_resets = 0;
    int64_t closed_handshake = 0;
    int64_t closed_not_http2 = 0;
    int64_t stream_resets = 0;
  };
  // Where Collect reads the port's counters from; null: none (before the
  // port starts and after it stopped).
  void SetPortCounters(std::function<PortCounters()> source);

  // msgq_grpc_requests_total, msgq_grpc_streams_open and the port's
  // msgq_grpc_connections* and msgq_grpc_stream_resets_total.
  void Collect(MetricsText& text) const;

  // Used by the interceptor. `full_method` is "/service/method" of a
  // registered method, or empty for any other name.
  void CallEnded(const std::string& full_method, const char* code);
  void StreamOpened() { ++streams_open_; }
  void StreamClosed() { --streams_open_; }

 private:
  CounterVec requests_;
  std::atomic<int64_t> streams_open_{0};
  mutable absl::Mutex port_mu_;
  std::function<PortCounters()> port_ ABSL_GUARDED_BY(port_mu_);
};

// "UNAVAILABLE" for grpc::StatusCode::UNAVAILABLE.
const char* GrpcCodeName(grpc::StatusCode code);

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_GRPC_METRICS_H_
