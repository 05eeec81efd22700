#include "engine/lease/lease_keeper.h"

#include <optional>
#include <utility>
#include <vector>

#include "common/log.h"
#include "engine/lease/lease_plan.h"
#include "engine/lease/lease_retry.h"

namespace msgq {

LeaseKeeper::LeaseKeeper(Options options,
                         std::unique_ptr<MysqlLeaseStore> store, Clock* clock,
                         Tables tables)
    : OwnershipKeeper(options.lease / 5),
      options_(std::move(options)),
      store_(std::move(store)),
      clock_(clock),
      tables_(std::move(tables)),
      watch_(options_.self, options_.lease) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

absl::Status LeaseKeeper::Check() {
  absl::Status s = store_->Check();
  if (s.ok()) {
    absl::MutexLock lock(&mu_);
    prepared_ = true;
  }
  // Not a refusal: MySQL cannot be reached, or aborted a statement again
  // and again (Galera, lease_retry.h). The rounds keep trying.
  return msgq::IsUnavailable(s) || s.code() == absl::StatusCode::kAborted
             ? absl::OkStatus()
             : s;
}

void LeaseKeeper::Leave() {
  for (auto& [name, manager] : tables_()) manager->Disown();
  if (absl::Status s = store_->Leave(options_.self); !s.ok()) {
    LogWarning(
        "leases: could not hand the tables over at stop (they free "
        "themselves when the lease runs out): ",
        s.message());
  }
}

void LeaseKeeper::Round() {
  Managers tables = tables_();
  const absl::Time t0 = clock_->MonotonicNow();
  absl::StatusOr<LeaseView> view = Renew();
  if (!view.ok()) return;
  // After the reads: every version in `view` was written before now.
  watch_.Observe(*view, clock_->MonotonicNow());
  std::set<std::string> lapsed;
  for (const LeaseRow& row : view->leases) {
    if (watch_.Table(row.table).state == TableLease::State::kLapsed) {
      lapsed.insert(row.table);
    }
  }
  std::set<std::string> releasing;
  std::optional<std::set<std::string>> owned;
  {
    absl::MutexLock lock(&mu_);
    view_ = *view;
    lapsed_ = std::move(lapsed);
    releasing = releasing_;
    if (granted_) owned = owned_;
    granted_ = true;
  }
  const std::set<std::string> held =
      Grant(*view, tables, releasing, owned, t0 + options_.lease * 3 / 4);
  Rebalance(held, tables, releasing);
}

absl::StatusOr<LeaseView> LeaseKeeper::Renew() {
  bool prepared = false;
  {
    absl::MutexLock lock(&mu_);
    prepared = prepared_;
  }
  absl::Status failed;
  if (!prepared) failed = store_->Prepare();
  absl::StatusOr<LeaseView> view =
      failed.ok()
          ? store_->Renew(options_.self, options_.address, options_.lease)
          : absl::StatusOr<LeaseView>(failed);
  bool first_error = false;
  bool first_lost = false;
  bool recovered = false;
  {
    absl::MutexLock lock(&mu_);
    if (!view.ok() && RenewLostRace(view.status())) {
      // MySQL answers: the renewal lost a race with another instance's
      // write (lease_retry.h). The grants run out unless the next renewal
      // succeeds; the ownership shown stays what it was.
      first_lost = !lost_race_;
      lost_race_ = true;
    } else if (!view.ok()) {
      first_error = error_.ok();
      error_ = view.status();
    } else {
      lost_race_ = false;
      prepared_ = true;
      recovered = !error_.ok();
      error_ = absl::OkStatus();
    }
  }
  if (first_error) {
    LogWarning(
        "leases: cannot renew (tables stop sending when their grant runs "
        "out): ",
        view.status().message());
  }
  if (first_lost) {
    LogInfo("leases: a renewal lost a race with another instance's write (",
            view.status().message(),
            "); tables stop sending when their grant runs out unless the next "
            "renewal succeeds");
  }
  if (recovered) LogInfo("leases: renewing again");
  return view;
}

std::set<std::string> LeaseKeeper::Grant(
    const LeaseView& view, const Managers& tables,
    const std::set<std::string>& releasing,
    const std::optional<std::set<std::string>>& owned, absl::Time until) {
  std::set<std::string> held;
  for (const LeaseRow& row : view.leases) {
    if (row.owner == options_.self) held.insert(row.table);
  }
  for (auto& [name, manager] : tables) {
    if (held.contains(name) && !releasing.contains(name)) {
      // Held under this id since the last round, or, at the first round,
      // by a predecessor with this id that is gone (lease_keeper.h): nobody
      // else sent the table meanwhile. Otherwise this lease is one whose
      // Take() answer was lost: wait, it may have been another's.
      manager->Own(until,
                   /*images_wait=*/owned.has_value() && !owned->contains(name));
    } else {
      manager->Disown();
    }
  }
  return held;
}

void LeaseKeeper::Rebalance(const std::set<std::string>& held, Managers& tables,
                            std::set<std::string>& releasing) {
  std::vector<std::string> release_now;
  for (auto it = releasing.begin(); it != releasing.end();) {
    auto t = tables.find(*it);
    if (!held.contains(*it)) {
      it = releasing.erase(it);  // gone already
    } else if (t == tables.end() || t->second->Quiesced()) {
      release_now.push_back(*it);
      it = releasing.erase(it);
    } else {
      ++it;
    }
  }
  if (!release_now.empty()) {
    if (absl::Status s = store_->Release(release_now, options_.self); !s.ok()) {
      releasing.insert(release_now.begin(), release_now.end());
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, manager] : tables) names.push_back(name);
  const LeasePlan plan = PlanLeases(names, watch_, 2 * options_.lease);
  for (const std::string& name : plan.release) {
    if (releasing.insert(name).second) tables[name]->Disown();
  }
  std::set<std::string> owned(plan.keep.begin(), plan.keep.end());
  for (const std::string& name : plan.acquire) {
    const TableLease seen = watch_.Table(name);
    const absl::Time t1 = clock_->MonotonicNow();
    absl::StatusOr<bool> taken = store_->Take(
        name, options_.self, options_.lease, seen.owner, seen.version);
    if (!taken.ok() || !*taken) continue;
    // Another instance may have sent its rows: images only for changes
    // after this owner's first read (RowReconciler rule 6).
    tables[name]->Own(t1 + options_.lease * 3 / 4, /*images_wait=*/true);
    owned.insert(name);
    LogInfo("leases: took `", name, "`");
  }
  // A standby says once which instance serves each table it does not: its
  // own subscribers of that table receive nothing meanwhile.
  for (const std::string& name : names) {
    const std::string owner = watch_.Table(name).owner;
    if (owned.contains(name) || owner.empty() || owner == options_.self) {
      standby_for_.erase(name);
      continue;
    }
    auto [it, inserted] = standby_for_.try_emplace(name, owner);
    if (!inserted && it->second == owner) continue;
    it->second = owner;
    LogInfo("leases: `", name, "` is served by ", owner,
            "; this msgqd stands by for it (its subscribers here receive its "
            "messages only after it takes the table over)");
  }
  absl::MutexLock lock(&mu_);
  releasing_ = std::move(releasing);
  owned_ = std::move(owned);
}

TableOwnership LeaseKeeper::Ownership(const std::string& table) const {
  absl::MutexLock lock(&mu_);
  TableOwnership out;
  out.state = owned_.contains(table) ? "owner" : "standby";
  if (!error_.ok()) {
    out.state = "unknown";
    out.error = std::string(error_.message());
  }
  for (const LeaseRow& row : view_.leases) {
    if (row.table != table) continue;
    if (!row.owner.empty() && !lapsed_.contains(table)) {
      out.owner = row.owner;
      out.since = row.since;
      out.expires = row.expires;
    }
  }
  // Taken after the last read: the next renewal reads its times back.
  if (out.state == "owner" && out.owner.empty()) out.owner = options_.self;
  return out;
}

}  // namespace msgq
