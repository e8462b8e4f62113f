# The builtin supervisor backend: the client side inside mesh_supervise, and the
# mesh-host-supervise executable it spawns (one detached process per service).
# notify_socket.cc is only used by the supervisor, but sits in mesh_supervise too
# so that its unit tests reach it like the rest.
set(MESH_BUILTIN_SHARED
    ${CMAKE_CURRENT_LIST_DIR}/unit_config.cc
    ${CMAKE_CURRENT_LIST_DIR}/service_files.cc
    ${CMAKE_CURRENT_LIST_DIR}/control.cc
    ${CMAKE_CURRENT_LIST_DIR}/notify_socket.cc)

target_sources(mesh_supervise PRIVATE
    ${MESH_BUILTIN_SHARED}
    ${CMAKE_CURRENT_LIST_DIR}/spawn_supervisor.cc
    ${CMAKE_CURRENT_LIST_DIR}/builtin.cc)
target_link_libraries(mesh_supervise PRIVATE nlohmann_json::nlohmann_json)

add_executable(mesh-host-supervise
    ${MESH_BUILTIN_SHARED}
    ${CMAKE_CURRENT_LIST_DIR}/log_writer.cc
    ${CMAKE_CURRENT_LIST_DIR}/spawn_service.cc
    ${CMAKE_CURRENT_LIST_DIR}/supervisor_loop.cc
    ${CMAKE_CURRENT_LIST_DIR}/supervisor_adopt.cc
    ${CMAKE_CURRENT_LIST_DIR}/supervisor_notify.cc
    ${CMAKE_CURRENT_LIST_DIR}/supervisor_service.cc
    ${CMAKE_CURRENT_LIST_DIR}/supervise_main.cc)
target_link_libraries(mesh-host-supervise PRIVATE mesh_util nlohmann_json::nlohmann_json)
set_target_properties(mesh-host-supervise PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
install(TARGETS mesh-host-supervise RUNTIME DESTINATION bin)
