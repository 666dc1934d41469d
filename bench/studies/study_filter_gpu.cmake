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
  # pixelkit_gpu_bench and pixelkit_bench_npp: bench/CMakeLists.txt. bench/ for
  # bench_timing.hpp.
  pixelkit_gpu_bench(study_filter_gpu ${CMAKE_CURRENT_SOURCE_DIR}/studies/study_filter_gpu.cu)
  target_include_directories(study_filter_gpu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(study_filter_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -lineinfo>)
  pixelkit_bench_npp(study_filter_gpu nppif nppi_filtering_functions.h)
endif()
