// Helpers for the tests of msgqd's HTTP port: its port from the log line,
// and tests/http_probe.py (Debian's python3 with prometheus_client) to
// fetch pages and parse /metrics with a real Prometheus parser.
#ifndef MSGQ_TESTS_HTTP_FIXTURE_H_
#define MSGQ_TESTS_HTTP_FIXTURE_H_

#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/fixture.h"

namespace msgq::testing {

// The port of "msgqd http on HOST:PORT" in `log`; 0 if absent.
inline int HttpPortFromLog(const std::string& log) {
  const std::string prefix = "msgqd http on ";
  const size_t at = log.find(prefix);
  if (at == std::string::npos) return 0;
  const size_t colon = log.find(':', at + prefix.size());
  const size_t end = log.find('\n', colon);
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(log.substr(colon + 1, end - colon - 1), &port)) {
    return 0;
  }
  return port;
}

// Runs http_probe.py; its stdout, or an error with its exit status.
inline absl::StatusOr<std::string> Probe(const std::string& mode,
                                         const std::string& url,
                                         const std::string& extra = "") {
  const std::string cmd =
      absl::StrCat("/usr/bin/python3 ", MSGQ_TESTS_DIR, "/http_probe.py ", mode,
                   " '", url, "' ", extra);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("popen failed");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int rc = pclose(pipe);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat(cmd, " exited ", rc, ": ", out));
  }
  return out;
}

// GET: {status code, body}.
inline std::pair<int, std::string> HttpGet(const std::string& url) {
  absl::StatusOr<std::string> out = Probe("get", url);
  if (!out.ok()) return {0, std::string(out.status().message())};
  const size_t nl = out->find('\n');
  int code = 0;
  (void)absl::SimpleAtoi(out->substr(0, nl), &code);
  return {code, out->substr(nl + 1)};
}

// /metrics as parsed by prometheus_client: sample (name{labels sorted}) ->
// value. Empty with a failure recorded when it does not parse.
inline std::map<std::string, double> ScrapeMetrics(const std::string& url) {
  std::map<std::string, double> samples;
  absl::StatusOr<std::string> out = Probe("metrics", url);
  if (!out.ok()) {
    ADD_FAILURE() << out.status();
    return samples;
  }
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    const size_t space = line.rfind(' ');
    double v = 0;
    if (!absl::SimpleAtod(line.substr(space + 1), &v)) {
      ADD_FAILURE() << "bad sample line: " << line;
      continue;
    }
    samples[std::string(line.substr(0, space))] = v;
  }
  return samples;
}

// The value of `sample`, or -1 when the page lacks it.
inline double Sample(const std::map<std::string, double>& samples,
                     const std::string& sample) {
  auto it = samples.find(sample);
  return it == samples.end() ? -1 : it->second;
}

class HttpTest : public MsgqTest {
 protected:
  void StartHttpServer(std::vector<std::string> args = {}) {
    args.push_back("--http_listen=127.0.0.1:0");
    ASSERT_NO_FATAL_FAILURE(StartServer(std::move(args)));
    const int port = HttpPortFromLog(server_->Log());
    ASSERT_NE(port, 0) << server_->Log();
    base_ = absl::StrCat("http://127.0.0.1:", port);
  }
  std::string Url(const std::string& path) const { return base_ + path; }

  std::string base_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_HTTP_FIXTURE_H_
