# Bakes the ktune version and git commit into the binary so every artifact can name its producer
# (the gate keys its baselines by it). Run at configure time and again by every build
# (ktune_version, cmake -P this file): a commit made since configuring must not leave the old one
# baked in. configure_file rewrites version.cpp only when its text changes, so an unchanged
# checkout recompiles nothing.
function(ktune_write_version source_dir version out)
  execute_process(COMMAND git rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${source_dir}
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR commit STREQUAL "")
    set(commit "unknown")
  endif()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${source_dir}
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    string(APPEND commit "-dirty")
  endif()
  set(PROJECT_VERSION ${version})
  set(KTUNE_GIT_COMMIT ${commit})
  configure_file(${source_dir}/src/core/version.cpp.in ${out} @ONLY)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  ktune_write_version(${SOURCE_DIR} ${VERSION} ${OUT})
else()
  set(_ktune_version_cpp ${CMAKE_BINARY_DIR}/generated/version.cpp)
  ktune_write_version(${CMAKE_SOURCE_DIR} ${PROJECT_VERSION} ${_ktune_version_cpp})
  add_custom_target(ktune_version
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DVERSION=${PROJECT_VERSION}
            -DOUT=${_ktune_version_cpp} -P ${CMAKE_SOURCE_DIR}/cmake/KtuneVersion.cmake
    BYPRODUCTS ${_ktune_version_cpp}
    COMMENT "ktune version: the checkout's commit")
endif()
