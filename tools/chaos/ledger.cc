#include "tools/chaos/ledger.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/chaos/latency.h"

namespace msgq::chaos {

const char* FaultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kMsgqdKill:
      return "msgqd_kill";
    case FaultKind::kMariaDbRestart:
      return "mariadb_restart";
    case FaultKind::kSigstop:
      return "sigstop";
    case FaultKind::kDumpKill:
      return "dump_kill";
    case FaultKind::kTableReload:
      return "table_reload";
  }
  return "?";
}

void Ledger::Produced(const std::vector<int64_t>& ids,
                      const std::vector<int64_t>& time_next, Outcome outcome,
                      int64_t committed_at_ns) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    Entry& e = entries_[ids[i]];
    e.produced = true;
    e.outcome = outcome;
    e.time_next = time_next[i];
    e.committed_at = committed_at_ns;
  }
}

void Ledger::Delivered(const std::vector<int64_t>& ids,
                       const std::vector<int64_t>& epochs, int64_t at_ns,
                       int /*sub*/) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    entries_[ids[i]].deliveries.push_back(
        {at_ns, i < epochs.size() ? epochs[i] : kUnknownEpoch});
  }
}

void Ledger::Acked(const std::vector<int64_t>& ids, int64_t at_ns) {
  absl::MutexLock lock(&mu_);
  for (int64_t id : ids) {
    Entry& e = entries_[id];
    if (e.first_ack_ok == 0) e.first_ack_ok = at_ns;
  }
}

void Ledger::Fault(FaultKind kind, int64_t from_ns, int64_t to_ns) {
  absl::MutexLock lock(&mu_);
  faults_.push_back({kind, from_ns, to_ns});
}

void Ledger::Violation(const std::string& what) {
  absl::MutexLock lock(&mu_);
  external_violations_.push_back(what);
}

Report Ledger::Verify(const std::unordered_map<int64_t, TableRow>& table,
                      int64_t ack_wait_ns, int64_t early_tolerance_ns) const {
  Report r;
  auto violate = [&r](std::string what) {
    ++r.violation_count;
    if (r.violations.size() < 30) r.violations.push_back(std::move(what));
  };
  absl::MutexLock lock(&mu_);
  for (const std::string& v : external_violations_) violate(v);
  std::vector<int64_t> ids;
  ids.reserve(entries_.size());
  for (const auto& [id, e] : entries_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<double> latencies_ms;
  const FaultKind kOrder[] = {FaultKind::kMsgqdKill, FaultKind::kMariaDbRestart,
                              FaultKind::kSigstop, FaultKind::kDumpKill,
                              FaultKind::kTableReload};
  for (int64_t id : ids) {
    const Entry& e = entries_.at(id);
    auto row = table.find(id);
    const bool in_table = row != table.end();
    if (!e.produced) {
      violate(absl::StrCat("id ", id, " delivered but never produced"));
      continue;
    }
    bool committed = false;
    switch (e.outcome) {
      case Outcome::kCommitted:
        committed = true;
        ++r.committed;
        if (!in_table)
          violate(absl::StrCat("committed id ", id, " lost: not in the table"));
        break;
      case Outcome::kNotCommitted:
        ++r.not_committed;
        if (in_table)
          violate(absl::StrCat("rolled-back id ", id, " is in the table"));
        break;
      case Outcome::kUnknown:
        committed = in_table;
        ++(in_table ? r.unknown_present : r.unknown_absent);
        break;
    }
    std::vector<Receipt> d = e.deliveries;
    std::stable_sort(d.begin(), d.end());
    if (committed && (!in_table || d.empty())) ++r.lost;
    if (committed) {
      if (e.time_next > 0) ++r.scheduled;
      if (d.empty())
        violate(absl::StrCat("committed id ", id, " never delivered"));
      if (in_table && !row->second.acked) {
        violate(absl::StrCat("committed id ", id, " not acked in the table"));
      }
    } else if (!d.empty()) {
      violate(absl::StrCat("rolled-back id ", id, " delivered ", d.size(),
                           " time(s)"));
    }
    if (d.empty()) continue;
    if (committed && e.time_next == 0 && e.committed_at > 0) {
      latencies_ms.push_back(static_cast<double>(std::max<int64_t>(
                                 0, d.front().at - e.committed_at)) /
                             1e6);
    }
    ++r.delivered_ids;
    r.deliveries += static_cast<int64_t>(d.size());
    if (e.time_next > 0 && d.front().at < e.time_next) {
      const int64_t early = e.time_next - d.front().at;
      r.max_early_ns = std::max(r.max_early_ns, early);
      if (early > early_tolerance_ns) {
        violate(absl::StrFormat(
            "scheduled id %d delivered %.3f ms before its time_next %d", id,
            static_cast<double>(early) / 1e6, e.time_next));
      }
    }
    for (size_t i = 0; i < d.size(); ++i) {
      if (e.first_ack_ok != 0 && d[i].at > e.first_ack_ok) ++r.after_ack_ok;
      if (i == 0 || d[i].at - d[i - 1].at >= ack_wait_ns) continue;
      ++r.inside_ack_wait;
      std::string cause = "none";
      const FaultWindow* fault = nullptr;  // the first one between
      for (FaultKind kind : kOrder) {
        for (const FaultWindow& f : faults_) {
          if (f.kind == kind && f.from <= d[i].at && f.to >= d[i - 1].at) {
            fault = &f;
            break;
          }
        }
        if (fault != nullptr) {
          cause = FaultName(kind);
          break;
        }
      }
      Report::EpochSplit& split = r.inside_by_fault[cause];
      const int64_t before = d[i - 1].epoch, now = d[i].epoch;
      if (before == kUnknownEpoch || now == kUnknownEpoch) {
        ++split.unknown;
        ++r.inside_by_epoch.unknown;
      } else if (now == before) {
        ++split.same;
        ++r.inside_by_epoch.same;
        if (fault != nullptr && fault->kind == FaultKind::kMsgqdKill) {
          r.same_epoch_before_kill_ns =
              std::max(r.same_epoch_before_kill_ns.value_or(
                           std::numeric_limits<int64_t>::min()),
                       fault->from - d[i - 1].at);
        }
        if (r.same_epoch_examples.size() < 10) {
          r.same_epoch_examples.push_back(absl::StrFormat(
              "id %d received with epoch %d at %d and again %.3f s later "
              "(fault between: %s)",
              id, now, d[i - 1].at,
              static_cast<double>(d[i].at - d[i - 1].at) / 1e9, cause));
        }
      } else {
        ++(now > before ? split.later : split.earlier);
        ++(now > before ? r.inside_by_epoch.later : r.inside_by_epoch.earlier);
        violate(absl::StrFormat(
            "id %d received with epoch %d at %d and again with epoch %d "
            "%.3f s later, inside the ack wait of a committed postpone "
            "(fault between: %s)",
            id, before, d[i - 1].at, now,
            static_cast<double>(d[i].at - d[i - 1].at) / 1e9, cause));
      }
      if (cause == "none" && r.suspicious.size() < 10) {
        r.suspicious.push_back(absl::StrFormat(
            "id %d received at %d and again %.3f s later", id, d[i - 1].at,
            static_cast<double>(d[i].at - d[i - 1].at) / 1e9));
      }
    }
  }
  r.duplicates = r.deliveries - r.delivered_ids;
  for (const FaultWindow& f : faults_) ++r.faults[FaultName(f.kind)];
  r.latency_count = static_cast<int64_t>(latencies_ms.size());
  if (!latencies_ms.empty()) {
    r.latency_max_ms =
        *std::max_element(latencies_ms.begin(), latencies_ms.end());
    r.latency_p99_ms = Quantile(latencies_ms, 0.99);
    r.latency_p50_ms = Quantile(latencies_ms, 0.50);
  }
  for (const auto& [id, row] : table) {
    if (entries_.count(id) == 0) {
      violate(absl::StrCat("table holds id ", id, " that no producer wrote"));
    }
  }
  return r;
}

}  // namespace msgq::chaos
