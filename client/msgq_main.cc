// The msgq command-line tool; see cli.h and `msgq --help`.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  msgq::CliEnvironment env;
  if (const char* server = std::getenv("MSGQ_SERVER");
      server != nullptr && *server != '\0') {
    env.default_server = server;
  }
  env.handle_signals = true;
  return msgq::RunCli(args, std::cout, std::cerr, env);
}
