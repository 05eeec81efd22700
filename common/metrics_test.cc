#include "common/metrics.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(MetricsTextTest, CounterAndGaugeFamilies) {
  MetricsText text;
  text.Family("msgq_sent_total", MetricType::kCounter, "Messages sent.");
  text.Sample({{"keyspace", "app"}, {"table", "orders"}}, 12);
  text.Sample({{"keyspace", "app"}, {"table", "jobs"}}, 0);
  text.Family("msgq_up", MetricType::kGauge, "Up.\nsecond \\ line");
  text.Sample({}, 0.25);
  EXPECT_EQ(text.Take(),
            "# HELP msgq_sent_total Messages sent.\n"
            "# TYPE msgq_sent_total counter\n"
            "msgq_sent_total{keyspace=\"app\",table=\"orders\"} 12\n"
            "msgq_sent_total{keyspace=\"app\",table=\"jobs\"} 0\n"
            "# HELP msgq_up Up.\\nsecond \\\\ line\n"
            "# TYPE msgq_up gauge\n"
            "msgq_up 0.25\n");
  EXPECT_EQ(text.Take(), "");
}

TEST(MetricsTextTest, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  MetricsText text;
  text.Family("x", MetricType::kGauge, "h");
  text.Sample({{"error", "can't \"read\""}}, 1);
  EXPECT_EQ(text.Take(),
            "# HELP x h\n# TYPE x gauge\nx{error=\"can't \\\"read\\\"\"} 1\n");
}

TEST(MetricsTextTest, HistogramIsCumulative) {
  MetricsText text;
  text.Family("lat_seconds", MetricType::kHistogram, "Latency.");
  HistogramData data;
  data.bounds = {0.001, 0.5};
  data.counts = {2, 3, 1};
  data.sum = 1.75;
  text.Histogram({{"kind", "poll"}}, data);
  EXPECT_EQ(text.Take(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{kind=\"poll\",le=\"0.001\"} 2\n"
            "lat_seconds_bucket{kind=\"poll\",le=\"0.5\"} 5\n"
            "lat_seconds_bucket{kind=\"poll\",le=\"+Inf\"} 6\n"
            "lat_seconds_sum{kind=\"poll\"} 1.75\n"
            "lat_seconds_count{kind=\"poll\"} 6\n");
}

TEST(CounterVecTest, CountsByLabelsAcrossThreads) {
  CounterVec requests("rpc_total", "RPCs.", {"method", "code"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) requests.Add({"Ack", "OK"});
    });
  }
  for (auto& t : threads) t.join();
  requests.Add({"Ack", "UNAVAILABLE"}, 3);
  EXPECT_EQ(requests.Get({"Ack", "OK"}), 4000);
  EXPECT_EQ(requests.Get({"Nack", "OK"}), 0);
  MetricsText text;
  requests.Collect(text);
  EXPECT_EQ(text.Take(),
            "# HELP rpc_total RPCs.\n"
            "# TYPE rpc_total counter\n"
            "rpc_total{method=\"Ack\",code=\"OK\"} 4000\n"
            "rpc_total{method=\"Ack\",code=\"UNAVAILABLE\"} 3\n");
}

}  // namespace
}  // namespace msgq
