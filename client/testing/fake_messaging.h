// FakeMessaging is a scriptable, in-process msgq.v1.Messaging server for
// hermetic client tests: it listens on 127.0.0.1 at a port chosen by the
// kernel, plays back scripted MessageStream calls, and records every request.
//
// MessageNack, MessageExtend, Redrive and ListDead are recorded too and
// answered from a small model: deliveries marked lost (MarkLost) count 0,
// the others count as retried/dead/extended; the dead list given to
// SetDeadMessages is what ListDead pages through and Redrive takes from.
//
// Each MessageStream call takes the next queued Script (or the default one):
// it writes the script's responses, then either ends with the script's status
// or, with `hold_open`, stays open, writing whatever Send() queues, until the
// client cancels, EndOpenStreams() is called or the server shuts down.
//
// Example:
//   FakeMessaging fake;
//   ASSERT_TRUE(fake.Start().ok());
//   fake.AddStream({.responses = {Fields({"id", "message"})},
//                   .hold_open = true});
//   fake.Send(Rows({{"1", "hello"}}));
//   ... connect a client to fake.address() ...
//   EXPECT_TRUE(fake.WaitForAckedIds(1, absl::Seconds(10)));
//
// Thread-safe.
#ifndef MSGQ_CLIENT_TESTING_FAKE_MESSAGING_H_
#define MSGQ_CLIENT_TESTING_FAKE_MESSAGING_H_

#include <grpcpp/server.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq::testing {

// A first MessageStreamResponse announcing columns; types default to "text"
// except column 0, "bigint".
v1::MessageStreamResponse Fields(const std::vector<std::string>& names);
// A response carrying rows; nullopt values are NULL.
v1::MessageStreamResponse Rows(
    const std::vector<std::vector<std::optional<std::string>>>& rows);

class FakeMessaging final : public v1::Messaging::Service {
 public:
  struct Script {
    std::vector<v1::MessageStreamResponse> responses;
    // Ends the stream after the responses unless hold_open.
    grpc::Status end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted");
    bool hold_open = false;
  };

  FakeMessaging();
  ~FakeMessaging() override;

  // Starts listening on 127.0.0.1:`port`, 0 = a free port chosen by the
  // kernel. Returns INTERNAL if that fails.
  absl::Status Start(int port = 0);
  // Listens on the Unix socket `path` instead (address() is "unix:PATH").
  // For tests that stop a server and start another at the same address: a
  // path in the test's own directory cannot be taken meanwhile, a freed TCP
  // port can.
  absl::Status StartOnUnixSocket(const std::string& path);
  // Ends held streams and stops the server. Idempotent.
  void Shutdown();
  // "127.0.0.1:PORT" (or "unix:PATH"), once started.
  std::string address() const;
  int port() const { return port_; }

  // Scripting.
  void AddStream(Script script);
  void SetDefaultStream(Script script);
  // Queues a response for the open held stream(s); the first to see it
  // writes it.
  void Send(v1::MessageStreamResponse response);
  // Ends every held stream with `status`.
  void EndOpenStreams(grpc::Status status);
  void SetAckStatus(grpc::Status status);
  // How long MessageAck and ListTables take before answering.
  void SetDelay(absl::Duration delay);
  void SetTables(v1::ListTablesResponse tables);
  // The status MessageNack, MessageExtend, Redrive and ListDead answer with
  // (OK: answer from the model).
  void SetFailureRpcStatus(grpc::Status status);
  // Deliveries of message `id` are no longer held: nacks and extends of it
  // count 0 (as if the message had been sent to someone else).
  void MarkLost(std::string id);
  // The dead messages, in id order.
  void SetDeadMessages(std::vector<v1::DeadMessage> messages);

  // Observations.
  std::vector<v1::MessageStreamRequest> stream_requests() const;
  std::vector<v1::MessageAckRequest> ack_requests() const;
  // Every id of every MessageAck that succeeded, in order.
  std::vector<std::string> acked_ids() const;
  std::vector<v1::MessageNackRequest> nack_requests() const;
  std::vector<v1::MessageExtendRequest> extend_requests() const;
  std::vector<v1::RedriveRequest> redrive_requests() const;
  std::vector<v1::ListDeadRequest> list_dead_requests() const;
  int open_streams() const;
  bool WaitForNackCalls(size_t n, absl::Duration timeout) const;
  bool WaitForExtendCalls(size_t n, absl::Duration timeout) const;
  bool WaitForStreamCalls(size_t n, absl::Duration timeout) const;
  bool WaitForOpenStreams(int n, absl::Duration timeout) const;
  bool WaitForAckedIds(size_t n, absl::Duration timeout) const;

  // v1::Messaging::Service.
  grpc::Status MessageStream(
      grpc::ServerContext* context, const v1::MessageStreamRequest* request,
      grpc::ServerWriter<v1::MessageStreamResponse>* writer) override;
  grpc::Status MessageAck(grpc::ServerContext* context,
                          const v1::MessageAckRequest* request,
                          v1::MessageAckResponse* response) override;
  grpc::Status MessageNack(grpc::ServerContext* context,
                           const v1::MessageNackRequest* request,
                           v1::MessageNackResponse* response) override;
  grpc::Status MessageExtend(grpc::ServerContext* context,
                             const v1::MessageExtendRequest* request,
                             v1::MessageExtendResponse* response) override;
  grpc::Status Redrive(grpc::ServerContext* context,
                       const v1::RedriveRequest* request,
                       v1::RedriveResponse* response) override;
  grpc::Status ListDead(grpc::ServerContext* context,
                        const v1::ListDeadRequest* request,
                        v1::ListDeadResponse* response) override;
  grpc::Status ListTables(grpc::ServerContext* context,
                          const v1::ListTablesRequest* request,
                          v1::ListTablesResponse* response) override;

 private:
  mutable absl::Mutex mu_;
  std::deque<Script> scripts_ ABSL_GUARDED_BY(mu_);
  Script default_script_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::MessageStreamResponse> live_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> end_open_ ABSL_GUARDED_BY(mu_);
  int end_generation_ ABSL_GUARDED_BY(mu_) = 0;
  int open_streams_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status ack_status_ ABSL_GUARDED_BY(mu_);
  absl::Duration delay_ ABSL_GUARDED_BY(mu_);
  v1::ListTablesResponse tables_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MessageStreamRequest> stream_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MessageAckRequest> ack_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> acked_ids_ ABSL_GUARDED_BY(mu_);
  grpc::Status failure_rpc_status_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> lost_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::DeadMessage> dead_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MessageNackRequest> nack_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MessageExtendRequest> extend_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RedriveRequest> redrive_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ListDeadRequest> list_dead_requests_ ABSL_GUARDED_BY(mu_);

  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string unix_path_;  // set by StartOnUnixSocket
};

}  // namespace msgq::testing

#endif  // MSGQ_CLIENT_TESTING_FAKE_MESSAGING_H_
