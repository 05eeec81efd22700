# Writes OUT: a C++ example of docs/api.md, as written, so that
# api_example_test.py runs the documented program against a real MariaDB
# (and msgqd). KIND picks it:
#   consumer (the default): the first cpp block after the line "C++:",
#     after a Process() of the application, with its servers read from
#     $MSGQ_EXAMPLE_SERVER;
#   producer: the first cpp block after the line "C++ producer:", after a
#     TraceparentOfCurrentSpan() of the application, connecting to the
#     MariaDB at the socket $MSGQ_EXAMPLE_SOCKET as root.
#   cmake -DDOC=docs/api.md -DOUT=api_example_consumer.cc [-DKIND=producer] \
#     -P api_example.cmake
if(NOT DEFINED KIND)
  set(KIND consumer)
endif()
if(KIND STREQUAL "consumer")
  set(marker "C++:")
  set(named "{\"db1:15999\", \"db2:15999\"}")
  set(replacement "{std::string(std::getenv(\"MSGQ_EXAMPLE_SERVER\"))}")
  set(prologue "#include \"absl/status/status.h\"
#include \"absl/strings/string_view.h\"

static absl::Status Process(absl::string_view) { return absl::OkStatus(); }")
elseif(KIND STREQUAL "producer")
  set(marker "C++ producer:")
  set(named "\"db1\", \"shop\", \"secret\", \"shop\", 3306, nullptr")
  set(replacement
    "\"localhost\", \"root\", \"\", \"shop\", 0, std::getenv(\"MSGQ_EXAMPLE_SOCKET\")")
  set(prologue "// The producer's span, as OpenTelemetry C++ would format it.
static std::string TraceparentOfCurrentSpan() {
  return \"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\";
}")
else()
  message(FATAL_ERROR "KIND must be consumer or producer, not ${KIND}")
endif()

file(READ "${DOC}" text)
string(FIND "${text}" "\n${marker}\n\n```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: no \"${marker}\" line followed by a cpp block")
endif()
string(LENGTH "\n${marker}\n\n```cpp\n" skip)
math(EXPR start "${start} + ${skip}")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} block)
string(FIND "${block}" "${named}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC}: the C++ ${KIND} example no longer names ${named}")
endif()
string(REPLACE "${named}" "${replacement}" block "${block}")
file(WRITE "${OUT}.tmp" "// Generated from ${DOC} by client/api_example.cmake.
#include <cstdlib>
#include <string>

${prologue}

${block}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
