#include "server/stream_reactor.h"

#include <deque>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/tsan_annotations.h"
#include "server/auth/grpc_auth.h"
#include "server/auth/stream_revocation.h"
#include "server/auth/table_access.h"
#include "server/standby_note.h"

namespace msgq {

StreamSink::StreamSink(StreamReactor* reactor,
                       std::shared_ptr<StreamSource> source)
    : reactor_(reactor), source_(std::move(source)) {}

void StreamSink::SendFields(v1::MessageStreamResponse fields) {
  absl::ReleasableMutexLock lock(&mu_);
  if (finish_requested_) {
    lock.Release();
    return;
  }
  fields_.emplace();
  fields_->response = std::move(fields);
  Advance(lock);
}

void StreamSink::Send(uint64_t sequence, MessageBatch batch) {
  Item item;
  item.is_batch = true;
  auto* rows = item.response.mutable_rows();
  rows->Reserve(static_cast<int>(batch.size()));
  for (const Message& m : batch) {
    v1::Row* row = rows->Add();
    row->mutable_lengths()->Add(m.row->lengths.begin(), m.row->lengths.end());
    row->set_values(m.row->values);
    row->set_epoch(m.epoch);
  }
  item.batch = std::move(batch);
  EnqueueBatch(sequence, std::move(item));
}

void StreamSink::EnqueueBatch(uint64_t sequence, Item item) {
  absl::ReleasableMutexLock lock(&mu_);
  if (finish_requested_) {
    // The stream is ending: give the messages back at once.
    lock.Release();
    source_->OnSendFailed(this, std::move(item.batch));
    return;
  }
  batches_.Add(sequence, std::move(item));
  Advance(lock);
}

void StreamSink::Close(absl::Status status) {
  RequestFinish(ToGrpcStatus(status));
}

void StreamSink::BeginFinishLocked(grpc::Status status) {
  mu_.AssertHeld();
  finish_requested_ = true;
  finish_status_ = std::move(status);
}

void StreamSink::Unsubscribe() { source_->Unsubscribe(this); }

void StreamSink::RequestFinish(grpc::Status status) {
  {
    absl::MutexLock lock(&mu_);
    if (finish_requested_) return;
    BeginFinishLocked(std::move(status));
  }
  // Stop being offered batches before handing back the queued ones.
  Unsubscribe();
  absl::ReleasableMutexLock lock(&mu_);
  Advance(lock);
}

void StreamSink::OnWriteDone(bool ok) {
  bool unsubscribe = false;
  Item done;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    done = std::move(current_);
    current_ = Item{};
    if (!ok && !finish_requested_) {
      // The client is gone; gRPC will call OnDone after Finish.
      BeginFinishLocked(
          grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      unsubscribe = true;
    }
  }
  if (unsubscribe) Unsubscribe();
  if (done.is_batch) {
    if (ok) {
      source_->OnSendDone(this);
    } else {
      source_->OnSendFailed(this, std::move(done.batch));
    }
  }
  absl::ReleasableMutexLock lock(&mu_);
  Advance(lock);
}

void StreamSink::Advance(absl::ReleasableMutexLock& lock) {
  if (writing_ || finished_) {
    lock.Release();
    return;
  }
  if (finish_requested_) {
    finished_ = true;
    fields_.reset();
    std::deque<Item> unsent = batches_.TakeAll();
    grpc::Status status = finish_status_;
    lock.Release();
    for (Item& item : unsent) {
      if (item.is_batch) source_->OnSendFailed(this, std::move(item.batch));
    }
    reactor_->Finish(status);
    return;
  }
  if (fields_.has_value()) {
    current_ = *std::move(fields_);
    fields_.reset();
  } else if (batches_.has_ready()) {
    current_ = batches_.PopReady();
  } else {
    lock.Release();
    return;
  }
  writing_ = true;
  const v1::MessageStreamResponse* response = &current_.response;
  lock.Release();
  // current_ is not touched again until OnWriteDone, and the reactor cannot
  // finish while writing_ is set.
  reactor_->StartWrite(response);
}

StreamReactor::StreamReactor(Engine* engine, auth::Authorizer* authorizer,
                             const auth::PeerDirectory* peers,
                             grpc::CallbackServerContext& context,
                             const v1::MessageStreamRequest& request)
    : authorizer_(authorizer), peers_(peers) {
  Begin(engine, context, request);
  // gRPC runs OnDone only after the method handler that made this reactor
  // returned (see OnCancel).
  MSGQ_TSAN_RELEASE(this);
  // And every other reaction too: a write started here (the fields) is held
  // until gRPC binds the reactor, after the handler returned, so its
  // OnWriteDone, like OnCancel, sees what Begin set (sink_). A separate
  // address, so that OnWriteDone and OnCancel are not ordered by it.
  MSGQ_TSAN_RELEASE(&sink_);
}

void StreamReactor::Begin(Engine* engine, grpc::CallbackServerContext& context,
                          const v1::MessageStreamRequest& request) {
  if (!Admit(engine, context, request)) return;
  // Before the first write, which sends the initial metadata.
  if (std::optional<std::string> note =
          StandbyNote(manager_->table(), engine->Ownership(*manager_),
                      engine->instance_id());
      note.has_value()) {
    context.AddInitialMetadata(kStandbyMetadata, *note);
  }
  v1::MessageStreamResponse fields;
  for (const Column& c : manager_->table().streamed) {
    v1::Field* f = fields.add_fields();
    f->set_name(c.name);
    f->set_type(c.data_type);
  }
  sink_->SendFields(std::move(fields));
  absl::Status subscribed =
      feed_ != nullptr ? feed_->Subscribe(sink_, request.max_unacked())
                       : manager_->Subscribe(sink_, request.max_unacked());
  if (!subscribed.ok()) {
    sink_->RequestFinish(ToGrpcStatus(subscribed));
    return;
  }
  const MessageTable& t = manager_->table();
  revocation_.emplace(authorizer_, credential_, t.keyspace, t.name, sink_);
}

bool StreamReactor::Admit(Engine* engine,
                          const grpc::CallbackServerContext& context,
                          const v1::MessageStreamRequest& request) {
  absl::StatusOr<auth::Authorizer::Credential> credential =
      auth::AuthenticateCallCredential(*authorizer_, peers_, context);
  if (!credential.ok()) {
    Finish(ToGrpcStatus(credential.status()));
    return false;
  }
  const std::string* principal = &credential->principal;
  if (request.max_unacked() < 0) {
    Finish(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("max_unacked must be >= 0, got ", request.max_unacked())));
    return false;
  }
  absl::StatusOr<std::shared_ptr<MessageManager>> manager = auth::FindForCaller(
      *engine, authorizer_, *principal, auth::Action::kStream,
      request.keyspace(), request.name());
  if (!manager.ok()) {
    Finish(ToGrpcStatus(manager.status()));
    return false;
  }
  std::shared_ptr<GroupFeed> feed;
  if (!request.group().empty()) {
    absl::StatusOr<std::shared_ptr<GroupFeed>> found =
        engine->FindGroup(request.keyspace(), request.name(), request.group());
    if (!found.ok()) {
      Finish(ToGrpcStatus(found.status()));
      return false;
    }
    if (absl::Status s = engine->GroupDeliverable((*manager)->table());
        !s.ok()) {
      Finish(ToGrpcStatus(s));
      return false;
    }
    feed = *std::move(found);
  }
  absl::Status allowed = authorizer_->AcquireStream(*principal);
  if (!allowed.ok()) {
    Finish(ToGrpcStatus(allowed));
    return false;
  }
  slot_ = *principal;
  manager_ = *std::move(manager);
  feed_ = std::move(feed);
  if (feed_ != nullptr) {
    source_ = std::make_shared<SourceOf<GroupFeed>>(feed_);
  } else {
    source_ = std::make_shared<SourceOf<MessageManager>>(manager_);
  }
  sink_ = std::make_shared<StreamSink>(this, source_);
  credential_ = *std::move(credential);
  return true;
}

void StreamReactor::OnWriteDone(bool ok) {
  MSGQ_TSAN_ACQUIRE(&sink_);  // after the constructor (above)
  sink_->OnWriteDone(ok);
  MSGQ_TSAN_RELEASE(this);  // before OnDone, as OnCancel (below)
}

void StreamReactor::OnCancel() {
  MSGQ_TSAN_ACQUIRE(&sink_);  // after the constructor
  if (sink_ != nullptr) {
    sink_->RequestFinish(
        grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled"));
  }
  // gRPC runs OnDone only after every other reaction returned, ordered by
  // a refcount that Debian's uninstrumented libgrpc++ decrements (after
  // OnCancel) or hands to another thread (the executor that runs OnDone):
  // tell TSan (common/tsan_annotations.h).
  MSGQ_TSAN_RELEASE(this);
}

void StreamReactor::OnDone() {
  // After the constructor, OnWriteDone and OnCancel (above).
  MSGQ_TSAN_ACQUIRE(this);
  // The one place a reactor is deleted: gRPC guarantees no reaction follows.
  revocation_.reset();
  if (source_ != nullptr) source_->Unsubscribe(sink_.get());
  if (slot_.has_value()) authorizer_->ReleaseStream(*slot_);
  delete this;
}

}  // namespace msgq
