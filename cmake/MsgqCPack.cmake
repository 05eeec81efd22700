# `cpack -G DEB` (or the `package` target): one .deb, msgq, with msgqd, the
# msgq CLI, the systemd unit (/lib/systemd/system/msgqd.service) and the
# example flagfile (/etc/msgq/msgqd.flags, a conffile). Only the install
# component `server`: the C++ library and headers are for `cmake --install`.
# Depends comes from dpkg-shlibdeps when it is installed (dpkg-dev).
set(CPACK_PACKAGE_NAME msgq)
set(CPACK_PACKAGE_VERSION ${MSGQ_PACKAGE_VERSION})
set(CPACK_PACKAGE_VENDOR "msgq")
set(CPACK_PACKAGE_CONTACT "msgq maintainers <msgq@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "MariaDB tables as message queues over gRPC (msgqd server and msgq CLI)")
set(CPACK_GENERATOR DEB)
# The server component only, installed with DESTDIR and the prefix /usr, so
# MsgqInstall.cmake puts the unit and the flagfile under /lib and /etc.
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};msgq;server;/")
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
find_program(MSGQ_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(MSGQ_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "dpkg-shlibdeps not found: the .deb will have no Depends")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
