# The builtin supervisor backend: parsing on plain strings, and the backend
# driving real mesh-host-supervise processes (sh scripts, sleep).
add_executable(mesh_builtin_supervisor_tests
    ${CMAKE_CURRENT_LIST_DIR}/builtin_unit_config_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_unit_keys_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_lifecycle_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_restart_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_exec_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_adopt_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_notify_socket_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_notify_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_reap_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin_recovery_test.cc)
target_link_libraries(mesh_builtin_supervisor_tests PRIVATE mesh_supervise mesh_decl GTest::gtest_main)
target_compile_definitions(mesh_builtin_supervisor_tests
    PRIVATE MESH_SUPERVISE_EXE="$<TARGET_FILE:mesh-host-supervise>")
add_dependencies(mesh_builtin_supervisor_tests mesh-host-supervise)
gtest_discover_tests(mesh_builtin_supervisor_tests DISCOVERY_TIMEOUT 30)
