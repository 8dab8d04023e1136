/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's input: a stream of GPU memory accesses, from a workload
 * generator (workload.c) or a trace recorded on a real GPU (trace.c reads
 * and writes both the compact binary form and a text form for tests).
 */
#ifndef GPUEXT_SIM_TRACE_H
#define GPUEXT_SIM_TRACE_H

#include <stdint.h>

/* One GPU access to managed memory. */
struct sim_access {
	uint64_t va;		/* byte address inside a managed range */
	uint32_t tgid;		/* owning process */
	uint16_t kernel;	/* launch index, so epochs/phases are visible */
	uint8_t is_write;
	uint8_t pad;
};

/* A managed range a process allocated (cudaMallocManaged). */
struct sim_range {
	uint64_t va;		/* 2 MiB aligned */
	uint64_t size;		/* multiple of 2 MiB */
	uint32_t tgid;
};

#endif
