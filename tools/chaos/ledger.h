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
// Each delivery is recorded with the epoch msgqd streamed it with (Row.epoch:
// its sends before this one, i.e. the postpones that had committed when
// msgqd read the row). A redelivery inside the ack wait with the same epoch
// as the delivery before it is a send whose postpone had not committed
// (e.g. lost to a kill -9): at-least-once delivery allows it. One with a
// different epoch is a send after a committed postpone and before that
// postpone's time_next (ack wait + backoff after the send): a violation.
//
// Thread-safe: every method may be called from any thread.
#ifndef MSGQ_TOOLS_CHAOS_LEDGER_H_
#define MSGQ_TOOLS_CHAOS_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
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

// A delivery's epoch when the subscriber could not read it.
inline constexpr int64_t kUnknownEpoch = -1;

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
  // Redeliveries inside the ack wait by their epoch against the delivery
  // before: the same (its postpone had not committed: allowed), later or
  // earlier (sent although a postpone had committed: each a violation), or
  // unknown (a subscriber that cannot read epochs).
  struct EpochSplit {
    int64_t same = 0, later = 0, earlier = 0, unknown = 0;
    int64_t total() const { return same + later + earlier + unknown; }
    bool operator==(const EpochSplit&) const = default;
  };
  EpochSplit inside_by_epoch;
  // inside_by_epoch split by the first fault whose window lies between the
  // two deliveries (msgqd kill first, then MariaDB restart, SIGSTOP, dump
  // kill, table reload); "none" means no fault explains it.
  std::map<std::string, EpochSplit> inside_by_fault;
  std::map<std::string, int64_t> faults;  // windows recorded, by kind
  int64_t after_ack_ok = 0;  // deliveries after an ack of the id returned OK
  int64_t max_early_ns = 0;  // worst (time_next - receipt) seen, if > 0
  std::vector<std::string> violations;  // first few, with ids and times
  int64_t violation_count = 0;
  std::vector<std::string>
      suspicious;  // first inside-ack-wait dups, unexplained
  // Of the same-epoch dups across an msgqd kill, the longest time from the
  // first delivery to the kill (negative: received after the kill began);
  // nullopt when there is none.
  std::optional<int64_t> same_epoch_before_kill_ns;
  // The first inside-ack-wait dups of the same epoch, with their fault.
  std::vector<std::string> same_epoch_examples;
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
  // `ids` received together by subscriber `sub` at `at_ns` (Unix ns), with
  // the epochs they were streamed with (`epochs[i]` for `ids[i]`;
  // kUnknownEpoch, or missing, when not known).
  void Delivered(const std::vector<int64_t>& ids,
                 const std::vector<int64_t>& epochs, int64_t at_ns, int sub);
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
  struct Receipt {
    int64_t at = 0;  // Unix ns
    int64_t epoch = kUnknownEpoch;
    bool operator<(const Receipt& o) const { return at < o.at; }
  };
  struct Entry {
    bool produced = false;  // a delivery may be recorded before its commit
    Outcome outcome = Outcome::kNotCommitted;
    int64_t time_next = 0;  // 0: due at once
    int64_t committed_at = 0;
    int64_t first_ack_ok = 0;
    std::vector<Receipt> deliveries;  // in arrival order
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
