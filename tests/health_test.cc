// Health and reflection end to end (real MariaDB, msgqd): grpc.health.v1
// and /readyz say SERVING once the schema is loaded, NOT_SERVING while
// MySQL is stopped and SERVING again once it is back; /healthz stays up;
// reflection lists msgq.v1.Messaging.
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
  EXPECT_EQ(names,
            (std::set<std::string>{"grpc.health.v1.Health",
                                   "grpc.reflection.v1alpha.ServerReflection",
                                   "msgq.v1.Messaging"}));
  // And the API's descriptors can be fetched without the .proto file.
  request.set_file_containing_symbol("msgq.v1.Messaging");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_GE(response.file_descriptor_response().file_descriptor_proto_size(),
            1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace msgq::testing
