# ktune_module(NAME SOURCES ... DEPS ...): the static library ktune_NAME with the public include dir.
function(ktune_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(ktune_${name} STATIC ${ARG_SOURCES})
  target_include_directories(ktune_${name}
    PUBLIC ${PROJECT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(ktune_${name} PUBLIC ${ARG_DEPS})
endfunction()

# ktune_test(NAME SOURCES ... DEPS ...): a GoogleTest binary registered with ctest.
function(ktune_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
    KTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    KTUNE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
endfunction()
