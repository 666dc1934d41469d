# study_gpu (issue 7): the GPU side of seeds 003 (integral image: thread-block
# sweep and sizes), 000 (2D Haar: the seed's table and threads per block) and
# 001 (template matching per stage), writing bench/studies/SCHEMA.md rows. The
# seeds' own GPU methods (scan + transpose integral, the naive matching
# pipeline, a direct SSD kernel) are written in the study, study-only.
# NPP's nppiIntegral_8u32s_C1R_Ctx joins s003_sizes when libnppist / libnppc
# are found (compile definition PIXELKIT_BENCH_HAVE_NPP); the program builds
# without them. Peer script (CuPy, torch, OpenCV-Python on the GPU machine):
# bench/peers/study_peers.py.
# Included from bench/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is bench/.
if(PIXELKIT_WITH_CUDA)
  add_executable(study_gpu ${CMAKE_CURRENT_SOURCE_DIR}/studies/study_gpu.cu)
  # src/ for the detail:: hooks (integral variants, Haar tuning, match stage
  # profiling) and bench_timing.hpp's helpers.
  target_include_directories(study_gpu PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  # cuFFT: the naive matching pipeline's cross-correlation (as seed 001's).
  target_link_libraries(study_gpu PRIVATE pixelkit::pixelkit CUDA::cudart CUDA::cufft)
  set_target_properties(study_gpu PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_compile_options(study_gpu PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra -lineinfo>)
  # The same cache variables as bench_integral_gpu's search (found once, reused).
  find_library(PIXELKIT_NPPIST_LIB nppist HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_library(PIXELKIT_NPPC_LIB_INTEGRAL nppc HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(PIXELKIT_NPPI_INCLUDE nppi.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(PIXELKIT_NPPIST_LIB AND PIXELKIT_NPPC_LIB_INTEGRAL AND PIXELKIT_NPPI_INCLUDE)
    target_link_libraries(study_gpu PRIVATE ${PIXELKIT_NPPIST_LIB} ${PIXELKIT_NPPC_LIB_INTEGRAL})
    target_include_directories(study_gpu PRIVATE ${PIXELKIT_NPPI_INCLUDE})
    target_compile_definitions(study_gpu PRIVATE PIXELKIT_BENCH_HAVE_NPP)
    message(STATUS "study_gpu: NPP series ON (${PIXELKIT_NPPIST_LIB})")
  else()
    message(STATUS "study_gpu: NPP not found, no npp series")
  endif()
endif()
