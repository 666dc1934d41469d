# study_filter_gpu (issue 7): the GPU side of seeds 002 and 004's convolution
# studies - resolution, kernel size, memory levels (the seed's naive global /
# constant / shared kernels, written in the study), AoS vs SoA, host-to-host
# transfer models, seed 004's edge kernel - writing bench/studies/SCHEMA.md
# rows. NPP's nppiFilterBorder32f_8u_C3R joins as a series when libnppif /
# libnppc are found (compile definition PIXELKIT_BENCH_HAVE_NPP); the program
# builds without them. Peer script (torch, CuPy, OpenCV-Python on the GPU
# machine): bench/peers/study_filter_torch.py.
# Included from bench/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is bench/.
if(PIXELKIT_WITH_CUDA)
  add_executable(study_filter_gpu ${CMAKE_CURRENT_SOURCE_DIR}/studies/study_filter_gpu.cu)
  # src/ for bench_timing.hpp's helpers (core/cuda_check.hpp, core/cuda_resources.hpp).
  target_include_directories(study_filter_gpu PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(study_filter_gpu PRIVATE pixelkit::pixelkit CUDA::cudart)
  set_target_properties(study_filter_gpu PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_compile_options(study_filter_gpu PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra -lineinfo>)
  # The same cache variables as bench_filter_gpu's search (found once, reused).
  find_library(PIXELKIT_NPPIF_LIB nppif HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_library(PIXELKIT_NPPC_LIB nppc HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(PIXELKIT_NPP_INCLUDE nppi_filtering_functions.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(PIXELKIT_NPPIF_LIB AND PIXELKIT_NPPC_LIB AND PIXELKIT_NPP_INCLUDE)
    if(TARGET CUDA::nppif AND TARGET CUDA::nppc)
      target_link_libraries(study_filter_gpu PRIVATE CUDA::nppif CUDA::nppc)
    else()
      target_link_libraries(study_filter_gpu PRIVATE ${PIXELKIT_NPPIF_LIB} ${PIXELKIT_NPPC_LIB})
    endif()
    target_include_directories(study_filter_gpu PRIVATE ${PIXELKIT_NPP_INCLUDE})
    target_compile_definitions(study_filter_gpu PRIVATE PIXELKIT_BENCH_HAVE_NPP)
    message(STATUS "study_filter_gpu: NPP series ON (${PIXELKIT_NPPIF_LIB})")
  else()
    message(STATUS "study_filter_gpu: NPP not found, no npp series")
  endif()
endif()
