// Test helpers shared by the http_server_*_test.cc and https_server_test.cc
// files (test-only): a blocking loopback client over plain sockets (connect,
// write, read until EOF, one whole exchange), the parts of a raw response
// (status line, header lines, body), the headers every answer carries,
// and the routes of the echo server most tests start. Header-only; the
// helpers record failures with EXPECT_* and never abort the test.
#ifndef MSGQ_SERVER_HTTP_HTTP_SERVER_TEST_UTIL_H_
#define MSGQ_SERVER_HTTP_HTTP_SERVER_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/http/http_server.h"

namespace msgq::http_test {

// A TCP connection to 127.0.0.1:`port`.
inline int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// What a plain socket reads until EOF (or an error, e.g. a reset).
inline std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return out;
}

// Whether all of `data` was sent (false once the peer is gone).
inline bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// One exchange on a new connection: the whole response.
inline std::string Fetch(int port, const std::string& request) {
  const int fd = Connect(port);
  WriteAll(fd, request);
  std::string response = ReadAll(fd);
  close(fd);
  return response;
}

inline std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

inline std::string Body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// The header lines of `response` after its status line, without Date (its
// value changes).
inline std::vector<std::string> HeaderLines(const std::string& response) {
  std::vector<std::string> lines;
  const size_t end = response.find("\r\n\r\n");
  size_t at = response.find("\r\n");
  while (at != std::string::npos && at < end) {
    const size_t next = response.find("\r\n", at + 2);
    std::string line = response.substr(at + 2, next - at - 2);
    if (line.rfind("Date: ", 0) != 0) lines.push_back(std::move(line));
    at = next;
  }
  return lines;
}

// The header lines HttpServer sends with every answer against framing,
// sniffing, and leaking the console's URLs (http_server.h).
inline std::vector<std::string> SecurityHeaderLines() {
  return {"Cache-Control: no-store", "X-Content-Type-Options: nosniff",
          "X-Frame-Options: DENY",
          "Content-Security-Policy: default-src 'self'; frame-ancestors "
          "'none'",
          "Referrer-Policy: no-referrer"};
}

// "/" serves a fixed page; "/echo" answers 201 with the method, the path,
// the `name` and every `id` parameter, and the X-Test header.
inline std::map<std::string, HttpHandler> EchoRoutes() {
  std::map<std::string, HttpHandler> routes;
  routes["/"] = [](const HttpRequest&) {
    return HttpResponse{200, "text/html", "<p>home</p>"};
  };
  routes["/echo"] = [](const HttpRequest& r) {
    std::string ids;
    for (const std::string& id : r.Params("id")) absl::StrAppend(&ids, id, ";");
    auto header = r.headers.find("x-test");
    return HttpResponse{
        201, "text/plain",
        absl::StrCat(
            r.method, " ", r.path, " name=", r.Param("name").value_or("-"),
            " ids=", ids,
            " header=", header == r.headers.end() ? "-" : header->second)};
  };
  return routes;
}

}  // namespace msgq::http_test

#endif  // MSGQ_SERVER_HTTP_HTTP_SERVER_TEST_UTIL_H_
