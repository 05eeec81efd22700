// MessageManager's requests that write: acks, nacks and extends, checked
// (ids, delays, sizes), admitted within the bounds on waiting work and
// queued for the next round (acks for the ack lane when there is one). How
// their writes settle is in message_manager_rounds.cc (acks) and
// message_manager_failures.cc (nacks, extends). The class contract is in
// message_manager.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/directives.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {
namespace {

// Reasons longer than this are cut before they are kept in memory (the
// store cuts them again to the last_error column's size).
constexpr size_t kMaxReasonBytes = 65535;

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

}  // namespace

void MessageManager::Ack(std::vector<std::string> ids, CountCallback done) {
  if (ids.size() > static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many ids in one ack: ", ids.size(), " > ",
                     options_.max_ids_per_ack)));
    return;
  }
  if (absl::Status s = CanonicalizeIds(table_.id_kind, ids); !s.ok()) {
    done(s);
    return;
  }
  if (ids.empty()) {
    done(int64_t{0});
    return;
  }
  absl::Status refused;
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(ids.size());
    if (refused.ok()) {
      // Never send again what is being acked, and don't postpone it.
      bool freed = false;
      bool gate_freed = false;  // msgq_concurrency_by slots
      for (const std::string& id : ids) {
        cache_.RemoveQueued(id);
        freed |= dispatcher_.Release(id);  // prefetch slots
        gate_freed |= gate_.Release(id);
      }
      requests_.Add(
          PendingAck{reconciler_.BeginAck(std::move(ids)), std::move(done)});
      WakeAcksLocked();
      GateFreedLocked(gate_freed);
      if (freed || gate_freed) sends = PumpLocked();
    }
  }
  if (!refused.ok()) done(refused);
  Deliver(std::move(sends));
}

absl::Status MessageManager::AdmitLocked(size_t ids) {
  mu_.AssertHeld();
  if (stopping_) {
    return absl::UnavailableError(
        absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
  }
  if (scheduler_.Waiting(clock_->MonotonicNow())) {
    return absl::UnavailableError(
        absl::StrCat("MySQL is unavailable for ", log_name_, ": retry"));
  }
  return requests_.Admit(ids, log_name_);
}

void MessageManager::Nack(NackRequest request, NackCallback done) {
  if (request.deliveries.size() >
      static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "too many deliveries in one nack: ", request.deliveries.size(), " > ",
        options_.max_ids_per_ack)));
    return;
  }
  if (request.delay.has_value() &&
      (*request.delay < absl::ZeroDuration() ||
       *request.delay > absl::Seconds(kMaxDurationSeconds))) {
    done(absl::InvalidArgumentError(
        absl::StrCat("nack delay must be between 0 and ", kMaxDurationSeconds,
                     " seconds, got ", absl::ToDoubleSeconds(*request.delay))));
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
  if (group.reason.size() > kMaxReasonBytes)
    group.reason.resize(kMaxReasonBytes);
  std::vector<std::string> ids;
  ids.reserve(request.deliveries.size());
  for (Delivery& d : request.deliveries) {
    msgq::Nack n;
    n.epoch = d.epoch;
    if (!request.dead) {
      n.time_next = now + (request.delay.has_value()
                               ? absl::ToInt64Nanoseconds(*request.delay)
                               : RedeliveryBackoffNanos(table_.settings,
                                                        d.epoch, jitter));
    }
    ids.push_back(d.id);
    n.id = std::move(d.id);
    group.nacks.push_back(std::move(n));
  }
  absl::Status refused;
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    refused = AdmitLocked(ids.size());
    if (refused.ok()) {
      bool freed = false;  // prefetch slots
      for (const std::string& id : ids) freed |= dispatcher_.Release(id);
      bool gate_freed = false;  // msgq_concurrency_by slots
      for (const msgq::Nack& n : group.nacks) {
        gate_freed |= gate_.ReleaseNacked(n.id, n.epoch);
      }
      GateFreedLocked(gate_freed);
      freed |= gate_freed;
      // The nack decides the row's next time; a queued copy is a newer
      // delivery's and stays (the epoch check keeps this nack off it).
      requests_.Add(PendingNack{reconciler_.BeginHold(std::move(ids)),
                                std::move(group), std::move(done)});
      WakeLocked();
      if (freed) sends = PumpLocked();
    }
  }
  if (!refused.ok()) done(refused);
  Deliver(std::move(sends));
}

void MessageManager::Extend(std::vector<Delivery> deliveries,
                            absl::Duration duration, CountCallback done) {
  if (deliveries.size() > static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many deliveries in one extend: ", deliveries.size(),
                     " > ", options_.max_ids_per_ack)));
    return;
  }
  if (duration <= absl::ZeroDuration() || duration > options_.max_extend) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "extend duration must be more than 0 and at most ",
        absl::ToDoubleSeconds(options_.max_extend),
        " seconds (--max_extend), got ", absl::ToDoubleSeconds(duration))));
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
      for (const auto& [id, epoch] : group.deliveries) {
        dispatcher_.Extended(id);  // its subscriber is alive
        gate_.Extend(id, epoch, group.time_next);
      }
      requests_.Add(PendingExtend{reconciler_.BeginHold(std::move(ids)),
                                  std::move(group), std::move(done)});
      WakeLocked();
      return;
    }
  }
  done(refused);
}

}  // namespace msgq
