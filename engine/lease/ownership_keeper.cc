#include "engine/lease/ownership_keeper.h"

namespace msgq {

OwnershipKeeper::~OwnershipKeeper() {
  // The derived class stopped the thread (its Round() is gone by now).
  if (thread_.joinable()) thread_.join();
}

void OwnershipKeeper::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void OwnershipKeeper::Wake() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
  wake_.Signal();
}

void OwnershipKeeper::Stop() {
  bool started = false;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    wake_.SignalAll();
    started = started_;
  }
  if (thread_.joinable()) thread_.join();
  if (started) Leave();
}

void OwnershipKeeper::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_ && !woken_) wake_.WaitFor(&mu_, every_);
      if (stopping_) return;
      woken_ = false;
    }
    Round();
  }
}

}  // namespace msgq
