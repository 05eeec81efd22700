// PhaseMeter (phases.h): a phase's cost from SHOW GLOBAL STATUS and /proc,
// its sampled time series, and the --perf profiles (perf_phase.sh).
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/status_macros.h"
#include "tools/launch/child_process.h"
#include "tools/msgq_bench/clock.h"
#include "tools/msgq_bench/phases.h"

namespace msgq::bench {
namespace {

// The counters in bench.json's mysql_delta. Rows_* count what the server
// layer read and sent, Handler_* row operations (MariaDB has no
// Innodb_rows_*; MySQL has both). Innodb_buffer_pool_reads counts the pages
// InnoDB had to read from disk (not in the pool); Innodb_pages_read all
// pages read, read-ahead included.
constexpr absl::string_view kCounters =
    "Questions Com_select Com_insert Com_update Com_update_multi Com_delete "
    "Com_delete_multi Com_begin Com_commit Rows_read Rows_sent "
    "Handler_read_key Handler_read_next Handler_read_rnd "
    "Handler_read_rnd_next Handler_write Handler_update Handler_delete "
    "Innodb_rows_read Innodb_rows_inserted Innodb_rows_updated "
    "Innodb_rows_deleted "
    "Innodb_buffer_pool_read_requests Innodb_buffer_pool_reads "
    "Innodb_pages_read Innodb_data_fsyncs "
    "Innodb_os_log_written Binlog_bytes_written Bytes_sent";

// kCounters from SHOW GLOBAL STATUS; missing ones read as 0.
absl::StatusOr<std::map<std::string, int64_t>> ReadCounters(
    MysqlConnection& conn) {
  ASSIGN_OR_RETURN(QueryResult r,
                   conn.Query(absl::StrCat(
                       "SHOW GLOBAL STATUS WHERE Variable_name IN ('",
                       absl::StrReplaceAll(kCounters, {{" ", "','"}}), "')")));
  std::map<std::string, int64_t> counters;
  for (absl::string_view name : absl::StrSplit(kCounters, ' ')) {
    counters[std::string(name)] = 0;
  }
  for (const auto& row : r.rows) {
    // The server spells the names as kCounters does.
    auto it = counters.find(row[0].value_or(""));
    if (it != counters.end()) {
      (void)absl::SimpleAtoi(row[1].value_or(""), &it->second);
    }
  }
  return counters;
}

struct ProcSample {
  double cpu_s = 0;  // utime + stime of every thread
  int64_t rss_kib = 0;
  int64_t peak_rss_kib = 0;  // VmHWM: since start or the last reset
};

// nullopt when the process is gone (or pid is 0: not ours).
std::optional<ProcSample> ReadProc(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(stat_file, stat);
  // utime and stime: the 12th and 13th fields after the command's ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;
  int64_t utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return std::nullopt;
  ProcSample s;
  s.cpu_s = static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string key; status >> key;
       status.ignore(std::numeric_limits<std::streamsize>::max(), '\n')) {
    if (key == "VmRSS:") status >> s.rss_kib;
    if (key == "VmHWM:") status >> s.peak_rss_kib;
  }
  return s;
}

double CpuSeconds(pid_t pid) {
  return ReadProc(pid).value_or(ProcSample()).cpu_s;
}

std::string PerfScript(const pb::Options& o) {
  return launch::ShellQuote(
      absl::StrCat(o.source_dir(), "/tools/msgq_bench/perf_phase.sh"));
}

}  // namespace

PhaseMeter::PhaseMeter(const BenchContext& ctx, std::string phase, bool profile,
                       std::function<PhaseCounts()> probe)
    : ctx_(ctx),
      phase_(std::move(phase)),
      profile_(profile && ctx.options.perf()),
      probe_(std::move(probe)) {}

PhaseMeter::~PhaseMeter() { StopSampling(); }

void PhaseMeter::StopSampling() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status PhaseMeter::Start() {
  ASSIGN_OR_RETURN(counters_, ReadCounters(*ctx_.admin));
  const std::pair<const char*, pid_t> processes[] = {
      {"msgqd", ctx_.msgqd_pid}, {"mariadbd", ctx_.mariadbd_pid}};
  for (const auto& [who, pid] : processes) {
    if (!profile_ || pid <= 0) continue;
    const std::string prefix =
        absl::StrCat(ctx_.options.out_dir(), "/", who, "-", phase_);
    absl::StatusOr<std::string> out =
        launch::RunCommand(absl::StrCat(PerfScript(ctx_.options), " start ",
                                        pid, " ", launch::ShellQuote(prefix)));
    if (out.ok()) {
      profiles_.push_back(prefix);
    } else {
      LogWarning("msgq-bench: no profile of ", who, ": ",
                 out.status().message());
    }
  }
  if (ctx_.msgqd_pid > 0) {
    std::ofstream clear_refs(
        absl::StrCat("/proc/", ctx_.msgqd_pid, "/clear_refs"));
    peak_reset_ = static_cast<bool>(clear_refs << "5" << std::flush);
  }
  msgqd_cpu_s_ = CpuSeconds(ctx_.msgqd_pid);
  mariadbd_cpu_s_ = CpuSeconds(ctx_.mariadbd_pid);
  bench_cpu_s_ = CpuSeconds(getpid());
  start_ns_ = NowNs();
  samples_.push_back(TakeSample());
  thread_ = std::thread([this] {
    for (int64_t next = start_ns_ + 1000000000;; next += 1000000000) {
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&stop_),
                                 absl::Nanoseconds(next - NowNs()))) {
          return;
        }
      }
      samples_.push_back(TakeSample());
    }
  });
  return absl::OkStatus();
}

absl::StatusOr<pb::Cost> PhaseMeter::Stop() {
  pb::Cost cost;
  cost.set_wall_s(NsToSeconds(NowNs() - start_ns_));
  absl::StatusOr<std::map<std::string, int64_t>> counters =
      ReadCounters(*ctx_.admin);
  if (counters.ok()) {
    for (const auto& [name, v] : *counters) {
      (*cost.mutable_mysql_delta())[name] = v - counters_[name];
    }
  }
  // CPU seconds since Start(); -1 when the process is not ours or gone.
  auto cpu_s = [](pid_t pid, double at_start) {
    std::optional<ProcSample> s = ReadProc(pid);
    return s.has_value() ? s->cpu_s - at_start : -1;
  };
  cost.set_msgqd_cpu_s(cpu_s(ctx_.msgqd_pid, msgqd_cpu_s_));
  cost.set_mariadbd_cpu_s(cpu_s(ctx_.mariadbd_pid, mariadbd_cpu_s_));
  cost.set_bench_cpu_s(cpu_s(getpid(), bench_cpu_s_));
  std::optional<ProcSample> msgqd = ReadProc(ctx_.msgqd_pid);
  cost.set_msgqd_peak_rss_mib(msgqd ? msgqd->peak_rss_kib / 1024.0 : -1);
  cost.set_msgqd_peak_rss_is_phase_only(msgqd && peak_reset_);
  StopSampling();
  samples_.push_back(TakeSample());
  StopProfiles();
  if (!counters.ok()) return counters.status();
  return cost;
}

PhaseMeter::Sample PhaseMeter::TakeSample() const {
  Sample s{NowNs(), probe_()};
  if (std::optional<ProcSample> p = ReadProc(ctx_.msgqd_pid)) {
    s.msgqd_rss_kib = static_cast<double>(p->rss_kib);
    s.msgqd_cpu_s = p->cpu_s;
  }
  return s;
}

void PhaseMeter::StopProfiles() {
  for (const std::string& prefix : profiles_) {
    absl::StatusOr<std::string> out = launch::RunCommand(absl::StrCat(
        PerfScript(ctx_.options), " stop ", launch::ShellQuote(prefix)));
    if (out.ok()) {
      absl::StrAppend(&perf_report_, perf_report_.empty() ? "" : ",", prefix,
                      ".perf.txt");
    } else {
      LogWarning("msgq-bench: perf report failed: ", out.status().message());
    }
  }
  profiles_.clear();
}

void PhaseMeter::AppendSeries(int64_t start_ns,
                              std::vector<SeriesPoint>* out) const {
  for (size_t i = 1; i < samples_.size(); ++i) {
    const Sample& prev = samples_[i - 1];
    const Sample& cur = samples_[i];
    const double dt = NsToSeconds(cur.t_ns - prev.t_ns);
    if (dt <= 1e-3) continue;
    // The closing sample (taken when the phase ends) can make a sliver of an
    // interval whose rate is noise; fold it away unless it is all there is.
    if (i == samples_.size() - 1 && i > 1 &&
        dt < 0.5 * NsToSeconds(prev.t_ns - samples_[i - 2].t_ns)) {
      continue;
    }
    SeriesPoint p;
    p.phase = phase_;
    p.t_s = NsToSeconds(cur.t_ns - start_ns);
    p.dt_s = dt;
    p.delivered_per_s = (cur.counts.delivered - prev.counts.delivered) / dt;
    p.acked_per_s = (cur.counts.acked - prev.counts.acked) / dt;
    if (cur.counts.offered >= 0) {
      p.offered_per_s = (cur.counts.offered - prev.counts.offered) / dt;
      p.backlog =
          static_cast<double>(cur.counts.offered - cur.counts.delivered);
    }
    p.msgqd_rss_mib = cur.msgqd_rss_kib / 1024.0;
    p.msgqd_cpu_pct = 100.0 * (cur.msgqd_cpu_s - prev.msgqd_cpu_s) / dt;
    out->push_back(std::move(p));
  }
}

void SetPerMessage(int64_t delivered, pb::Cost* cost) {
  const auto& delta = cost->mysql_delta();
  auto per_message = [delivered](double v) {
    return delivered > 0 ? v / static_cast<double>(delivered) : 0;
  };
  auto get = [&delta](const char* name) {
    auto it = delta.find(name);
    return it == delta.end() ? 0.0 : it->second;
  };
  auto& out = *cost->mutable_per_message();
  out["statements"] = per_message(get("Com_select") + get("Com_insert") +
                                  get("Com_update") + get("Com_update_multi") +
                                  get("Com_delete") + get("Com_delete_multi"));
  out["questions"] = per_message(get("Questions"));
  // Every row or index entry the handlers read, by key or by scan.
  out["handler_reads"] =
      per_message(get("Handler_read_key") + get("Handler_read_next") +
                  get("Handler_read_rnd") + get("Handler_read_rnd_next"));
  for (const auto& [name, v] : delta) {
    if (name != "Questions") out[name] = per_message(v);
  }
}

}  // namespace msgq::bench
