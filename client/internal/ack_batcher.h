// AckBatcher collects message ids to acknowledge and sends them in batches, so
// that a busy subscriber issues one MessageAck per batch instead of one per
// message.
//
// A batch is sent as soon as `max_batch` ids are pending, or `max_delay` after
// the oldest pending id was added, whichever comes first; Close() sends what is
// left. Sending happens on the batcher's own thread, never under its lock.
// A batch whose send fails with a retryable code (UNAVAILABLE,
// DEADLINE_EXCEEDED, ABORTED, RESOURCE_EXHAUSTED) is re-queued until it has
// been tried `max_attempts` times; other failures drop it. Every failure is
// reported to `on_error`. Dropped ids are not lost for good: the server
// redelivers unacknowledged messages after the table's ack_wait.
//
// Example:
//   AckBatcher batcher(AckBatcherOptions{},
//       [&](std::vector<std::string> ids) {
//         return client->Ack(table, ids).status();
//       },
//       /*on_error=*/nullptr);
//   batcher.Add(msg.id());
//   batcher.Close();  // flushes, then joins the sender thread
//
// Thread-safe. The send and error callbacks run on the batcher's thread, one
// at a time.
//
// Internal to the client library (client/internal/ is not installed; the
// public API is client/*.h).
#ifndef MSGQ_CLIENT_INTERNAL_ACK_BATCHER_H_
#define MSGQ_CLIENT_INTERNAL_ACK_BATCHER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "msgq/subscriber_options.h"

namespace msgq {

class AckBatcher {
 public:
  using SendFn = std::function<absl::Status(std::vector<std::string> ids)>;
  using ErrorFn = std::function<void(const absl::Status&)>;

  // Starts the sender thread. `send` is required; `on_error` may be empty.
  AckBatcher(const AckBatcherOptions& options, SendFn send, ErrorFn on_error);
  // Close()s.
  ~AckBatcher();

  AckBatcher(const AckBatcher&) = delete;
  AckBatcher& operator=(const AckBatcher&) = delete;

  // Queues `id` for acknowledgement. Returns false, dropping `id`, after
  // Close() has begun.
  bool Add(std::string id);

  // Sends every pending id (retrying as described above), then stops the
  // sender thread. Idempotent; must not be called from the send callback.
  void Close();

 private:
  struct Pending {
    std::string id;
    int attempts = 0;
  };

  void Run();
  bool HasPendingOrClosing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True when a batch must go out now, without waiting for the delay.
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Requeue(std::vector<Pending> batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const AckBatcherOptions options_;
  const SendFn send_;
  const ErrorFn on_error_;

  absl::Mutex mu_;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
  // When the oldest entry of pending_ was queued.
  absl::Time oldest_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex join_mu_;
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_INTERNAL_ACK_BATCHER_H_
