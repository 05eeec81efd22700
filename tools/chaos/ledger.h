// Ledger: what the fault campaign's producers attempted, what its
// subscribers received and acked, and when faults happened; Verify() checks
// it against the final content of the message table.
//
// Ids are unique across every attempt (NextId), so a rolled-back id is never
// reused by a later commit. Outcomes: kCommitted (COMMIT returned OK),
// kNotCommitted (ROLLBACK, or an error before COMMIT was sent: the server
// cannot commit it), kUnknown (COMMIT itself failed, e.g. the connection was
// lost: Verify decides by looking at the table).
//
// Thread-safe: every method may be called from any thread.
#ifndef MSGQ_TOOLS_CHAOS_LEDGER_H_
#define MSGQ_TOOLS_CHAOS_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace msgq::chaos {

enum class Outcome { kCommitted, kNotCommitted, kUnknown };
enum class FaultKind {
  kMsgqdKill,
  kMariaDbRestart,
  kSigstop,
  kDumpKill,
  kTableReload,  // a changed table comment: msgqd reloads the table
};
const char* FaultName(FaultKind kind);

// One row of the message table at the end of the run.
struct TableRow {
  bool acked = false;
};

struct Report {
  int64_t committed = 0, not_committed = 0;
  int64_t unknown_present = 0, unknown_absent = 0;
  int64_t scheduled = 0;      // rows with a future time_next, committed
  int64_t delivered_ids = 0;  // distinct ids received
  int64_t deliveries = 0;     // rows received in total
  int64_t duplicates = 0;     // deliveries - delivered_ids
  // Committed ids (COMMIT OK, or unknown and in the table) missing from
  // the table or never delivered; each is also a violation.
  int64_t lost = 0;
  int64_t inside_ack_wait = 0;  // duplicates < ack_wait after the previous
  // inside_ack_wait split by the first fault whose window lies between the
  // two deliveries (msgqd kill first, then MariaDB restart, SIGSTOP, dump
  // kill, table reload); "none" means no fault explains it.
  std::map<std::string, int64_t> inside_by_fault;
  int64_t after_ack_ok = 0;  // deliveries after an ack of the id returned OK
  int64_t max_early_ns = 0;  // worst (time_next - receipt) seen, if > 0
  std::vector<std::string> violations;  // first few, with ids and times
  int64_t violation_count = 0;
  std::vector<std::string>
      suspicious;  // first inside-ack-wait dups, unexplained
  // Commit to first receipt of the committed messages due at once whose
  // commit time is known (Produced's committed_at_ns), in ms; a receipt
  // recorded before COMMIT returned counts 0.
  int64_t latency_count = 0;
  double latency_p50_ms = 0, latency_p99_ms = 0, latency_max_ms = 0;
};

class Ledger {
 public:
  int64_t NextId() { return next_id_.fetch_add(1); }

  // `committed_at_ns` (Unix ns): when COMMIT returned OK, 0 if unknown.
  void Produced(const std::vector<int64_t>& ids,
                const std::vector<int64_t>& time_next, Outcome outcome,
                int64_t committed_at_ns = 0);
  // `ids` received together by subscriber `sub` at `at_ns` (Unix ns).
  void Delivered(const std::vector<int64_t>& ids, int64_t at_ns, int sub);
  // An ack RPC covering `ids` returned OK at `at_ns`.
  void Acked(const std::vector<int64_t>& ids, int64_t at_ns);
  // A fault between `from_ns` and `to_ns` (the process restarted / resumed).
  void Fault(FaultKind kind, int64_t from_ns, int64_t to_ns);
  // A violation seen outside the table check (e.g. msgqd exited by itself).
  void Violation(const std::string& what);

  // Checks the ledger against `table` (every row of the table by id).
  // `early_tolerance_ns`: a delivery that far before time_next still counts
  // as on time (clock granularity).
  Report Verify(const std::unordered_map<int64_t, TableRow>& table,
                int64_t ack_wait_ns, int64_t early_tolerance_ns) const;

 private:
  struct Entry {
    bool produced = false;  // a delivery may be recorded before its commit
    Outcome outcome = Outcome::kNotCommitted;
    int64_t time_next = 0;  // 0: due at once
    int64_t committed_at = 0;
    int64_t first_ack_ok = 0;
    std::vector<int64_t> deliveries;  // receipt times, in arrival order
  };
  struct FaultWindow {
    FaultKind kind;
    int64_t from, to;
  };

  std::atomic<int64_t> next_id_{1};
  mutable absl::Mutex mu_;
  std::unordered_map<int64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::vector<FaultWindow> faults_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> external_violations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_LEDGER_H_
