cmake_minimum_required(VERSION 3.25)
# cmake -DLAYER=<layer> -DDIR=<dir> -DALLOWED=<layer,…> [-DFORBIDDEN=<header,…>] -P check_layer.cmake
# Fails, naming each file and include, when a .cc/.hh under DIR includes a header of a
# layer other than LAYER and ALLOWED, or a FORBIDDEN header; fails too when ALLOWED names a layer not below
# LAYER in the rule (cmake/MeshLayers.cmake). Run as a build step of each layer.
include(${CMAKE_CURRENT_LIST_DIR}/MeshLayers.cmake)
if(NOT LAYER OR NOT DIR)
  message(FATAL_ERROR "usage: cmake -DLAYER=<layer> -DDIR=<dir> -DALLOWED=<layers> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
string(REPLACE "," ";" ALLOWED "${ALLOWED}")
string(REPLACE "," ";" FORBIDDEN "${FORBIDDEN}")
mesh_check_layer_deps(${LAYER} "${ALLOWED}")
mesh_check_layer_includes(${LAYER} ${DIR} "${ALLOWED}" "${FORBIDDEN}")
