#include "server/http/http_server.h"

#include <civetweb.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One request through civetweb's own client.
Reply Fetch(int port, const std::string& request) {
  char error[256] = {0};
  mg_connection* conn = mg_download("127.0.0.1", port, 0, error, sizeof(error),
                                    "%s", request.c_str());
  Reply reply;
  if (conn == nullptr) {
    reply.body = error;
    return reply;
  }
  const mg_response_info* info = mg_get_response_info(conn);
  reply.status = info->status_code;
  if (const char* type = mg_get_header(conn, "Content-Type")) {
    reply.content_type = type;
  }
  char buf[4096];
  int n;
  while ((n = mg_read(conn, buf, sizeof(buf))) > 0) reply.body.append(buf, n);
  mg_close_connection(conn);
  return reply;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::map<std::string, HttpHandler> routes;
    routes["/"] = [](const HttpRequest&) {
      return HttpResponse{200, "text/html", "<p>home</p>"};
    };
    routes["/echo"] = [](const HttpRequest& r) {
      std::string ids;
      for (const std::string& id : r.Params("id"))
        absl::StrAppend(&ids, id, ";");
      auto header = r.headers.find("x-test");
      return HttpResponse{
          201, "text/plain",
          absl::StrCat(
              r.method, " ", r.path, " name=", r.Param("name").value_or("-"),
              " ids=", ids,
              " header=", header == r.headers.end() ? "-" : header->second)};
    };
    HttpServer::Options options;
    options.max_body_bytes = 64;
    auto server = HttpServer::Start("127.0.0.1:0", std::move(routes), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesExactPathsOnly) {
  Reply home = Fetch(server_->port(), "GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(home.status, 200);
  EXPECT_EQ(home.content_type, "text/html");
  EXPECT_EQ(home.body, "<p>home</p>");
  // "/" would match everything in civetweb: other paths are 404.
  EXPECT_EQ(Fetch(server_->port(), "GET /nope HTTP/1.0\r\n\r\n").status, 404);
  EXPECT_EQ(Fetch(server_->port(), "GET /echo/x HTTP/1.0\r\n\r\n").status, 404);
}

TEST_F(HttpServerTest, PassesQueryFormBodyAndHeaders) {
  const std::string body = "id=3&id=a%20b";
  Reply r =
      Fetch(server_->port(),
            absl::StrCat("POST /echo?name=x%2By&id=1 HTTP/1.0\r\n"
                         "X-Test: yes\r\n"
                         "Content-Type: application/x-www-form-urlencoded\r\n"
                         "Content-Length: ",
                         body.size(), "\r\n\r\n", body));
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "POST /echo name=x+y ids=1;3;a b; header=yes");
}

TEST_F(HttpServerTest, RefusesLargeBodies) {
  const std::string body(65, 'x');
  Reply r =
      Fetch(server_->port(),
            absl::StrCat("POST /echo HTTP/1.0\r\nContent-Length: ", body.size(),
                         "\r\n\r\n", body));
  EXPECT_EQ(r.status, 413);
}

TEST(HttpServerStartTest, PortInUseIsUnavailable) {
  auto first = HttpServer::Start("127.0.0.1:0", {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      HttpServer::Start(absl::StrCat("127.0.0.1:", (*first)->port()), {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      second.status().message().rfind(
          absl::StrCat("cannot serve HTTP on 127.0.0.1:", (*first)->port()), 0),
      0u)
      << second.status();
}

}  // namespace
}  // namespace msgq
