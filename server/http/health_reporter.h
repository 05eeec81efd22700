// HealthReporter: keeps gRPC's health service (grpc.health.v1.Health) in
// step with Engine::Health(): SERVING for "" and msgq.v1.Messaging once the
// schema is loaded and MySQL answers, NOT_SERVING otherwise. The engine has
// no change notification, so a thread of its own checks every `interval`
// (the engine itself notices MySQL outages within its schema reload
// interval). Each change is logged once.
//
// Thread-safety: Stop() may be called from any thread; the destructor
// calls it. After Stop() every service reports NOT_SERVING for good.
#ifndef MSGQ_SERVER_HTTP_HEALTH_REPORTER_H_
#define MSGQ_SERVER_HTTP_HEALTH_REPORTER_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/monotonic_cond_var.h"
#include "engine/engine.h"
#include "grpcpp/health_check_service_interface.h"

namespace msgq {

class HealthReporter {
 public:
  // The gRPC service name msgqd reports besides "" (the whole server).
  static constexpr char kService[] = "msgq.v1.Messaging";

  // `engine` and `health` (the server's, from GetHealthCheckService()) must
  // outlive this object. Reports the current state before returning.
  HealthReporter(const Engine* engine,
                 grpc::HealthCheckServiceInterface* health,
                 absl::Duration interval = absl::Milliseconds(250));
  ~HealthReporter();
  HealthReporter(const HealthReporter&) = delete;
  HealthReporter& operator=(const HealthReporter&) = delete;

  // NOT_SERVING from now on (stopping); joins the thread. Idempotent.
  void Stop();

 private:
  void Check();
  void Run();

  const Engine* const engine_;
  grpc::HealthCheckServiceInterface* const health_;
  const absl::Duration interval_;

  absl::Mutex mu_;
  MonotonicCondVar wake_;  // Stop()
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int serving_ = -1;  // the last state reported; the thread's own
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HEALTH_REPORTER_H_
