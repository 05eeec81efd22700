// The fixture of MessageManager's unit tests (test-only): an in-memory
// store, a fake clock and fixed jitter; no MySQL, no sleeps, no threads
// (RunOnce() is driven directly, Start() is never called).
//
// Helpers never use ASSERT_* (a fatal failure inside a helper only returns
// from the helper); they record failures with ADD_FAILURE and leave the
// fixture usable, and Init() is called as ASSERT_NO_FATAL_FAILURE(Init()).
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_FIXTURE_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_FIXTURE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/message_table.h"
#include "engine/queue/db_readings.h"
#include "engine/queue/fake_message_store.h"
#include "engine/queue/manager/message_manager.h"
#include "engine/queue/redelivery_backoff.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::manager_test {

using Op = FakeMessageStore::Op;

constexpr int64_t kMilli = 1'000'000;

inline absl::Time Start() { return absl::FromUnixSeconds(1'700'000'000); }

// Records what the manager hands it. `completed` counts the batches the test
// has reported back with OnSendDone.
class FakeSubscriber final : public Subscriber {
 public:
  void Send(uint64_t /*sequence*/, MessageBatch batch) override {
    if (close_calls != 0) ADD_FAILURE() << "Send after Close";
    batches.push_back(std::move(batch));
  }
  void Close(absl::Status status) override {
    ++close_calls;
    closed = std::move(status);
  }

  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const MessageBatch& b : batches) {
      for (const Message& m : b) out.push_back(m.id);
    }
    return out;
  }
  std::vector<std::vector<std::string>> batch_ids() const {
    std::vector<std::vector<std::string>> out;
    for (const MessageBatch& b : batches) {
      std::vector<std::string>& ids = out.emplace_back();
      for (const Message& m : b) ids.push_back(m.id);
    }
    return out;
  }

  std::vector<MessageBatch> batches;
  size_t completed = 0;
  int close_calls = 0;
  absl::Status closed;
};

// A fixed factor that counts its draws.
class CountingJitter final : public JitterSource {
 public:
  explicit CountingJitter(double factor) : factor_(factor) {}
  double Next() override {
    ++calls;
    return factor_;
  }
  int calls = 0;

 private:
  const double factor_;
};

// Readings of MySQL's clock taken when the test says (Take), as the
// engine's DbClock takes them for the manager.
class FakeDbReadings final : public DbReadings {
 public:
  std::optional<Reading> Last() const override { return last; }
  void Request(Waiter* waiter) override {
    ++requests;
    waiting.insert(waiter);
  }
  void Cancel(Waiter* waiter) override { waiting.erase(waiter); }
  // A reading: MySQL's clock said `db_ns` to a query sent at `sent`; wakes
  // every waiter.
  void Take(int64_t db_ns, absl::Time sent) {
    last = Reading{db_ns, sent};
    std::set<Waiter*> wake;
    wake.swap(waiting);
    for (Waiter* w : wake) w->ReadingTaken();
  }

  std::optional<Reading> last;
  std::set<Waiter*> waiting;
  int requests = 0;
};

struct AckOutcome {
  int calls = 0;
  absl::StatusOr<int64_t> result = absl::UnknownError("not called");
};

struct TableConfig {
  int batch_size = 10;
  int cache_size = 100;
  int ack_wait_s = 30;
  int purge_after_s = 3600;
  int poller_interval_s = 3600;
  std::string extra;  // more directives, e.g. ",vt_min_backoff=1"
  // Also msgq's optional columns: time_created, time_dead, last_error.
  bool failure_columns = false;
  // RANGE-partitioned on time_created (MessageTable::purge_by_partition).
  bool purge_by_partition = false;
};

inline std::string Comment(const TableConfig& c) {
  return absl::StrCat("vitess_message,vt_ack_wait=", c.ack_wait_s,
                      ",vt_purge_after=", c.purge_after_s,
                      ",vt_batch_size=", c.batch_size,
                      ",vt_cache_size=", c.cache_size,
                      ",vt_poller_interval=", c.poller_interval_s, c.extra);
}

inline std::vector<std::string> Range(int first, int last) {
  std::vector<std::string> ids;
  for (int i = first; i <= last; ++i) ids.push_back(absl::StrCat(i));
  return ids;
}

inline std::vector<std::string> PostponedIds(const WriteBatch& batch) {
  std::vector<std::string> ids;
  for (const Postponement& p : batch.postpones) ids.push_back(p.id);
  return ids;
}

class MessageManagerTest : public ::testing::Test {
 protected:
  void Init(TableConfig config = {}, MessageManager::Options options = {},
            JitterSource* jitter = nullptr) {
    // Retry delays exactly as documented (their jitter is tested in
    // round_scheduler_test.cc).
    options.retry_jitter = 0;
    // Postpones in the round after the send, unless a test sets a grace.
    options.postpone_grace = postpone_grace_;
    auto store = std::make_unique<FakeMessageStore>();
    store_ = store.get();
    std::vector<Column> columns = {
        {"id", "bigint", "bigint(20)"},
        {"priority", "tinyint", "tinyint(4)"},
        {"epoch", "bigint", "bigint(20)"},
        {"time_next", "bigint", "bigint(20)"},
        {"time_acked", "bigint", "bigint(20)"},
        {"payload", "blob", "blob"},
    };
    if (config.failure_columns) {
      columns.push_back({"time_created", "bigint", "bigint(20)"});
      columns.push_back({"time_dead", "bigint", "bigint(20)"});
      columns.push_back({"last_error", "varchar", "varchar(255)"});
    }
    // msgq_concurrency_by=k (message_manager_concurrency_test.cc): the load
    // checks the key column (the fake store keeps keys in Row::key).
    if (absl::StrContains(config.extra, "msgq_concurrency_by=k,")) {
      columns.push_back({"k", "varchar", "varchar(64)"});
    }
    absl::StatusOr<MessageTable> table =
        BuildMessageTable("db", "queue", Comment(config), columns);
    ASSERT_TRUE(table.ok()) << table.status();
    table->purge_by_partition = config.purge_by_partition;
    store_->set_schema(FakeMessageStore::SchemaOf(*table));
    std::unique_ptr<FakeMessageStore> ack_store;
    if (with_ack_lane_) {
      ack_store = std::make_unique<FakeMessageStore>();
      ack_store_ = ack_store.get();
      ack_store_->set_schema(store_->schema());
    }
    manager_ = std::make_unique<MessageManager>(
        *std::move(table), std::move(store), &clock_,
        jitter != nullptr ? jitter : &jitter_, options, nullptr,
        std::move(ack_store), readings_);
  }

  int64_t Now() const { return clock_.NowNanos(); }
  void Advance(absl::Duration d) { clock_.Advance(d); }
  void RunOnce() { manager_->RunOnce(); }

  // Unacked rows due one second ago, in id order.
  void PutDue(const std::vector<std::string>& ids, int64_t priority = 0) {
    for (const std::string& id : ids) {
      store_->PutDue(id, Now() - kSecond, priority);
    }
  }

  std::shared_ptr<FakeSubscriber> Subscribe() {
    auto sub = std::make_shared<FakeSubscriber>();
    const absl::Status status = manager_->Subscribe(sub);
    EXPECT_TRUE(status.ok()) << status;
    return sub;
  }

  // Reports every batch `sub` holds as written, including batches that
  // arrive while doing so.
  void Complete(FakeSubscriber& sub) {
    while (sub.completed < sub.batches.size()) {
      ++sub.completed;
      manager_->OnSendDone(&sub);
    }
  }
  // Reports the oldest outstanding batch of `sub` as written.
  void CompleteOne(FakeSubscriber& sub) {
    if (sub.completed >= sub.batches.size()) {
      ADD_FAILURE() << "no outstanding batch to complete";
      return;
    }
    ++sub.completed;
    manager_->OnSendDone(&sub);
  }

  std::shared_ptr<AckOutcome> Ack(std::vector<std::string> ids) {
    auto outcome = std::make_shared<AckOutcome>();
    manager_->Ack(std::move(ids), [outcome](absl::StatusOr<int64_t> r) {
      ++outcome->calls;
      outcome->result = std::move(r);
    });
    return outcome;
  }

  MessageManager::Stats stats() const { return manager_->stats(); }

  FakeClock clock_{Start()};
  FixedJitter jitter_{1.0};
  FakeMessageStore* store_ = nullptr;  // owned by manager_
  // Set before Init(): the manager gets an ack lane writing to ack_store_,
  // a second fake (its rows are the test's to keep in step with store_).
  bool with_ack_lane_ = false;
  // Set before Init(): Options::postpone_grace.
  absl::Duration postpone_grace_ = absl::ZeroDuration();
  FakeMessageStore* ack_store_ = nullptr;  // owned by manager_
  // Set before Init(): the manager's readings of MySQL's clock (null: the
  // fake clock is MySQL's own).
  DbReadings* readings_ = nullptr;
  std::unique_ptr<MessageManager> manager_;
};

}  // namespace msgq::manager_test

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_FIXTURE_H_
