# hal/nvidia/image.cmake: the module-image side of the device probes, libc only
# (the preload library links it): content hashes (hash.c), fatbin/PTX images
# and their LZ4/zstd members (fatbin.c, decompress.c), the on-disk JIT cache
# (cache.c), the pack file (pack.c). Included by hal/nvidia/nvidia.cmake.
add_library(gpuext_nv_image STATIC
  ${CMAKE_CURRENT_LIST_DIR}/hash.c
  ${CMAKE_CURRENT_LIST_DIR}/fatbin.c
  ${CMAKE_CURRENT_LIST_DIR}/decompress.c
  ${CMAKE_CURRENT_LIST_DIR}/cache.c
  ${CMAKE_CURRENT_LIST_DIR}/pack.c)
target_include_directories(gpuext_nv_image PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# Linked into the preload .so: position independent (the top level sets it too).
set_target_properties(gpuext_nv_image PROPERTIES POSITION_INDEPENDENT_CODE ON)

# The tests (tests/test_nv_*.c, picked up by the top-level glob) and the fuzzer
# build to a "skipped, exit 77" stub unless GPUEXT_NV_IMAGE_LINKED says the
# library is linked, so the tree builds before this file is included.
foreach(t test_nv_fatbin test_nv_cache test_nv_pack fuzz_fatbin)
  if(TARGET ${t})
    target_link_libraries(${t} PRIVATE gpuext_nv_image)
    target_compile_definitions(${t} PRIVATE GPUEXT_NV_IMAGE_LINKED)
  endif()
endforeach()
foreach(t test_nv_fatbin test_nv_cache test_nv_pack)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endforeach()
if(TARGET test_nv_fatbin)
  # test_nv_fatbin compiles tests/nv/*.cu with nvcc (tests/nv/gen.sh) into
  # this folder at test time, incrementally; without nvcc it exits 77.
  target_compile_definitions(test_nv_fatbin PRIVATE
    GPUEXT_NV_TEST_OUT="${CMAKE_BINARY_DIR}/tests/nv")
  set_tests_properties(test_nv_fatbin PROPERTIES TIMEOUT 900)
endif()
