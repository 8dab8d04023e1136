# hal/nvidia/splice.cmake: the splicer's tests (included by nvidia.cmake, which builds
# ptx_splice.c into gpuext_nv). test_nv_splice also links libgpuext (every tests/test_*.c
# does) to emit real probes with codegen/ptx; at test time it compiles tests/nv/splice/*.cu
# with nvcc and with clang's CUDA mode when they are found.
find_program(GPUEXT_NVCC_EXE NAMES nvcc HINTS /usr/local/cuda/bin)
if(TARGET test_nv_splice)
  target_link_libraries(test_nv_splice PRIVATE gpuext_nv)
  target_compile_definitions(test_nv_splice PRIVATE GPUEXT_NVCC="${GPUEXT_NVCC_EXE}"
                             GPUEXT_CUDA_CLANG="${BPF_CLANG}")
  set_tests_properties(test_nv_splice PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(TARGET test_nv_exits)
  target_link_libraries(test_nv_exits PRIVATE gpuext_nv)
endif()
if(TARGET test_nv_splice_parts)
  target_link_libraries(test_nv_splice_parts PRIVATE gpuext_nv)
endif()
if(TARGET test_codegen_ptx_probe)
  set_tests_properties(test_codegen_ptx_probe PROPERTIES SKIP_RETURN_CODE 77)
endif()
# The splicer's fuzzer (tests/fuzz/fuzz_splice.c; clang + -DGPUEXT_FUZZ=ON).
if(TARGET fuzz_splice)
  target_link_libraries(fuzz_splice PRIVATE gpuext_nv)
  target_compile_definitions(fuzz_splice PRIVATE GPUEXT_NV_SPLICE_LINKED)
endif()
