# `cmake --install`: msgqd and msgq into bin/, the C++ client libraries
# (msgq::client, msgq::inbox and msgq::producer, and the static libraries
# they need: msgq::proto, msgq::common, msgq::common_grpc, msgq::utf8) into
# lib/, their public headers as include/msgq/ (`#include <msgq/client.h>`),
# and a CMake package config so a downstream project can
#   find_package(msgq CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE msgq::client)  # or msgq::inbox, msgq::producer
# Included from the top-level CMakeLists.txt after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MSGQ_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/msgq)
set(MSGQ_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/msgq)

install(TARGETS msgqd msgq
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)

# The libraries: static archives, exported as msgq::<EXPORT_NAME>.
set_target_properties(msgq_client PROPERTIES EXPORT_NAME client)
set_target_properties(msgq_inbox PROPERTIES EXPORT_NAME inbox)
set_target_properties(msgq_producer PROPERTIES EXPORT_NAME producer)
set_target_properties(msgq_proto PROPERTIES EXPORT_NAME proto)
set_target_properties(msgq_common PROPERTIES EXPORT_NAME common)
set_target_properties(msgq_common_grpc PROPERTIES EXPORT_NAME common_grpc)
set_target_properties(msgq_utf8 PROPERTIES EXPORT_NAME utf8)
install(TARGETS msgq_client msgq_inbox msgq_producer msgq_proto msgq_common
    msgq_common_grpc msgq_utf8
  EXPORT msgqTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)

# Headers: client/include/msgq/ as it is (the public API of the three
# libraries; the CLI's headers and the internals under client/internal/
# stay in the tree, and no public header includes them, nor a generated
# protobuf header: msgq::proto is installed only as the archive the client
# links). Its backoff.h forwards to common/backoff.h in the tree; the
# installed one is common/backoff.h itself.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/client/include/msgq
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h" PATTERN "backoff.h" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/common/backoff.h
  DESTINATION ${MSGQ_INSTALL_INCLUDEDIR} COMPONENT dev)

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
