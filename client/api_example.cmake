# Writes OUT: the C++ consumer example of docs/api.md (the first cpp block
# after the line "C++:"), as written, after a Process() of the application
# and with its servers read from $MSGQ_EXAMPLE_SERVER, so that
# api_example_test.py runs the documented program against a real msgqd.
#   cmake -DDOC=docs/api.md -DOUT=api_example_consumer.cc -P api_example.cmake
file(READ "${DOC}" text)
string(FIND "${text}" "\nC++:\n\n```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: no \"C++:\" line followed by a cpp block")
endif()
math(EXPR start "${start} + 14")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} block)
set(servers "{\"db1:15999\", \"db2:15999\"}")
string(FIND "${block}" "${servers}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC}: the C++ example no longer names ${servers}")
endif()
string(REPLACE "${servers}" "{std::string(std::getenv(\"MSGQ_EXAMPLE_SERVER\"))}"
  block "${block}")
file(WRITE "${OUT}.tmp" "// Generated from ${DOC} by client/api_example.cmake.
#include <cstdlib>
#include <string>

#include \"absl/status/status.h\"
#include \"absl/strings/string_view.h\"

static absl::Status Process(absl::string_view) { return absl::OkStatus(); }

${block}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
