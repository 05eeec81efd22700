#include "server/stream_reactor.h"

#include "server/grpc_status.h"

namespace msgq {

StreamSink::StreamSink(StreamReactor* reactor,
                       std::shared_ptr<MessageManager> manager)
    : reactor_(reactor), manager_(std::move(manager)) {}

void StreamSink::SendFields(v1::MessageStreamResponse fields) {
  Enqueue(Item{std::move(fields), false});
}

void StreamSink::Send(MessageBatch batch) {
  Item item;
  item.is_batch = true;
  auto* rows = item.response.mutable_rows();
  rows->Reserve(static_cast<int>(batch.size()));
  for (const Message& m : batch) {
    v1::Row* row = rows->Add();
    row->mutable_lengths()->Add(m.row->lengths.begin(), m.row->lengths.end());
    row->set_values(m.row->values);
  }
  Enqueue(std::move(item));
}

void StreamSink::Enqueue(Item item) {
  absl::ReleasableMutexLock lock(&mu_);
  if (finish_requested_) {
    // The stream is ending: the batch's messages come back after their
    // time_next. Still free the manager's slot.
    const bool is_batch = item.is_batch;
    lock.Release();
    if (is_batch) manager_->OnSendDone(this);
    return;
  }
  outbox_.push_back(std::move(item));
  Advance(lock);
}

void StreamSink::Close(absl::Status status) {
  RequestFinish(ToGrpcStatus(status));
}

void StreamSink::RequestFinish(grpc::Status status) {
  absl::ReleasableMutexLock lock(&mu_);
  if (finish_requested_) return;
  finish_requested_ = true;
  finish_status_ = std::move(status);
  Advance(lock);
}

void StreamSink::OnWriteDone(bool ok) {
  absl::ReleasableMutexLock lock(&mu_);
  writing_ = false;
  const bool was_batch = current_.is_batch;
  current_ = Item{};
  if (!ok && !finish_requested_) {
    // The client is gone; gRPC will call OnDone after Finish.
    finish_requested_ = true;
    finish_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "write failed");
  }
  Advance(lock);
  if (was_batch) manager_->OnSendDone(this);
}

void StreamSink::Advance(absl::ReleasableMutexLock& lock) {
  if (writing_ || finished_) {
    lock.Release();
    return;
  }
  if (finish_requested_) {
    finished_ = true;
    size_t dropped = 0;
    for (const Item& item : outbox_) dropped += item.is_batch ? 1 : 0;
    outbox_.clear();
    grpc::Status status = finish_status_;
    lock.Release();
    for (size_t i = 0; i < dropped; ++i) manager_->OnSendDone(this);
    reactor_->Finish(status);
    return;
  }
  if (outbox_.empty()) {
    lock.Release();
    return;
  }
  writing_ = true;
  current_ = std::move(outbox_.front());
  outbox_.pop_front();
  const v1::MessageStreamResponse* response = &current_.response;
  lock.Release();
  // current_ is not touched again until OnWriteDone, and the reactor cannot
  // finish while writing_ is set.
  reactor_->StartWrite(response);
}

StreamReactor::StreamReactor(Engine* engine,
                             const v1::MessageStreamRequest& request) {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      engine->Find(request.keyspace(), request.name());
  if (!manager.ok()) {
    Finish(ToGrpcStatus(manager.status()));
    return;
  }
  manager_ = *std::move(manager);
  sink_ = std::make_shared<StreamSink>(this, manager_);
  v1::MessageStreamResponse fields;
  for (const Column& c : manager_->table().streamed) {
    v1::Field* f = fields.add_fields();
    f->set_name(c.name);
    f->set_type(c.data_type);
  }
  sink_->SendFields(std::move(fields));
  absl::Status subscribed = manager_->Subscribe(sink_);
  if (!subscribed.ok()) sink_->RequestFinish(ToGrpcStatus(subscribed));
}

void StreamReactor::OnWriteDone(bool ok) { sink_->OnWriteDone(ok); }

void StreamReactor::OnCancel() {
  if (sink_ != nullptr) {
    sink_->RequestFinish(
        grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled"));
  }
}

void StreamReactor::OnDone() {
  // The one place a reactor is deleted: gRPC guarantees no reaction follows.
  if (manager_ != nullptr) manager_->Unsubscribe(sink_.get());
  delete this;
}

}  // namespace msgq
