# hal/nvidia: device probes for CUDA applications (included by the top CMakeLists.txt).
#
#   image.cmake, splice.cmake   their owners' build lines (module images, cache, pack;
#                         the PTX splicer), included first;
#   gpuext_nv             static library: the preload library's own parts (device maps +
#                         shm mirror, helpers) over the image and splice pieces, for tests
#                         and the CLI;
#   gpuext-nvprobe        libgpuext-nvprobe.so, the LD_PRELOAD library: links libc, libdl,
#                         libpthread only; libcuda.so.1 is dlopen'ed; no libbpf, no LLVM;
#   tests/nv fakes        a fake libcuda.so.1 and a CUDA-less "app" that drive the preload
#                         library in CI (tests/test_nv_preload.c).

set(GPUEXT_NV_DIR ${CMAKE_SOURCE_DIR}/hal/nvidia)
foreach(part image.cmake splice.cmake)
  if(EXISTS ${GPUEXT_NV_DIR}/${part})
    include(${GPUEXT_NV_DIR}/${part})
  endif()
endforeach()

# Our sources, plus whatever of the image/splice pieces no included file builds.
set(GPUEXT_NV_SRC ${GPUEXT_NV_DIR}/nv_maps.c ${GPUEXT_NV_DIR}/nv_shm.c ${GPUEXT_NV_DIR}/nv_util.c
    # The shm maps' seqcount/spinlock and header check: plain libc code (no libbpf).
    ${CMAKE_SOURCE_DIR}/core/shm.c)
set(GPUEXT_NV_DEPS)
set(GPUEXT_NV_MISSING)
if(TARGET gpuext_nv_image)
  list(APPEND GPUEXT_NV_DEPS gpuext_nv_image)
else()
  foreach(f hash.c decompress.c fatbin.c cache.c pack.c)
    if(EXISTS ${GPUEXT_NV_DIR}/${f})
      list(APPEND GPUEXT_NV_SRC ${GPUEXT_NV_DIR}/${f})
    elseif(NOT f STREQUAL "decompress.c")
      list(APPEND GPUEXT_NV_MISSING ${f})
    endif()
  endforeach()
endif()
if(TARGET gpuext_nv_splice)
  list(APPEND GPUEXT_NV_DEPS gpuext_nv_splice)
elseif(EXISTS ${GPUEXT_NV_DIR}/ptx_splice.c)
  list(APPEND GPUEXT_NV_SRC ${GPUEXT_NV_DIR}/ptx_splice.c ${GPUEXT_NV_DIR}/ptx_scan.c ${GPUEXT_NV_DIR}/ptx_inline.c ${GPUEXT_NV_DIR}/ptx_hoist.c
       ${GPUEXT_NV_DIR}/ptx_text.c ${GPUEXT_NV_DIR}/ptx_exits.c ${GPUEXT_NV_DIR}/ptx_twin.c)
else()
  list(APPEND GPUEXT_NV_MISSING ptx_splice.c)
endif()

add_library(gpuext_nv_obj OBJECT ${GPUEXT_NV_SRC})
target_include_directories(gpuext_nv_obj PUBLIC ${GPUEXT_NV_DIR} ${CMAKE_SOURCE_DIR}/include
                           ${CMAKE_SOURCE_DIR}/codegen ${CMAKE_SOURCE_DIR}/core)
# Inside the preload library nothing but the cu* entry points and dlsym is exported.
target_compile_options(gpuext_nv_obj PRIVATE -fvisibility=hidden)

add_library(gpuext_nv STATIC $<TARGET_OBJECTS:gpuext_nv_obj>)
target_include_directories(gpuext_nv PUBLIC ${GPUEXT_NV_DIR} ${CMAKE_SOURCE_DIR}/include
                           ${CMAKE_SOURCE_DIR}/codegen ${CMAKE_SOURCE_DIR}/core)
target_link_libraries(gpuext_nv PUBLIC ${GPUEXT_NV_DEPS} ${CMAKE_DL_LIBS} pthread rt)

if(GPUEXT_NV_MISSING)
  message(STATUS "hal/nvidia: libgpuext-nvprobe.so not built yet: missing ${GPUEXT_NV_MISSING}")
else()
  add_library(gpuext-nvprobe SHARED ${GPUEXT_NV_DIR}/preload.c ${GPUEXT_NV_DIR}/nv_load.c
              ${GPUEXT_NV_DIR}/nv_launch.c $<TARGET_OBJECTS:gpuext_nv_obj>)
  target_include_directories(gpuext-nvprobe PRIVATE ${GPUEXT_NV_DIR} ${CMAKE_SOURCE_DIR}/include
                             ${CMAKE_SOURCE_DIR}/codegen ${CMAKE_SOURCE_DIR}/core)
  target_compile_options(gpuext-nvprobe PRIVATE -fvisibility=hidden)
  # -z defs: an undefined symbol is a link error, not a crash inside someone's app;
  # --exclude-libs: the static pieces' symbols stay private to the library.
  target_link_options(gpuext-nvprobe PRIVATE -Wl,--as-needed -Wl,--exclude-libs,ALL)
  if(NOT GPUEXT_SANITIZE AND NOT GPUEXT_FUZZ)
    # (sanitizer runtimes live in the executable: their symbols are undefined here)
    target_link_options(gpuext-nvprobe PRIVATE -Wl,-z,defs)
  endif()
  target_link_libraries(gpuext-nvprobe PRIVATE ${GPUEXT_NV_DEPS} ${CMAKE_DL_LIBS} pthread rt)
  install(TARGETS gpuext-nvprobe LIBRARY DESTINATION lib)
  # gpuext-splice PACK_DIR IN.ptx [OUT.ptx]: the splice the preload library would do, offline.
  add_executable(gpuext-splice ${GPUEXT_NV_DIR}/splice_tool.c)
  target_link_libraries(gpuext-splice PRIVATE gpuext_nv)

  # CI: a fake libcuda.so.1 and an app that uses it both ways (linked + dlopen/cuGetProcAddress).
  add_library(nv_fakecuda SHARED ${CMAKE_SOURCE_DIR}/tests/nv/fakecuda.c)
  target_include_directories(nv_fakecuda PRIVATE ${GPUEXT_NV_DIR})
  # Calls inside the driver bind inside it, as in NVIDIA's (-Bsymbolic), not to our wrappers.
  target_link_options(nv_fakecuda PRIVATE -Wl,-Bsymbolic)
  set_target_properties(nv_fakecuda PROPERTIES OUTPUT_NAME cuda SOVERSION 1
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/nv/fakecuda)
  add_executable(nv_fakeapp ${CMAKE_SOURCE_DIR}/tests/nv/fakeapp.c)
  target_include_directories(nv_fakeapp PRIVATE ${GPUEXT_NV_DIR} ${CMAKE_SOURCE_DIR}/codegen
                             ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(nv_fakeapp PRIVATE nv_fakecuda ${CMAKE_DL_LIBS} pthread)
  if(TARGET test_nv_preload)
    add_dependencies(test_nv_preload gpuext-nvprobe nv_fakecuda nv_fakeapp)
    target_compile_definitions(test_nv_preload PRIVATE
      GPUEXT_NVPROBE_SO="$<TARGET_FILE:gpuext-nvprobe>"
      GPUEXT_NV_FAKEAPP="$<TARGET_FILE:nv_fakeapp>"
      GPUEXT_NV_FAKECUDA_DIR="${CMAKE_BINARY_DIR}/tests/nv/fakecuda")
  endif()
endif()

foreach(t test_nv_preload test_nv_ring)
  if(TARGET ${t})
    target_link_libraries(${t} PRIVATE gpuext_nv)
  endif()
endforeach()
