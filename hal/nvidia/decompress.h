/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoders for the two compressions nvcc 13 applies to fatbin members
 * (hal/nvidia/README-fatbin.md): LZ4 block format (flag 0x2000,
 * --compress-mode=speed) and Zstandard frames, RFC 8878 (flag 0x8000, the
 * default, size and balance modes). Internal to hal/nvidia; written here so
 * the preload library depends on nothing but libc.
 *
 * Both decode into a caller-owned buffer of @dst_cap bytes, never read
 * outside [src, src + src_len) nor write outside [dst, dst + dst_cap), and
 * return the decoded length or -EINVAL / -E2BIG with what and where (offset
 * in the compressed stream) in @err.
 */
#ifndef GPUEXT_NV_DECOMPRESS_H
#define GPUEXT_NV_DECOMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

ssize_t gx_lz4_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
		      char *err, size_t err_len);
/* One or more frames (skippable frames are skipped); checksums verified. */
ssize_t gx_zstd_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
		       char *err, size_t err_len);
/* XXH64 (the frame checksum zstd uses); exposed for tests. */
uint64_t gx_xxh64(const void *data, size_t len, uint64_t seed);

#endif
