# The systemd backend's tests. Most drive a real systemd, booted by
# tests/systemd/sdns.sh as PID 1 of a private namespace (one per test process);
# they skip, saying why, when not root or a tool is missing. CI runs as root.
add_executable(mesh_systemd_supervisor_tests
  ${CMAKE_CURRENT_LIST_DIR}/systemd_lifecycle_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/systemd_reload_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/systemd_unit_dir_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/systemd_verify_test.cc
  ${PROJECT_SOURCE_DIR}/tests/systemd/namespace.cc)
target_include_directories(mesh_systemd_supervisor_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests/systemd)
target_compile_definitions(mesh_systemd_supervisor_tests PRIVATE
  MESH_SDNS_SCRIPT="${PROJECT_SOURCE_DIR}/tests/systemd/sdns.sh")
target_link_libraries(mesh_systemd_supervisor_tests PRIVATE mesh_supervise GTest::gtest_main)
gtest_discover_tests(mesh_systemd_supervisor_tests PROPERTIES TIMEOUT 120 LABELS systemd)
