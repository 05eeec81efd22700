// MessageManager's answers for work that fails: nacks, extends, redrives,
// the dead-message list, and msgq's own deaths of rows it reads (too many
// sends, too old, too large). The class contract is in message_manager.h;
// the statements run in rounds (message_manager_rounds.cc).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/directives.h"
#include "engine/queue/message_manager.h"

namespace msgq {
namespace {

using Outcome = SettlementLedger::Outcome;

// Reasons longer than this are cut before they are kept in memory (the
// store cuts them again to the last_error column's size).
constexpr size_t kMaxReasonBytes = 65535;
// ListDead pages.
constexpr int kMaxDeadPage = 10000;

Outcome OutcomeOf(const absl::Status& status) {
  if (status.ok()) return Outcome::kCommitted;
  if (IsUnavailable(status) || status.code() == absl::StatusCode::kAborted) {
    return Outcome::kTransient;
  }
  return Outcome::kPermanent;
}

// Canonical ids of `deliveries`, in place; the first malformed id's error.
absl::Status CanonicalDeliveries(
    IdKind kind, std::vector<MessageManager::Delivery>& deliveries) {
  for (MessageManager::Delivery& d : deliveries) {
    absl::StatusOr<std::string> id = CanonicalId(kind, d.id);
    if (!id.ok()) return id.status();
    d.id = *std::move(id);
  }
  return absl::OkStatus();
}

std::string Seconds(absl::Duration d) {
  return absl::StrCat(absl::ToDoubleSeconds(d));
}

}  // namespace

absl::Status MessageManager::AdmitLocked(size_t ids) {
  if (stopping_) {
    return absl::UnavailableError(
        absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
  }
  if (scheduler_.Waiting(clock_->MonotonicNow())) {
    return absl::UnavailableError(
        absl::StrCat("MySQL is unavailable for ", log_name_, ": retry"));
  }
  const size_t requests = acks_.size() + nacks_.size() + extends_.size() +
                          redrives_.size() + dead_lists_.size();
  if (requests >= static_cast<size_t>(options_.max_pending_acks) ||
      pending_ack_ids_ + ids >
          static_cast<size_t>(options_.max_pending_ack_ids)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many requests waiting for ", log_name_));
  }
  pending_ack_ids_ += ids;
  return absl::OkStatus();
}

bool MessageManager::HasRequestsLocked() const {
  return !acks_.empty() || !nacks_.empty() || !extends_.empty() ||
         !redrives_.empty() || !dead_lists_.empty();
}

void MessageManager::Nack(NackRequest request, NackCallback done) {
  if (request.deliveries.size() >
      static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many deliveries in one nack: ",
                     request.deliveries.size(), " > ",
                     options_.max_ids_per_ack)));
    return;
  }
  if (request.delay.has_value() &&
      (*request.delay < absl::ZeroDuration() ||
       *request.delay > absl::Seconds(kMaxDurationSeconds))) {
    done(absl::InvalidArgumentError(
        absl::StrCat("nack delay must be between 0 and ", kMaxDurationSeconds,
                     " seconds, got ", Seconds(*request.delay))));
    return;
  }
  if (absl::Status s = CanonicalDeliveries(table_.id_kind, request.deliveries);
      !s.ok()) {
    done(s);
    return;
  }
  if (request.deliveries.empty()) {
    done(NackCount{});
    return;
  }
  const int64_t now = clock_->NowNanos();
  const double jitter = jitter_->Next();
  NackGroup group;
  group.reason = std::move(request.reason);
  if (group.reason.size() > kMaxReasonBytes) group.reason.resize(kMaxReasonBytes);
  std::vector<std::string> ids;
  ids.reserve(request.deliveries.size());
  for (Delivery& d : request.deliveries) {
    msgq::Nack n;
    n.epoch = d.epoch;
    if (!request.dead) {
      n.time_next =
          now + (request.delay.has_value()
                     ? absl::ToInt64Nanoseconds(*request.delay)
                     : BackoffNanos(table_.settings, d.epoch, jitter));
    }
    ids.push_back(d.id);
    n.id = std::move(d.id);
    group.nacks.push_back(std::move(n));
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(ids.size());
    if (refused.ok()) {
      // The nack decides the row's next time; a queued copy is a newer
      // delivery's and stays (the epoch check keeps this nack off it).
      nacks_.push_back(PendingNack{ledger_.BeginHold(std::move(ids)),
                                   std::move(group), std::move(done)});
      WakeLocked();
      return;
    }
  }
  done(refused);
}

void MessageManager::Extend(std::vector<Delivery> deliveries,
                            absl::Duration duration, AckCallback done) {
  if (deliveries.size() > static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many deliveries in one extend: ", deliveries.size(),
                     " > ", options_.max_ids_per_ack)));
    return;
  }
  if (duration <= absl::ZeroDuration() || duration > options_.max_extend) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "extend duration must be more than 0 and at most ",
        Seconds(options_.max_extend), " seconds (--max_extend), got ",
        Seconds(duration))));
    return;
  }
  if (absl::Status s = CanonicalDeliveries(table_.id_kind, deliveries);
      !s.ok()) {
    done(s);
    return;
  }
  if (deliveries.empty()) {
    done(int64_t{0});
    return;
  }
  ExtendGroup group;
  group.time_next = clock_->NowNanos() + absl::ToInt64Nanoseconds(duration);
  std::vector<std::string> ids;
  for (Delivery& d : deliveries) {
    ids.push_back(d.id);
    group.deliveries.emplace_back(std::move(d.id), d.epoch);
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(ids.size());
    if (refused.ok()) {
      extends_.push_back(PendingExtend{ledger_.BeginHold(std::move(ids)),
                                       std::move(group), std::move(done)});
      WakeLocked();
      return;
    }
  }
  done(refused);
}

void MessageManager::Redrive(std::vector<std::string> ids, bool all,
                             AckCallback done) {
  if (all == !ids.empty()) {
    done(absl::InvalidArgumentError(
        "redrive takes either ids or all, not both and not neither"));
    return;
  }
  if (ids.size() > static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "too many ids in one redrive: ", ids.size(), " > ",
        options_.max_ids_per_ack)));
    return;
  }
  for (std::string& id : ids) {
    absl::StatusOr<std::string> canonical = CanonicalId(table_.id_kind, id);
    if (!canonical.ok()) {
      done(canonical.status());
      return;
    }
    id = *std::move(canonical);
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(ids.size());
    if (refused.ok()) {
      redrives_.push_back(
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
      dead_lists_.push_back(
          PendingDeadList{std::move(after_id), limit, std::move(done)});
      WakeLocked();
      return;
    }
  }
  done(refused);
}

std::optional<std::string> MessageManager::DeathReasonLocked(
    const Message& m, int64_t now) const {
  const TableSettings& s = table_.settings;
  if (m.WireBytes() > options_.max_message_bytes) {
    return absl::StrCat(
        "row of ", m.WireBytes(), " bytes is larger than the stream limit of ",
        options_.max_message_bytes,
        " bytes (msgqd --max_message_bytes; raise it together with the "
        "clients' gRPC max receive message size)");
  }
  if (s.max_attempts > 0 && m.epoch >= s.max_attempts) {
    return absl::StrCat("not acked after ", m.epoch,
                        " sends (msgq_max_attempts=", s.max_attempts, ")");
  }
  if (s.max_age > absl::ZeroDuration() && m.epoch >= 1 &&
      m.time_created > 0 &&
      now - m.time_created > absl::ToInt64Nanoseconds(s.max_age)) {
    return absl::StrCat(
        "not acked and first enqueued ",
        std::floor(static_cast<double>(now - m.time_created) / 1e9),
        " s ago (msgq_max_age=", Seconds(s.max_age), ")");
  }
  return std::nullopt;
}

MessageManager::Log MessageManager::DeathLogLocked(int64_t count,
                                                   const std::string& what) {
  const absl::Time mono = clock_->MonotonicNow();
  if (mono - death_log_minute_ >= absl::Minutes(1)) {
    death_log_minute_ = mono;
    death_log_left_ = options_.death_log_lines_per_minute;
  }
  if (death_log_left_ <= 0) {
    deaths_unlogged_ += count;
    return std::nullopt;
  }
  --death_log_left_;
  std::string line = absl::StrCat(log_name_, ": ", what);
  if (deaths_unlogged_ > 0) {
    absl::StrAppend(&line, " (and ", deaths_unlogged_,
                    " earlier deaths not logged: over ",
                    options_.death_log_lines_per_minute, " lines a minute)");
    deaths_unlogged_ = 0;
  }
  return std::make_pair("W", std::move(line));
}

void MessageManager::SettleGroupsLocked(
    const absl::StatusOr<WriteResult>& result, Work& work,
    std::vector<std::function<void()>>& replies, std::vector<Log>& logs) {
  for (size_t i = 0; i < work.nacks.size(); ++i) {
    PendingNack& p = work.nacks[i];
    absl::StatusOr<NackCount> n =
        !result.ok()               ? absl::StatusOr<NackCount>(result.status())
        : i < result->nacks.size() ? result->nacks[i]
                                   : absl::StatusOr<NackCount>(NackCount{});
    ledger_.AckDone(p.ticket, OutcomeOf(n.status()));
    const bool own = p.done == nullptr;  // msgq's own deaths
    if (!own) {
      pending_ack_ids_ -= std::min(pending_ack_ids_, p.ticket.ids.size());
    }
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
        scheduler_.NoteDueAt(*earliest);
      }
      if (n->dead > 0) {
        std::string what;
        if (own) {
          // At most kLoggedIds ids per line.
          constexpr size_t kLoggedIds = 10;
          std::vector<std::string> ids;
          for (const msgq::Nack& x : p.group.nacks) {
            if (ids.size() == kLoggedIds) break;
            ids.push_back(x.id);
          }
          const size_t more = p.group.nacks.size() - ids.size();
          what = absl::StrCat(
              p.group.nacks.size() == 1 ? "message " : "messages ",
              absl::StrJoin(ids, ", "),
              more > 0 ? absl::StrCat(" and ", more, " more") : "", " died: ",
              p.group.reason);
        } else {
          what = absl::StrCat(
              n->dead, n->dead == 1 ? " message" : " messages",
              " died at a nack",
              p.group.nacks.front().time_next.has_value()
                  ? " (msgq_max_attempts or msgq_max_age)"
                  : " (dead=true)",
              p.group.reason.empty() ? "" : ": ", p.group.reason);
        }
        logs.push_back(DeathLogLocked(n->dead, what));
      }
    } else if (own && OutcomeOf(n.status()) == Outcome::kPermanent) {
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
  auto count_reply = [this](const char* what, AckCallback done,
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
    ledger_.AckDone(p.ticket, OutcomeOf(n.status()));
    pending_ack_ids_ -= std::min(pending_ack_ids_, p.ticket.ids.size());
    if (n.ok() && *n > 0) scheduler_.NoteDueAt(p.group.time_next);
    replies.push_back(count_reply("extend", std::move(p.done), n));
  }
  for (size_t i = 0; i < work.redrives.size(); ++i) {
    PendingRedrive& p = work.redrives[i];
    absl::StatusOr<int64_t> n =
        !result.ok()                  ? absl::StatusOr<int64_t>(result.status())
        : i < result->redrives.size() ? result->redrives[i]
                                      : absl::StatusOr<int64_t>(int64_t{0});
    pending_ack_ids_ -= std::min(pending_ack_ids_, p.group.ids.size());
    if (n.ok() && *n > 0) {
      if (counters_.dead >= 0) counters_.dead = std::max<int64_t>(0, counters_.dead - *n);
      scheduler_.RequestPoll();
    }
    replies.push_back(count_reply("redrive", std::move(p.done), n));
  }
}

void MessageManager::DoDeadLists(Work& work, bool mysql_ok) {
  for (PendingDeadList& p : work.dead_lists) {
    absl::StatusOr<std::vector<DeadRow>> rows =
        mysql_ok ? store_->ListDead(p.after_id, p.limit)
                 : absl::StatusOr<std::vector<DeadRow>>(absl::UnavailableError(
                       absl::StrCat("MySQL is unavailable for ", log_name_,
                                    ": retry")));
    if (!rows.ok() && IsUnavailable(rows.status())) mysql_ok = false;
    p.done(std::move(rows));
  }
}

void MessageManager::DoDeadCount() {
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
    if (!purged.ok() && IsUnavailable(purged.status())) return;
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
