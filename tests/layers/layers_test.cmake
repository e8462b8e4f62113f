# cmake -DCASE=<case> -DMESH_SOURCE_DIR=<repo> -DWORK=<empty dir> -P layers_test.cmake
# Each case first runs the check on a tree or project that keeps the rule (it must
# pass: the check is not failing for some other reason), then plants one violation
# (it must fail, with the message naming the file, the include and the rule).
cmake_minimum_required(VERSION 3.25)
set(checker ${MESH_SOURCE_DIR}/cmake/check_layer.cmake)
set(rule "util ← decl, state, trust, blob, bundle, supervise ← apply ← fleet ← agent ← cli")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Runs `cmd`; expects exit status 0 (want = PASS) or non-zero and every one of
# the ARGN strings in its output (want = FAIL).
function(expect want)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "COMMAND;MESSAGES")
  execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  # The rule is long and CMake wraps messages: compare with the line breaks as spaces.
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")
  if(want STREQUAL "PASS" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "expected the check to pass, it failed (${rc}):\n${out}")
  endif()
  if(want STREQUAL "FAIL")
    if(rc EQUAL 0)
      message(FATAL_ERROR "expected the check to fail, it passed:\n${out}")
    endif()
    foreach(m IN LISTS arg_MESSAGES)
      string(FIND "${flat}" "${m}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "the check failed without saying \"${m}\":\n${out}")
      endif()
    endforeach()
  endif()
endfunction()

if(CASE STREQUAL "IncludeOfALayerAbove" OR CASE STREQUAL "ForbiddenHeader")
  file(WRITE ${WORK}/src/apply/kinds/file.cc
       "#include \"apply/kinds/file.hh\"\n#include <string>\n#include \"util/fs.hh\"\n#include \"blob/blob_source.hh\"\n")
  set(check ${CMAKE_COMMAND} -DLAYER=apply -DDIR=${WORK}/src/apply -DALLOWED=util,blob
            -DFORBIDDEN=blob/http_source.hh -P ${checker})
  expect(PASS COMMAND ${check})
  if(CASE STREQUAL "IncludeOfALayerAbove")
    file(WRITE ${WORK}/src/apply/cycle.hh "#pragma once\n  #include \"fleet/etcd.hh\"\n")
    expect(FAIL COMMAND ${check} MESSAGES
           "src/apply/cycle.hh: #include \"fleet/etcd.hh\": layer apply may not include layer fleet"
           "apply may include only itself and: util, blob" "the rule: ${rule}")
  else()
    file(WRITE ${WORK}/src/apply/context.cc "#include \"blob/http_source.hh\"\n")
    expect(FAIL COMMAND ${check} MESSAGES
           "src/apply/context.cc: #include \"blob/http_source.hh\": layer apply may not include blob/http_source.hh")
  endif()
elseif(CASE STREQUAL "DependencyOnALayerAbove")
  # A layer may not be declared to use a sibling or a layer above it, in the build
  # step's script and in mesh_layer() at configure time alike.
  file(MAKE_DIRECTORY ${WORK}/src/decl)
  expect(PASS COMMAND ${CMAKE_COMMAND} -DLAYER=decl -DDIR=${WORK}/src/decl -DALLOWED=util -P ${checker})
  expect(FAIL COMMAND ${CMAKE_COMMAND} -DLAYER=decl -DDIR=${WORK}/src/decl -DALLOWED=util,state -P ${checker}
         MESSAGES "layer decl may not use layer state" "${rule}")
  foreach(deps util apply)
    file(WRITE ${WORK}/${deps}/a.c "int a;\n")
    file(WRITE ${WORK}/${deps}/CMakeLists.txt "cmake_minimum_required(VERSION 3.25)
project(t LANGUAGES C)
include(${MESH_SOURCE_DIR}/cmake/MeshLayers.cmake)
foreach(t mesh_util mesh_apply mesh_decl)
  add_library(\${t} STATIC a.c)
endforeach()
mesh_layer(decl TARGET mesh_decl PUBLIC ${deps})
")
  endforeach()
  expect(PASS COMMAND ${CMAKE_COMMAND} -S ${WORK}/util -B ${WORK}/util/build)
  expect(FAIL COMMAND ${CMAKE_COMMAND} -S ${WORK}/apply -B ${WORK}/apply/build
         MESSAGES "layer decl may not use layer apply" "${rule}")
elseif(CASE STREQUAL "NetworkInTheLinkClosure")
  # As in the tree: static libraries, the network linked privately two steps down.
  foreach(blobLinks mesh_util mesh_lazy_curl)
    file(WRITE ${WORK}/${blobLinks}/a.c "int a;\n")
    file(WRITE ${WORK}/${blobLinks}/CMakeLists.txt "cmake_minimum_required(VERSION 3.25)
project(t LANGUAGES C)
include(${MESH_SOURCE_DIR}/cmake/MeshLayers.cmake)
foreach(t mesh_util mesh_lazy_curl mesh_blob mesh_apply)
  add_library(\${t} STATIC a.c)
endforeach()
target_link_libraries(mesh_blob PUBLIC mesh_util PRIVATE ${blobLinks})
target_link_libraries(mesh_apply PUBLIC mesh_blob)
mesh_check_no_network(mesh_apply)
")
  endforeach()
  expect(PASS COMMAND ${CMAKE_COMMAND} -S ${WORK}/mesh_util -B ${WORK}/mesh_util/build)
  expect(FAIL COMMAND ${CMAKE_COMMAND} -S ${WORK}/mesh_lazy_curl -B ${WORK}/mesh_lazy_curl/build
         MESSAGES "mesh_apply links mesh_lazy_curl, and it must never link the network")
else()
  message(FATAL_ERROR "unknown CASE ${CASE}")
endif()
