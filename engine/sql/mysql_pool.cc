#include "engine/sql/mysql_pool.h"

namespace msgq {

MysqlPool::MysqlPool(PoolOptions options, MysqlOptions mysql)
    : BoundedPool<MysqlConnection>(options, [mysql = std::move(mysql)] {
        return MysqlConnection::Connect(mysql);
      }) {}

}  // namespace msgq
