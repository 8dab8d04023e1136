// SPDX-License-Identifier: Apache-2.0
/*
 * probe_bigrec.bpf.c with `big` declared at 8 KiB: its 12,000-byte record
 * cannot fit the ring at all, so `gpuext trace` refuses the object, naming
 * the ring, the record and the size to declare (tests/test_trace_lib.c).
 */
#define BIG_RING_BYTES (8u << 10)
#include "probe_bigrec.h"
