// Engine::PoolSize and Engine::NewManager (engine.h): how the engine sizes
// its connection pool and builds a table's manager on it. Kept out of
// engine.cc, which loads and reloads the tables.
#include <algorithm>
#include <memory>

#include "engine/engine.h"
#include "engine/sql/mysql_message_store.h"

namespace msgq {

int Engine::PoolSize(const Options& options) {
  return std::max(
      1, options.max_connections - (options.binlog ? 2 : 0) -
             (options.sharing != Engine::Options::Sharing::kAlone ? 1 : 0) -
             (options.mysql.primary != nullptr ? 1 : 0));
}

std::shared_ptr<MessageManager> Engine::NewManager(MessageTable table,
                                                   bool successor) {
  // Reads bring at most what the cache may hold, and never a row too large
  // to send (it dies unread).
  const ReadLimits limits{.max_row_bytes = options_.manager.max_message_bytes,
                          .max_read_bytes = options_.manager.cache_max_bytes};
  auto store = std::make_unique<MysqlMessageStore>(table, options_.mysql,
                                                   pool_.get(), limits);
  // The ack lane's store borrows a second pooled connection per round,
  // when the pool has one to spare.
  std::unique_ptr<MessageStore> ack_store;
  if (options_.manager.ack_lane && PoolSize(options_) >= 2) {
    ack_store = std::make_unique<MysqlMessageStore>(table, options_.mysql,
                                                    pool_.get(), limits);
  }
  MessageManager::Options options = options_.manager;
  // The first manager of a table in this process: no row it sent can come
  // back on the binlog, which is followed from the process's start.
  if (!successor) options.image_wait = absl::ZeroDuration();
  // The engine's counts report the dead rows (engine_counts.cc).
  if (options_.exact_counts) options.count_dead = false;
  return std::make_shared<MessageManager>(std::move(table), std::move(store),
                                          clock_, jitter_, options, executor_,
                                          std::move(ack_store), &db_clock_);
}

}  // namespace msgq
