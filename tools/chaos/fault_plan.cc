#include "tools/chaos/fault_plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tools/chaos/campaign_log.h"

namespace msgq::chaos {

FaultPlan::FaultPlan(Options options, std::mt19937_64* rng)
    : options_(std::move(options)), rng_(rng) {
  plan_.insert(plan_.end(), options_.msgqd_kills, kKill);
  plan_.insert(plan_.end(), options_.mariadb_restarts, kRestart);
  plan_.insert(plan_.end(), options_.sigstops, kStop);
  plan_.insert(plan_.end(), options_.dump_kills, kDump);
  plan_.insert(plan_.end(), options_.host_crashes, kCrash);
  plan_.insert(plan_.end(), options_.table_reloads, kReload);
  std::shuffle(plan_.begin(), plan_.end(), *rng_);
}

void FaultPlan::Run(Cluster& cluster, Ledger& ledger, absl::Time start,
                    absl::Duration duration) {
  const absl::Duration slot = duration / (plan_.size() + 1);
  int fault_errors = 0;
  for (size_t i = 0; i < plan_.size(); ++i) {
    absl::SleepFor(start + slot * (i + 1 + (u_(*rng_) - 0.5) * 0.6) -
                   absl::Now());
    std::string what;
    const absl::Time t0 = absl::Now();
    const absl::Status s = RunOne(plan_[i], cluster, what);
    Log(absl::StrFormat("fault %d/%d: %s (%s)%s", i + 1, plan_.size(), what,
                        absl::FormatDuration(absl::Now() - t0),
                        s.ok() ? "" : " FAILED: " + std::string(s.message())));
    if (!s.ok() && ++fault_errors >= 3) {
      ledger.Violation("the cluster did not come back after a fault: " +
                       std::string(s.message()));
      break;
    }
  }
}

absl::Status FaultPlan::RunOne(Kind kind, Cluster& cluster, std::string& what) {
  switch (kind) {
    case kKill: {
      const absl::Duration down = absl::Seconds(u_(*rng_));
      what = absl::StrCat("kill -9 msgqd, restart after ",
                          absl::FormatDuration(down));
      return cluster.KillMsgqd(down);
    }
    case kRestart: {
      const bool kill = restarts_done_++ % 2 == 1;
      const absl::Duration down = absl::Seconds(2 * u_(*rng_));
      what = absl::StrCat(kill ? "kill -9" : "clean stop",
                          " of MariaDB, restart after ",
                          absl::FormatDuration(down));
      return cluster.RestartMariaDb(kill, down);
    }
    case kStop: {
      const absl::Duration stopped =
          absl::Seconds((0.2 + u_(*rng_)) * options_.ack_wait_s);
      what = absl::StrCat("SIGSTOP msgqd for ", absl::FormatDuration(stopped));
      return cluster.StopMsgqd(stopped);
    }
    case kCrash: {
      const absl::Duration down = absl::Seconds(2 * u_(*rng_));
      what = absl::StrCat("kill -9 of msgqd and MariaDB, MariaDB back ",
                          absl::FormatDuration(down), " after msgqd");
      return cluster.CrashBoth(down);
    }
    case kReload: {
      const int batch = ++reloads_done_ % 2 == 1 ? 11 : 10;
      what = absl::StrCat("table comment: vt_batch_size=", batch);
      // msgqd's default --schema_reload_interval is 10 s.
      return cluster.ReloadTable(options_.alter(batch), absl::Seconds(12));
    }
    case kDump: {
      what = "KILL the binlog dump connection";
      absl::Status s = cluster.KillDumpThread();
      if (s.code() == absl::StatusCode::kNotFound) {
        ++dumps_missing_;
        what += " (none found)";
        return absl::OkStatus();
      }
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace msgq::chaos
