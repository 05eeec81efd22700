#include "engine/lease/lease_keeper.h"

#include <utility>
#include <vector>

#include "engine/lease/lease_plan.h"
#include "engine/log.h"

namespace msgq {

LeaseKeeper::LeaseKeeper(Options options,
                         std::unique_ptr<MysqlLeaseStore> store, Clock* clock,
                         Tables tables)
    : options_(std::move(options)),
      store_(std::move(store)),
      clock_(clock),
      tables_(std::move(tables)) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void LeaseKeeper::Wake() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

void LeaseKeeper::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  for (auto& [name, manager] : tables_()) manager->Disown();
  if (absl::Status s = store_->Leave(options_.self); !s.ok()) {
    LogWarning(
        "leases: could not hand the tables over at stop (they free "
        "themselves when the lease runs out): ",
        s.message());
  }
}

void LeaseKeeper::Run() {
  const absl::Duration every = options_.lease / 5;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || woken_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), every);
      if (stopping_) return;
      woken_ = false;
    }
    Round();
  }
}

void LeaseKeeper::Round() {
  bool prepared = false;
  {
    absl::MutexLock lock(&mu_);
    prepared = prepared_;
  }
  absl::Status failed;
  if (!prepared) failed = store_->Prepare();
  std::map<std::string, std::shared_ptr<MessageManager>> tables = tables_();
  const absl::Time t0 = clock_->MonotonicNow();
  const absl::Duration trust = options_.lease * 3 / 4;
  absl::StatusOr<LeaseView> view =
      failed.ok()
          ? store_->Renew(options_.self, options_.address, options_.lease)
          : absl::StatusOr<LeaseView>(failed);
  if (!view.ok()) {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = error_.ok();
      error_ = view.status();
    }
    if (first) {
      LogWarning(
          "leases: cannot renew (tables stop sending when their grant "
          "runs out): ",
          view.status().message());
    }
    return;
  }
  std::set<std::string> releasing;
  bool recovered = false;
  {
    absl::MutexLock lock(&mu_);
    prepared_ = true;
    recovered = !error_.ok();
    error_ = absl::OkStatus();
    view_ = *view;
    releasing = releasing_;
  }
  if (recovered) LogInfo("leases: renewing again");
  // 2. Grants from what MySQL says.
  std::set<std::string> held;
  for (const LeaseRow& row : view->leases) {
    if (row.owner == options_.self && row.expires > view->now) {
      held.insert(row.table);
    }
  }
  std::vector<std::string> names;
  for (auto& [name, manager] : tables) {
    names.push_back(name);
    if (held.contains(name) && !releasing.contains(name)) {
      manager->Own(t0 + trust);
    } else {
      manager->Disown();
    }
  }
  // 3. Hand over what quiesced; plan; take.
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
  const LeasePlan plan =
      PlanLeases(options_.self, names, *view,
                 2 * absl::ToInt64Nanoseconds(options_.lease));
  for (const std::string& name : plan.release) {
    if (releasing.insert(name).second) tables[name]->Disown();
  }
  std::set<std::string> owned;
  for (const std::string& name : plan.keep) owned.insert(name);
  for (const std::string& name : plan.acquire) {
    const absl::Time t1 = clock_->MonotonicNow();
    absl::StatusOr<bool> taken =
        store_->Take(name, options_.self, options_.lease);
    if (taken.ok() && *taken) {
      tables[name]->Own(t1 + trust);
      owned.insert(name);
      LogInfo("leases: took `", name, "`");
    }
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
    if (!row.owner.empty() && row.expires > view_.now) {
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
