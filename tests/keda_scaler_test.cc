// msgqd's KEDA external scaler (server/keda_scaler_service.h) end to end:
// KEDA's own gRPC contract (proto/externalscaler/) called by a real client
// on a real msgqd over a private MariaDB: activity, the metric spec, exact
// metric values at quiet points, the binlog-driven push of StreamIsActive,
// lookup errors and authentication.
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "externalscaler/externalscaler.grpc.pb.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using externalscaler::ExternalScaler;
using externalscaler::GetMetricSpecResponse;
using externalscaler::GetMetricsRequest;
using externalscaler::GetMetricsResponse;
using externalscaler::IsActiveResponse;
using externalscaler::ScaledObjectRef;

ScaledObjectRef Ref(const std::string& table,
                    std::map<std::string, std::string> extra = {}) {
  ScaledObjectRef ref;
  ref.set_name("consumers");
  ref.set_namespace_("default");
  auto* m = ref.mutable_scalermetadata();
  (*m)["scalerAddress"] = "msgqd:9090";
  if (!table.empty()) (*m)["table"] = table;
  for (auto& [k, v] : extra) (*m)[k] = v;
  return ref;
}

class KedaScalerTest : public SecurityTest {
 protected:
  void StartKeda(std::vector<std::string> args = {}) {
    args.push_back("--leases=false");
    ASSERT_NO_FATAL_FAILURE(StartServer(std::move(args)));
    keda_ = ExternalScaler::NewStub(PlainChannel(server_->address()));
  }

  grpc::Status IsActive(const ScaledObjectRef& ref, bool* active,
                        const std::string& token = "") {
    grpc::ClientContext ctx;
    Prepare(&ctx, token);
    IsActiveResponse r;
    grpc::Status s = keda_->IsActive(&ctx, ref, &r);
    *active = r.result();
    return s;
  }

  grpc::Status Metric(const ScaledObjectRef& ref, int64_t* value) {
    grpc::ClientContext ctx;
    Prepare(&ctx, "");
    GetMetricsRequest request;
    *request.mutable_scaledobjectref() = ref;
    request.set_metricname("msgq-msgq-jobs");
    GetMetricsResponse r;
    grpc::Status s = keda_->GetMetrics(&ctx, request, &r);
    if (s.ok()) {
      EXPECT_EQ(r.metricvalues_size(), 1);
      if (r.metricvalues_size() != 1) return s;
      EXPECT_EQ(r.metricvalues(0).metricname(), "msgq-msgq-jobs");
      EXPECT_EQ(r.metricvalues(0).metricvaluefloat(),
                static_cast<double>(r.metricvalues(0).metricvalue()));
      *value = r.metricvalues(0).metricvalue();
    }
    return s;
  }

  // MySQL's count of what the metric counts: unacked, not dead, and due
  // (ready) or sent and waiting (in flight).
  int64_t Counted(const std::string& table) {
    return std::stoll(db_->Scalar(absl::StrCat(
        "SELECT COUNT(*) FROM msgq.`", table,
        "` WHERE time_acked IS NULL AND time_next IS NOT NULL AND (time_next "
        "<= UNIX_TIMESTAMP(NOW(6)) * 1000000000 OR epoch > 0)")));
  }

  // Waits until GetMetrics and MySQL both say `want`.
  void ExpectQuiet(const ScaledObjectRef& ref, int64_t want) {
    int64_t shown = -1, counted = -1;
    const bool equal = Eventually(
        [&] {
          if (!Metric(ref, &shown).ok()) return false;
          counted = Counted("jobs");
          return shown == want && counted == want;
        },
        absl::Seconds(15));
    EXPECT_TRUE(equal) << "shown " << shown << ", counted " << counted
                       << ", want " << want;
  }

  // Waits until the table's counts are loaded (IsActive answers OK).
  void WaitForCounts(const ScaledObjectRef& ref) {
    bool active = false;
    ASSERT_TRUE(Eventually([&] { return IsActive(ref, &active).ok(); },
                           absl::Seconds(15)))
        << server_->Log();
  }

  std::unique_ptr<ExternalScaler::Stub> keda_;
};

TEST_F(KedaScalerTest, ActivityAndExactMetricFollowTheRows) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs", "vt_ack_wait=3600"));
  ASSERT_NO_FATAL_FAILURE(StartKeda());
  ASSERT_NO_FATAL_FAILURE(WaitForBinlog("jobs"));
  const ScaledObjectRef ref =
      Ref("jobs", {{"keyspace", "msgq"}, {"targetMessagesPerReplica", "5"}});
  ASSERT_NO_FATAL_FAILURE(WaitForCounts(ref));

  bool active = true;
  grpc::Status s = IsActive(ref, &active);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(active);
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet(ref, 0));

  {
    grpc::ClientContext ctx;
    Prepare(&ctx, "");
    GetMetricSpecResponse spec;
    s = keda_->GetMetricSpec(&ctx, ref, &spec);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(spec.metricspecs_size(), 1);
    EXPECT_EQ(spec.metricspecs(0).metricname(), "msgq-msgq-jobs");
    EXPECT_EQ(spec.metricspecs(0).targetsize(), 5);
    EXPECT_EQ(spec.metricspecs(0).targetsizefloat(), 5.0);
  }

  // 7 due rows and 2 scheduled ones (not counted).
  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 7));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.jobs (id, message, time_next) VALUES "
           "(101, '{}', 4000000000000000000), (102, '{}', "
           "4000000000000000000)"));
  ASSERT_TRUE(Eventually([&] { return IsActive(ref, &active).ok() && active; },
                         absl::Seconds(15)));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet(ref, 7));

  // Sent rows stay counted (in flight) until acked.
  StreamCollector stream(stub_.get(), "jobs");
  ASSERT_TRUE(stream.WaitForRows(7, absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet(ref, 7));
  int64_t acked = 0;
  ASSERT_TRUE(AckIds(stub_.get(), "jobs", {"1", "2", "3"}, &acked).ok());
  ASSERT_EQ(acked, 3);
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet(ref, 4));
  // An application's UPDATE acks the rest.
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET time_acked = UNIX_TIMESTAMP(NOW(6)) * "
           "1000000000, time_next = NULL WHERE id BETWEEN 4 AND 7"));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet(ref, 0));
  s = IsActive(ref, &active);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(active);
}

TEST_F(KedaScalerTest, StreamIsActivePushesTheFirstRowFromTheBinlog) {
  // Neither a poll nor a counting read comes within the test: only the
  // binlog can tell msgqd of the row.
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs", "vt_poller_interval=3600"));
  ASSERT_NO_FATAL_FAILURE(StartKeda({"--counts_reconcile=1h"}));
  ASSERT_NO_FATAL_FAILURE(WaitForBinlog("jobs"));
  const ScaledObjectRef ref = Ref("jobs");
  ASSERT_NO_FATAL_FAILURE(WaitForCounts(ref));

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = keda_->StreamIsActive(&ctx, ref);
  IsActiveResponse first;
  ASSERT_TRUE(reader->Read(&first)) << reader->Finish().error_message();
  EXPECT_FALSE(first.result());

  const int64_t polls_before = FindTable(stub_.get(), "jobs").polls();
  const absl::Time inserted = absl::Now();
  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 1));
  IsActiveResponse pushed;
  ASSERT_TRUE(reader->Read(&pushed)) << reader->Finish().error_message();
  EXPECT_TRUE(pushed.result());
  // Recorded, not asserted: from the INSERT's commit to the push.
  RecordProperty("push_after_insert_us",
                 absl::ToInt64Microseconds(absl::Now() - inserted));
  // No poll ran in between: the binlog made the push.
  EXPECT_EQ(FindTable(stub_.get(), "jobs").polls(), polls_before);

  // Acked: inactive again, pushed too.
  const std::string ack =
      "UPDATE msgq.jobs SET time_acked = UNIX_TIMESTAMP(NOW(6)) * "
      "1000000000, time_next = NULL WHERE id = 1";
  ASSERT_NO_FATAL_FAILURE(Exec(ack));
  IsActiveResponse idle;
  ASSERT_TRUE(reader->Read(&idle)) << reader->Finish().error_message();
  EXPECT_FALSE(idle.result());
  ctx.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(KedaScalerTest, StreamIsActiveEndsWhenTheTableIsDropped) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(StartKeda());
  ASSERT_NO_FATAL_FAILURE(WaitForCounts(Ref("jobs")));
  grpc::ClientContext ctx;
  Prepare(&ctx, "");
  auto reader = keda_->StreamIsActive(&ctx, Ref("jobs"));
  IsActiveResponse first;
  ASSERT_TRUE(reader->Read(&first)) << reader->Finish().error_message();
  EXPECT_FALSE(first.result());
  ASSERT_NO_FATAL_FAILURE(Exec("DROP TABLE msgq.jobs"));
  IsActiveResponse none;
  EXPECT_FALSE(reader->Read(&none));
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "message table `msgq`.`jobs` not found");
}

TEST_F(KedaScalerTest, UnknownTableOrMetadataIsRefusedPrecisely) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(StartKeda());
  ASSERT_NO_FATAL_FAILURE(WaitForCounts(Ref("jobs")));

  bool active = false;
  grpc::Status s = IsActive(Ref("nope", {{"keyspace", "msgq"}}), &active);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "message table `msgq`.`nope` not found");
  s = IsActive(Ref("nope"), &active);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "message table `nope` not found in keyspaces msgq");

  {
    grpc::ClientContext ctx;
    Prepare(&ctx, "");
    auto reader = keda_->StreamIsActive(&ctx, Ref("nope"));
    IsActiveResponse r;
    EXPECT_FALSE(reader->Read(&r));
    s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(s.error_message(),
              "message table `nope` not found in keyspaces msgq");
  }
  {
    grpc::ClientContext ctx;
    Prepare(&ctx, "");
    GetMetricSpecResponse spec;
    s = keda_->GetMetricSpec(&ctx, Ref("nope", {{"keyspace", "other"}}), &spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(s.error_message(), "keyspace \"other\" is not served");
  }
  s = IsActive(Ref(""), &active);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "scalerMetadata must name the message table: `table`");
  s = IsActive(Ref("jobs", {{"ageSeconds", "soon"}}), &active);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// The first response of a StreamIsActive on `ctx`, or its end status.
grpc::Status OpenActivity(
    ExternalScaler::Stub* keda, grpc::ClientContext* ctx,
    std::unique_ptr<grpc::ClientReader<IsActiveResponse>>* reader) {
  *reader = keda->StreamIsActive(ctx, Ref("jobs"));
  IsActiveResponse r;
  if ((*reader)->Read(&r)) return grpc::Status::OK;
  return (*reader)->Finish();
}

TEST_F(KedaScalerTest, StreamsPerConnectionAreBounded) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(StartKeda());
  ASSERT_NO_FATAL_FAILURE(WaitForCounts(Ref("jobs")));
  // One channel, one connection: 16 streams at most
  // (KedaScalerService::Options).
  constexpr int kLimit = 16;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<IsActiveResponse>>> readers;
  for (int i = 0; i < kLimit; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.emplace_back();
    grpc::Status s =
        OpenActivity(keda_.get(), contexts.back().get(), &readers.back());
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<IsActiveResponse>> reader;
    grpc::Status s = OpenActivity(keda_.get(), &ctx, &reader);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(),
              "this connection already has 16 StreamIsActive calls open (the "
              "limit per connection)");
  }
  // Another connection has its own slots.
  {
    auto other = ExternalScaler::NewStub(PlainChannel(server_->address()));
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<IsActiveResponse>> reader;
    EXPECT_TRUE(OpenActivity(other.get(), &ctx, &reader).ok());
    ctx.TryCancel();
    reader->Finish();
  }
  // A closed stream frees its slot.
  contexts[0]->TryCancel();
  EXPECT_EQ(readers[0]->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(Eventually(
      [&] {
        grpc::ClientContext ctx;
        std::unique_ptr<grpc::ClientReader<IsActiveResponse>> reader;
        grpc::Status s = OpenActivity(keda_.get(), &ctx, &reader);
        if (s.ok()) {
          ctx.TryCancel();
          reader->Finish();
        }
        return s.ok();
      },
      absl::Seconds(10)));
  for (size_t i = 1; i < readers.size(); ++i) {
    contexts[i]->TryCancel();
    readers[i]->Finish();
  }
}

TEST_F(KedaScalerTest, AuthenticatesAndAuthorizesAsListTables) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("b"));
  ReplaceFile(Path("tokens"),
              TokenLine("tok-worker", "worker") + TokenLine("tok-ops", "ops"));
  ReplaceFile(Path("policy"), "worker msgq/a stream\nops */* admin\n");
  ASSERT_NO_FATAL_FAILURE(StartKeda({"--auth_tokens_file=" + Path("tokens"),
                                     "--auth_policy_file=" + Path("policy")}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "b", "tok-ops"));

  bool active = true;
  ASSERT_TRUE(
      Eventually([&] { return IsActive(Ref("a"), &active, "tok-worker").ok(); },
                 absl::Seconds(15)));
  EXPECT_FALSE(active);

  grpc::Status s = IsActive(Ref("a"), &active);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(),
            "missing or invalid credentials: send 'authorization: Bearer "
            "<token>'");
  s = IsActive(Ref("a"), &active, "tok-wrong");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(),
            "missing or invalid credentials: unknown bearer token");
  {
    grpc::ClientContext ctx;
    Prepare(&ctx, "");
    auto reader = keda_->StreamIsActive(&ctx, Ref("a"));
    IsActiveResponse r;
    EXPECT_FALSE(reader->Read(&r));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    Prepare(&ctx, "");
    GetMetricsRequest request;
    *request.mutable_scaledobjectref() = Ref("a");
    GetMetricsResponse r;
    EXPECT_EQ(keda_->GetMetrics(&ctx, request, &r).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // Not listed to worker: refused whether or not the table exists.
  s = IsActive(Ref("b"), &active, "tok-worker");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'worker' may not see msgq.b");
  s = IsActive(Ref("zzz"), &active, "tok-worker");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'worker' may not see msgq.zzz");
  s = IsActive(Ref("b"), &active, "tok-ops");
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(KedaScalerTest, StreamIsActiveEndsWhenTheGrantIsRevoked) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ReplaceFile(Path("tokens"),
              TokenLine("tok-worker", "worker") + TokenLine("tok-ops", "ops"));
  ReplaceFile(Path("policy"), "worker msgq/a stream\nops */* admin\n");
  ASSERT_NO_FATAL_FAILURE(StartKeda({"--auth_tokens_file=" + Path("tokens"),
                                     "--auth_policy_file=" + Path("policy"),
                                     "--auth_reload_interval=100ms"}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "a", "tok-ops"));
  bool active = true;
  ASSERT_TRUE(
      Eventually([&] { return IsActive(Ref("a"), &active, "tok-worker").ok(); },
                 absl::Seconds(15)));

  grpc::ClientContext ctx;
  Prepare(&ctx, "tok-worker");
  auto reader = keda_->StreamIsActive(&ctx, Ref("a"));
  IsActiveResponse first;
  ASSERT_TRUE(reader->Read(&first)) << reader->Finish().error_message();
  EXPECT_FALSE(first.result());
  ReplaceFile(Path("policy"), "ops */* admin\n");
  IsActiveResponse none;
  EXPECT_FALSE(reader->Read(&none));
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "permission denied: 'worker' may not see msgq.a");
}

}  // namespace
}  // namespace msgq::testing
