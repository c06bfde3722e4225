# SPDX-License-Identifier: Apache-2.0
# CPACK_PRE_BUILD_SCRIPTS: the static archives of libfwdsink-dev without their debug
# sections (CPACK_STRIP_FILES strips executables and shared libraries only; the tree is
# RelWithDebInfo as in CI). Symbols stay, so the archives still link.
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(a IN LISTS archives)
  execute_process(COMMAND strip --strip-debug "${a}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${a} failed")
  endif()
endforeach()
