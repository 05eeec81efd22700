// FailureTest: MsgqTest plus the calls of failure handling
// (docs/tables.md#when-work-fails: MessageNack, MessageExtend, Redrive,
// ListDead) over a real msgqd, and a table with msgq's optional columns
// (time_created, time_dead, last_error).
#ifndef MSGQ_TESTS_FAILURE_FIXTURE_H_
#define MSGQ_TESTS_FAILURE_FIXTURE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/fixture.h"

namespace msgq::testing {

// id, epoch as streamed (Row.epoch).
using Delivered = std::pair<std::string, int64_t>;

class FailureTest : public MsgqTest {
 protected:
  // Optional columns of msgq: when first enqueued, when dead, last error.
  static constexpr char kFailureColumns[] =
      "time_created bigint DEFAULT NULL, time_dead bigint DEFAULT NULL, "
      "last_error varchar(64) DEFAULT NULL";

  void CreateFailureTable(const std::string& name,
                          const std::string& overrides) {
    ASSERT_NO_FATAL_FAILURE(CreateTable(name, overrides, kFailureColumns));
  }

  // Every (id, epoch) the collector received, in order.
  static std::vector<Delivered> DeliveredRows(const StreamCollector& c) {
    std::vector<Delivered> out;
    for (const v1::MessageStreamResponse& r : c.responses()) {
      for (const v1::Row& row : r.rows()) {
        out.emplace_back(RowValue(row, 0), row.epoch());
      }
    }
    return out;
  }

  grpc::Status Nack(const std::string& table,
                    const std::vector<Delivered>& deliveries,
                    std::optional<double> delay, const std::string& reason,
                    bool dead, v1::MessageNackResponse* response) {
    v1::MessageNackRequest request;
    request.set_name(table);
    for (const auto& [id, epoch] : deliveries) {
      v1::Delivery* d = request.add_deliveries();
      d->set_id(id);
      d->set_epoch(epoch);
    }
    if (delay.has_value()) request.mutable_delay()->set_value(*delay);
    request.set_reason(reason);
    request.set_dead(dead);
    grpc::ClientContext context;
    return stub_->MessageNack(&context, request, response);
  }

  grpc::Status Extend(const std::string& table,
                      const std::vector<Delivered>& deliveries, double duration,
                      int64_t* extended) {
    v1::MessageExtendRequest request;
    request.set_name(table);
    for (const auto& [id, epoch] : deliveries) {
      v1::Delivery* d = request.add_deliveries();
      d->set_id(id);
      d->set_epoch(epoch);
    }
    request.set_duration(duration);
    v1::MessageExtendResponse response;
    grpc::ClientContext context;
    grpc::Status s = stub_->MessageExtend(&context, request, &response);
    *extended = response.extended();
    return s;
  }

  grpc::Status Redrive(const std::string& table,
                       const std::vector<std::string>& ids, bool all,
                       int64_t* redriven) {
    v1::RedriveRequest request;
    request.set_name(table);
    for (const std::string& id : ids) request.add_ids(id);
    request.set_all(all);
    v1::RedriveResponse response;
    grpc::ClientContext context;
    grpc::Status s = stub_->Redrive(&context, request, &response);
    *redriven = response.redriven();
    return s;
  }

  grpc::Status ListDead(const std::string& table, int limit,
                        const std::string& after_id,
                        v1::ListDeadResponse* response) {
    v1::ListDeadRequest request;
    request.set_name(table);
    request.set_limit(limit);
    request.set_after_id(after_id);
    grpc::ClientContext context;
    return stub_->ListDead(&context, request, response);
  }

  // "time_next|time_acked|epoch|last_error" of one row, NULL as "NULL".
  std::string RowState(const std::string& table, const std::string& id) {
    return db_->Scalar(
        "SELECT CONCAT_WS('|', IFNULL(time_next, 'NULL'), "
        "IFNULL(time_acked, 'NULL'), epoch, IFNULL(last_error, 'NULL')) "
        "FROM msgq.`" +
        table + "` WHERE id = " + id);
  }
  bool IsDead(const std::string& table, const std::string& id) {
    return db_->Scalar("SELECT COUNT(*) FROM msgq.`" + table +
                       "` WHERE id = " + id +
                       " AND time_next IS NULL AND time_acked IS NULL") == "1";
  }
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_FAILURE_FIXTURE_H_
