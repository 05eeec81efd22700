// Engine::ReadTable and WriteTable (engine.h): kept out of engine.cc, which
// runs the tables; these only borrow a pool connection for one statement.
#include <memory>
#include <string>

#include "engine/engine.h"

namespace msgq {

absl::StatusOr<QueryResult> Engine::ReadTable(
    absl::string_view keyspace, absl::string_view name,
    const std::function<absl::StatusOr<std::string>(const MessageTable&)>&
        build,
    absl::Duration wait) const {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (!manager.ok()) return manager.status();
  absl::StatusOr<std::string> sql = build((*manager)->table());
  if (!sql.ok()) return sql.status();
  absl::StatusOr<MysqlPool::Lease> conn = pool_->Borrow(wait);
  if (!conn.ok()) return conn.status();
  return (*conn)->Query(*sql);
}

absl::StatusOr<uint64_t> Engine::WriteTable(
    absl::string_view keyspace, absl::string_view name,
    const std::function<absl::StatusOr<std::string>(const MessageTable&)>&
        build,
    absl::Duration wait) const {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (!manager.ok()) return manager.status();
  absl::StatusOr<std::string> sql = build((*manager)->table());
  if (!sql.ok()) return sql.status();
  absl::StatusOr<MysqlPool::Lease> conn = pool_->Borrow(wait);
  if (!conn.ok()) return conn.status();
  return (*conn)->Execute(*sql);
}

}  // namespace msgq
