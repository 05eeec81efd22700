// --binlog_discovery=image end to end (real MariaDB, msgqd, gRPC): due rows
// are streamed from the binlog's row image with no read, as their
// transaction left them; a table with a column whose text cannot be rebuilt
// from the image has its rows read instead.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::UnorderedElementsAreArray;

class BinlogImageDeliveryTest : public HttpTest {
 protected:
  // Starts msgqd with row images, subscribes, and waits for the binlog
  // stream (a table's first manager in a process uses images at once).
  void StartAndSubscribe(const std::string& table) {
    ASSERT_NO_FATAL_FAILURE(StartHttpServer({"--binlog_discovery=image"}));
    stream_ = std::make_unique<StreamCollector>(stub_.get(), table);
    ASSERT_TRUE(stream_->WaitForFields(absl::Seconds(10)));
    ASSERT_TRUE(Eventually(
        [&] {
          return Sample(ScrapeMetrics(Url("/metrics")),
                        "msgq_binlog_streaming{}") == 1;
        },
        absl::Seconds(10)));
  }

  double Metric(const std::string& name, const std::string& table) {
    return Sample(
        ScrapeMetrics(Url("/metrics")),
        absl::StrCat(name, "{keyspace=\"msgq\",table=\"", table, "\"}"));
  }

  std::unique_ptr<StreamCollector> stream_;
};

// 20 rows inserted and one of them updated in the same transaction: each
// row arrives once, with the payload the transaction committed, and none
// was read from MySQL.
TEST_F(BinlogImageDeliveryTest, RowsArriveOnceAsTheirTransactionLeftThem) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs", "vt_ack_wait=30"));
  ASSERT_NO_FATAL_FAILURE(StartAndSubscribe("jobs"));
  std::string insert = "INSERT INTO msgq.jobs (id, message) VALUES ";
  std::vector<std::string> expected;
  for (int i = 1; i <= 20; ++i) {
    absl::StrAppend(&insert, i > 1 ? "," : "", "(", i, ", '{\"n\": ", i, "}')");
    expected.push_back(absl::StrCat(
        i, "=",
        i == 5 ? "{\"n\": \"five\"}" : absl::StrCat("{\"n\": ", i, "}")));
  }
  ASSERT_NO_FATAL_FAILURE(Exec("BEGIN"));
  ASSERT_NO_FATAL_FAILURE(Exec(insert));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET message = '{\"n\": \"five\"}' WHERE id = 5"));
  ASSERT_NO_FATAL_FAILURE(Exec("COMMIT"));
  ASSERT_TRUE(stream_->WaitForRows(20, absl::Seconds(10)));
  std::vector<std::string> ids = stream_->ids();
  std::vector<std::string> payloads = stream_->column(1);
  ASSERT_EQ(ids.size(), 20u);
  ASSERT_EQ(payloads.size(), 20u);
  std::vector<std::string> got;
  for (size_t i = 0; i < ids.size(); ++i) {
    got.push_back(ids[i] + "=" + payloads[i]);
  }
  EXPECT_THAT(got, UnorderedElementsAreArray(expected));
  std::vector<std::string> all;
  for (int i = 1; i <= 20; ++i) all.push_back(absl::StrCat(i));
  int64_t acked = 0;
  ASSERT_TRUE(AckIds(stub_.get(), "jobs", all, &acked).ok());
  EXPECT_EQ(acked, 20);
  // 20 inserts and the update: 21 images queued, none read -- unless msgqd
  // read the binlog more than its image lag bound (3 s, against whole
  // second event times) after the commit, on a loaded machine: then an
  // image is refused and its row read by id (a fetch) instead.
  const auto images =
      static_cast<int64_t>(Metric("msgq_binlog_image_rows_total", "jobs"));
  const auto fetches =
      static_cast<int64_t>(Metric("msgq_binlog_fetches_total", "jobs"));
  EXPECT_GT(images, 0);
  EXPECT_LE(images, 21);
  if (images == 21) {
    EXPECT_EQ(fetches, 0);
  } else {
    EXPECT_GT(fetches, 0) << images << " images";
  }
  absl::SleepFor(absl::Seconds(1));
  EXPECT_EQ(stream_->row_count(), 20u);  // nothing sent twice
}

// A FLOAT column's text is MariaDB's to format: the rows are read by id.
TEST_F(BinlogImageDeliveryTest, ATableWithAFloatColumnIsReadInstead) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("floats", "vt_ack_wait=30", "score float DEFAULT 0.1"));
  ASSERT_NO_FATAL_FAILURE(StartAndSubscribe("floats"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("floats", 1, 3));
  ASSERT_TRUE(stream_->WaitForRows(3, absl::Seconds(10)));
  EXPECT_THAT(stream_->ids(), UnorderedElementsAreArray({"1", "2", "3"}));
  EXPECT_THAT(stream_->column(2),
              UnorderedElementsAreArray({"0.1", "0.1", "0.1"}));
  EXPECT_EQ(Metric("msgq_binlog_image_rows_total", "floats"), 0);
  EXPECT_GE(Metric("msgq_binlog_fetches_total", "floats"), 1);
}

}  // namespace
}  // namespace msgq::testing
