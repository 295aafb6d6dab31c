# Bakes the ktune version and git commit into the binary so every artifact can name its producer.
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                OUTPUT_VARIABLE KTUNE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE _git_rc)
if(NOT _git_rc EQUAL 0 OR KTUNE_GIT_COMMIT STREQUAL "")
  set(KTUNE_GIT_COMMIT "unknown")
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no
                WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                OUTPUT_VARIABLE _git_dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT _git_dirty STREQUAL "")
  string(APPEND KTUNE_GIT_COMMIT "-dirty")
endif()
configure_file(${CMAKE_SOURCE_DIR}/src/core/version.cpp.in
               ${CMAKE_BINARY_DIR}/generated/version.cpp @ONLY)
