#include "server/http/grpc_metrics.h"

#include "absl/strings/string_view.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server_context.h"

namespace msgq {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::InterceptorBatchMethods;
using grpc::experimental::ServerRpcInfo;

// Whether gRPC routed the call to a method of a registered service. It
// hands a call of any other name to its handler of unknown methods: with a
// generic server context (a callback or async server) or as the method
// "unknown" (a sync server), never as "/service/method" of a service.
bool Registered(ServerRpcInfo* info) {
  const char* method = info->method();
  grpc::ServerContextBase* context = info->server_context();
  return method != nullptr && method[0] == '/' &&
         dynamic_cast<grpc::GenericCallbackServerContext*>(context) ==
             nullptr &&
         dynamic_cast<grpc::GenericServerContext*>(context) == nullptr;
}

// One per call: created when it starts, destroyed when it is done.
class CountingInterceptor final : public grpc::experimental::Interceptor {
 public:
  CountingInterceptor(GrpcMetrics* metrics, ServerRpcInfo* info)
      : metrics_(metrics),
        method_(Registered(info) ? info->method() : ""),
        stream_(info->type() == ServerRpcInfo::Type::SERVER_STREAMING ||
                info->type() == ServerRpcInfo::Type::BIDI_STREAMING) {
    if (stream_) metrics_->StreamOpened();
  }
  ~CountingInterceptor() override {
    if (stream_) metrics_->StreamClosed();
    metrics_->CallEnded(method_, code_);
  }

  void Intercept(InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      code_ = GrpcCodeName(methods->GetSendStatus().error_code());
    }
    methods->Proceed();
  }

 private:
  GrpcMetrics* const metrics_;
  const std::string method_;
  const bool stream_;
  const char* code_ = "CANCELLED";
};

class CountingFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingFactory(GrpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      ServerRpcInfo* info) override {
    return new CountingInterceptor(metrics_, info);
  }

 private:
  GrpcMetrics* const metrics_;
};

}  // namespace

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

GrpcMetrics::GrpcMetrics()
    : requests_("msgq_grpc_requests_total",
                "gRPC calls handled, by service, method and status code.",
                {"grpc_service", "grpc_method", "grpc_code"}) {}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
GrpcMetrics::InterceptorFactory() {
  return std::make_unique<CountingFactory>(this);
}

void GrpcMetrics::CallEnded(const std::string& full_method, const char* code) {
  if (full_method.empty()) {
    requests_.Add({kUnknownMethod, kUnknownMethod, code});
    return;
  }
  // "/msgq.v1.Messaging/MessageAck" -> service, method.
  absl::string_view m = full_method;
  if (!m.empty() && m.front() == '/') m.remove_prefix(1);
  const size_t slash = m.find('/');
  std::string service(slash == absl::string_view::npos ? ""
                                                       : m.substr(0, slash));
  std::string method(slash == absl::string_view::npos ? m
                                                      : m.substr(slash + 1));
  requests_.Add({std::move(service), std::move(method), code});
}

void GrpcMetrics::SetPortCounters(std::function<PortCounters()> source) {
  absl::MutexLock lock(&port_mu_);
  port_ = std::move(source);
}

void GrpcMetrics::Collect(MetricsText& text) const {
  requests_.Collect(text);
  text.Family("msgq_grpc_streams_open", MetricType::kGauge,
              "MessageStream calls (and other server streams) open now.");
  text.Sample({}, static_cast<double>(streams_open_.load()));
  PortCounters port;
  {
    absl::MutexLock lock(&port_mu_);
    if (port_ == nullptr) return;
    port = port_();
  }
  text.Family("msgq_grpc_connections", MetricType::kGauge,
              "Connections open on the gRPC port now.");
  text.Sample({}, static_cast<double>(port.open));
  text.Family("msgq_grpc_connections_accepted_total", MetricType::kCounter,
              "Connections the gRPC port accepted.");
  text.Sample({}, static_cast<double>(port.accepted));
  text.Family("msgq_grpc_connections_refused_total", MetricType::kCounter,
              "Connections the gRPC port closed at accept, by reason: "
              "max_connections.");
  text.Sample({{"reason", "max_connections"}},
              static_cast<double>(port.refused_max_connections));
  text.Family("msgq_grpc_connections_closed_total", MetricType::kCounter,
              "Connections the gRPC port closed, by reason: stream_resets "
              "(sent GOAWAY ENHANCE_YOUR_CALM), handshake (TLS failed, or "
              "no TLS handshake or HTTP/2 preface within "
              "--grpc_handshake_timeout), not_http2.");
  text.Sample({{"reason", "stream_resets"}},
              static_cast<double>(port.closed_stream_resets));
  text.Sample({{"reason", "handshake"}},
              static_cast<double>(port.closed_handshake));
  text.Sample({{"reason", "not_http2"}},
              static_cast<double>(port.closed_not_http2));
  text.Family("msgq_grpc_stream_resets_total", MetricType::kCounter,
              "HTTP/2 streams clients reset before msgqd answered them.");
  text.Sample({}, static_cast<double>(port.stream_resets));
}

}  // namespace msgq
