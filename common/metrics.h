// Prometheus text exposition (format 0.0.4) and a thread-safe labelled
// counter, the two pieces msgqd's /metrics needs.
//
// MetricsText renders families in the order they are started; every sample
// added belongs to the family started last. Label values are escaped as the
// format requires (\\, \" and \n); names are the caller's responsibility
// (constants in the code, [a-zA-Z_:][a-zA-Z0-9_:]*).
//
// Example:
//   MetricsText text;
//   text.Family("msgq_sent_total", MetricType::kCounter, "Messages sent.");
//   text.Sample({{"table", "orders"}}, 12);
//   std::string page = text.Take();
//
// CounterVec counts events by a fixed list of label names; Add() is cheap
// and thread-safe, Collect() renders a consistent copy.
//
// Thread-safety: MetricsText is not thread-safe (one per scrape); CounterVec
// is.
#ifndef MSGQ_COMMON_METRICS_H_
#define MSGQ_COMMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace msgq {

enum class MetricType { kCounter, kGauge, kHistogram };

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Fixed-bucket histogram data: counts[i] observations <= bounds[i] and
// > bounds[i-1]; counts.back() (one more than bounds) the rest.
struct HistogramData {
  std::vector<double> bounds;
  std::vector<int64_t> counts;
  double sum = 0;
};

class MetricsText {
 public:
  // Starts a family: its HELP and TYPE lines.
  void Family(absl::string_view name, MetricType type, absl::string_view help);
  // One sample of the current counter or gauge family.
  void Sample(const MetricLabels& labels, double value);
  // One labelled histogram of the current histogram family: cumulative
  // _bucket lines (le="+Inf" last), then _sum and _count.
  void Histogram(const MetricLabels& labels, const HistogramData& data);
  // The page so far; the object is empty afterwards.
  std::string Take();

 private:
  void Line(absl::string_view suffix, const MetricLabels& labels, double value);

  std::string name_;
  std::string out_;
};

// "a\"b" for a"b: the escaping of a label value.
std::string EscapeLabelValue(absl::string_view value);

class CounterVec {
 public:
  CounterVec(std::string name, std::string help,
             std::vector<std::string> label_names);

  // Adds `n` to the counter of `values` (one per label name, in order).
  void Add(const std::vector<std::string>& values, int64_t n = 1);
  // The counter of `values`; 0 if never added to.
  int64_t Get(const std::vector<std::string>& values) const;
  // Renders the family (no samples until the first Add).
  void Collect(MetricsText& text) const;

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, int64_t> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_COMMON_METRICS_H_
