// Health and reflection end to end (real MariaDB, msgqd): grpc.health.v1
// and /readyz say SERVING once the schema is loaded, NOT_SERVING while
// MySQL is stopped, while it leaves msgqd's writes unanswered (a global read
// lock) or refuses them as read-only, and SERVING again once it is back;
// /healthz stays up; reflection lists msgq.v1.Messaging.
#include <regex>
#include <set>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthTest : public HttpTest {
 protected:
  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel(server_->address(),
                               grpc::InsecureChannelCredentials());
  }
  // The status of `service`, or -1 when the call failed.
  int Check(const std::string& service) {
    auto stub = grpc::health::v1::Health::NewStub(Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status s = stub->Check(&context, request, &response);
    return s.ok() ? static_cast<int>(response.status()) : -1;
  }
};

TEST_F(HealthTest, NotServingWhileMysqlIsDownServingWhenBack) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  constexpr int kServing = HealthCheckResponse::SERVING;
  constexpr int kNotServing = HealthCheckResponse::NOT_SERVING;
  ASSERT_TRUE(
      Eventually([&] { return Check("") == kServing; }, absl::Seconds(10)));
  EXPECT_EQ(Check("msgq.v1.Messaging"), kServing);
  EXPECT_EQ(HttpGet(Url("/readyz")),
            std::make_pair(200, std::string("ready\n")));
  EXPECT_EQ(HttpGet(Url("/healthz")), std::make_pair(200, std::string("ok\n")));
  EXPECT_EQ(ScrapeMetrics(Url("/metrics"))["msgq_ready{}"], 1);

  ASSERT_TRUE(db_->Stop().ok());
  // The engine notices at its next schema read (every 200 ms here).
  EXPECT_TRUE(
      Eventually([&] { return Check("msgq.v1.Messaging") == kNotServing; },
                 absl::Seconds(15)));
  EXPECT_EQ(Check(""), kNotServing);
  std::pair<int, std::string> ready = HttpGet(Url("/readyz"));
  EXPECT_EQ(ready.first, 503);
  EXPECT_EQ(ready.second.rfind("not ready: cannot read the schema: ", 0), 0u)
      << ready.second;
  EXPECT_EQ(HttpGet(Url("/healthz")).first, 200);  // alive all along
  EXPECT_EQ(ScrapeMetrics(Url("/metrics"))["msgq_ready{}"], 0);

  ASSERT_TRUE(db_->Restart().ok());
  EXPECT_TRUE(Eventually([&] { return Check("msgq.v1.Messaging") == kServing; },
                         absl::Seconds(20)));
  EXPECT_EQ(Check(""), kServing);
  EXPECT_EQ(HttpGet(Url("/readyz")).first, 200);
}

// A user without SUPER or READ_ONLY ADMIN, whose writes @@read_only
// refuses: the lease heartbeat (each second) is refused, and /readyz says
// so until the server is writable again.
TEST_F(HealthTest, NotReadyWhileMysqlRefusesWritesAsReadOnly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'msgq'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(Exec("GRANT ALL ON msgq.* TO 'msgq'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      StartHttpServer({"--mysql_user=msgq", "--binlog=false"}));
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 200; },
                         absl::Seconds(10)))
      << server_->Log();

  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL read_only = 1"));
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 503; },
                         absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(
      HttpGet(Url("/readyz")),
      std::make_pair(
          503, std::string("not ready: MySQL refuses msgqd's writes: it is "
                           "read-only (@@read_only=1, @@innodb_read_only=0): "
                           "query failed: MySQL error 1290: The MariaDB server "
                           "is running with the --read-only option so it "
                           "cannot execute this statement\n")));
  // The health service follows within its 250 ms check.
  EXPECT_TRUE(Eventually(
      [&] {
        return Check("msgq.v1.Messaging") == HealthCheckResponse::NOT_SERVING;
      },
      absl::Seconds(5)));
  EXPECT_EQ(HttpGet(Url("/healthz")), std::make_pair(200, std::string("ok\n")));

  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL read_only = 0"));
  EXPECT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 200; },
                         absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(HttpGet(Url("/readyz")),
            std::make_pair(200, std::string("ready\n")));
}

// Writes that wait (here behind FLUSH TABLES WITH READ LOCK, as behind a
// full disk) make msgqd unready once they have waited
// --mysql_stall_timeout, while its reads still work; ready again once they
// are answered.
TEST_F(HealthTest, NotReadyWhileMysqlLeavesWritesUnanswered) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("jobs"));
  ASSERT_NO_FATAL_FAILURE(StartHttpServer({"--mysql_stall_timeout=2s"}));
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 200; },
                         absl::Seconds(10)))
      << server_->Log();

  absl::StatusOr<std::unique_ptr<MysqlConnection>> locker = db_->Connect();
  ASSERT_TRUE(locker.ok()) << locker.status();
  ASSERT_TRUE((*locker)->Execute("FLUSH TABLES WITH READ LOCK").ok());
  const absl::Time locked = absl::Now();
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 503; },
                         absl::Seconds(15)))
      << server_->Log();
  // The stall bound (2 s) and the heartbeat's period (1 s) at least.
  EXPECT_GE(absl::Now() - locked, absl::Seconds(2));
  const std::pair<int, std::string> ready = HttpGet(Url("/readyz"));
  EXPECT_EQ(ready.first, 503);
  EXPECT_TRUE(std::regex_match(
      ready.second,
      std::regex("not ready: MySQL has not answered msgqd's writes for "
                 "[0-9.]+s \\(over --mysql_stall_timeout=2s\\): is its disk "
                 "full, a global read lock held, or the server stopped\\?\n")))
      << ready.second;
  // The health service follows within its 250 ms check.
  EXPECT_TRUE(Eventually(
      [&] {
        return Check("msgq.v1.Messaging") == HealthCheckResponse::NOT_SERVING;
      },
      absl::Seconds(5)));

  ASSERT_TRUE((*locker)->Execute("UNLOCK TABLES").ok());
  EXPECT_TRUE(Eventually([&] { return HttpGet(Url("/readyz")).first == 200; },
                         absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(HttpGet(Url("/readyz")),
            std::make_pair(200, std::string("ready\n")));
}

TEST_F(HealthTest, UnknownServiceIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  auto stub = grpc::health::v1::Health::NewStub(Channel());
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service("no.such.Service");
  HealthCheckResponse response;
  EXPECT_EQ(stub->Check(&context, request, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthTest, ReflectionListsTheServices) {
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(Channel());
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::set<std::string> names;
  for (const auto& s : response.list_services_response().service()) {
    names.insert(s.name());
  }
  EXPECT_EQ(names, (std::set<std::string>{
                       "externalscaler.ExternalScaler", "grpc.health.v1.Health",
                       "grpc.reflection.v1alpha.ServerReflection",
                       "msgq.v1.Messaging"}));
  // And the API's descriptors can be fetched without the .proto file.
  request.set_file_containing_symbol("msgq.v1.Messaging");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_GE(response.file_descriptor_response().file_descriptor_proto_size(),
            1);
  // KEDA's scaler too (docs/operations.md#autoscaling-with-keda).
  request.set_file_containing_symbol("externalscaler.ExternalScaler");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_GE(response.file_descriptor_response().file_descriptor_proto_size(),
            1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace msgq::testing
