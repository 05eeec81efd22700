#include "engine/engine_group_feed.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace msgq {

GroupFeed::GroupFeed(GroupRow row, int batch_size,
                     int max_batches_per_subscriber)
    : row_(std::move(row)),
      batch_size_(static_cast<size_t>(std::max(batch_size, 1))),
      max_batches_(std::max(max_batches_per_subscriber, 1)),
      ledger_(ParseGtidList(row_.floor_gtid).value_or(GtidList{})),
      written_floor_(FormatGtidList(ledger_.floor())) {}

void GroupFeed::OnRowChanges(const std::vector<RowChange>& changes) {
  std::vector<Send> sends;
  bool first_without_image = false;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    bool offered = false;
    for (const RowChange& c : changes) {
      absl::StatusOr<Gtid> gtid = ParseGtid(c.gtid);
      if (!gtid.ok()) continue;  // not placed: MariaDB names every one
      const bool message =
          c.inserted && !c.deleted && !c.time_acked.has_value();
      if (!message) {
        ledger_.See(*gtid);
        continue;
      }
      if (c.row == nullptr) {
        ledger_.See(*gtid);
        first_without_image |= stats_.no_image++ == 0;
        continue;
      }
      if (!ledger_.Offer(*gtid, c.id)) continue;
      Message m;
      m.id = c.id;
      m.priority = c.priority;
      m.time_next = c.time_next.value_or(0);
      m.time_created = c.time_created;
      m.fair_key = c.fair_key;
      m.row = c.row;
      payloads_.insert_or_assign(c.id, std::move(m));
      ++stats_.offered;
      offered = true;
    }
    if (offered) sends = PumpLocked();
  }
  if (first_without_image) {
    LogTableWarning(row_.keyspace, row_.table, "group \"", row_.name, "\" of `",
                    row_.keyspace, "`.`", row_.table,
                    "`: an insert came without its row image (a transaction "
                    "over the binlog watcher's bounds) and is not delivered "
                    "to the group; reading rows by id is not built yet");
  }
  Deliver(std::move(sends));
}

absl::Status GroupFeed::Subscribe(std::shared_ptr<Subscriber> subscriber,
                                  int max_unacked) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::FailedPreconditionError(
          absl::StrCat("group \"", row_.name, "\" of `", row_.keyspace, "`.`",
                       row_.table, "` is closed"));
    }
    Sub sub;
    sub.subscriber = std::move(subscriber);
    sub.id = next_id_++;
    sub.max_unacked = max_unacked;
    subs_.push_back(std::move(sub));
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
  return absl::OkStatus();
}

GroupFeed::Sub* GroupFeed::FindLocked(const Subscriber* subscriber) {
  mu_.AssertHeld();
  for (Sub& s : subs_) {
    if (s.subscriber.get() == subscriber) return &s;
  }
  return nullptr;
}

void GroupFeed::Unsubscribe(const Subscriber* subscriber) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(subs_.begin(), subs_.end(), [&](const Sub& s) {
      return s.subscriber.get() == subscriber;
    });
    if (it == subs_.end()) return;
    ledger_.ReturnAll(it->id);
    subs_.erase(it);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void GroupFeed::OnSendDone(const Subscriber* subscriber) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    Sub* sub = FindLocked(subscriber);
    if (sub == nullptr) return;
    --sub->outstanding;
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void GroupFeed::OnSendFailed(const Subscriber* subscriber, MessageBatch batch) {
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    Sub* sub = FindLocked(subscriber);
    // A subscriber that left gave everything back already.
    if (sub == nullptr) return;
    std::vector<std::string> ids;
    ids.reserve(batch.size());
    for (const Message& m : batch) ids.push_back(m.id);
    ledger_.Return(sub->id, ids);
    --sub->outstanding;
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

int64_t GroupFeed::Ack(const std::vector<std::string>& ids) {
  int64_t settled = 0;
  std::vector<Send> sends;
  {
    absl::MutexLock lock(&mu_);
    settled = ledger_.Ack(ids);
    // The payloads are kept for exactly the ledger's pending messages.
    if (settled > 0) {
      for (const std::string& id : ids) payloads_.erase(id);
      // Streams capped by max_unacked may have room again.
      sends = PumpLocked();
    }
    stats_.acked += settled;
  }
  Deliver(std::move(sends));
  return settled;
}

std::string GroupFeed::floor() const {
  absl::MutexLock lock(&mu_);
  return FormatGtidList(ledger_.floor());
}

std::optional<std::string> GroupFeed::FloorToWrite() const {
  absl::MutexLock lock(&mu_);
  std::string floor = FormatGtidList(ledger_.floor());
  if (floor == written_floor_) return std::nullopt;
  return floor;
}

void GroupFeed::FloorWritten(const std::string& floor) {
  absl::MutexLock lock(&mu_);
  written_floor_ = floor;
}

void GroupFeed::Close(absl::Status status) {
  std::vector<Sub> subs;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    subs.swap(subs_);
  }
  for (Sub& s : subs) s.subscriber->Close(status);
}

GroupFeed::Stats GroupFeed::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.pending = ledger_.pending();
  s.floor = FormatGtidList(ledger_.floor());
  return s;
}

std::vector<GroupFeed::Send> GroupFeed::PumpLocked() {
  mu_.AssertHeld();
  std::vector<Send> sends;
  bool progress = true;
  while (progress && ledger_.has_queued() && !subs_.empty()) {
    progress = false;
    for (size_t i = 0; i < subs_.size() && ledger_.has_queued(); ++i) {
      Sub& sub = subs_[(next_sub_ + i) % subs_.size()];
      if (sub.outstanding >= max_batches_) continue;
      size_t room = batch_size_;
      if (sub.max_unacked > 0) {
        const size_t held = ledger_.held(sub.id);
        const size_t cap = static_cast<size_t>(sub.max_unacked);
        room = std::min(room, held >= cap ? 0 : cap - held);
      }
      if (room == 0) continue;
      std::vector<GroupLedger::Taken> taken = ledger_.Take(sub.id, room);
      MessageBatch batch;
      batch.reserve(taken.size());
      for (GroupLedger::Taken& t : taken) {
        Message m = payloads_.at(t.id);
        m.epoch = t.sends;
        batch.push_back(std::move(m));
      }
      stats_.sent += static_cast<int64_t>(batch.size());
      ++sub.outstanding;
      sends.push_back(
          Send{sub.subscriber, sub.next_sequence++, std::move(batch)});
      progress = true;
    }
    next_sub_ = (next_sub_ + 1) % subs_.size();
  }
  return sends;
}

void GroupFeed::Deliver(std::vector<Send> sends) {
  for (Send& s : sends) s.subscriber->Send(s.sequence, std::move(s.batch));
}

}  // namespace msgq
