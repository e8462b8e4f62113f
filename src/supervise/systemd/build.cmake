# The systemd backend: unit files in --unit-dir, services driven over D-Bus with
# sd-bus (libsystemd, loaded on first use: src/util/lazy).
target_sources(mesh_supervise PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/bus.cc
  ${CMAKE_CURRENT_LIST_DIR}/explain.cc
  ${CMAKE_CURRENT_LIST_DIR}/journal.cc
  ${CMAKE_CURRENT_LIST_DIR}/manager.cc
  ${CMAKE_CURRENT_LIST_DIR}/systemd.cc
  ${CMAKE_CURRENT_LIST_DIR}/unit_dir.cc)
target_link_libraries(mesh_supervise PRIVATE mesh_lazy_systemd)
