# How test code is compiled: faster to build, same tests.
#
# Test code is most of the build's compile time and none of what a user runs.
# Every target of tests/ and every *_test target elsewhere (their helper
# programs and libraries included) is compiled
# - with -O1 -g1 instead of the build type's -O2 -g: a test's own code is not
#   what is measured, line tables keep backtraces and gtest's file:line, and
#   the code under test (msgq_engine, msgq_server, msgq_client...) keeps the
#   build type's flags;
# - with a precompiled header of gtest, gmock and Abseil (engine/ and common/,
#   which know nothing of gRPC) or of those and gRPC and msgq's protos
#   (everything else), shared by all targets of its kind (REUSE_FROM):
#   the *_test binaries and the fixture libraries.
# Rationale and figures: docs/design/build-speed.md.
#
# MSGQ_FAST_TESTS=OFF compiles test code like everything else.
option(MSGQ_FAST_TESTS "Compile test code with -O1 -g1 and precompiled headers" ON)

function(_msgq_targets_below dir out)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_sub ${_subdirs})
    _msgq_targets_below(${_sub} _below)
    list(APPEND _targets ${_below})
  endforeach()
  set(${out} ${_targets} PARENT_SCOPE)
endfunction()

function(msgq_configure_test_builds)
  if(NOT MSGQ_FAST_TESTS OR MSGQ_FUZZ)
    return()
  endif()
  set(_flags -O1 -g1)
  # The two shared precompiled headers, each built once by a target of its
  # own (an object library of one empty file) with the same flags as the
  # targets that reuse it.
  set(_pch_dir ${PROJECT_BINARY_DIR}/msgq_pch)
  file(WRITE ${_pch_dir}/empty.cc "")
  add_library(msgq_unit_pch OBJECT ${_pch_dir}/empty.cc)
  target_link_libraries(msgq_unit_pch PRIVATE GTest::gtest GTest::gmock
    absl::status absl::statusor absl::strings absl::time absl::synchronization)
  target_precompile_headers(msgq_unit_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h>
    <absl/status/status.h> <absl/status/statusor.h>
    <absl/strings/str_cat.h> <absl/strings/string_view.h>
    <absl/synchronization/mutex.h> <absl/time/time.h>
    <map> <memory> <string> <thread> <vector>)
  add_library(msgq_grpc_pch OBJECT ${_pch_dir}/empty.cc)
  target_link_libraries(msgq_grpc_pch PRIVATE msgq_proto gRPC::grpc++
    GTest::gtest GTest::gmock absl::status absl::statusor absl::strings
    absl::time absl::synchronization)
  target_precompile_headers(msgq_grpc_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h>
    <absl/status/status.h> <absl/status/statusor.h>
    <absl/strings/str_cat.h> <absl/strings/string_view.h>
    <absl/synchronization/mutex.h> <absl/time/time.h>
    <map> <memory> <string> <thread> <vector>
    <grpcpp/grpcpp.h> [["msgq/v1/messaging.grpc.pb.h"]])
  # A precompiled header is used only with the macros it was made with:
  # -pthread (_REENTRANT, from gRPC's and Abseil's usage requirements) goes
  # to every target, and the users of the gRPC one get the generated protos'
  # include directory.
  list(APPEND _flags -pthread)
  foreach(_pch msgq_unit_pch msgq_grpc_pch)
    target_compile_options(${_pch} PRIVATE ${_flags})
  endforeach()
  get_target_property(_proto_includes msgq_proto INTERFACE_INCLUDE_DIRECTORIES)

  # ccache caches a compile that uses a precompiled header only with these
  # sloppinesses (the header is built just before its users, and its
  # macros are its own).
  set(_launcher)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
    set(_launcher env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${CMAKE_CXX_COMPILER_LAUNCHER})
    foreach(_pch msgq_unit_pch msgq_grpc_pch)
      set_property(TARGET ${_pch} PROPERTY CXX_COMPILER_LAUNCHER ${_launcher})
    endforeach()
  endif()

  _msgq_targets_below(${PROJECT_SOURCE_DIR} _all)
  foreach(_t ${_all})
    get_target_property(_type ${_t} TYPE)
    if(NOT _type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY)$")
      continue()
    endif()
    get_target_property(_src_dir ${_t} SOURCE_DIR)
    if(NOT (_t MATCHES "_test$|_test_" OR _src_dir STREQUAL "${PROJECT_SOURCE_DIR}/tests"))
      continue()
    endif()
    target_compile_options(${_t} PRIVATE ${_flags})
    if(_launcher)
      set_property(TARGET ${_t} PROPERTY CXX_COMPILER_LAUNCHER ${_launcher})
    endif()
    # Only gtest code gets a precompiled header (it carries gtest's macros):
    # the test binaries and the fixture libraries, not helper programs such
    # as netns_subscriber or the generated test protos.
    if(NOT _t MATCHES "_test$|_fixture$|^msgq_test_env$")
      continue()
    endif()
    if(_src_dir MATCHES "^${PROJECT_SOURCE_DIR}/(engine|common)(/|$)")
      target_precompile_headers(${_t} REUSE_FROM msgq_unit_pch)
    else()
      target_precompile_headers(${_t} REUSE_FROM msgq_grpc_pch)
      target_include_directories(${_t} PRIVATE ${_proto_includes})
    endif()
  endforeach()
endfunction()
