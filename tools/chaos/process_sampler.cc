#include "tools/chaos/process_sampler.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace msgq::chaos {
namespace {

// utime + stime of /proc/PID/stat in clock ticks; -1 when unreadable.
int64_t CpuTicks(int pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(f, line)) return -1;
  // The command may hold spaces and parentheses: fields start after the
  // last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  // Fields 3.. (state is 3); utime is 14 and stime 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 && !absl::SimpleAtoi(field, &utime)) return -1;
    if (i == 15 && !absl::SimpleAtoi(field, &stime)) return -1;
  }
  return utime + stime;
}

int64_t StatusField(int pid, absl::string_view name) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(f, line);) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, name)) {
      int64_t v = 0;
      rest = absl::StripAsciiWhitespace(
          absl::StripSuffix(absl::StripAsciiWhitespace(rest), "kB"));
      return absl::SimpleAtoi(rest, &v) ? v : -1;
    }
  }
  return -1;
}

int64_t OpenFds(int pid) {
  DIR* d = opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
  if (d == nullptr) return -1;
  int64_t n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

}  // namespace

int64_t ReadRssKb(int pid) { return StatusField(pid, "VmRSS:"); }

void ProcessSampler::Start() {
  start_ = absl::Now();
  thread_ = std::thread([this] { Run(); });
}

void ProcessSampler::Stop() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
}

void ProcessSampler::Run() {
  const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  int last_pid = 0;
  int64_t last_ticks = -1;
  absl::Time last_at;
  do {
    const int pid = options_.pid();
    if (pid <= 0) continue;
    const absl::Time now = absl::Now();
    const int64_t ticks = CpuTicks(pid);
    if (ticks < 0) continue;
    {
      absl::MutexLock lock(&mu_);
      if (start_rss_kb_ < 0) start_rss_kb_ = ReadRssKb(pid);
    }
    if (pid == last_pid && last_ticks >= 0) {
      ProcessSample s;
      s.at_s = absl::ToDoubleSeconds(now - start_);
      s.cpu_pct = 100.0 * static_cast<double>(ticks - last_ticks) /
                  ticks_per_s / absl::ToDoubleSeconds(now - last_at);
      s.rss_kb = ReadRssKb(pid);
      s.threads = StatusField(pid, "Threads:");
      s.fds = OpenFds(pid);
      absl::MutexLock lock(&mu_);
      samples_.push_back(s);
    }
    last_pid = pid;
    last_ticks = ticks;
    last_at = now;
  } while (!stop_.WaitForNotificationWithTimeout(options_.interval));
}

ProcessSummary ProcessSampler::Summary() const {
  ProcessSummary s;
  absl::MutexLock lock(&mu_);
  s.samples = static_cast<int64_t>(samples_.size());
  if (samples_.empty()) return s;
  double cpu = 0;
  for (const ProcessSample& p : samples_) {
    cpu += p.cpu_pct;
    s.cpu_peak_pct = std::max(s.cpu_peak_pct, p.cpu_pct);
    s.rss_peak_kb = std::max(s.rss_peak_kb, p.rss_kb);
    s.threads_peak = std::max(s.threads_peak, p.threads);
    s.fds_peak = std::max(s.fds_peak, p.fds);
  }
  s.cpu_avg_pct = cpu / static_cast<double>(samples_.size());
  s.rss_start_kb = start_rss_kb_ >= 0 ? start_rss_kb_ : samples_.front().rss_kb;
  s.rss_end_kb = samples_.back().rss_kb;
  return s;
}

std::vector<ProcessSample> ProcessSampler::Samples() const {
  absl::MutexLock lock(&mu_);
  return samples_;
}

}  // namespace msgq::chaos
