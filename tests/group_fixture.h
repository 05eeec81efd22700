// Consumer group tests' parts (docs/design/consumer-groups.md): a
// reader of one group's MessageStream on a thread of its own, and a
// fixture with a message table `orders` served by msgqd, and the group
// calls and reads of msgq_groups the tests make.
#ifndef MSGQ_TESTS_GROUP_FIXTURE_H_
#define MSGQ_TESTS_GROUP_FIXTURE_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/fixture.h"

namespace msgq::testing {

inline constexpr absl::Duration kWait = absl::Seconds(20);

// Reads one group's MessageStream on a thread of its own (StreamCollector
// with MessageStreamRequest.group).
class GroupStream {
 public:
  GroupStream(v1::Messaging::Stub* stub, const std::string& table,
              const std::string& group) {
    request_.set_keyspace("msgq");
    request_.set_name(table);
    request_.set_group(group);
    thread_ = std::thread([this, stub] {
      std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader =
          stub->MessageStream(&context_, request_);
      v1::MessageStreamResponse response;
      while (reader->Read(&response)) {
        absl::MutexLock lock(&mu_);
        for (const v1::Row& row : response.rows()) {
          ids_.push_back(RowValue(row, 0));
          epochs_.push_back(row.epoch());
          arrivals_.push_back(absl::Now());
        }
        response.Clear();
      }
      grpc::Status status = reader->Finish();
      absl::MutexLock lock(&mu_);
      status_ = status;
      ended_ = true;
    });
  }
  ~GroupStream() {
    context_.TryCancel();
    thread_.join();
  }

  bool WaitForRows(size_t n) {
    absl::MutexLock lock(&mu_);
    auto done = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ids_.size() >= n || ended_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&done), kWait);
    return ids_.size() >= n;
  }
  bool WaitForEnd() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&ended_), kWait);
  }
  std::vector<std::string> ids() const {
    absl::MutexLock lock(&mu_);
    return ids_;
  }
  std::vector<int64_t> epochs() const {
    absl::MutexLock lock(&mu_);
    return epochs_;
  }
  // When each row arrived (wall clock).
  std::vector<absl::Time> arrivals() const {
    absl::MutexLock lock(&mu_);
    return arrivals_;
  }
  grpc::Status status() const {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  grpc::ClientContext context_;
  v1::MessageStreamRequest request_;
  mutable absl::Mutex mu_;
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> epochs_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> arrivals_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class GroupTest : public MsgqTest {
 protected:
  // msgqd without lease rows, so that only the test writes to the binlog;
  // `directives` override the table comment's (MessageComment).
  void StartWithOrders(const std::string& directives = "") {
    ASSERT_NO_FATAL_FAILURE(CreateTable("orders", directives));
    ASSERT_NO_FATAL_FAILURE(StartServer({"--leases=false"}));
    ASSERT_NO_FATAL_FAILURE(WaitForBinlog("orders"));
  }

  void CreateGroup(const std::string& group) {
    grpc::ClientContext ctx;
    v1::CreateGroupRequest request;
    request.set_keyspace("msgq");
    request.set_name("orders");
    request.set_group(group);
    v1::CreateGroupResponse response;
    grpc::Status s = stub_->CreateGroup(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  grpc::Status AckGroup(const std::string& group,
                        const std::vector<std::string>& ids, int64_t* acked) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    v1::MessageAckRequest request;
    request.set_keyspace("msgq");
    request.set_name("orders");
    request.set_group(group);
    for (const std::string& id : ids) request.add_ids(id);
    v1::MessageAckResponse response;
    grpc::Status s = stub_->MessageAck(&ctx, request, &response);
    *acked = response.acked();
    return s;
  }

  std::string BinlogPosition() {
    absl::StatusOr<QueryResult> r = db_->Query("SELECT @@gtid_binlog_pos");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->rows.empty()) return "";
    return r->rows[0][0].value_or("");
  }

  std::string Floor(const std::string& group) {
    absl::StatusOr<QueryResult> r = db_->Query(absl::StrCat(
        "SELECT floor_gtid FROM msgq.msgq_groups WHERE table_name = 'orders'"
        " AND group_name = '",
        group, "'"));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->rows.size() != 1) return "<none>";
    return r->rows[0][0].value_or("<NULL>");
  }
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_GROUP_FIXTURE_H_
