# The layer rule, enforced (docs/development.md, "Layout"):
#
#   util ← decl, state, trust, blob, bundle, supervise ← apply ← fleet ← agent ← cli
#
# Each src/<layer>/CMakeLists.txt declares its layer with mesh_layer(), which links the
# layers it names and fails the configure step when one of them is not below it. Each
# layer's target then runs cmake/check_layer.cmake as a build step over every source
# and header in src/<layer>/ (again whenever one changes): an `#include "<layer>/…"` of
# a layer the target does not link fails `cmake --build`, naming the file, the include
# and the rule. mesh_check_no_network() fails the configure step when a target's link
# closure reaches the network.
#
# The functions below run in project mode and in script mode (cmake -P) alike.

set(MESH_LAYER_RULE "util ← decl, state, trust, blob, bundle, supervise ← apply ← fleet ← agent ← cli")
# Rank per layer: a layer may use only layers of a lower rank.
set(MESH_LAYER_RANK_util 0)
foreach(_layer decl state trust blob bundle supervise)
  set(MESH_LAYER_RANK_${_layer} 1)
endforeach()
set(MESH_LAYER_RANK_apply 2)
set(MESH_LAYER_RANK_fleet 3)
set(MESH_LAYER_RANK_agent 4)
set(MESH_LAYER_RANK_cli 5)
set(MESH_LAYER_CHECKER ${CMAKE_CURRENT_LIST_DIR}/check_layer.cmake)

# Fails when `layer` is no layer of the rule, or when one of `deps` is not below it.
function(mesh_check_layer_deps layer deps)
  if(NOT DEFINED MESH_LAYER_RANK_${layer})
    message(FATAL_ERROR "layer ${layer} is not in the layer rule (${MESH_LAYER_RULE})")
  endif()
  foreach(dep IN LISTS deps)
    if(NOT DEFINED MESH_LAYER_RANK_${dep})
      message(FATAL_ERROR "layer ${layer} uses ${dep}, which is not in the layer rule (${MESH_LAYER_RULE})")
    endif()
    if(NOT MESH_LAYER_RANK_${dep} LESS MESH_LAYER_RANK_${layer})
      message(FATAL_ERROR "layer ${layer} may not use layer ${dep}: "
                          "a layer uses only layers below it (${MESH_LAYER_RULE})")
    endif()
  endforeach()
endfunction()

# Every `#include "<dir>/…"` in the .cc/.hh files under `dir` whose <dir> is a layer
# must name `layer` itself or one of `allowed`, and none may include a header of
# `forbidden` (e.g. "blob/http_source.hh"). Reports every offending line, then fails.
function(mesh_check_layer_includes layer dir allowed forbidden)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${dir}/*.cc" "${dir}/*.hh")
  list(SORT files)
  set(bad "")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[a-z_]+/")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([a-z_]+)/.*$" "\\1" used "${line}")
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" header "${line}")
      file(RELATIVE_PATH shown "${dir}/../.." "${file}")
      string(STRIP "${line}" line)
      if(header IN_LIST forbidden)
        string(APPEND bad "\n  ${shown}: ${line}: layer ${layer} may not include ${header}")
      elseif(DEFINED MESH_LAYER_RANK_${used} AND NOT used STREQUAL layer AND NOT used IN_LIST allowed)
        string(APPEND bad "\n  ${shown}: ${line}: layer ${layer} may not include layer ${used}")
      endif()
    endforeach()
  endforeach()
  if(bad)
    string(REPLACE ";" ", " allowedText "${allowed}")
    if(NOT allowedText)
      set(allowedText "none")
    endif()
    set(forbiddenText "")
    if(forbidden)
      string(REPLACE ";" ", " forbiddenText "${forbidden}")
      set(forbiddenText ", never ${forbiddenText}")
    endif()
    message(FATAL_ERROR "layer rule broken:${bad}\n"
                        "${layer} may include only itself and: ${allowedText}${forbiddenText}\n"
                        "the rule: ${MESH_LAYER_RULE}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

# mesh_layer(<layer> TARGET <target> [PUBLIC <layer>…] [PRIVATE <layer>…]
#            [NO_INCLUDE <header>…])
# Declares that src/<layer>/ is built into <target> (an existing target), links the
# layers named (as mesh_<layer>) and checks them against the rule now, and the
# includes of src/<layer>/ at every build of <target>: only its own layer's and
# those of the layers it links (and they theirs), never a NO_INCLUDE header.
function(mesh_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TARGET" "PUBLIC;PRIVATE;NO_INCLUDE")
  set(deps ${arg_PUBLIC} ${arg_PRIVATE})
  mesh_check_layer_deps(${layer} "${deps}")
  foreach(scope PUBLIC PRIVATE)
    foreach(dep IN LISTS arg_${scope})
      target_link_libraries(${arg_TARGET} ${scope} mesh_${dep})
    endforeach()
  endforeach()
  # What the layer may include: the layers it links and, through them, theirs.
  set(allowed ${deps})
  foreach(dep IN LISTS deps)
    get_property(theirs GLOBAL PROPERTY MESH_LAYER_ALLOWED_${dep})
    list(APPEND allowed ${theirs})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY MESH_LAYER_ALLOWED_${layer} "${allowed}")

  set(dir ${PROJECT_SOURCE_DIR}/src/${layer})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${dir}/*.cc" "${dir}/*.hh")
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/layer_${layer}.checked)
  string(REPLACE ";" "," allowedArg "${allowed}")
  string(REPLACE ";" "," forbiddenArg "${arg_NO_INCLUDE}")
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLAYER=${layer} -DDIR=${dir} -DALLOWED=${allowedArg}
            -DFORBIDDEN=${forbiddenArg} -P ${MESH_LAYER_CHECKER}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${sources} ${MESH_LAYER_CHECKER} ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
    COMMENT "Checking the includes of src/${layer} against the layer rule"
    VERBATIM)
  add_custom_target(mesh_layer_${layer}_check DEPENDS ${stamp})
  add_dependencies(${arg_TARGET} mesh_layer_${layer}_check)
endfunction()

# The targets `target` links, directly or through others (static libraries' private
# dependencies included: they are linked into whatever links the library).
function(mesh_link_closure target out)
  set(seen "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    if(t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    if(NOT TARGET ${t})
      continue()
    endif()
    get_target_property(type ${t} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${t} LINK_LIBRARIES)
      if(direct)
        list(APPEND links ${direct})
      endif()
    endif()
    get_target_property(iface ${t} INTERFACE_LINK_LIBRARIES)
    if(iface)
      list(APPEND links ${iface})
    endif()
    foreach(l IN LISTS links)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" l "${l}")
      if(NOT l MATCHES "^\\$<")
        list(APPEND todo ${l})
      endif()
    endforeach()
  endwhile()
  list(REMOVE_ITEM seen ${target})
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# The network: libcurl, its lazy loader, and fleet mode.
set(MESH_NETWORK_TARGETS mesh_lazy_curl CURL::libcurl mesh_fleet)

# Fails the configure step when `target` links the network, directly or not.
function(mesh_check_no_network target)
  mesh_link_closure(${target} closure)
  foreach(net IN LISTS MESH_NETWORK_TARGETS)
    if(net IN_LIST closure)
      message(FATAL_ERROR "${target} links ${net}, and it must never link the network "
                          "(${MESH_NETWORK_TARGETS}); it links: ${closure}")
    endif()
  endforeach()
endfunction()
