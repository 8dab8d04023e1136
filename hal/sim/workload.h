/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload generators: the simulator's synthetic input, one per access
 * pattern the seeds measured (LPC 2025 "Workload Diversity" slide: Faiss
 * build = sequential, Faiss query = random, LLM prefill = stride, LLM decode
 * = sparse, PyTorch DNN = periodic; GNN and the multi-tenant mixes from the
 * gpu_ext abstract and the talk outline).
 *
 * A generator first yields its managed ranges (struct sim_range, 2 MiB
 * aligned, disjoint), then a stream of struct sim_access, one per 4 KiB page
 * touch (the unit the memory model faults and prefetches on). Everything is
 * a pure function of (name, knobs, gpu_mem_bytes, oversub, seed): the same
 * inputs give the same ranges and the same stream, on every machine.
 *
 * Sizes are a ratio of the modelled GPU memory: the footprint of every
 * workload is `oversub` x `gpu_mem_bytes` (default per workload, always in
 * [1.2, 2.0]) so every run oversubscribes the GPU and eviction matters.
 *
 * Cost: one allocation at __new (the ranges and a few small tables); __next
 * fills the caller's buffer with no allocation at all.
 */
#ifndef GPUEXT_SIM_WORKLOAD_H
#define GPUEXT_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuext/gpuext.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_PAGE_SIZE 4096ULL
#define SIM_BLOCK_SIZE (2ULL << 20)
/* Where the first range starts (2 MiB aligned); later ranges follow, each
 * tenant's ranges 1 TiB apart so addresses say whose they are. */
#define SIM_VA_BASE 0x100000000000ULL
#define SIM_TENANT_VA_STRIDE (1ULL << 40)
#define SIM_TGID_BASE 1000u

/* One tunable of a workload: "name=value" in the spec string. */
struct sim_knob_desc {
	const char *name;
	double def, min, max;
	int integer;		/* the value must be a whole number */
	const char *help;
};

#define SIM_WORKLOAD_MAX_KNOBS 8

/* A registry entry. Static, lives forever. */
struct sim_workload_desc {
	const char *name;		/* "seq-scan", "moe-decode", ... */
	const char *summary;		/* one line for --help */
	const char *models;		/* the real workload it stands for */
	double default_oversub;		/* footprint / GPU memory, in [1.2, 2.0] */
	unsigned tenants;		/* processes (tgids) it generates: 1 or 2 */
	unsigned knob_cnt;
	struct sim_knob_desc knobs[SIM_WORKLOAD_MAX_KNOBS];
};

/* Every workload, in --help order. */
const struct sim_workload_desc *sim_workload_list(size_t *count);
/* By name (exact; a ":knobs" suffix is ignored), or NULL. */
const struct sim_workload_desc *sim_workload_find(const char *name);

struct sim_workload_opts {
	size_t sz;
	/* Modelled GPU memory; 0 = 1 GiB. Rounded down to 2 MiB blocks. */
	uint64_t gpu_mem_bytes;
	/* Footprint / GPU memory; 0 = the workload's default. (0, 16]. */
	double oversub;
	/* 0 is a seed like any other. */
	uint64_t seed;
	/* Stop after this many accesses; 0 = the workload's natural end. */
	uint64_t max_accesses;
	/* First tgid; 0 = SIM_TGID_BASE. A mix uses tgid_base and tgid_base+1. */
	uint32_t tgid_base;
	/* For error messages (NULL: stderr). */
	const struct gpuext_runtime *rt;
};

struct sim_workload;

/*
 * @spec is "name" or "name:knob=value,knob=value" (e.g.
 * "moe-decode:zipf_s=1.1,top_k=4"). -ENOENT for an unknown name, -EINVAL for
 * an unknown knob, a value out of range or bad opts (the message lists what
 * is valid), -ENOMEM.
 */
int sim_workload__new(const char *spec, const struct sim_workload_opts *opts,
		      struct sim_workload **out);
void sim_workload__free(struct sim_workload *w);

const struct sim_workload_desc *sim_workload__desc(const struct sim_workload *w);
/* The managed ranges, valid until __free. Sorted by va, disjoint. */
size_t sim_workload__ranges(const struct sim_workload *w, const struct sim_range **out);
/* Accesses the stream will yield in all (after max_accesses). */
uint64_t sim_workload__total(const struct sim_workload *w);
/* Footprint (sum of range sizes) / GPU memory. */
double sim_workload__oversub(const struct sim_workload *w);
uint64_t sim_workload__gpu_mem_bytes(const struct sim_workload *w);
/* The value a knob has in this instance (default or from the spec). */
double sim_workload__knob(const struct sim_workload *w, const char *name);

/* Fills up to @max accesses; returns how many (0 = the stream ended). */
size_t sim_workload__next(struct sim_workload *w, struct sim_access *buf, size_t max);
/* Back to the first access (same stream again). */
void sim_workload__rewind(struct sim_workload *w);

/* Prints the registry with knobs (for --help). */
void sim_workload_print_help(FILE *f);

#ifdef __cplusplus
}
#endif
#endif
