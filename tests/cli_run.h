// Running the msgq CLI (or any program) from an integration test through a
// shell: its exit code, stdout and stderr, with the caller's environment
// cleared of MSGQ_SERVER and MSGQ_TOKEN and a 60 s bound.
//
// Example:
//   CliResult r = RunCli(MSGQ_CLI_PATH, server_->address(), {"tables"});
//   EXPECT_EQ(r.exit_code, 0) << r;
//
// Thread-compatible: each call runs its own child.
#ifndef MSGQ_TESTS_CLI_RUN_H_
#define MSGQ_TESTS_CLI_RUN_H_

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace msgq::testing {

struct CliResult {
  int exit_code = -1;  // -1 when the child did not exit normally
  std::string out;
  std::string err;
};

inline std::ostream& operator<<(std::ostream& os, const CliResult& r) {
  return os << "exit " << r.exit_code << "\n--- stdout:\n"
            << r.out << "--- stderr:\n"
            << r.err;
}

// `s` as one word of a POSIX shell command.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `cli --server=SERVER ARGS...` with no stdin.
inline CliResult RunCli(const std::string& cli, const std::string& server,
                        const std::vector<std::string>& args) {
  CliResult r;
  char err_path[] = "/tmp/msgq-test-cli-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  EXPECT_GE(fd, 0);
  if (fd < 0) return r;
  close(fd);
  std::string command = absl::StrCat(
      "env -u MSGQ_SERVER -u MSGQ_TOKEN timeout --kill-after=5 60 ",
      ShellQuote(cli), " --server=", server);
  for (const std::string& a : args)
    absl::StrAppend(&command, " ", ShellQuote(a));
  absl::StrAppend(&command, " </dev/null 2>", err_path);
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe != nullptr) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  unlink(err_path);
  return r;
}

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_CLI_RUN_H_
