# Unit tests: tests/unit mirrors the library's rooms (DTSIM_ROOMS in CMakeLists.txt): every
# tests/unit/<room>/test_*.c is one Check program and one ctest. A room's tests see its private
# headers (the room's source folder) and the test helpers of their own folder and of tests/unit
# (a lower room's helper by relative path, "../gpu/cal_testutil.h"); which headers they may
# include is checked like the library's (scripts/check_layers.sh).
# CLI tests: every tests/cli/test_*.sh runs against the built dtsim.
# Benchmarks: every tests/bench/bench_*.c builds (not run by ctest); `cmake --build build --target bench` runs them.

if(CHECK_FOUND)
  foreach(room ${DTSIM_ROOMS})
    get_filename_component(room_name ${room} NAME) # models/net -> net
    file(GLOB room_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/${room_name}/test_*.c)
    foreach(src ${room_tests})
      get_filename_component(name ${src} NAME_WE)
      add_executable(${name} ${src})
      target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit
        ${CMAKE_SOURCE_DIR}/tests/unit/${room_name} ${CMAKE_SOURCE_DIR}/${room})
      target_compile_options(${name} PRIVATE ${DTSIM_WARNINGS})
      target_compile_definitions(${name} PRIVATE DTSIM_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
      target_link_libraries(${name} PRIVATE libdtsim PkgConfig::CHECK)
      add_test(NAME ${name} COMMAND ${name})
      set_tests_properties(${name} PROPERTIES ENVIRONMENT "CK_DEFAULT_TIMEOUT=60" LABELS ${room_name})
    endforeach()
  endforeach()
else()
  message(WARNING "Check not found: unit tests are not built (apt-get install check)")
endif()

file(GLOB DTSIM_CLI_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cli/test_*.sh)
foreach(src ${DTSIM_CLI_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME cli_${name} COMMAND bash ${src})
  set_tests_properties(cli_${name} PROPERTIES ENVIRONMENT
    "DTSIM=$<TARGET_FILE:dtsim>;SRC=${CMAKE_SOURCE_DIR};BUILD=${CMAKE_BINARY_DIR}")
  # test_*_mpi.sh run mpirun: not under the sanitizers (Open MPI's own leaks and races), and
  # exit 77 (skipped) when this build has no MPI.
  if(name MATCHES "_mpi$")
    set_tests_properties(cli_${name} PROPERTIES LABELS no-sanitize SKIP_RETURN_CODE 77)
  endif()
endforeach()
# test_install.sh installs this build and links examples/embed against it: not in the sanitizer
# build (the installed library would need the sanitizer runtime in every program linking it).
if(TEST cli_test_install)
  set_tests_properties(cli_test_install PROPERTIES LABELS no-sanitize)
endif()
# test_validation_stated.sh replays large runs (GPT-3 on 1,024 GPUs, Llama 3.1 405B on 2,304) of
# code paths cli_test_validation runs under the sanitizers already: release build only.
if(TEST cli_test_validation_stated)
  set_tests_properties(cli_test_validation_stated PROPERTIES LABELS no-sanitize)
endif()

file(GLOB DTSIM_BENCHES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/bench/bench_*.c)
set(DTSIM_BENCH_TARGETS)
foreach(src ${DTSIM_BENCHES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  # bench_topo times routing through the topology's private header
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/models/topo)
  target_compile_options(${name} PRIVATE ${DTSIM_WARNINGS})
  target_compile_definitions(${name} PRIVATE DTSIM_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_link_libraries(${name} PRIVATE libdtsim)
  list(APPEND DTSIM_BENCH_TARGETS ${name})
endforeach()
if(DTSIM_BENCH_TARGETS)
  add_custom_target(bench
    COMMAND ${CMAKE_COMMAND} -E env bash ${CMAKE_SOURCE_DIR}/tests/bench/run.sh $<TARGET_FILE_DIR:dtsim>
    DEPENDS ${DTSIM_BENCH_TARGETS} dtsim USES_TERMINAL)
endif()

if(DTSIM_FUZZ)
  file(GLOB DTSIM_FUZZERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  set(DTSIM_FUZZ_TARGETS)
  foreach(src ${DTSIM_FUZZERS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_compile_options(${name} PRIVATE ${DTSIM_WARNINGS} -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE libdtsim)
    list(APPEND DTSIM_FUZZ_TARGETS ${name})
  endforeach()
  add_custom_target(fuzzers DEPENDS ${DTSIM_FUZZ_TARGETS})
endif()
