target_sources(mesh_supervise PRIVATE ${CMAKE_CURRENT_LIST_DIR}/builtin.cc)
