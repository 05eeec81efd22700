# How msgq's C++ is compiled faster, with the same product code and tests.
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
# The product's own targets (msgq_engine, msgq_server, msgqd, msgq_client,
# the tools...) keep the build type's flags and get precompiled headers of
# their own, made with those flags: Abseil and the standard library for the
# targets that do not link gRPC, those and gRPC and msgq's protos for the
# rest. Parsing those headers is most of a product file's compile.
# Rationale and figures: docs/design/build-speed.md.
#
# MSGQ_FAST_TESTS=OFF compiles test code like everything else;
# MSGQ_PRECOMPILED_HEADERS=OFF gives the product targets no precompiled
# header (a file that misses an #include fails there).
option(MSGQ_FAST_TESTS "Compile test code with -O1 -g1 and precompiled headers" ON)
option(MSGQ_PRECOMPILED_HEADERS "Precompiled headers for product targets" ON)

function(_msgq_targets_below dir out)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_sub ${_subdirs})
    _msgq_targets_below(${_sub} _below)
    list(APPEND _targets ${_below})
  endforeach()
  set(${out} ${_targets} PARENT_SCOPE)
endfunction()

# Sets out to TRUE when target t links msgq_proto or gRPC (directly or
# through the libraries it links).
function(_msgq_links_grpc t out)
  set(_seen)
  set(_todo ${t})
  while(_todo)
    list(POP_FRONT _todo _x)
    if(_x IN_LIST _seen OR NOT TARGET ${_x})
      continue()
    endif()
    list(APPEND _seen ${_x})
    if(_x MATCHES "^(msgq_proto|gRPC::grpc\\+\\+)$")
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    get_target_property(_alias ${_x} ALIASED_TARGET)
    if(_alias)
      list(APPEND _todo ${_alias})
      continue()
    endif()
    get_target_property(_type ${_x} TYPE)
    set(_deps)
    if(NOT _type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(_direct ${_x} LINK_LIBRARIES)
      if(_direct)
        list(APPEND _deps ${_direct})
      endif()
    endif()
    get_target_property(_iface ${_x} INTERFACE_LINK_LIBRARIES)
    if(_iface)
      list(APPEND _deps ${_iface})
    endif()
    foreach(_d ${_deps})
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _d "${_d}")
      list(APPEND _todo ${_d})
    endforeach()
  endwhile()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

function(msgq_configure_test_builds)
  if(MSGQ_FUZZ)
    return()
  endif()
  set(_pch_dir ${PROJECT_BINARY_DIR}/msgq_pch)
  if(NOT EXISTS ${_pch_dir}/empty.cc)
    file(WRITE ${_pch_dir}/empty.cc "")
  endif()
  set(_base_headers
    <absl/status/status.h> <absl/status/statusor.h>
    <absl/strings/str_cat.h> <absl/strings/string_view.h>
    <absl/synchronization/mutex.h> <absl/time/time.h>
    <map> <memory> <string> <thread> <vector>)
  set(_base_libs absl::status absl::statusor absl::strings absl::time
    absl::synchronization)
  set(_grpc_headers <grpcpp/grpcpp.h> [["msgq/v1/messaging.grpc.pb.h"]])
  set(_gtest_headers <gtest/gtest.h> <gmock/gmock.h>)
  # Each shared precompiled header is built once by a target of its own (an
  # object library of one empty file) with the same flags as the targets
  # that reuse it. A precompiled header is used only with the macros it was
  # made with: -pthread (_REENTRANT, from gRPC's and Abseil's usage
  # requirements) goes to every target that uses one, and the users of a
  # gRPC one get the generated protos' include directory.
  set(_test_flags -O1 -g1 -pthread)
  set(_product_flags -pthread)
  set(_pchs)
  if(MSGQ_FAST_TESTS)
    add_library(msgq_unit_pch OBJECT ${_pch_dir}/empty.cc)
    target_link_libraries(msgq_unit_pch PRIVATE GTest::gtest GTest::gmock
      ${_base_libs})
    target_precompile_headers(msgq_unit_pch PRIVATE ${_gtest_headers}
      ${_base_headers})
    add_library(msgq_grpc_pch OBJECT ${_pch_dir}/empty.cc)
    target_link_libraries(msgq_grpc_pch PRIVATE msgq_proto gRPC::grpc++
      GTest::gtest GTest::gmock ${_base_libs})
    target_precompile_headers(msgq_grpc_pch PRIVATE ${_gtest_headers}
      ${_base_headers} ${_grpc_headers})
    foreach(_pch msgq_unit_pch msgq_grpc_pch)
      target_compile_options(${_pch} PRIVATE ${_test_flags})
    endforeach()
    list(APPEND _pchs msgq_unit_pch msgq_grpc_pch)
  endif()
  if(MSGQ_PRECOMPILED_HEADERS)
    add_library(msgq_product_pch OBJECT ${_pch_dir}/empty.cc)
    target_link_libraries(msgq_product_pch PRIVATE ${_base_libs})
    target_precompile_headers(msgq_product_pch PRIVATE ${_base_headers})
    add_library(msgq_product_grpc_pch OBJECT ${_pch_dir}/empty.cc)
    target_link_libraries(msgq_product_grpc_pch PRIVATE msgq_proto
      gRPC::grpc++ ${_base_libs})
    target_precompile_headers(msgq_product_grpc_pch PRIVATE ${_base_headers}
      ${_grpc_headers})
    foreach(_pch msgq_product_pch msgq_product_grpc_pch)
      target_compile_options(${_pch} PRIVATE ${_product_flags})
    endforeach()
    list(APPEND _pchs msgq_product_pch msgq_product_grpc_pch)
  endif()
  get_target_property(_proto_includes msgq_proto INTERFACE_INCLUDE_DIRECTORIES)

  # ccache caches a compile that uses a precompiled header only with these
  # sloppinesses (the header is built just before its users, and its
  # macros are its own).
  set(_launcher)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
    set(_launcher env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${CMAKE_CXX_COMPILER_LAUNCHER})
    foreach(_pch ${_pchs})
      set_property(TARGET ${_pch} PROPERTY CXX_COMPILER_LAUNCHER ${_launcher})
    endforeach()
  endif()

  _msgq_targets_below(${PROJECT_SOURCE_DIR} _all)
  foreach(_t ${_all})
    get_target_property(_type ${_t} TYPE)
    if(NOT _type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY)$"
       OR _t IN_LIST _pchs)
      continue()
    endif()
    get_target_property(_src_dir ${_t} SOURCE_DIR)
    _msgq_links_grpc(${_t} _grpc)
    if(NOT (_t MATCHES "_test$|_test_" OR _src_dir STREQUAL "${PROJECT_SOURCE_DIR}/tests"))
      # Product code (and the tools), but not the generated protos (which
      # the gRPC header includes) and the one-file build stamp.
      if(NOT MSGQ_PRECOMPILED_HEADERS OR _t MATCHES "^(msgq_proto|msgq_build_info)$")
        continue()
      endif()
      target_compile_options(${_t} PRIVATE ${_product_flags})
      if(_launcher)
        set_property(TARGET ${_t} PROPERTY CXX_COMPILER_LAUNCHER ${_launcher})
      endif()
      if(_grpc)
        target_precompile_headers(${_t} REUSE_FROM msgq_product_grpc_pch)
        target_include_directories(${_t} PRIVATE ${_proto_includes})
      else()
        target_precompile_headers(${_t} REUSE_FROM msgq_product_pch)
      endif()
      continue()
    endif()
    if(NOT MSGQ_FAST_TESTS)
      continue()
    endif()
    target_compile_options(${_t} PRIVATE ${_test_flags})
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
