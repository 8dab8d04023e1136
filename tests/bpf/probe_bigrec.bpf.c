// SPDX-License-Identifier: Apache-2.0
/*
 * Ring-buffer records larger than the 8 KiB a device ring shard has at the
 * least (hal/nvidia/nv_maps.c): `big` gets 12,000-byte records from
 * bpf_ringbuf_reserve, `small` gets bpf_ringbuf_output of at most 48 bytes
 * (a bound the verifier proves, not a constant). The verifier notes the
 * largest record per ring (gpuext_map__ring_max_record), `gpuext trace`
 * puts it in the pack, and the preload library makes every shard hold one.
 * tests/test_trace_lib.c checks the numbers; probe_bigrec_toobig.bpf.c is
 * the ring too small for its record.
 */
#define BIG_RING_BYTES (1u << 20)
#include "probe_bigrec.h"
