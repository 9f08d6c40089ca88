# Real kernels for calibration. CPU and MPI kernels (kernels/*.c) are in libdtsim through the
# top-level glob (MPI code is guarded by DTSIM_HAVE_MPI, set in CMakeLists.txt).
# Here: the optional CUDA back end (own ring and top-k kernels, the compute probe with cuBLAS) and
# NCCL, plus test properties.
#
# CUDA is best effort: if nvcc is missing or cannot compile for this host compiler, the build
# continues CPU-only (kernels/kern_cuda_stub.c answers "built without CUDA") with a message.
# DTSIM_CUDA=OFF skips the probe altogether.

option(DTSIM_CUDA "Build the CUDA/NCCL calibration kernels when nvcc is found" ON)

if(DTSIM_CUDA)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # A100 (sm_80) and H100/H200 (sm_90); CUDA 13 has dropped the older ones.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit QUIET)
    # libdtsim was created before CUDA was enabled, so CMake did not initialise this for it
    set_target_properties(libdtsim PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    # Its own target: nvcc must not see the C warning flags or the sanitizer options that the
    # top level adds to every C target (COMPILE_OPTIONS is reset below for that reason).
    add_library(dtsim_cuda STATIC ${CMAKE_CURRENT_LIST_DIR}/kern_cuda.cu ${CMAKE_CURRENT_LIST_DIR}/kern_probe.cu)
    set_target_properties(dtsim_cuda PROPERTIES COMPILE_OPTIONS "" CUDA_STANDARD 17
      POSITION_INDEPENDENT_CODE ON CUDA_RUNTIME_LIBRARY Static)
    target_include_directories(dtsim_cuda PRIVATE ${CMAKE_SOURCE_DIR}/include)
    target_compile_options(dtsim_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>)
    # the .cu calls back into libdtsim (errors, conversions, references): a cycle CMake allows
    # between static libraries (it repeats them on the link line)
    # cuBLAS for the compute probe's GEMMs (kern_probe.cu; the shared library: its static one is
    # not in every toolkit, and the probe machine has the toolkit anyway)
    target_link_libraries(dtsim_cuda PUBLIC CUDA::cudart_static CUDA::cublas PRIVATE libdtsim)
    target_compile_definitions(libdtsim PUBLIC DTSIM_HAVE_CUDA=1)
    # The compute probe built alone (nvcc + cuBLAS, no libdtsim), as scripts/device-probe.sh
    # builds it on a GPU machine without dtsim's libraries: built here so that it keeps
    # compiling, and so that tests/cli/test_probe.sh checks its JSON (--format-check).
    add_executable(kern_probe ${CMAKE_CURRENT_LIST_DIR}/kern_probe.cu)
    set_target_properties(kern_probe PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "" CUDA_STANDARD 17
      CUDA_RUNTIME_LIBRARY Static)
    target_compile_definitions(kern_probe PRIVATE KERN_PROBE_STANDALONE)
    target_include_directories(kern_probe PRIVATE ${CMAKE_SOURCE_DIR}/include)
    target_link_libraries(kern_probe PRIVATE CUDA::cublas)
    find_library(DTSIM_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib /usr/local/cuda/lib64)
    find_path(DTSIM_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
    if(DTSIM_NCCL_LIBRARY AND DTSIM_NCCL_INCLUDE)
      target_compile_definitions(dtsim_cuda PRIVATE DTSIM_HAVE_NCCL=1)
      target_compile_definitions(libdtsim PUBLIC DTSIM_HAVE_NCCL=1)
      target_include_directories(dtsim_cuda PRIVATE ${DTSIM_NCCL_INCLUDE})
      target_link_libraries(dtsim_cuda PUBLIC ${DTSIM_NCCL_LIBRARY})
      message(STATUS "dtsim: CUDA ${CMAKE_CUDA_COMPILER_VERSION} (archs ${CMAKE_CUDA_ARCHITECTURES}) and NCCL found: GPU kernels built")
    else()
      message(STATUS "dtsim: CUDA ${CMAKE_CUDA_COMPILER_VERSION} found, NCCL not found: --backend nccl disabled")
    endif()
    target_link_libraries(libdtsim PUBLIC dtsim_cuda)
  else()
    message(STATUS "dtsim: no working CUDA compiler, GPU kernels disabled (CPU-only build)")
  endif()
else()
  message(STATUS "dtsim: DTSIM_CUDA=OFF, GPU kernels disabled")
endif()

# Each "test:value" argument sets `property` to value on that test, where the test exists.
function(dtsim_tests_set property)
  foreach(t_v ${ARGN})
    string(REPLACE ":" ";" t_v ${t_v})
    list(GET t_v 0 t)
    list(GET t_v 1 v)
    if(TEST ${t})
      set_tests_properties(${t} PROPERTIES ${property} ${v})
    endif()
  endforeach()
endfunction()

# Test properties for the kernel tests, applied once tests/tests.cmake has defined them (it is
# included after this file). Exit status 77 means "skipped" (no device, no mpirun).
function(dtsim_kernel_test_properties)
  dtsim_tests_set(SKIP_RETURN_CODE test_kern_cuda:77 test_probe_cuda:77 cli_test_calib_mpi:77
                  cli_test_calib_cuda:77 cli_test_probe:77)
  # The CUDA suites run in-process (a CUDA context does not survive Check's fork), where Check's
  # own per-test timeout does not apply: ctest's stands in for it.
  dtsim_tests_set(TIMEOUT test_kern_cuda:300 test_probe_cuda:120)
  dtsim_tests_set(LABELS cli_test_calib_mpi:no-sanitize)
  # Tests that time real kernels need the cores their ranks spin on. Under `ctest -j2` on a
  # 2-core machine another test beside them starved the ranks: timings turned to scheduler
  # noise and calibrate rightly refused the fit (time not growing with size, a latency clearly
  # below zero), three attempts in a row (cli_test_calib_mpi's flake). PROCESSORS says how many
  # cores each uses (its largest rank count); ctest never runs more than -j worth at once, so
  # these run alone at -j2.
  dtsim_tests_set(PROCESSORS cli_test_calib_mpi:4 cli_test_calib:3 cli_test_calib_tcp:3
                  cli_test_calib_roundtrip:2)
endfunction()
cmake_language(DEFER CALL dtsim_kernel_test_properties)
