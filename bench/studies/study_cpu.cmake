# study_cpu: the CPU side of the seeds' studies (issue 7) as one program,
# writing bench/studies/SCHEMA.md's CSV: s002_resolution, s002_kernel,
# s002_layout, s004_edge, s003_sizes, s000_table, s001_stages (see the header
# of study_cpu.cpp). Plain main (no Google Benchmark), so it builds wherever
# the library does; OpenCV's CPU functions are added as peer series when
# OpenCV (core, imgproc) is found (compile definition PIXELKIT_STUDY_HAVE_OPENCV).
# Included from bench/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is bench/.
add_executable(study_cpu ${CMAKE_CURRENT_SOURCE_DIR}/studies/study_cpu.cpp)
target_link_libraries(study_cpu PRIVATE pixelkit::pixelkit Threads::Threads)
# detail:: stage profiling of the cpu matcher (match/match_backends.hpp), as bench_match_cpu.
target_include_directories(study_cpu PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(study_cpu PRIVATE -Wall -Wextra)
pixelkit_bench_opencv(study_cpu PIXELKIT_STUDY_HAVE_OPENCV)  # defined in bench/CMakeLists.txt
# A quick correctness run in CTest: the study's own sequential variants (the
# seed's scan + transpose and one-pass integral) and the layouts must agree with
# the ref backend (study_cpu exits 1 on any mismatch). Timings are not judged.
if(PIXELKIT_BUILD_TESTS)
  add_test(NAME study_cpu_checks
    COMMAND study_cpu --quick --threads 2 --studies s003_sizes,s002_layout
            --csv ${CMAKE_CURRENT_BINARY_DIR}/study_cpu_checks.csv)
  set_tests_properties(study_cpu_checks PROPERTIES TIMEOUT 300)
endif()
