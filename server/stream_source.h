// StreamSource: where a stream's sink gets its batches and reports them:
// the table's MessageManager (the default group) or a consumer group's
// GroupFeed (engine/engine_group_feed.h). The gRPC StreamSink
// (server/stream_reactor.h) and the MySQL port's RowSink
// (server/mysql_protocol/row_sink.h) report through it, so a stream of
// either port reads either kind of source alike.
//
// Example:
//   std::shared_ptr<StreamSource> source =
//       std::make_shared<SourceOf<GroupFeed>>(feed);
//   source->OnSendDone(sink.get());
//
// Thread-safety: as the wrapped source (both are thread-safe).
#ifndef MSGQ_SERVER_STREAM_SOURCE_H_
#define MSGQ_SERVER_STREAM_SOURCE_H_

#include <memory>
#include <utility>

#include "engine/queue/subscriber.h"

namespace msgq {

class StreamSource {
 public:
  virtual ~StreamSource() = default;
  virtual void OnSendDone(const Subscriber* subscriber) = 0;
  virtual void OnSendFailed(const Subscriber* subscriber,
                            MessageBatch batch) = 0;
  virtual void Unsubscribe(const Subscriber* subscriber) = 0;
};

// A StreamSource over anything with those three methods.
template <typename T>
class SourceOf final : public StreamSource {
 public:
  explicit SourceOf(std::shared_ptr<T> source) : source_(std::move(source)) {}
  void OnSendDone(const Subscriber* subscriber) override {
    source_->OnSendDone(subscriber);
  }
  void OnSendFailed(const Subscriber* subscriber, MessageBatch batch) override {
    source_->OnSendFailed(subscriber, std::move(batch));
  }
  void Unsubscribe(const Subscriber* subscriber) override {
    source_->Unsubscribe(subscriber);
  }

 private:
  const std::shared_ptr<T> source_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_STREAM_SOURCE_H_
