// The measured phases of a run and what they share. Each phase creates its
// own tables in the bench database, preloads or produces, measures (a
// PhaseMeter), verifies (every message acked, none lost), fills its message
// of bench.json (bench_results.proto) and appends its time series.
//
// The phases run from the main thread one after another and share the
// context's admin connection. A step that fails is noted with
// BenchContext::Fail; the run then goes on with the next phase.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PHASES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PHASES_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/subscribers.h"

namespace msgq::bench {

// One row of timeseries.csv: one sampling interval of one phase.
struct SeriesPoint {
  std::string phase;           // "relay", "msgq_b100", "sustained"
  double t_s = 0;              // end of the interval, since the phase started
  double dt_s = 0;             // length of the interval
  double delivered_per_s = 0;  // msgq: first receipts; relay: rows relayed
  double acked_per_s = 0;
  double offered_per_s = 0;          // sustained: commits
  double backlog = 0;                // sustained: committed - received
  std::optional<double> lat_p50_ms;  // sustained: receipts in this interval
  std::optional<double> lat_p99_ms;
  std::optional<double> lat_max_ms;
  double msgqd_rss_mib = 0;
  double msgqd_cpu_pct = 0;  // of one core
};

struct BenchContext {
  pb::Options options;
  MysqlOptions mysql;
  MysqlConnection* admin = nullptr;
  std::string msgq_address;  // set once msgqd runs
  pid_t msgqd_pid = 0;       // 0: not ours (no CPU/RSS)
  pid_t mariadbd_pid = 0;    // 0: unknown
  pb::BenchResults results;
  std::vector<SeriesPoint> series;

  // Notes a failed step: logged, in the notes, and the run is not ok.
  void Fail(const std::string& what, const absl::Status& status) {
    LogError("msgq-bench: ", what, ": ", status.message());
    results.add_notes(absl::StrCat(what, " failed: ", status.message()));
    results.set_ok(false);
  }
};

// Without --mode=sustained: the relay baseline (unless --relay=false) and
// one msgq drain per --batch_size into results.relay and .drains.
// `start_msgqd` is called once the backlogs are preloaded and the relay ran
// (it sets ctx.msgq_address).
void RunDrainPhases(BenchContext& ctx,
                    const std::function<absl::Status()>& start_msgqd);
// Producers at the offered rate (over options.tables tables) while
// subscribers ack, into results.sustained. Requires a running msgqd.
void RunSustainedPhase(BenchContext& ctx);

// Cumulative counts a phase reports to its PhaseMeter's probe.
struct PhaseCounts {
  int64_t delivered = 0;  // msgq: distinct ids received; relay: rows relayed
  int64_t acked = 0;
  int64_t offered = -1;  // sustained: commits; -1: none (drains)
};

// PhaseMeter: what one phase cost and how it went over time. The cost is
// from MySQL's global status counters (server-wide: a delta covers everyone's
// work, msgqd's, the producers', the relay's) and /proc of msgqd, mariadbd and
// the bench (CPU seconds, msgqd's peak RSS, reset at Start when the kernel
// allows). Every second a thread of its own samples the probe and msgqd's
// RSS and CPU for the series. With --perf and `profile`, msgqd and mariadbd
// are profiled over the phase (perf_phase.sh).
//
// Not thread-safe: Start(), Stop() and AppendSeries() from one thread; the
// admin connection is used only inside Start() and Stop().
class PhaseMeter {
 public:
  PhaseMeter(const BenchContext& ctx, std::string phase, bool profile,
             std::function<PhaseCounts()> probe);
  ~PhaseMeter();  // stops sampling (profiles need Stop())
  PhaseMeter(const PhaseMeter&) = delete;
  PhaseMeter& operator=(const PhaseMeter&) = delete;

  // The MySQL error when the counters cannot be read (nothing runs then).
  absl::Status Start();
  // Once after a successful Start(): the cost since then (-1 for what was not
  // ours to measure), without per_message (SetPerMessage); the MySQL error
  // when the counters cannot be read (sampling and profiles stop anyway).
  absl::StatusOr<pb::Cost> Stop();
  // After Stop(): the profiles' text reports, comma-separated.
  const std::string& perf_report() const { return perf_report_; }
  // After Stop(): one point per sampling interval, t_s since `start_ns`.
  void AppendSeries(int64_t start_ns, std::vector<SeriesPoint>* out) const;

 private:
  struct Sample {
    int64_t t_ns = 0;  // bench clock
    PhaseCounts counts;
    double msgqd_rss_kib = 0;
    double msgqd_cpu_s = 0;
  };
  Sample TakeSample() const;
  void StopSampling();  // joins the sampling thread
  void StopProfiles();

  const BenchContext& ctx_;
  const std::string phase_;
  const bool profile_;
  const std::function<PhaseCounts()> probe_;
  std::vector<std::string> profiles_;  // perf_phase.sh prefixes running
  std::string perf_report_;
  std::map<std::string, int64_t> counters_;  // at Start
  double msgqd_cpu_s_ = 0, mariadbd_cpu_s_ = 0, bench_cpu_s_ = 0;
  bool peak_reset_ = false;
  int64_t start_ns_ = 0;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Sample> samples_;  // by the thread until it is joined
  std::thread thread_;
};

// Fills cost->per_message: every mysql_delta counter per delivered message
// (0 when none were), plus "statements" (Com_select + Com_insert +
// Com_update + Com_delete), "questions" (for Questions) and "handler_reads"
// (Handler_read_key + _next + _rnd + _rnd_next).
void SetPerMessage(int64_t delivered, pb::Cost* cost);

// Sets what a msgq phase's result (pb::Drain or pb::Sustained) received and
// its cost per received message.
template <typename Result>
void SetReceived(const DeliveryLog& log, const SubscriberPool& pool,
                 pb::Cost cost, Result* result) {
  result->set_received(log.unique());
  result->set_duplicates(log.duplicates());
  result->set_unexpected(log.unexpected());
  *result->mutable_subscribers() = pool.stats();
  SetPerMessage(result->received(), &cost);
  *result->mutable_cost() = std::move(cost);
}

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PHASES_H_
