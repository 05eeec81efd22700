#include "server/http/health_reporter.h"

#include "common/log.h"

namespace msgq {

HealthReporter::HealthReporter(const Engine* engine,
                               grpc::HealthCheckServiceInterface* health,
                               absl::Duration interval)
    : engine_(engine), health_(health), interval_(interval) {
  Check();
  thread_ = std::thread([this] { Run(); });
}

HealthReporter::~HealthReporter() { Stop(); }

void HealthReporter::Check() {
  const absl::Status status = engine_->Health();
  const int serving = status.ok() ? 1 : 0;
  if (serving == serving_) return;
  serving_ = serving;
  health_->SetServingStatus(status.ok());
  health_->SetServingStatus(kService, status.ok());
  if (status.ok()) {
    LogInfo("health: SERVING");
  } else {
    LogWarning("health: NOT_SERVING: ", status.message());
  }
}

void HealthReporter::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_) wake_.WaitFor(&mu_, interval_);
      if (stopping_) return;
    }
    Check();
  }
}

void HealthReporter::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  // Shutdown() sets every service NOT_SERVING and ignores later updates.
  health_->Shutdown();
  LogInfo("health: NOT_SERVING: server shutting down");
}

}  // namespace msgq
