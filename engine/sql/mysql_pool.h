// MysqlPool: the MySQL connections of one msgqd, within a budget.
//
// Every table's statements borrow a connection for one call (a RAII Lease)
// and give it back when the Lease dies, so msgqd never holds more than
// `max_connections` (--mysql_max_connections, default 8) however many
// tables it serves, and a table with nothing to do holds none. At most
// `max_idle` returned connections are kept open for the next borrower;
// broken ones (MysqlConnection::broken()) are closed, never handed out again,
// also when they broke while idle, and so are idle ones the server or the
// kernel closed meanwhile (MysqlConnection::Closed(): a restarted server, a
// dead link found by TCP keepalive), checked outside the lock at Borrow.
// Connections are opened lazily, outside the pool's lock.
//
// Borrow(timeout) waits up to `timeout` for a connection when the budget is
// in use. Errors: RESOURCE_EXHAUSTED when none came free in time (retry
// later); UNAVAILABLE when opening a new connection failed (the slot is
// given back); CANCELLED once Close() was called. Close() wakes every waiter;
// leases still out stay valid and are closed when returned.
//
// Thread-safe. The pool must outlive its leases.
//
// Example:
//   MysqlPool pool({.max_connections = 8}, mysql_options);
//   ASSIGN_OR_RETURN(MysqlPool::Lease conn, pool.Borrow(absl::Seconds(1)));
//   ASSIGN_OR_RETURN(QueryResult r, conn->Query("SELECT 1"));
//
// The pool logic is the template BoundedPool<T> (T: anything with
// `bool broken() const`, and optionally `bool Closed() const`), so it is
// unit-tested without a server.
#ifndef MSGQ_ENGINE_SQL_MYSQL_POOL_H_
#define MSGQ_ENGINE_SQL_MYSQL_POOL_H_

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/monotonic_cond_var.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

struct PoolOptions {
  // Connections open at once, borrowed or idle (--mysql_max_connections).
  int max_connections = 8;
  // Returned connections kept open for the next borrower.
  int max_idle = 8;
};

template <typename T>
class BoundedPool {
 public:
  using Opener = std::function<absl::StatusOr<std::unique_ptr<T>>()>;

  // A borrowed connection; gives it back on destruction. Movable.
  class Lease {
   public:
    Lease(Lease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)),
          conn_(std::move(other.conn_)) {}
    Lease& operator=(Lease&& other) noexcept {
      if (this != &other) {
        Return();
        pool_ = std::exchange(other.pool_, nullptr);
        conn_ = std::move(other.conn_);
      }
      return *this;
    }
    ~Lease() { Return(); }
    T* operator->() const { return conn_.get(); }
    T& operator*() const { return *conn_; }
    T* get() const { return conn_.get(); }

   private:
    friend class BoundedPool;
    Lease(BoundedPool* pool, std::unique_ptr<T> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    void Return() {
      if (pool_ != nullptr) pool_->GiveBack(std::move(conn_));
      pool_ = nullptr;
    }
    BoundedPool* pool_;
    std::unique_ptr<T> conn_;
  };

  BoundedPool(PoolOptions options, Opener opener)
      : options_(options), opener_(std::move(opener)) {}
  BoundedPool(const BoundedPool&) = delete;
  BoundedPool& operator=(const BoundedPool&) = delete;

  absl::StatusOr<Lease> Borrow(absl::Duration timeout) {
    const absl::Time deadline = RealClock::Get()->MonotonicNow() + timeout;
    // An idle connection that broke while it waited (e.g. went stale when
    // the MySQL primary moved) is closed, and its slot reused.
    std::unique_ptr<T> stale;
    {
      absl::MutexLock lock(&mu_);
      ++waiting_;
      while (!closed_ && idle_.empty() && open_ >= options_.max_connections) {
        if (cv_.WaitFor(&mu_, deadline - RealClock::Get()->MonotonicNow())) {
          break;
        }
      }
      --waiting_;
      if (closed_) return absl::CancelledError("MySQL pool closed");
      if (!idle_.empty()) {
        std::unique_ptr<T> conn = std::move(idle_.back());
        idle_.pop_back();
        if (conn->broken()) {
          stale = std::move(conn);  // keeps its slot for the new one
        } else if constexpr (requires(const T& t) { t.Closed(); }) {
          stale = std::move(conn);  // checked below, outside the lock
        } else {
          return Lease(this, std::move(conn));
        }
      } else if (open_ >= options_.max_connections) {
        return absl::ResourceExhaustedError(
            absl::StrCat("all ", options_.max_connections,
                         " MySQL connections of the budget are in use"));
      } else {
        ++open_;  // reserve the slot; connect outside the lock
      }
    }
    if constexpr (requires(const T& t) { t.Closed(); }) {
      if (stale != nullptr && !stale->broken() && !stale->Closed()) {
        return Lease(this, std::move(stale));
      }
    }
    stale.reset();
    absl::StatusOr<std::unique_ptr<T>> conn = opener_();
    if (!conn.ok()) {
      absl::MutexLock lock(&mu_);
      --open_;
      cv_.Signal();
      return conn.status();
    }
    return Lease(this, *std::move(conn));
  }

  // Wakes every waiter; later Borrow calls fail with CANCELLED.
  void Close() {
    std::vector<std::unique_ptr<T>> idle;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      open_ -= static_cast<int>(idle_.size());
      idle.swap(idle_);
      cv_.SignalAll();
    }
    // `idle` closes here, outside the lock.
  }

  // Connections open (borrowed or idle), idle, and callers waiting.
  int open() const {
    absl::MutexLock lock(&mu_);
    return open_;
  }
  int idle() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(idle_.size());
  }
  int waiting() const {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }

 private:
  void GiveBack(std::unique_ptr<T> conn) {
    std::unique_ptr<T> to_close;
    {
      absl::MutexLock lock(&mu_);
      if (conn == nullptr) return;
      if (closed_ || conn->broken() ||
          static_cast<int>(idle_.size()) >= options_.max_idle) {
        to_close = std::move(conn);
        --open_;
      } else {
        idle_.push_back(std::move(conn));
      }
      cv_.Signal();
    }
    // `to_close` closes here, outside the lock (a close may do I/O).
  }

  const PoolOptions options_;
  const Opener opener_;
  mutable absl::Mutex mu_;
  MonotonicCondVar cv_;
  std::vector<std::unique_ptr<T>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// The pool of msgqd's MySQL connections.
class MysqlPool : public BoundedPool<MysqlConnection> {
 public:
  MysqlPool(PoolOptions options, MysqlOptions mysql);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_POOL_H_
