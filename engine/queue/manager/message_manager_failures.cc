// MessageManager and work that fails: redrives and the dead list
// (requests), how a round's nacks, extends and redrives settle, the dead
// purge and the dead count. Which rows die and the death log's budget are
// the FailurePolicy's (failure_policy.h). The class contract is in
// message_manager.h.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {
namespace {

// ListDead pages.
constexpr int kMaxDeadPage = 10000;

// The time_next each retry of `group` writes, for the reconciler to know
// the binlog's echo of it (deaths write none).
std::vector<Postponement> Retries(const NackGroup& group) {
  std::vector<Postponement> out;
  for (const msgq::Nack& x : group.nacks) {
    if (x.time_next.has_value())
      out.push_back(Postponement{x.id, *x.time_next});
  }
  return out;
}

// Likewise for an extend.
std::vector<Postponement> Extensions(const ExtendGroup& group) {
  std::vector<Postponement> out;
  out.reserve(group.deliveries.size());
  for (const auto& [id, epoch] : group.deliveries) {
    out.push_back(Postponement{id, group.time_next});
  }
  return out;
}

// What to log of `n` messages of `p` that died.
std::string DeathText(const PendingNack& p, int64_t n) {
  if (p.done == nullptr) {  // msgq's own deaths
    // At most kLoggedIds ids per line.
    constexpr size_t kLoggedIds = 10;
    std::vector<std::string> ids;
    for (const msgq::Nack& x : p.group.nacks) {
      if (ids.size() == kLoggedIds) break;
      ids.push_back(x.id);
    }
    const size_t more = p.group.nacks.size() - ids.size();
    return absl::StrCat(p.group.nacks.size() == 1 ? "message " : "messages ",
                        absl::StrJoin(ids, ", "),
                        more > 0 ? absl::StrCat(" and ", more, " more") : "",
                        " died: ", p.group.reason);
  }
  return absl::StrCat(n, n == 1 ? " message" : " messages", " died at a nack",
                      p.group.nacks.front().time_next.has_value()
                          ? " (msgq_max_attempts or msgq_max_age)"
                          : " (dead=true)",
                      p.group.reason.empty() ? "" : ": ", p.group.reason);
}

}  // namespace

void MessageManager::Redrive(std::vector<std::string> ids, bool all,
                             CountCallback done) {
  if (all == !ids.empty()) {
    done(absl::InvalidArgumentError(
        "redrive takes either ids or all, not both and not neither"));
    return;
  }
  if (ids.size() > static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many ids in one redrive: ", ids.size(), " > ",
                     options_.max_ids_per_ack)));
    return;
  }
  if (absl::Status s = CanonicalizeIds(table_.id_kind, ids); !s.ok()) {
    done(s);
    return;
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(ids.size());
    if (refused.ok()) {
      requests_.Add(
          PendingRedrive{RedriveGroup{std::move(ids), all}, std::move(done)});
      WakeLocked();
      return;
    }
  }
  done(refused);
}

void MessageManager::ListDead(std::string after_id, int limit,
                              DeadCallback done) {
  if (limit < 1 || limit > kMaxDeadPage) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "dead list limit must be 1..", kMaxDeadPage, ", got ", limit)));
    return;
  }
  if (!after_id.empty()) {
    absl::StatusOr<std::string> canonical =
        CanonicalId(table_.id_kind, after_id);
    if (!canonical.ok()) {
      done(canonical.status());
      return;
    }
    after_id = *std::move(canonical);
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(0);
    if (refused.ok()) {
      requests_.Add(
          PendingDeadList{std::move(after_id), limit, std::move(done)});
      // Someone looks at the dead: count them at the next purge step.
      failures_.CountSoon(/*dead_list=*/true);
      WakeLocked();
      return;
    }
  }
  done(refused);
}

void MessageManager::SettleNacksLocked(
    const absl::StatusOr<WriteResult>& result, Work& work,
    std::vector<std::function<void()>>& replies, std::vector<Log>& logs) {
  mu_.AssertHeld();
  for (size_t i = 0; i < work.nacks.size(); ++i) {
    PendingNack& p = work.nacks[i];
    absl::StatusOr<NackCount> n =
        !result.ok()               ? absl::StatusOr<NackCount>(result.status())
        : i < result->nacks.size() ? result->nacks[i]
                                   : absl::StatusOr<NackCount>(NackCount{});
    reconciler_.HoldDone(p.ticket, OutcomeOf(n.status()), Retries(p.group),
                         WriteGtid(result));
    const bool own = p.done == nullptr;  // msgq's own deaths
    if (!own) requests_.Settled(p.ticket.ids.size());
    if (n.ok()) {
      counters_.nacked += n->retried;
      counters_.died += n->dead;
      if (counters_.dead >= 0) counters_.dead += n->dead;
      std::optional<int64_t> earliest;
      for (const msgq::Nack& x : p.group.nacks) {
        if (x.time_next.has_value()) {
          earliest = std::min(earliest.value_or(*x.time_next), *x.time_next);
        }
      }
      if (n->retried > 0 && earliest.has_value()) {
        scheduler_.NoteDueAt(*earliest, clock_->MonotonicNow());
      }
      // A line for the messages that died, unless over the minute's budget.
      std::optional<std::string> line;
      if (n->dead > 0) {
        line = failures_.DeathLine(n->dead, DeathText(p, n->dead),
                                   clock_->MonotonicNow());
      }
      if (line.has_value()) {
        logs.push_back(
            std::make_pair("W", absl::StrCat(log_name_, ": ", *line)));
      }
    } else if (own &&
               OutcomeOf(n.status()) == SettlementLedger::Outcome::kPermanent) {
      logs.push_back(StatementFailedLocked("death write", n.status()));
    }
    if (!own) {
      replies.push_back([done = std::move(p.done), n, this]() {
        if (n.ok()) {
          done(n);
        } else {
          done(absl::Status(n.status().code(),
                            absl::StrCat("nack on ", log_name_,
                                         " failed: ", n.status().message())));
        }
      });
    }
  }
}

void MessageManager::SettleGroupsLocked(
    const absl::StatusOr<WriteResult>& result, Work& work,
    std::vector<std::function<void()>>& replies, std::vector<Log>& logs) {
  mu_.AssertHeld();
  SettleNacksLocked(result, work, replies, logs);
  auto count_reply = [this](const char* what, CountCallback done,
                            absl::StatusOr<int64_t> n) {
    return [done = std::move(done), n, what, this]() {
      if (n.ok()) {
        done(n);
      } else {
        done(absl::Status(n.status().code(),
                          absl::StrCat(what, " on ", log_name_,
                                       " failed: ", n.status().message())));
      }
    };
  };
  for (size_t i = 0; i < work.extends.size(); ++i) {
    PendingExtend& p = work.extends[i];
    absl::StatusOr<int64_t> n =
        !result.ok()                 ? absl::StatusOr<int64_t>(result.status())
        : i < result->extends.size() ? result->extends[i]
                                     : absl::StatusOr<int64_t>(int64_t{0});
    reconciler_.HoldDone(p.ticket, OutcomeOf(n.status()), Extensions(p.group),
                         WriteGtid(result));
    requests_.Settled(p.ticket.ids.size());
    if (n.ok() && *n > 0) {
      scheduler_.NoteDueAt(p.group.time_next, clock_->MonotonicNow());
    }
    replies.push_back(count_reply("extend", std::move(p.done), n));
  }
  for (size_t i = 0; i < work.redrives.size(); ++i) {
    PendingRedrive& p = work.redrives[i];
    absl::StatusOr<int64_t> n =
        !result.ok()                  ? absl::StatusOr<int64_t>(result.status())
        : i < result->redrives.size() ? result->redrives[i]
                                      : absl::StatusOr<int64_t>(int64_t{0});
    requests_.Settled(p.group.ids.size());
    if (n.ok() && *n > 0) {
      if (counters_.dead >= 0)
        counters_.dead = std::max<int64_t>(0, counters_.dead - *n);
      scheduler_.RequestPoll();
    }
    replies.push_back(count_reply("redrive", std::move(p.done), n));
  }
}

void MessageManager::DoDeadLists(Work& work, bool mysql_ok) {
  for (PendingDeadList& p : work.dead_lists) {
    absl::StatusOr<std::vector<DeadRow>> rows =
        mysql_ok ? store_->ListDead(p.after_id, p.limit)
                 : absl::StatusOr<std::vector<DeadRow>>(
                       absl::UnavailableError(absl::StrCat(
                           "MySQL is unavailable for ", log_name_, ": retry")));
    if (!rows.ok() && IsUnavailable(rows.status())) mysql_ok = false;
    p.done(std::move(rows));
  }
}

void MessageManager::DoDeadPurge() {
  const TableSettings& s = table_.settings;
  if (s.dead_retention > absl::ZeroDuration()) {
    const int64_t cutoff =
        clock_->NowNanos() - absl::ToInt64Nanoseconds(s.dead_retention);
    absl::StatusOr<int64_t> purged =
        store_->PurgeDead(cutoff, options_.purge_batch);
    Log log;
    {
      absl::MutexLock lock(&mu_);
      if (!purged.ok()) {
        log = StatementFailedLocked("dead purge", purged.status());
      } else if (*purged >= options_.purge_batch) {
        scheduler_.PurgeDone(true);
      }
    }
    Emit(std::move(log));
  }
}

void MessageManager::MaybeCountDead() {
  if (!options_.count_dead) return;
  {
    // The count reads poller_idx's unacked entries: only for tables someone
    // is watching (subscribers, or a dead list asked for), at most once a
    // FailurePolicy::kCountEvery, and at once when the first subscriber comes
    // or a dead list is asked for; msgq's own deaths and redrives keep it
    // current in between. An idle table reads nothing.
    absl::MutexLock lock(&mu_);
    if (!scheduler_.mysql_ok() ||
        !failures_.CountDue(clock_->MonotonicNow(),
                            /*watched=*/!dispatcher_.empty())) {
      return;
    }
  }
  absl::StatusOr<int64_t> dead = store_->CountDead();
  Log log;
  {
    absl::MutexLock lock(&mu_);
    if (dead.ok()) {
      counters_.dead = *dead;
    } else if (dead.status().code() != absl::StatusCode::kUnimplemented) {
      // (A store that cannot count dead rows leaves the count unknown.)
      log = StatementFailedLocked("dead count", dead.status());
    }
  }
  Emit(std::move(log));
}

}  // namespace msgq
