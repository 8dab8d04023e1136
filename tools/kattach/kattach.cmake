# tools/kattach: gpuext-kattach, the kernel policy loader (libbpf, dynamically linked here;
# the VM harness builds its own static copy). Included by the top CMakeLists.txt's
# sub-build list; needs the PkgConfig::LIBBPF target defined there.
add_executable(gpuext-kattach ${CMAKE_SOURCE_DIR}/tools/kattach/main.c)
target_include_directories(gpuext-kattach PRIVATE ${CMAKE_SOURCE_DIR}/tools/kattach)
target_link_libraries(gpuext-kattach PRIVATE PkgConfig::LIBBPF)
install(TARGETS gpuext-kattach DESTINATION bin)
