# tools/probes: the device-probe tools (BPF C -> tools/probes/*.bpf.o in the build tree),
# compiled like the policies (gpuext_bpf_objects: clang-22 -target bpf -mcpu=v3 -g -O2).
# Included by the top CMakeLists.txt after the gpuext target and the tests exist.
gpuext_bpf_objects(GPUEXT_PROBE_OBJS ${CMAKE_SOURCE_DIR}/tools/probes
                   ${CMAKE_BINARY_DIR}/tools/probes)
add_custom_target(probes ALL DEPENDS ${GPUEXT_PROBE_OBJS})
install(FILES ${GPUEXT_PROBE_OBJS} DESTINATION share/gpuext/probes)

# gpuext trace (tools/gpuext/cmd_trace.c + trace_lib.c) links the probe emitter and the
# pack writer where the tree has them; without, it still builds and says what is missing.
set(GPUEXT_TRACE_DEFS)
if(EXISTS ${CMAKE_SOURCE_DIR}/codegen/ptx/ptx_probe.c)
  list(APPEND GPUEXT_TRACE_DEFS GPUEXT_HAVE_PROBE_EMIT=1)
endif()
# The pack writer (hal/nvidia/pack.c + hash.c) comes from hal/nvidia/nvidia.cmake's
# static library when it defines one.
if(TARGET gpuext_nv)
  list(APPEND GPUEXT_TRACE_DEFS GPUEXT_HAVE_NVPROBE_PACK=1)
endif()

if(TARGET gpuext)
  add_dependencies(gpuext probes)
  target_compile_definitions(gpuext PRIVATE ${GPUEXT_TRACE_DEFS}
    GPUEXT_BUILD_PROBE_DIR="${CMAKE_BINARY_DIR}/tools/probes"
    GPUEXT_INSTALL_PROBE_DIR="${CMAKE_INSTALL_PREFIX}/share/gpuext/probes")
  if(TARGET gpuext_nv)
    target_link_libraries(gpuext PRIVATE gpuext_nv)
  endif()
endif()

# tests/test_nv_exits.c splices a real tool's exit probe (threadhist: the election from the
# thread index, hal/nvidia/ptx_hoist.c).
if(TARGET test_nv_exits)
  target_compile_definitions(test_nv_exits PRIVATE
    GPUEXT_TEST_PROBE_DIR="${CMAKE_BINARY_DIR}/tools/probes")
  add_dependencies(test_nv_exits probes)
endif()

# tests/test_trace_lib.c checks trace_lib.c (no GPU needed) against real tool objects.
if(TARGET test_trace_lib)
  target_sources(test_trace_lib PRIVATE ${CMAKE_SOURCE_DIR}/tools/gpuext/trace_lib.c)
  target_include_directories(test_trace_lib PRIVATE ${CMAKE_SOURCE_DIR}/tools/gpuext)
  target_compile_definitions(test_trace_lib PRIVATE ${GPUEXT_TRACE_DEFS}
    GPUEXT_TEST_PROBE_DIR="${CMAKE_BINARY_DIR}/tools/probes")
  add_dependencies(test_trace_lib probes)
  if(TARGET gpuext_nv)
    target_link_libraries(test_trace_lib PRIVATE gpuext_nv)
  endif()
endif()
