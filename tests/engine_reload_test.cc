// Engine::Reload driven in-process against a real private MariaDB (no
// msgqd): the binlog is off and the reload interval is an hour, so a reload
// happens exactly when the test calls Reload(), and subscribers are test
// objects attached to the managers directly.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "engine/queue/redelivery_backoff.h"
#include "engine/queue/subscriber.h"
#include "engine/sql/mysql_connection.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

// Records every id it is sent (in order) and reports each batch written at
// once, as a stream that keeps up does. Never acks.
class RecordingSubscriber : public Subscriber {
 public:
  explicit RecordingSubscriber(std::shared_ptr<MessageManager> manager)
      : manager_(std::move(manager)) {}
  void Send(uint64_t, MessageBatch batch) override {
    {
      absl::MutexLock lock(&mu_);
      if (ids_.empty()) first_send_ = absl::Now();
      for (const Message& m : batch) ids_.push_back(m.id);
    }
    manager_->OnSendDone(this);
  }
  void Close(absl::Status status) override {
    absl::MutexLock lock(&mu_);
    closed_.push_back(std::move(status));
  }
  std::vector<std::string> ids() const {
    absl::MutexLock lock(&mu_);
    return ids_;
  }
  std::vector<absl::Status> closed() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }
  // When the first batch came (InfiniteFuture: none yet).
  absl::Time first_send() const {
    absl::MutexLock lock(&mu_);
    return first_send_;
  }

 private:
  const std::shared_ptr<MessageManager> manager_;
  mutable absl::Mutex mu_;
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> closed_ ABSL_GUARDED_BY(mu_);
  absl::Time first_send_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

class EngineReloadTest : public MsgqTest {
 protected:
  Engine::Options EngineOptions() const {
    Engine::Options options;
    options.mysql = db_->mysql_options();
    options.databases = {"msgq"};
    options.reload_interval = absl::Hours(1);  // only the test reloads
    options.binlog = false;                    // no reset from the binlog
    return options;
  }

  std::shared_ptr<MessageManager> Manager(Engine& engine) {
    absl::StatusOr<std::shared_ptr<MessageManager>> m =
        engine.Find("msgq", "q");
    if (!m.ok()) {
      ADD_FAILURE() << m.status();
      return nullptr;
    }
    return *m;
  }

  // Holds every row of msgq.q with SELECT ... FOR UPDATE until ROLLBACK.
  std::unique_ptr<MysqlConnection> LockAllRows(size_t rows) {
    auto locker = db_->Connect();
    if (!locker.ok()) {
      ADD_FAILURE() << locker.status();
      return nullptr;
    }
    absl::StatusOr<uint64_t> begun = (*locker)->Execute("BEGIN");
    absl::StatusOr<QueryResult> locked =
        (*locker)->Query("SELECT id FROM msgq.q FOR UPDATE");
    if (!begun.ok() || !locked.ok() || locked->rows.size() != rows) {
      ADD_FAILURE() << begun.status() << " " << locked.status();
      return nullptr;
    }
    return *std::move(locker);
  }

  // Rows 1-5 of `q` sent to one subscriber of `engine`'s manager, their
  // postpones held back by the row locks of `*locker`.
  struct LockedSends {
    std::unique_ptr<MysqlConnection> locker;
    std::shared_ptr<MessageManager> manager;
    std::shared_ptr<RecordingSubscriber> subscriber;
  };
  void SendLockedRows(Engine& engine, LockedSends* out) {
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
    ASSERT_TRUE(engine.Start().ok());
    out->locker = LockAllRows(5);
    ASSERT_NE(out->locker, nullptr);
    out->manager = Manager(engine);
    ASSERT_NE(out->manager, nullptr);
    out->subscriber = std::make_shared<RecordingSubscriber>(out->manager);
    ASSERT_TRUE(out->manager->Subscribe(out->subscriber).ok());
    ASSERT_TRUE(Eventually(
        [&] { return out->manager->stats().locked_rows_waiting == 5; },
        absl::Seconds(10)));
  }

  SeededJitter jitter_{7};
};

std::vector<std::string> Range(int from, int to) {
  std::vector<std::string> ids;
  for (int i = from; i <= to; ++i) ids.push_back(absl::StrCat(i));
  return ids;
}

// A reload never runs two managers on one table. The old manager has sent
// ids 1..20 and its postpone of them is stuck (another transaction holds
// their row locks; a poll's consistent read is not blocked by them). The reload
// must not start the successor before the old manager's postpone committed: a
// successor that polled meanwhile would read the 20 rows as still due and send
// them again, well inside their 30 s ack wait. Fails (B receives 1..20) if
// Reload() starts the successor before it stops the retired manager.
TEST_F(EngineReloadTest, SuccessorStartsOnlyAfterThePredecessorsPostpones) {
  const std::string settings = "vt_ack_wait=30,vt_poller_interval=30";
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", settings));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 20));
  Engine engine(EngineOptions(), RealClock::Get(), &jitter_);
  ASSERT_TRUE(engine.Start().ok());
  // Changed now, seen by the test's Reload() below (DDL first: the row
  // locks taken next would make it wait).
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("ALTER TABLE msgq.q COMMENT '",
                        MessageComment(settings + ",vt_batch_size=4"), "'")));
  auto locker = db_->Connect();
  ASSERT_TRUE(locker.ok()) << locker.status();
  ASSERT_TRUE((*locker)->Execute("BEGIN").ok());
  auto locked = (*locker)->Query("SELECT id FROM msgq.q FOR UPDATE");
  ASSERT_TRUE(locked.ok()) << locked.status();
  ASSERT_EQ(locked->rows.size(), 20u);

  std::shared_ptr<MessageManager> old = Manager(engine);
  ASSERT_NE(old, nullptr);
  auto a = std::make_shared<RecordingSubscriber>(old);
  ASSERT_TRUE(old->Subscribe(a).ok());
  ASSERT_TRUE(
      Eventually([&] { return a->ids().size() >= 20; }, absl::Seconds(10)))
      << a->ids().size();
  // Sent, and the postpone is owed (blocked on the row locks).
  EXPECT_EQ(old->stats().in_flight, 20);
  EXPECT_EQ(old->stats().postponed, 0);

  absl::Status reloaded = absl::UnknownError("not run");
  std::thread reloader([&] { reloaded = engine.Reload(); });
  std::shared_ptr<MessageManager> successor;
  ASSERT_TRUE(Eventually(
      [&] {
        successor = Manager(engine);
        return successor != nullptr && successor != old;
      },
      absl::Seconds(10)));
  // A new subscriber (a client reconnecting) on the successor: its first
  // poll, if it ran now, would see ids 1..20 due.
  auto b = std::make_shared<RecordingSubscriber>(successor);
  ASSERT_TRUE(successor->Subscribe(b).ok());
  // Nothing may arrive while the old manager's postpone is pending; this
  // waits the full 3 s when the code is right.
  EXPECT_FALSE(Eventually([&] { return !b->ids().empty(); }, absl::Seconds(3)))
      << "received " << b->ids().size() << " while the postpone was pending";
  EXPECT_EQ(successor->stats().polls, 0);
  ASSERT_TRUE((*locker)->Execute("ROLLBACK").ok());
  reloader.join();
  EXPECT_TRUE(reloaded.ok()) << reloaded;

  // The successor runs now; after its first poll it still has sent nothing.
  EXPECT_TRUE(Eventually([&] { return successor->stats().polls >= 1; },
                         absl::Seconds(10)));
  EXPECT_THAT(b->ids(), IsEmpty());
  EXPECT_EQ(successor->stats().sent, 0);
  // Each id was sent once, by the old manager, and postponed once.
  std::vector<std::string> got = a->ids();
  std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) {
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  EXPECT_THAT(got, ElementsAreArray(Range(1, 20)));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch = 1"), "20");
  ASSERT_EQ(a->closed().size(), 1u);
  EXPECT_EQ(a->closed()[0].code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(a->closed()[0].message(),
            "message table was changed or dropped: reconnect");
  EXPECT_THAT(b->closed(), IsEmpty());
  successor->Unsubscribe(b.get());
  EXPECT_TRUE(engine.Stop(absl::Seconds(10)));
}

// A row another transaction keeps locked past the ack wait: the
// predecessor retries its postpone until the ack wait of the send runs out
// (not forever), and only then does the successor start, so its sends of
// the same rows are redeliveries after the ack wait, not a second send
// inside it. Without the stop path's retries the successor sends the rows
// at once.
TEST_F(EngineReloadTest, ALockedPostponeHoldsTheSuccessorForItsAckWaitOnly) {
  const std::string settings = "vt_ack_wait=4,vt_poller_interval=30";
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", settings));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  Engine engine(EngineOptions(), RealClock::Get(), &jitter_);
  ASSERT_TRUE(engine.Start().ok());
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("ALTER TABLE msgq.q COMMENT '",
                        MessageComment(settings + ",vt_batch_size=4"), "'")));
  std::unique_ptr<MysqlConnection> locker = LockAllRows(5);
  ASSERT_NE(locker, nullptr);

  std::shared_ptr<MessageManager> old = Manager(engine);
  ASSERT_NE(old, nullptr);
  auto a = std::make_shared<RecordingSubscriber>(old);
  ASSERT_TRUE(old->Subscribe(a).ok());
  ASSERT_TRUE(Eventually([&] { return old->stats().locked_rows_waiting == 5; },
                         absl::Seconds(10)))
      << old->stats().locked_rows_waiting;
  EXPECT_EQ(a->ids().size(), 5u);

  const absl::Status reloaded = engine.Reload();
  const absl::Time reload_done = absl::Now();
  EXPECT_TRUE(reloaded.ok()) << reloaded;
  std::shared_ptr<MessageManager> successor = Manager(engine);
  ASSERT_NE(successor, nullptr);
  ASSERT_NE(successor, old);
  auto b = std::make_shared<RecordingSubscriber>(successor);
  ASSERT_TRUE(successor->Subscribe(b).ok());
  // The rows are still locked: the successor reads them due and sends them,
  // after their ack wait.
  ASSERT_TRUE(
      Eventually([&] { return b->ids().size() >= 5; }, absl::Seconds(10)))
      << b->ids().size();
  EXPECT_GE(reload_done, a->first_send() + absl::Seconds(4));
  EXPECT_LT(reload_done, a->first_send() + absl::Seconds(8));
  EXPECT_GE(b->first_send(), a->first_send() + absl::Seconds(4));
  EXPECT_EQ(old->stats().locked_rows_waiting, 0);

  // Released: the successor's postpones commit; the predecessor's never
  // did, so each row was postponed once.
  ASSERT_TRUE(locker->Execute("ROLLBACK").ok());
  EXPECT_TRUE(Eventually(
      [&] {
        return db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch = 1") ==
               "5";
      },
      absl::Seconds(10)))
      << db_->Scalar("SELECT GROUP_CONCAT(epoch) FROM msgq.q");
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch <> 1"), "0");
  successor->Unsubscribe(b.get());
  EXPECT_TRUE(engine.Stop(absl::Seconds(10)));
}

// Shutdown with rows locked: Stop() waits past its timeout while the
// postpones wait for the lock, writes them once the lock is released and
// returns then, long before their ack wait ran out.
TEST_F(EngineReloadTest, ShutdownWritesLockedPostponesOnceReleased) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=30,vt_poller_interval=30"));
  Engine engine(EngineOptions(), RealClock::Get(), &jitter_);
  LockedSends sends;
  ASSERT_NO_FATAL_FAILURE(SendLockedRows(engine, &sends));
  MysqlConnection* locker = sends.locker.get();
  MessageManager* manager = sends.manager.get();
  RecordingSubscriber* a = sends.subscriber.get();

  absl::Mutex mu;
  bool stopped = false;
  bool finished = false;
  std::thread stopper([&] {
    const bool f = engine.Stop(absl::Seconds(1));
    absl::MutexLock lock(&mu);
    finished = f;
    stopped = true;
  });
  auto is_stopped = [&] {
    absl::MutexLock lock(&mu);
    return stopped;
  };
  // Past the 1 s timeout, still waiting: this waits the full 2 s when the
  // code is right.
  EXPECT_FALSE(Eventually(is_stopped, absl::Seconds(2)));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch = 0"), "5");
  ASSERT_TRUE(locker->Execute("ROLLBACK").ok());
  EXPECT_TRUE(Eventually(is_stopped, absl::Seconds(5)));
  stopper.join();
  EXPECT_TRUE(finished);
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch = 1"), "5");
  EXPECT_EQ(manager->stats().postponed, 5);
  EXPECT_EQ(manager->stats().sent, 5);
}

// Shutdown with rows locked for good: Stop() gives their postpones up once
// the ack wait of their send has run out, and not before (the next owner
// would send them inside it); it does not hang.
TEST_F(EngineReloadTest, ShutdownGivesLockedPostponesUpAfterTheirAckWait) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=4,vt_poller_interval=30"));
  Engine engine(EngineOptions(), RealClock::Get(), &jitter_);
  LockedSends sends;
  ASSERT_NO_FATAL_FAILURE(SendLockedRows(engine, &sends));
  MysqlConnection* locker = sends.locker.get();
  MessageManager* manager = sends.manager.get();
  RecordingSubscriber* a = sends.subscriber.get();
  EXPECT_TRUE(engine.Stop(absl::Seconds(1)));
  const absl::Time stopped = absl::Now();
  EXPECT_GE(stopped, a->first_send() + absl::Seconds(4));
  EXPECT_LT(stopped, a->first_send() + absl::Seconds(8));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch = 0"), "5");
  EXPECT_EQ(manager->stats().postponed, 0);
  EXPECT_EQ(manager->stats().locked_rows_waiting, 0);
  ASSERT_TRUE(locker->Execute("ROLLBACK").ok());
}

// A reload keeps an unchanged table's manager, loads a new table, keeps a
// table that fails to load with its error (only it fails), replaces it once
// fixed, and stops a dropped table's manager, closing its subscribers.
TEST_F(EngineReloadTest, ReloadFollowsNewBrokenFixedAndDroppedTables) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  Engine engine(EngineOptions(), RealClock::Get(), &jitter_);
  ASSERT_TRUE(engine.Start().ok());
  std::shared_ptr<MessageManager> q = Manager(engine);
  ASSERT_NE(q, nullptr);
  auto sub = std::make_shared<RecordingSubscriber>(q);
  ASSERT_TRUE(q->Subscribe(sub).ok());

  // New tables: one fine, one without its `epoch` column.
  ASSERT_NO_FATAL_FAILURE(CreateTable("r"));
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "CREATE TABLE msgq.bad (id bigint PRIMARY KEY, priority tinyint, "
      "time_next bigint, time_acked bigint, message json) COMMENT '",
      MessageComment(), "'")));
  ASSERT_TRUE(engine.Reload().ok());
  EXPECT_EQ(Manager(engine), q);  // unchanged: the same manager
  EXPECT_TRUE(engine.Find("msgq", "r").ok());
  absl::StatusOr<std::shared_ptr<MessageManager>> bad =
      engine.Find("msgq", "bad");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(bad.status().message(),
            "table `msgq`.`bad`: missing required column epoch");
  std::vector<std::string> listed;
  for (const Engine::TableInfo& t : engine.ListTables()) {
    listed.push_back(absl::StrCat(t.name, t.loaded ? "+" : "-", t.error));
  }
  EXPECT_THAT(listed,
              ElementsAre("bad-table `msgq`.`bad`: missing required column "
                          "epoch",
                          "q+", "r+"));

  // Fixed: loaded on the next reload.
  ASSERT_NO_FATAL_FAILURE(
      Exec("ALTER TABLE msgq.bad ADD COLUMN epoch bigint NOT NULL DEFAULT 0"));
  ASSERT_TRUE(engine.Reload().ok());
  EXPECT_TRUE(engine.Find("msgq", "bad").ok());

  // Dropped: NOT_FOUND, and its subscriber closed.
  ASSERT_NO_FATAL_FAILURE(Exec("DROP TABLE msgq.q"));
  ASSERT_TRUE(engine.Reload().ok());
  absl::StatusOr<std::shared_ptr<MessageManager>> gone =
      engine.Find("msgq", "q");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(gone.status().message(), "message table `msgq`.`q` not found");
  ASSERT_EQ(sub->closed().size(), 1u);
  EXPECT_EQ(sub->closed()[0],
            absl::UnavailableError(
                "message table was changed or dropped: reconnect"));
  EXPECT_EQ(q->Subscribe(std::make_shared<RecordingSubscriber>(q)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(engine.Stop(absl::Seconds(10)));
  EXPECT_EQ(engine.Reload().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace msgq::testing
