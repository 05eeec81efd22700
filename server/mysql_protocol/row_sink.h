// RowSink: the engine-facing Subscriber of one `stream * from T [group G]`
// on a MySQL protocol connection. Its source (server/stream_source.h: the
// table's manager, or group G's feed) hands it batches (Send) from engine
// threads; the connection's own thread takes them in sequence order
// (TakeReady), writes them as rows and reports each one back
// (OnSendDone/OnSendFailed on the source).
//
// Like the gRPC StreamSink, it never blocks the engine: Send only queues
// (in an OrderedBatches, server/ordered_batches.h) and wakes the connection
// through an eventfd (wake_fd(), owned by the sink so a late Send never writes
// to a closed descriptor). What is queued is bounded by the source's
// max_batches_per_subscriber, since a batch's slot frees only once the
// connection wrote it. Finish() unsubscribes and hands every batch not yet
// taken back to the source (they go to the other subscribers at once); a Send
// arriving afterwards is handed back too.
//
// Thread-safe.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_ROW_SINK_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_ROW_SINK_H_

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/queue/subscriber.h"
#include "server/ordered_batches.h"
#include "server/stream_source.h"

namespace msgq::mysql_protocol {

class RowSink final : public Subscriber {
 public:
  // INTERNAL when no eventfd can be made (out of descriptors).
  static absl::StatusOr<std::shared_ptr<RowSink>> Create(
      std::shared_ptr<StreamSource> source);
  ~RowSink() override;

  // Subscriber:
  void Send(uint64_t sequence, MessageBatch batch) override;
  void Close(absl::Status status) override;

  // Readable when batches or a close are waiting (poll it for POLLIN).
  int wake_fd() const { return wake_fd_; }

  struct Ready {
    std::deque<MessageBatch> batches;    // in sequence order
    std::optional<absl::Status> closed;  // the engine ended the stream
  };
  // Takes what is ready and clears the wake-up.
  Ready TakeReady();

  // Ends the subscription: unsubscribes, then hands back every batch not
  // taken. Idempotent.
  void Finish();

  StreamSource& source() const { return *source_; }

 private:
  RowSink(std::shared_ptr<StreamSource> source, int wake_fd);
  void Wake();

  const std::shared_ptr<StreamSource> source_;
  const int wake_fd_;

  absl::Mutex mu_;
  OrderedBatches<MessageBatch> batches_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> closed_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_ROW_SINK_H_
