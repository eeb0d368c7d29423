# headrace_test(NAME SOURCES... LIBS...): one GoogleTest binary, registered
# with ctest. Does nothing unless HEADRACE_BUILD_TESTS is ON.
function(headrace_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT HEADRACE_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/cpp)
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()

# headrace_fuzz(NAME SOURCE LIBS...): one libFuzzer target (run by
# scripts/fuzz.sh). Does nothing unless HEADRACE_BUILD_FUZZ is ON.
function(headrace_fuzz name source)
  if(NOT HEADRACE_BUILD_FUZZ)
    return()
  endif()
  add_executable(${name} ${source})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${ARGN})
endfunction()
