# Installing and packaging mesh-host (included from the top CMakeLists.txt).
#   cmake --install build --prefix /usr    binaries, the agent's unit, the man pages, docs,
#                                          /etc/mesh-host, /etc/default/mesh-host
#   cd build && cpack -G DEB                mesh-host_<version>_<arch>.deb
# The binaries install themselves (src/cli, src/supervise/builtin); this adds the rest.

# Who the package names as its maintainer (Maintainer, copyright, changelog) and
# under what terms: set them for a package you distribute.
set(MESH_PACKAGE_MAINTAINER "mesh-host maintainers <mesh-host@example.org>"
    CACHE STRING "the .deb's Maintainer: Name <address>")
set(MESH_PACKAGE_COPYRIGHT "" CACHE STRING
    "debian/copyright: Copyright, years and holders (default: <year of the commit> the mesh-host authors)")
if(NOT MESH_PACKAGE_COPYRIGHT)
  execute_process(COMMAND git -C ${PROJECT_SOURCE_DIR} log -1 --format=%cd --date=format:%Y
                  OUTPUT_VARIABLE _mesh_year OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT _mesh_year)
    string(TIMESTAMP _mesh_year "%Y" UTC)
  endif()
  set(MESH_PACKAGE_COPYRIGHT "${_mesh_year} the mesh-host authors")
endif()
set(MESH_PACKAGE_LICENSE_FILE "" CACHE FILEPATH "debian/copyright: the license's text")
if(MESH_PACKAGE_LICENSE_FILE)
  file(READ ${MESH_PACKAGE_LICENSE_FILE} MESH_PACKAGE_LICENSE_TEXT)
else()
  set(MESH_PACKAGE_LICENSE_TEXT "The mesh-host authors have not published a license for it yet.\n")
endif()
string(REGEX REPLACE "\n$" "" MESH_PACKAGE_LICENSE_TEXT "${MESH_PACKAGE_LICENSE_TEXT}")

# Generated at configure time, because cpack packages the tree without building it:
# the man pages and changelog gzip'ed with -9n (no name, no time: reproducible, as
# Debian wants), debian/copyright and the conffiles list. Regenerated when a source
# changes (CMAKE_CONFIGURE_DEPENDS).
set(_mesh_pkg ${CMAKE_BINARY_DIR}/packaging)
set(_mesh_deb ${PROJECT_SOURCE_DIR}/packaging/debian)
set(_mesh_man ${PROJECT_SOURCE_DIR}/docs/mesh-host.1 ${PROJECT_SOURCE_DIR}/docs/mesh-host-supervise.8)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_mesh_man} ${_mesh_deb}/changelog.in
                                                              ${_mesh_deb}/copyright)
# The changelog's date: SOURCE_DATE_EPOCH when set, else the commit's, else now.
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  string(TIMESTAMP MESH_PACKAGE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
else()
  execute_process(COMMAND git -C ${PROJECT_SOURCE_DIR} log -1 --format=%cD
                  OUTPUT_VARIABLE MESH_PACKAGE_DATE OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT MESH_PACKAGE_DATE)
    string(TIMESTAMP MESH_PACKAGE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
  endif()
endif()
configure_file(${_mesh_deb}/changelog.in ${_mesh_pkg}/changelog @ONLY)
configure_file(${_mesh_deb}/copyright ${_mesh_pkg}/copyright @ONLY)
find_program(MESH_GZIP gzip REQUIRED)
foreach(_mesh_src IN ITEMS ${_mesh_man} ${_mesh_pkg}/changelog)
  get_filename_component(_mesh_name ${_mesh_src} NAME)
  execute_process(COMMAND ${MESH_GZIP} -9nc ${_mesh_src} OUTPUT_FILE ${_mesh_pkg}/${_mesh_name}.gz
                  COMMAND_ERROR_IS_FATAL ANY)
endforeach()
# Every file the package puts under /etc: dpkg keeps an operator's edits across
# upgrades and removes them only on purge.
file(WRITE ${_mesh_pkg}/conffiles "/etc/default/mesh-host\n")

install(FILES ${PROJECT_SOURCE_DIR}/packaging/mesh-host.service DESTINATION lib/systemd/system)
install(FILES ${_mesh_pkg}/mesh-host.1.gz DESTINATION share/man/man1)
install(FILES ${_mesh_pkg}/mesh-host-supervise.8.gz DESTINATION share/man/man8)
# A native package (no Debian revision): its changelog is changelog.gz.
install(FILES ${_mesh_pkg}/copyright ${_mesh_pkg}/changelog.gz DESTINATION share/doc/mesh-host)
# Configuration lives in /etc whatever the prefix (the unit reads
# /etc/mesh-host/declaration.toml and /etc/default/mesh-host); DESTDIR and CPack's
# staging still apply. The declaration is the operator's: the package ships none.
install(DIRECTORY DESTINATION /etc/mesh-host)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/mesh-host.default DESTINATION /etc/default
        RENAME mesh-host)

set(CPACK_PACKAGE_NAME mesh-host)
set(CPACK_PACKAGE_VENDOR "mesh-host")
set(CPACK_PACKAGE_CONTACT "${MESH_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "agent that converges a node to its declaration without needless restarts")
# Lines of at most 80 characters (lintian): the .deb indents each by one space.
set(CPACK_PACKAGE_DESCRIPTION
    "mesh-host reconciles files, directories, links, archives, credentials and
long-running processes to a TOML declaration, reports created, updated,
unchanged, removed or failed for each, and never restarts a service without
a cause. Includes the agent's systemd unit.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# /etc/mesh-host is an absolute destination: stage with DESTDIR so it lands in the
# package, not on the build machine.
set(CPACK_SET_DESTDIR ON)
# Package what is built, without building: cpack runs the install script of this
# tree instead of its `preinstall` target (which would build every test and the
# benchmark first). Build mesh-host before running cpack.
set(CPACK_INSTALL_CMAKE_PROJECTS "")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/packaging/cpack_install.cmake
     CONTENT "# Generated by packaging/CPack.cmake: installs this build tree as the package has it.
set(CMAKE_INSTALL_PREFIX \"/usr\")
set(CMAKE_INSTALL_DO_STRIP 1)
include(\"@CMAKE_BINARY_DIR@/cmake_install.cmake\")
" @ONLY)
set(CPACK_INSTALL_SCRIPTS ${CMAKE_BINARY_DIR}/packaging/cpack_install.cmake)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # mesh-host_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
find_program(MESH_DPKG_SHLIBDEPS dpkg-shlibdeps)
# The maintainer scripts enable and start the agent with deb-systemd-helper and
# deb-systemd-invoke, as debhelper's do; the libraries come after.
# libcurl, libarchive and libsystemd are loaded when first used (src/util/lazy), not
# linked, so dpkg-shlibdeps cannot see them: they are named here.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "init-system-helpers (>= 1.54~), libcurl4, libarchive13, libsystemd0")
if(MESH_DPKG_SHLIBDEPS)
  # Depends computed from what the binaries really link (libsqlite3-0,
  # libsodium23, libfmt9, libtomlplusplus3, libc6, libstdc++6 …; libcpp-httplib0.11 and
  # libssl3 for the HTTP module), appended.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
         ", libc6, libstdc++6, libgcc-s1, libsqlite3-0, libsodium23, libfmt9, libtomlplusplus3, "
         "libcpp-httplib0.11, libssl3")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_mesh_deb}/postinst ${_mesh_deb}/prerm ${_mesh_deb}/postrm
                                      ${_mesh_pkg}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
