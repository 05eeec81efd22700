// StreamReactor: one MessageStream call, as a gRPC callback-API write
// reactor, and StreamSink, the engine-facing Subscriber it owns. A stream
// reads the table's default group (its MessageManager) or, with
// MessageStreamRequest.group, a consumer group's GroupFeed.
//
// The sink is shared (the table's manager or the group's feed holds it); the
// reactor is owned by gRPC and deletes itself in OnDone, after unsubscribing.
// The sink's mutex guards its outbox and the write/finish token: exactly one
// write is in flight at a time, the outgoing response lives in the sink until
// OnWriteDone, and Finish is called once, only when no write is in flight,
// so the reactor cannot be deleted under a StartWrite. After Finish the sink
// unsubscribes and hands back to the manager every batch it could not write,
// so a leaving subscriber never swallows messages. The batches wait in an
// OrderedBatches (server/ordered_batches.h) until their turn; they are
// bounded by the manager's max_batches_per_subscriber (plus the fields
// response).
//
// Reactions never block: Send and OnWriteDone only move data and call
// StartWrite/Finish.
#ifndef MSGQ_SERVER_STREAM_REACTOR_H_
#define MSGQ_SERVER_STREAM_REACTOR_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "engine/engine.h"
#include "engine/queue/subscriber.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "server/auth/authorizer.h"
#include "server/auth/peer_directory.h"
#include "server/auth/stream_revocation.h"
#include "server/ordered_batches.h"
#include "server/stream_source.h"

namespace msgq {

class StreamReactor;

class StreamSink final : public Subscriber {
 public:
  StreamSink(StreamReactor* reactor, std::shared_ptr<StreamSource> source);

  // Subscriber:
  void Send(uint64_t sequence, MessageBatch batch) override;
  void Close(absl::Status status) override;

  // Queues the first response (fields only) before subscribing.
  void SendFields(v1::MessageStreamResponse fields);
  // From the reactor.
  void OnWriteDone(bool ok);
  void RequestFinish(grpc::Status status);

 private:
  struct Item {
    v1::MessageStreamResponse response;
    MessageBatch batch;  // handed back to the manager if never written
    bool is_batch = false;
  };
  // Starts the next write or the finish, outside the lock.
  void Advance(absl::ReleasableMutexLock& lock)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EnqueueBatch(uint64_t sequence, Item item);
  // Marks the stream as ending (under mu_) ; the caller then unsubscribes.
  void BeginFinishLocked(grpc::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unsubscribe();

  StreamReactor* const reactor_;
  const std::shared_ptr<StreamSource> source_;

  absl::Mutex mu_;
  // The fields response until its write starts: always the first write,
  // since SendFields runs before the sink subscribes.
  std::optional<Item> fields_ ABSL_GUARDED_BY(mu_);
  OrderedBatches<Item> batches_ ABSL_GUARDED_BY(mu_);
  Item current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

class StreamReactor final
    : public grpc::ServerWriteReactor<v1::MessageStreamResponse> {
 public:
  // Authenticates the caller, looks up the table, authorizes `stream` on
  // it, takes one of the principal's stream slots and subscribes; or
  // finishes with the first error (UNAUTHENTICATED, the lookup's,
  // PERMISSION_DENIED, RESOURCE_EXHAUSTED). `engine`, `authorizer` and
  // `peers` (may be null) must outlive the reactor. On a msgqd that stands
  // by for the table (leases: another instance sends it) the stream is
  // served all the same, idle until this msgqd takes the table over, and
  // its initial metadata says so: kStandbyMetadata names the instance that
  // sends the table.
  StreamReactor(Engine* engine, auth::Authorizer* authorizer,
                const auth::PeerDirectory* peers,
                grpc::CallbackServerContext& context,
                const v1::MessageStreamRequest& request);

  // The initial-metadata key of the standby notice (printable ASCII).
  static constexpr char kStandbyMetadata[] = "msgq-standby";

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // The constructor's work: admits, sends the fields header, subscribes.
  void Begin(Engine* engine, grpc::CallbackServerContext& context,
             const v1::MessageStreamRequest& request);
  // Subscribes to the table if the caller may; false after Finish.
  bool Admit(Engine* engine, const grpc::CallbackServerContext& context,
             const v1::MessageStreamRequest& request);

  auth::Authorizer* const authorizer_;
  const auth::PeerDirectory* const peers_;
  // Set once the principal holds a stream slot (released in OnDone).
  std::optional<std::string> slot_;
  std::shared_ptr<MessageManager> manager_;
  // A consumer group's feed (MessageStreamRequest.group), else null.
  std::shared_ptr<GroupFeed> feed_;
  // manager_ or feed_, as the sink sees it.
  std::shared_ptr<StreamSource> source_;
  std::shared_ptr<StreamSink> sink_;
  // How the caller authenticated; the watch that ends the stream when that
  // or its grant is revoked (server/auth/stream_revocation.h).
  auth::Authorizer::Credential credential_;
  std::optional<auth::StreamRevocation> revocation_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_STREAM_REACTOR_H_
