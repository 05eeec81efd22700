#include "common/metrics.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq {
namespace {

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Integers exactly, others with enough digits to round-trip.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrFormat("%.17g", v);
}

// HELP text escapes only backslash and newline.
std::string EscapeHelp(absl::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void MetricsText::Family(absl::string_view name, MetricType type,
                         absl::string_view help) {
  name_ = std::string(name);
  absl::StrAppend(&out_, "# HELP ", name, " ", EscapeHelp(help), "\n",
                  "# TYPE ", name, " ", TypeName(type), "\n");
}

void MetricsText::Line(absl::string_view suffix, const MetricLabels& labels,
                       double value) {
  absl::StrAppend(&out_, name_, suffix);
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      absl::StrAppend(&out_, labels[i].first, "=\"",
                      EscapeLabelValue(labels[i].second), "\"");
    }
    out_ += '}';
  }
  absl::StrAppend(&out_, " ", FormatValue(value), "\n");
}

void MetricsText::Sample(const MetricLabels& labels, double value) {
  Line("", labels, value);
}

void MetricsText::Histogram(const MetricLabels& labels,
                            const HistogramData& data) {
  int64_t cumulative = 0;
  MetricLabels with_le = labels;
  with_le.emplace_back("le", "");
  for (size_t i = 0; i <= data.bounds.size(); ++i) {
    cumulative += i < data.counts.size() ? data.counts[i] : 0;
    with_le.back().second =
        i < data.bounds.size() ? FormatValue(data.bounds[i]) : "+Inf";
    Line("_bucket", with_le, static_cast<double>(cumulative));
  }
  Line("_sum", labels, data.sum);
  Line("_count", labels, static_cast<double>(cumulative));
}

std::string MetricsText::Take() {
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

CounterVec::CounterVec(std::string name, std::string help,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)) {}

void CounterVec::Add(const std::vector<std::string>& values, int64_t n) {
  absl::MutexLock lock(&mu_);
  counts_[values] += n;
}

int64_t CounterVec::Get(const std::vector<std::string>& values) const {
  absl::MutexLock lock(&mu_);
  auto it = counts_.find(values);
  return it == counts_.end() ? 0 : it->second;
}

void CounterVec::Collect(MetricsText& text) const {
  std::map<std::vector<std::string>, int64_t> copy;
  {
    absl::MutexLock lock(&mu_);
    copy = counts_;
  }
  text.Family(name_, MetricType::kCounter, help_);
  for (const auto& [values, n] : copy) {
    MetricLabels labels;
    for (size_t i = 0; i < label_names_.size() && i < values.size(); ++i) {
      labels.emplace_back(label_names_[i], values[i]);
    }
    text.Sample(labels, static_cast<double>(n));
  }
}

}  // namespace msgq
