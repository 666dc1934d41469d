# Installs the built pixelkit into a scratch prefix, then configures, builds
# and runs tests/consumer against it with find_package(pixelkit).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
set(extra)
if(CUDA_COMPILER)
  list(APPEND extra -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release ${extra}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer returned ${rc}")
endif()

# The installed CLI loads the installed OpenCV codec module (where the build
# has one): `pixelkit info` names the file under the prefix, and a PNG filters.
file(GLOB_RECURSE module ${WORK_DIR}/prefix/*/pixelkit/libpixelkit_opencv.so)
if(module)
  execute_process(COMMAND ${WORK_DIR}/prefix/bin/pixelkit info OUTPUT_VARIABLE info RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "the installed pixelkit info returned ${rc}")
  endif()
  string(FIND "${info}" "codec module : ${module}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the installed pixelkit does not load ${module}:\n${info}")
  endif()
  execute_process(COMMAND ${WORK_DIR}/prefix/bin/pixelkit filter ${SOURCE_DIR}/data/camera.png
                          ${WORK_DIR}/camera_box3.png --kernel box:3 --backend cpu
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc OR NOT EXISTS ${WORK_DIR}/camera_box3.png)
    message(FATAL_ERROR "the installed pixelkit could not filter a PNG (${rc}): ${err}")
  endif()
  message(STATUS "installed CLI: ${module} loaded, a PNG filtered")
endif()
