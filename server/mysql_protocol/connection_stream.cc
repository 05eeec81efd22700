// Connection's `stream * from T [group G]` (connection.h): the table's
// manager found for the caller (and group G's feed), a stream slot, a
// RowSink subscribed, then rows as they come until the client leaves, a
// KILL QUERY or the engine ends it.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/auth/stream_revocation.h"
#include "server/auth/table_access.h"
#include "server/mysql_protocol/connection.h"
#include "server/mysql_protocol/result_set.h"
#include "server/mysql_protocol/row_sink.h"

namespace msgq::mysql_protocol {
namespace {

// The ERR packet for an engine error on `keyspace`.`table`. NOT_FOUND is
// 1146 (no such table) unless `table_found`: then it is about a consumer
// group (unknown, or deleted while streamed) and, like every other engine
// error, 1105 with gRPC's code and text.
std::string EngineErr(uint8_t seq, const absl::Status& status,
                      const std::string& keyspace, const std::string& table,
                      bool table_found = false) {
  // A revoked token or grant (stream_revocation.h).
  if (status.code() == absl::StatusCode::kUnauthenticated) {
    return ErrPacket(seq, kErAccessDenied, "28000", status.message());
  }
  if (status.code() == absl::StatusCode::kPermissionDenied) {
    return ErrPacket(seq, kErTableAccessDenied, "42000", status.message());
  }
  if (status.code() == absl::StatusCode::kNotFound && !table_found) {
    return ErrPacket(
        seq, kErNoSuchTable, "42S02",
        absl::StrCat("Table '", keyspace.empty() ? "" : keyspace + ".", table,
                     "' doesn't exist (", status.message(), ")"));
  }
  // UNAVAILABLE (table changed or dropped, msgqd stopping, MySQL away):
  // the client may subscribe again; like every other error, 1105.
  return ErrPacket(seq, kErUnknown, "HY000",
                   absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                                status.message()));
}

// One of a principal's --max_streams_per_principal slots, for a stream's
// lifetime.
class StreamSlot {
 public:
  StreamSlot(auth::Authorizer* authorizer, std::string principal)
      : authorizer_(authorizer), principal_(std::move(principal)) {}
  ~StreamSlot() { authorizer_->ReleaseStream(principal_); }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;

 private:
  auth::Authorizer* const authorizer_;
  const std::string principal_;
};

}  // namespace

bool Connection::Stream(const std::string& keyspace, const std::string& table,
                        const std::string& group) {
  uint8_t seq = 1;
  // Authorized before the table is looked up: a caller without the grant
  // gets this same answer whether the table exists, failed to load or
  // was never there.
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      auth::FindForCaller(*engine_, options_.authorizer, principal_,
                          auth::Action::kStream, keyspace, table);
  if (!manager.ok()) {
    if (manager.status().code() == absl::StatusCode::kPermissionDenied) {
      // Names the action and the table as the client wrote it, never the
      // policy.
      return Write(
                 ErrPacket(seq, kErTableAccessDenied, "42000",
                           absl::StrCat("STREAM command denied to user '",
                                        principal_, "' for table '",
                                        keyspace.empty() ? "" : keyspace + ".",
                                        table, "'")))
          .ok();
    }
    return Write(EngineErr(seq, manager.status(), keyspace, table)).ok();
  }
  const MessageTable& t = (*manager)->table();
  // A consumer group's feed, looked up and checked as a gRPC
  // MessageStream with `group` does (server/stream_reactor.cc).
  std::shared_ptr<GroupFeed> feed;
  if (!group.empty()) {
    absl::StatusOr<std::shared_ptr<GroupFeed>> found =
        engine_->FindGroup(keyspace, table, group);
    absl::Status s = found.status();
    if (s.ok()) s = engine_->GroupDeliverable(t);
    if (!s.ok()) return Write(EngineErr(seq, s, keyspace, table, true)).ok();
    feed = *std::move(found);
  }
  std::optional<StreamSlot> slot;
  if (auth::Authorizer* a = options_.authorizer; a != nullptr) {
    if (absl::Status s = a->AcquireStream(principal_); !s.ok()) {
      return Write(ErrPacket(seq, kErUserLimitReached, "42000", s.message()))
          .ok();
    }
    slot.emplace(a, principal_);
  }
  std::shared_ptr<StreamSource> source;
  if (feed != nullptr) {
    source = std::make_shared<SourceOf<GroupFeed>>(feed);
  } else {
    source = std::make_shared<SourceOf<MessageManager>>(*manager);
  }
  absl::StatusOr<std::shared_ptr<RowSink>> created =
      RowSink::Create(std::move(source));
  if (!created.ok()) {
    return Write(EngineErr(seq, created.status(), keyspace, table)).ok();
  }
  RowSink& sink = **created;
  std::vector<ColumnDefinition> columns;
  for (const Column& c : t.streamed) {
    columns.push_back(DefinitionOf(t.keyspace, t.name, c));
  }
  if (!Write(StreamHeader(seq, columns)).ok()) return false;
  absl::Status subscribed = feed != nullptr
                                ? feed->Subscribe(*created, /*max_unacked=*/0)
                                : (*manager)->Subscribe(*created);
  if (!subscribed.ok()) {
    sink.Finish();
    return Write(EngineErr(seq, subscribed, keyspace, table, feed != nullptr))
        .ok();
  }
  auth::StreamRevocation revocation(options_.authorizer, credential_,
                                    t.keyspace, t.name, *created);
  return StreamRows(sink, seq, keyspace, table, feed != nullptr);
}

bool Connection::StreamRows(RowSink& sink, uint8_t seq,
                            const std::string& keyspace,
                            const std::string& table, bool of_group) {
  uint64_t stale = 0;  // a KILL QUERY from before this stream
  if (interrupt_fd_ >= 0) (void)!read(interrupt_fd_, &stale, sizeof(stale));
  while (true) {
    pollfd fds[3] = {{fd_, POLLIN, 0},
                     {sink.wake_fd(), POLLIN, 0},
                     {interrupt_fd_, POLLIN, 0}};
    // TLS may hold bytes of the client already: it sent something.
    const int ready = transport_->Buffered() ? 1 : poll(fds, 3, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || transport_->Buffered() ||
        (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      // The client left, or sent something (a COM_QUIT; nothing else is
      // valid while a result set is being read): end the stream.
      sink.Finish();
      return false;
    }
    if (fds[2].revents & POLLIN) {
      sink.Finish();
      return Write(ErrPacket(seq, kErQueryInterrupted, "70100",
                             "Query execution was interrupted"))
          .ok();
    }
    if ((fds[1].revents & POLLIN) == 0) continue;
    RowSink::Ready taken = sink.TakeReady();
    if (!WriteBatches(sink, seq, taken.batches)) return false;
    if (taken.closed.has_value()) {
      sink.Finish();
      return Write(EngineErr(seq, *taken.closed, keyspace, table, of_group))
          .ok();
    }
  }
}

bool Connection::WriteBatches(RowSink& sink, uint8_t& seq,
                              std::deque<MessageBatch>& batches) {
  StreamSource& m = sink.source();
  bool failed = false;
  for (MessageBatch& batch : batches) {
    if (failed) {
      m.OnSendFailed(&sink, std::move(batch));
      continue;
    }
    std::string bytes;
    for (const Message& message : batch) {
      if (message.row != nullptr) {
        bytes += Frame(seq, PackedRowPayload(*message.row));
      }
    }
    if (Write(bytes).ok()) {
      m.OnSendDone(&sink);
    } else {
      failed = true;
      sink.Finish();
      m.OnSendFailed(&sink, std::move(batch));
    }
  }
  return !failed;
}

}  // namespace msgq::mysql_protocol
