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
  # pixelkit_gpu_bench and pixelkit_bench_npp: bench/CMakeLists.txt. src/ (from
  # pixelkit_gpu_bench) for the detail:: hooks (integral variants, Haar tuning,
  # match stage profiling); bench/ for bench_timing.hpp.
  pixelkit_gpu_bench(study_gpu ${CMAKE_CURRENT_SOURCE_DIR}/studies/study_gpu.cu)
  target_include_directories(study_gpu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  # cuFFT: the naive matching pipeline's cross-correlation (as seed 001's).
  target_link_libraries(study_gpu PRIVATE CUDA::cufft)
  target_compile_options(study_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -lineinfo>)
  pixelkit_bench_npp(study_gpu nppist nppi.h)
endif()
