#include "engine/sql/mysql_pool.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

struct FakeConn {
  int serial = 0;
  bool is_broken = false;
  bool broken() const { return is_broken; }
};

class BoundedPoolTest : public ::testing::Test {
 protected:
  using Pool = BoundedPool<FakeConn>;

  std::unique_ptr<Pool> MakePool(PoolOptions options) {
    return std::make_unique<Pool>(
        options, [this]() -> absl::StatusOr<std::unique_ptr<FakeConn>> {
          ++opened_;
          if (!fail_open_.ok()) return fail_open_;
          auto c = std::make_unique<FakeConn>();
          c->serial = opened_.load();
          return c;
        });
  }
  // Waits (without sleeping) until `n` callers wait in Borrow.
  static void AwaitWaiters(const Pool& pool, int n) {
    while (pool.waiting() < n) std::this_thread::yield();
  }

  std::atomic<int> opened_{0};
  absl::Status fail_open_;
};

TEST_F(BoundedPoolTest, OpensLazilyAndReusesReturnedConnections) {
  auto pool = MakePool({.max_connections = 2, .max_idle = 2});
  EXPECT_EQ(pool->open(), 0);
  {
    absl::StatusOr<Pool::Lease> a = pool->Borrow(absl::ZeroDuration());
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ((*a)->serial, 1);
    EXPECT_EQ(pool->open(), 1);
  }
  EXPECT_EQ(pool->idle(), 1);
  absl::StatusOr<Pool::Lease> b = pool->Borrow(absl::ZeroDuration());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->serial, 1);  // the same connection again
  EXPECT_EQ(opened_, 1);
}

TEST_F(BoundedPoolTest, NeverOpensMoreThanTheBudget) {
  auto pool = MakePool({.max_connections = 2, .max_idle = 2});
  absl::StatusOr<Pool::Lease> a = pool->Borrow(absl::ZeroDuration());
  absl::StatusOr<Pool::Lease> b = pool->Borrow(absl::ZeroDuration());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  absl::StatusOr<Pool::Lease> c = pool->Borrow(absl::Milliseconds(1));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(),
            "all 2 MySQL connections of the budget are in use");
  EXPECT_EQ(pool->open(), 2);
  EXPECT_EQ(opened_, 2);
}

TEST_F(BoundedPoolTest, AWaiterGetsTheReturnedConnection) {
  auto pool = MakePool({.max_connections = 1, .max_idle = 1});
  absl::StatusOr<Pool::Lease> held = pool->Borrow(absl::ZeroDuration());
  ASSERT_TRUE(held.ok());
  absl::StatusOr<Pool::Lease> got = absl::UnknownError("not yet");
  std::thread waiter([&] { got = pool->Borrow(absl::Seconds(60)); });
  AwaitWaiters(*pool, 1);
  held = absl::UnknownError("returned");  // destroys the lease
  waiter.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->serial, 1);
  EXPECT_EQ(opened_, 1);
}

TEST_F(BoundedPoolTest, BrokenConnectionsAreClosedNotReused) {
  auto pool = MakePool({.max_connections = 1, .max_idle = 1});
  {
    absl::StatusOr<Pool::Lease> a = pool->Borrow(absl::ZeroDuration());
    ASSERT_TRUE(a.ok());
    (*a)->is_broken = true;
  }
  EXPECT_EQ(pool->open(), 0);
  EXPECT_EQ(pool->idle(), 0);
  absl::StatusOr<Pool::Lease> b = pool->Borrow(absl::ZeroDuration());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->serial, 2);
}

// A connection that broke while idle (e.g. went stale when the MySQL primary
// moved) is never handed out: its slot goes to a new one.
TEST_F(BoundedPoolTest, ConnectionsThatBrokeWhileIdleAreReplaced) {
  auto pool = MakePool({.max_connections = 1, .max_idle = 1});
  FakeConn* idle = nullptr;
  {
    absl::StatusOr<Pool::Lease> a = pool->Borrow(absl::ZeroDuration());
    ASSERT_TRUE(a.ok());
    idle = a->get();
  }
  ASSERT_EQ(pool->idle(), 1);
  idle->is_broken = true;
  absl::StatusOr<Pool::Lease> b = pool->Borrow(absl::ZeroDuration());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->serial, 2);
  EXPECT_EQ(opened_, 2);
  EXPECT_EQ(pool->open(), 1);
  EXPECT_EQ(pool->idle(), 0);
}

// A connection the server or the kernel closed while idle (a restart, a
// dead link found by TCP keepalive) is replaced at Borrow instead of failing
// the borrower's first statement; a live one is reused.
struct ClosableConn {
  int serial = 0;
  bool is_closed = false;
  bool broken() const { return false; }
  bool Closed() const { return is_closed; }
};

TEST(BoundedPoolClosedTest, IdleConnectionsClosedMeanwhileAreReplaced) {
  int opened = 0;
  BoundedPool<ClosableConn> pool(
      {.max_connections = 1, .max_idle = 1},
      [&opened]() -> absl::StatusOr<std::unique_ptr<ClosableConn>> {
        auto c = std::make_unique<ClosableConn>();
        c->serial = ++opened;
        return c;
      });
  ClosableConn* idle = nullptr;
  {
    absl::StatusOr<BoundedPool<ClosableConn>::Lease> a =
        pool.Borrow(absl::ZeroDuration());
    ASSERT_TRUE(a.ok());
    idle = a->get();
  }
  {
    absl::StatusOr<BoundedPool<ClosableConn>::Lease> b =
        pool.Borrow(absl::ZeroDuration());
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)->serial, 1);  // alive: reused
  }
  idle->is_closed = true;
  absl::StatusOr<BoundedPool<ClosableConn>::Lease> c =
      pool.Borrow(absl::ZeroDuration());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->serial, 2);
  EXPECT_EQ(opened, 2);
  EXPECT_EQ(pool.open(), 1);
  EXPECT_EQ(pool.idle(), 0);
}

TEST_F(BoundedPoolTest, IdleConnectionsBeyondMaxIdleAreClosed) {
  auto pool = MakePool({.max_connections = 3, .max_idle = 1});
  {
    absl::StatusOr<Pool::Lease> a = pool->Borrow(absl::ZeroDuration());
    absl::StatusOr<Pool::Lease> b = pool->Borrow(absl::ZeroDuration());
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(b.ok());
  }
  EXPECT_EQ(pool->idle(), 1);
  EXPECT_EQ(pool->open(), 1);
}

TEST_F(BoundedPoolTest, FailedOpenGivesTheSlotBack) {
  auto pool = MakePool({.max_connections = 1, .max_idle = 1});
  fail_open_ = absl::UnavailableError("cannot connect");
  EXPECT_EQ(pool->Borrow(absl::ZeroDuration()).status(),
            absl::UnavailableError("cannot connect"));
  EXPECT_EQ(pool->open(), 0);
  fail_open_ = absl::OkStatus();
  EXPECT_TRUE(pool->Borrow(absl::ZeroDuration()).ok());
}

TEST_F(BoundedPoolTest, CloseWakesWaitersAndRefusesBorrows) {
  auto pool = MakePool({.max_connections = 1, .max_idle = 1});
  absl::StatusOr<Pool::Lease> held = pool->Borrow(absl::ZeroDuration());
  ASSERT_TRUE(held.ok());
  absl::Status waited;
  std::thread waiter(
      [&] { waited = pool->Borrow(absl::Seconds(60)).status(); });
  AwaitWaiters(*pool, 1);
  pool->Close();
  waiter.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(pool->Borrow(absl::ZeroDuration()).status().code(),
            absl::StatusCode::kCancelled);
  held = absl::UnknownError("returned after close");
  EXPECT_EQ(pool->open(), 0);
}

TEST_F(BoundedPoolTest, ManyThreadsStayWithinTheBudget) {
  auto pool = MakePool({.max_connections = 3, .max_idle = 3});
  std::vector<std::thread> threads;
  std::atomic<int> in_use{0};
  std::atomic<int> most{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<Pool::Lease> l = pool->Borrow(absl::Seconds(60));
        ASSERT_TRUE(l.ok()) << l.status();
        const int now = ++in_use;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --in_use;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_LE(opened_, 3);
  EXPECT_EQ(pool->open(), pool->idle());
}

}  // namespace
}  // namespace msgq
