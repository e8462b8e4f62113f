# MESH_LIBFUZZER=ON: the coverage-guided build of the fuzz targets (tests/fuzz/), with
# clang only. Every target of the tree is compiled with libFuzzer's coverage
# instrumentation, AddressSanitizer and UBSan (an undefined behaviour aborts: a
# finding, not a line of log), and toml++ is compiled in header-only so that its parser
# is instrumented too (the Debian package's shared library is not). tests/fuzz/ then
# builds one libFuzzer binary per target, mesh-libfuzz-<target>. bench/fuzz-coverage.sh
# configures such a tree (build-fuzz/); the normal build never sets it.
option(MESH_LIBFUZZER "Build the libFuzzer binaries of tests/fuzz (clang; instruments the whole tree)" OFF)
if(MESH_LIBFUZZER)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MESH_LIBFUZZER=ON needs clang (CMAKE_CXX_COMPILER=clang++), "
                        "not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  set(MESH_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  add_compile_options(-fsanitize=fuzzer-no-link ${MESH_SANITIZERS} -fno-omit-frame-pointer)
  add_link_options(${MESH_SANITIZERS})
  set_target_properties(PkgConfig::TOMLPP PROPERTIES
    INTERFACE_COMPILE_OPTIONS ""
    INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=1"
    INTERFACE_LINK_LIBRARIES ""
    INTERFACE_LINK_OPTIONS "")
endif()
