# SPDX-License-Identifier: Apache-2.0
# The Debian packages, by CPack's DEB generator from this build tree (why CPack and not
# debian/ + dpkg-buildpackage: LLP 0001#deb). `bash scripts/package.sh` configures
# build-deb/ with the prefix /usr, builds fwdsink-deb-files and runs cpack and lintian.
#
#   component  package          carries
#   daemon     fwdsink          /usr/bin/fwdsink, the unit, the conffiles, the spool, fwdsink(1),
#                               the alert rules (/usr/share/fwdsink/prometheus/)
#   central    fwdsink-central  /usr/bin/fwdsink-central, fwdsink-central(1)
#   lib        libfwdsink0      libfwdsink.so.0 (the C API)
#   dev        libfwdsink-dev   headers, static archives, libfwdsink.so, .pc, CMake package
#
# The files only a package has (unit, /etc, /var/lib, man pages, copyright, changelog)
# are EXCLUDE_FROM_ALL: `cmake --install` to a prefix never writes /etc or /lib, and
# needs none of them built. fwdsink-deb-files generates them from the built binaries
# (cmake/deb/gendocs.py: the man pages and the conffile from --help and --print-config,
# so they cannot drift from the settings table). @ref LLP 0001#deb-files
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "fwdsink: no python3, so no Debian packages (cmake/deb.cmake)")
  return()
endif()

set(FWDSINK_DEB_RELEASE 1)
set(FWDSINK_DEB_VERSION ${PROJECT_VERSION}-${FWDSINK_DEB_RELEASE})
set(FWDSINK_DEB_MAINTAINER "fwdsink maintainers <fwdsink@example.org>")
set(deb_src ${PROJECT_SOURCE_DIR}/cmake/deb)
set(deb_out ${PROJECT_BINARY_DIR}/deb)
file(MAKE_DIRECTORY ${deb_out}/empty)

# The unit: examples/systemd/fwdsink.service with the package's paths. It reads the
# conffile, and /etc/default/fwdsink for FWDSINK_* variables and FWDSINK_ARGS; the
# token is a file named by token_file (LoadCredential= fails the unit when the file is
# missing, and the package cannot ship a token). The test checks the result.
file(READ ${PROJECT_SOURCE_DIR}/examples/systemd/fwdsink.service unit)
string(FIND "${unit}" "[Unit]" unit_begin)
string(SUBSTRING "${unit}" ${unit_begin} -1 unit)
string(REGEX REPLACE "ExecStart=([^\n\\]|\\\\\n)*"
       "ExecStart=/usr/bin/fwdsink forward --config /etc/fwdsink/fwdsink.toml $FWDSINK_ARGS"
       unit "${unit}")
string(REGEX REPLACE "\nLoadCredential=[^\n]*" "" unit "${unit}")
string(REPLACE "# %S is /var/lib (StateDirectory= below), %d the credentials folder (LoadCredential=).\n"
       "" unit "${unit}")
file(WRITE ${deb_out}/fwdsink.service
  "# fwdsink forward as a systemd service, from the fwdsink package. Set url (and\n"
  "# token_file) in /etc/fwdsink/fwdsink.toml or /etc/default/fwdsink, then\n"
  "#   systemctl enable --now fwdsink\n"
  "# Producers write /var/lib/fwdsink/spool as members of the fwdsink group. See fwdsink(1).\n"
  "${unit}")

configure_file(${deb_src}/changelog.in ${deb_out}/changelog @ONLY)
set(deb_generated ${deb_out}/fwdsink.1.gz ${deb_out}/fwdsink-central.1.gz
    ${deb_out}/fwdsink.toml ${deb_out}/changelog.Debian.gz)
set(gendocs ${Python3_EXECUTABLE} ${deb_src}/gendocs.py)
add_custom_command(OUTPUT ${deb_out}/fwdsink.1.gz ${deb_out}/fwdsink.toml
  COMMAND ${gendocs} man-fwdsink $<TARGET_FILE:fwdsink-daemon> ${deb_out}/fwdsink.1
  COMMAND gzip -9nf ${deb_out}/fwdsink.1
  COMMAND ${gendocs} conffile $<TARGET_FILE:fwdsink-daemon> ${deb_out}/fwdsink.toml
  DEPENDS fwdsink-daemon ${deb_src}/gendocs.py
  COMMENT "Generating fwdsink(1) and fwdsink.toml from the settings table")
add_custom_command(OUTPUT ${deb_out}/fwdsink-central.1.gz
  COMMAND ${gendocs} man-central $<TARGET_FILE:fwdsink-central> ${deb_out}/fwdsink-central.1
  COMMAND gzip -9nf ${deb_out}/fwdsink-central.1
  DEPENDS fwdsink-central ${deb_src}/gendocs.py
  COMMENT "Generating fwdsink-central(1)")
add_custom_command(OUTPUT ${deb_out}/changelog.Debian.gz
  COMMAND gzip -9nkf ${deb_out}/changelog
  COMMAND ${CMAKE_COMMAND} -E rename ${deb_out}/changelog.gz ${deb_out}/changelog.Debian.gz
  DEPENDS ${deb_out}/changelog)
add_custom_target(fwdsink-deb-files DEPENDS ${deb_generated})

set(deb_docs ${deb_src}/copyright ${deb_out}/changelog.Debian.gz)
foreach(pair daemon:fwdsink central:fwdsink-central lib:libfwdsink0 dev:libfwdsink-dev)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 component)
  list(GET pair 1 package)
  install(FILES ${deb_docs} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
install(FILES ${deb_out}/fwdsink.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT daemon EXCLUDE_FROM_ALL)
install(FILES ${deb_out}/fwdsink-central.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT central EXCLUDE_FROM_ALL)
install(FILES ${deb_out}/fwdsink.service DESTINATION /lib/systemd/system
        COMPONENT daemon EXCLUDE_FROM_ALL)
install(FILES ${deb_out}/fwdsink.toml DESTINATION /etc/fwdsink COMPONENT daemon EXCLUDE_FROM_ALL)
install(FILES ${deb_src}/default DESTINATION /etc/default RENAME fwdsink
        COMPONENT daemon EXCLUDE_FROM_ALL)
# Owned by root in the package; postinst gives them to the fwdsink user.
install(DIRECTORY ${deb_out}/empty/ DESTINATION /var/lib/fwdsink/spool
        COMPONENT daemon EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fwdsink)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${FWDSINK_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL daemon central lib dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # fwdsink_0.1.0-1_amd64.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE ${FWDSINK_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)        # Depends: from the binaries (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # libfwdsink0's shlibs file, for its users
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_PRE_BUILD_SCRIPTS ${deb_src}/strip-archives.cmake)
set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME fwdsink)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS adduser)  # postinst's adduser; the rest found
set(CPACK_DEBIAN_DAEMON_PACKAGE_SUGGESTS fwdsink-central)
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
    ${deb_src}/fwdsink/postinst ${deb_src}/fwdsink/prerm ${deb_src}/fwdsink/postrm
    ${deb_src}/fwdsink/conffiles)
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
"forward spooled NDJSON partitions to an HTTP(S) ingest endpoint
fwdsink ships the sealed NDJSON partitions of a spool directory to a central
ingest endpoint, chunk by chunk, riding out throttling and outages without
losing or duplicating a row. This package has the daemon, its systemd unit,
a system user and a spool under /var/lib/fwdsink.")
set(CPACK_DEBIAN_CENTRAL_PACKAGE_NAME fwdsink-central)
set(CPACK_DEBIAN_CENTRAL_PACKAGE_SECTION net)
set(CPACK_COMPONENT_CENTRAL_DESCRIPTION
"reference NDJSON ingest receiver for fwdsink
fwdsink-central accepts chunks over HTTP(S), deduplicates them by idempotency
key and can throttle (429 with Retry-After) or inject failures, for tests,
demonstrations and benchmarks of fwdsink.")
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libfwdsink0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# ldconfig by trigger, as lintian wants (CPack adds its own ldconfig calls besides:
# LLP 0001#lintian).
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${deb_src}/libfwdsink0/triggers)
set(CPACK_COMPONENT_LIB_DESCRIPTION
"forward spooled NDJSON partitions to an HTTP(S) ingest endpoint - C library
libfwdsink is the C API of fwdsink for agents that embed the forwarding:
settings by key, a writer that seals partitions into a spool, and a
forwarder thread.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libfwdsink-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The CMake package and fwdsink-static.pc re-find these (cmake/fwdsinkConfig.cmake.in).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libfwdsink0 (= ${FWDSINK_DEB_VERSION}), libssl-dev, libcpp-httplib-dev, libzstd-dev, zlib1g-dev, pkg-config")
set(CPACK_COMPONENT_DEV_DESCRIPTION
"forward spooled NDJSON partitions to an HTTP(S) ingest endpoint - development
The headers of fwdsink's C++ and C APIs, the static archives, libfwdsink.so,
the pkg-config files fwdsink.pc and fwdsink-static.pc and the CMake package
(find_package(fwdsink): fwdsink::fwdsink, fwdsink::shared).")
include(CPack)

# The test: build the packages from this tree, install, forward, upgrade, purge. Not in
# the sanitizer build (it exits 77 there: ASan binaries do not belong in packages).
if(FWDSINK_TESTS)
  add_test(NAME deb_packages
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/deb/run.sh ${PROJECT_BINARY_DIR}
                   ${PROJECT_BINARY_DIR}/tests/deb $<IF:$<BOOL:${FWDSINK_SANITIZE}>,sanitized,plain>)
  set_tests_properties(deb_packages PROPERTIES LABELS package TIMEOUT 420 SKIP_RETURN_CODE 77)
endif()
