#include "client/internal/ack_batcher.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace msgq {
namespace {

bool IsRetryableAckError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

}  // namespace

AckBatcher::AckBatcher(const AckBatcherOptions& options, SendFn send,
                       ErrorFn on_error)
    : options_{std::max<size_t>(1, options.max_batch), options.max_delay,
               std::max(1, options.max_attempts)},
      send_(std::move(send)),
      on_error_(std::move(on_error)) {
  absl::MutexLock lock(&join_mu_);
  thread_ = std::thread([this] { Run(); });
}

AckBatcher::~AckBatcher() { Close(); }

bool AckBatcher::Add(std::string id) {
  absl::MutexLock lock(&mu_);
  if (closing_) return false;
  if (pending_.empty()) oldest_ = absl::Now();
  pending_.push_back({std::move(id), 0});
  return true;
}

void AckBatcher::Close() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

bool AckBatcher::HasPendingOrClosing() const {
  return closing_ || !pending_.empty();
}

bool AckBatcher::HasWork() const {
  return closing_ || pending_.size() >= options_.max_batch;
}

void AckBatcher::Requeue(std::vector<Pending> batch) {
  std::vector<Pending> kept;
  for (Pending& p : batch) {
    if (p.attempts < options_.max_attempts) kept.push_back(std::move(p));
  }
  if (kept.empty()) return;
  // Retries go first so they keep their place; the delay restarts so a
  // server that is down is not hammered.
  pending_.insert(pending_.begin(), std::make_move_iterator(kept.begin()),
                  std::make_move_iterator(kept.end()));
  oldest_ = absl::Now();
}

void AckBatcher::Run() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (pending_.empty()) {
      mu_.Await(absl::Condition(this, &AckBatcher::HasPendingOrClosing));
      if (pending_.empty()) return;  // closing with nothing left
    }
    mu_.AwaitWithDeadline(absl::Condition(this, &AckBatcher::HasWork),
                          oldest_ + options_.max_delay);
    const size_t n = std::min(pending_.size(), options_.max_batch);
    std::vector<Pending> batch(std::make_move_iterator(pending_.begin()),
                               std::make_move_iterator(pending_.begin() + n));
    pending_.erase(pending_.begin(), pending_.begin() + n);
    if (!pending_.empty()) oldest_ = absl::Now();
    std::vector<std::string> ids;
    ids.reserve(batch.size());
    for (Pending& p : batch) {
      ++p.attempts;
      ids.push_back(p.id);
    }

    mu_.Unlock();
    absl::Status status = send_(std::move(ids));
    if (!status.ok() && on_error_) on_error_(status);
    mu_.Lock();

    if (!status.ok() && IsRetryableAckError(status)) Requeue(std::move(batch));
  }
}

}  // namespace msgq
