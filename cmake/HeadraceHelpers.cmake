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

# headrace_pch(TARGET [HEADERS...]): precompiles, once per target, the
# standard headers every file parses and the project HEADERS (<dir/file.h>)
# most of TARGET's files include; each file of TARGET then starts from that
# state instead of parsing them again. Parsing headers was ~80% of a
# handler's compile (docs/operations.md, "Packaging"). HEADRACE_PCH=OFF
# turns it off (e.g. for a compiler cache that does not handle PCH).
set(HEADRACE_PCH_STD <algorithm> <atomic> <chrono> <condition_variable> <cstdint> <functional>
    <map> <memory> <mutex> <optional> <span> <string> <string_view> <thread>
    <unordered_map> <utility> <vector>)
function(headrace_pch target)
  if(HEADRACE_PCH)
    target_precompile_headers(${target} PRIVATE ${HEADRACE_PCH_STD} ${ARGN})
  endif()
endfunction()

# headrace_no_pch(FILES...): these files compile without the target's PCH.
# GCC 12 warns falsely on them when they start from one: libstdc++'s string
# internals inlined into them lose their system-header status
# (-Wstringop-overflow, -Wfree-nonheap-object), and a function of an
# anonymous namespace that is called is reported unused (-Wunused-function).
function(headrace_no_pch)
  if(HEADRACE_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    set_source_files_properties(${ARGN} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
endfunction()
