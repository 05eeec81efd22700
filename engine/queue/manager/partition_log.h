// PartitionLog: what a table's partition purge steps (tables
// RANGE-partitioned on time_created) have to say, once: a partition past
// vt_purge_after that is kept because it still holds unacked or dead rows
// is named when it starts being held back, not at every step; an error of
// creating partitions ahead is named when it is new.
//
// Example:
//   PartitionLog log("table `k`.`t`");
//   for (std::string& line : log.Lines(report)) Warn(line);
//
// Errors: none. Thread-safety: thread-compatible; the owning
// MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_PARTITION_LOG_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_PARTITION_LOG_H_

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/queue/message_store.h"

namespace msgq {

class PartitionLog {
 public:
  // `name`: the table as log lines name it.
  explicit PartitionLog(std::string name) : name_(std::move(name)) {}

  // The warning lines `report`, a step's, brings; remembers what it named.
  std::vector<std::string> Lines(const PartitionReport& report);

 private:
  const std::string name_;
  // The partitions held back at the last step, and the last error of
  // creating partitions ("" when none).
  std::set<std::string> held_back_;
  std::string create_error_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_PARTITION_LOG_H_
