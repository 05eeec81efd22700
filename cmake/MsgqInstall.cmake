# `cmake --install`: msgqd and msgq into bin/, the C++ client library
# (msgq::client and the static libraries it needs: msgq::proto,
# msgq::common, msgq::common_grpc) into lib/, its headers under
# include/msgq/ (so `#include "client/subscriber.h"` works as in the tree),
# and a CMake package config so a downstream project can
#   find_package(msgq CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE msgq::client)
# Included from the top-level CMakeLists.txt after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MSGQ_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/msgq)
set(MSGQ_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/msgq)

install(TARGETS msgqd msgq
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)

# The library: static archives, exported as msgq::<EXPORT_NAME>.
set_target_properties(msgq_client PROPERTIES EXPORT_NAME client)
set_target_properties(msgq_proto PROPERTIES EXPORT_NAME proto)
set_target_properties(msgq_common PROPERTIES EXPORT_NAME common)
set_target_properties(msgq_common_grpc PROPERTIES EXPORT_NAME common_grpc)
install(TARGETS msgq_client msgq_proto msgq_common msgq_common_grpc
  EXPORT msgqTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  INCLUDES DESTINATION ${MSGQ_INSTALL_INCLUDEDIR})

# Headers: the client's public API (named here; not the CLI's, nor the
# library's internals under client/internal/, which no public header
# includes), what they include from common/, and the generated
# protobuf/gRPC headers.
set(_msgq_client_headers
  backoff.h client.h credentials.h handler_result.h message.h subscriber.h
  subscriber_options.h table_ref.h)
list(TRANSFORM _msgq_client_headers PREPEND ${PROJECT_SOURCE_DIR}/client/)
install(FILES ${_msgq_client_headers}
  DESTINATION ${MSGQ_INSTALL_INCLUDEDIR}/client COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/common/backoff.h
  ${PROJECT_SOURCE_DIR}/common/grpc_status.h
  DESTINATION ${MSGQ_INSTALL_INCLUDEDIR}/common COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/proto/msgq/v1/messaging.pb.h
  ${PROJECT_BINARY_DIR}/proto/msgq/v1/messaging.grpc.pb.h
  ${PROJECT_SOURCE_DIR}/proto/msgq/v1/messaging.proto
  DESTINATION ${MSGQ_INSTALL_INCLUDEDIR}/msgq/v1 COMPONENT dev)

install(EXPORT msgqTargets NAMESPACE msgq::
  DESTINATION ${MSGQ_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/msgqConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/msgqConfig.cmake
  INSTALL_DESTINATION ${MSGQ_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/msgqConfigVersion.cmake
  VERSION ${MSGQ_PACKAGE_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/msgqConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/msgqConfigVersion.cmake
  DESTINATION ${MSGQ_INSTALL_CMAKEDIR} COMPONENT dev)

# The systemd unit and the example flagfile (packaging/). Where they go is
# decided at install time, as GNUInstallDirs does for sysconfdir: with the
# prefix /usr (the .deb, or a system install) /lib/systemd/system and
# /etc/msgq; under any other prefix <prefix>/lib/systemd/system and
# <prefix>/etc/msgq. (file(INSTALL) prepends $DESTDIR.)
set(_msgq_install_files [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(_msgq_unitdir "/lib/systemd/system")
    set(_msgq_etcdir "/etc/msgq")
  else()
    set(_msgq_unitdir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
    set(_msgq_etcdir "${CMAKE_INSTALL_PREFIX}/etc/msgq")
  endif()
  file(INSTALL DESTINATION "${_msgq_unitdir}" TYPE FILE
    PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
    FILES "@PROJECT_SOURCE_DIR@/packaging/msgqd.service")
  file(INSTALL DESTINATION "${_msgq_etcdir}" TYPE FILE
    PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
    FILES "@PROJECT_SOURCE_DIR@/packaging/msgqd.flags")
]])
string(CONFIGURE "${_msgq_install_files}" _msgq_install_files @ONLY)
install(CODE "${_msgq_install_files}" COMPONENT server)
