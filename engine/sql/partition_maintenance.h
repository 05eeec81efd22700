// Partition purge of a message table RANGE-partitioned on time_created
// (schema/message_table_partitioned.sql; the plan is
// engine/queue/partition_plan.h). One step:
//   1. reads the table's partitions from information_schema.PARTITIONS;
//   2. creates the partitions the plan asks for, in one statement:
//      ALTER TABLE t ADD PARTITION (...), or, when the table has a MAXVALUE
//      partition, ALTER TABLE t REORGANIZE PARTITION pmax INTO (..., pmax);
//   3. for each drop candidate (every row enqueued before now -
//      vt_purge_after), oldest first: reads the first row of that partition
//      alone that keeps it (SELECT ... PARTITION (p) WHERE: unacked and not
//      dead past msgq_dead_retention, or acked at or after the purge
//      cutoff), and when there is none, ALTER TABLE t DROP PARTITION p.
//      A partition with an unacked or dead row (not expired) is "held back"
//      and reported; one with only rows acked too recently waits silently.
//
// Every ALTER says WAIT 1: it needs the table's metadata lock, which an
// application's open transaction on the table holds, and statements that
// come after a waiting ALTER queue behind it; so it waits at most a second
// (then fails, ABORTED, and the next step tries again) instead of MariaDB's
// default lock_wait_timeout of a year.
//
// What is guaranteed: msgqd drops a partition only after the check above
// found no row that keeps it, and only the partitions whose bound is at or
// before now - vt_purge_after, so a row inserted now (time_created = now)
// never lands in one. What is not: the check and the DROP are two
// statements (DDL cannot run inside the check's transaction), so a row
// written into that partition between them is dropped with it: an INSERT
// with an explicit time_created older than vt_purge_after, or an UPDATE
// that un-acks (time_acked = NULL) a row acked before the cutoff, or a
// Redrive of a row dead past msgq_dead_retention (which the dead purge's
// DELETE could equally have removed a moment later). msgqd never writes
// time_created or un-acks; the window is one round trip.
//
// Statements name only the table and partitions found in information_schema
// (backtick-quoted); information_schema is queried with hex literals.
// Not thread-safe; used by the table's store on the manager's round.
#ifndef MSGQ_ENGINE_SQL_PARTITION_MAINTENANCE_H_
#define MSGQ_ENGINE_SQL_PARTITION_MAINTENANCE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/message_table.h"
#include "engine/queue/message_store.h"
#include "engine/queue/partition_plan.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

// The SQL of a partition step (pure; for tests and EXPLAIN).
class PartitionStatements {
 public:
  PartitionStatements(const MessageTable& table, std::string quoted_table);

  // name, method, expression, description, in ordinal order.
  std::string ListPartitions() const;
  // id, time_acked of the first row of `partition` that keeps it: unacked
  // (unless dead since before `dead_cutoff`), or acked at or after
  // `purge_cutoff`; unacked rows first. No dead clause without
  // `dead_cutoff`.
  std::string Blocker(absl::string_view partition, int64_t purge_cutoff,
                      std::optional<int64_t> dead_cutoff) const;
  // ADD PARTITION or REORGANIZE PARTITION per plan.split_maxvalue; "" when
  // the plan creates nothing.
  std::string Create(const PartitionPlan& plan) const;
  std::string Drop(absl::string_view partition) const;

 private:
  const std::string keyspace_;
  const std::string name_;
  const std::string quoted_table_;
};

// Runs one step (see the file comment) at `now` for `table`. Returns what
// it did; a statement that failed ends the step with its error (UNAVAILABLE
// when the connection broke, FAILED_PRECONDITION when the table is no
// longer RANGE-partitioned on time_created or a bound is not an integer),
// except that a failed create is reported in PartitionReport::create_error
// and the drops still run.
absl::StatusOr<PartitionReport> MaintainPartitions(
    MysqlConnection& conn, const MessageTable& table,
    const PartitionStatements& sql, int64_t now);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_PARTITION_MAINTENANCE_H_
