/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The standard host helpers, registered into every runtime with their typed
 * signatures (the verifier reads the same table). Ids are Linux's
 * BPF_FUNC_* numbers so programs compiled against <bpf/bpf_helpers.h> work
 * unchanged. Backends add their own helpers and kfuncs to the same table.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static struct gpuext_map *arg_map(uint64_t v)
{
	return (struct gpuext_map *)(uintptr_t)v;
}

static uint64_t h_map_lookup_elem(struct gpuext_exec *ex, uint64_t map, uint64_t key, uint64_t a3,
				  uint64_t a4, uint64_t a5)
{
	(void)a3; (void)a4; (void)a5;
	return (uint64_t)(uintptr_t)gpuext_map_prog_lookup(arg_map(map), (const void *)(uintptr_t)key,
							     gpuext_exec__cpu(ex));
}

static uint64_t h_map_update_elem(struct gpuext_exec *ex, uint64_t map, uint64_t key,
				  uint64_t value, uint64_t flags, uint64_t a5)
{
	(void)a5;
	return (uint64_t)(int64_t)gpuext_map_prog_update(arg_map(map), (const void *)(uintptr_t)key,
							 (const void *)(uintptr_t)value, flags,
							 gpuext_exec__cpu(ex));
}

static uint64_t h_map_delete_elem(struct gpuext_exec *ex, uint64_t map, uint64_t key, uint64_t a3,
				  uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a3; (void)a4; (void)a5;
	return (uint64_t)(int64_t)gpuext_map_prog_delete(arg_map(map), (const void *)(uintptr_t)key);
}

static uint64_t h_ktime_get_ns(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			       uint64_t a4, uint64_t a5)
{
	struct timespec ts;

	(void)ex; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t h_get_prandom_u32(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
				  uint64_t a4, uint64_t a5)
{
	(void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	return (uint32_t)gpuext_runtime_prandom(gpuext_exec__runtime(ex));
}

static uint64_t h_get_smp_processor_id(struct gpuext_exec *ex, uint64_t a1, uint64_t a2,
				       uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	return gpuext_exec__cpu(ex); /* 0 unless the caller runs us on a slot */
}

/*
 * bpf_trace_printk(fmt, fmt_size, a, b, c): the kernel's restricted format
 * set (%d %i %u %x %X %c %p %s %% with l/ll) and at most three arguments.
 * The text goes to the runtime's print callback at INFO level.
 */
static uint64_t h_trace_printk(struct gpuext_exec *ex, uint64_t fmt_addr, uint64_t fmt_size,
			       uint64_t a1, uint64_t a2, uint64_t a3)
{
	const char *fmt = (const char *)(uintptr_t)fmt_addr;
	uint64_t args[3] = { a1, a2, a3 };
	char out[512];
	size_t o = 0, nargs = 0;

	if (fmt_size == 0 || fmt[fmt_size - 1] != '\0') {
		gpuext_exec__fail(ex, -EINVAL, "bpf_trace_printk: format is not NUL-terminated");
		return (uint64_t)-EINVAL;
	}
	for (size_t i = 0; fmt[i] && o < sizeof(out) - 1; i++) {
		char spec[8] = "%", conv;
		int longs = 0, n;
		uint64_t v;

		if (fmt[i] != '%') {
			out[o++] = fmt[i];
			continue;
		}
		if (fmt[i + 1] == '%') {
			out[o++] = '%';
			i++;
			continue;
		}
		while (fmt[i + 1] == 'l' && longs < 2) {
			longs++;
			i++;
		}
		conv = fmt[++i];
		if (!strchr("diuxXcps", conv) || !conv) {
			gpuext_exec__fail(ex, -EINVAL, "bpf_trace_printk: unsupported conversion '%%%c'",
					  conv ? conv : '?');
			return (uint64_t)-EINVAL;
		}
		if (nargs == 3) {
			gpuext_exec__fail(ex, -EINVAL, "bpf_trace_printk: more than 3 arguments");
			return (uint64_t)-EINVAL;
		}
		v = args[nargs++];
		switch (conv) {
		case 'd': case 'i':
			n = snprintf(out + o, sizeof(out) - o, "%lld",
				     longs ? (long long)v : (long long)(int32_t)v);
			break;
		case 'u': case 'x': case 'X':
			strcpy(spec + 1, conv == 'u' ? "llu" : conv == 'x' ? "llx" : "llX");
			n = snprintf(out + o, sizeof(out) - o, spec,
				     (unsigned long long)(longs ? v : (uint32_t)v));
			break;
		case 'c':
			n = snprintf(out + o, sizeof(out) - o, "%c", (char)v);
			break;
		case 'p':
			n = snprintf(out + o, sizeof(out) - o, "0x%llx", (unsigned long long)v);
			break;
		default: { /* %s: read a bounded, checked string */
			size_t len = 0;

			while (len < 128 && gpuext_exec__check_mem(ex, v + len, 1, false) == 0 &&
			       ((const char *)(uintptr_t)v)[len])
				len++;
			if (gpuext_exec__check_mem(ex, v, len ? len : 1, false)) {
				n = snprintf(out + o, sizeof(out) - o, "(bad string 0x%llx)",
					     (unsigned long long)v);
			} else {
				n = snprintf(out + o, sizeof(out) - o, "%.*s", (int)len,
					     (const char *)(uintptr_t)v);
			}
		}
		}
		if (n < 0)
			break;
		o += (size_t)n < sizeof(out) - o ? (size_t)n : sizeof(out) - o - 1;
	}
	out[o] = '\0';
	gpuext_log(gpuext_exec__runtime(ex), GPUEXT_LOG_INFO, "trace_printk: %s", out);
	return o;
}

static uint64_t h_ringbuf_output(struct gpuext_exec *ex, uint64_t rb, uint64_t data,
				 uint64_t size, uint64_t flags, uint64_t a5)
{
	(void)ex; (void)a5;
	return (uint64_t)(int64_t)gpuext_ringbuf_output(arg_map(rb), (const void *)(uintptr_t)data,
							size, flags);
}

static uint64_t h_ringbuf_reserve(struct gpuext_exec *ex, uint64_t rb, uint64_t size,
				  uint64_t flags, uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a4; (void)a5;
	return (uint64_t)(uintptr_t)gpuext_ringbuf_reserve(arg_map(rb), size, flags);
}

static uint64_t ringbuf_release(struct gpuext_exec *ex, uint64_t rec, uint64_t flags, bool discard)
{
	struct gpuext_map *rb = gpuext_ringbuf_of_record(gpuext_exec__runtime(ex), rec);
	int err = rb ? gpuext_ringbuf_submit(rb, (void *)(uintptr_t)rec, flags, discard) : -EINVAL;

	if (err)
		gpuext_exec__fail(ex, err, "bpf_ringbuf_%s: 0x%llx is not a reserved record",
				  discard ? "discard" : "submit", (unsigned long long)rec);
	return 0;
}

static uint64_t h_ringbuf_submit(struct gpuext_exec *ex, uint64_t rec, uint64_t flags,
				 uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a3; (void)a4; (void)a5;
	return ringbuf_release(ex, rec, flags, false);
}

static uint64_t h_ringbuf_discard(struct gpuext_exec *ex, uint64_t rec, uint64_t flags,
				  uint64_t a3, uint64_t a4, uint64_t a5)
{
	(void)a3; (void)a4; (void)a5;
	return ringbuf_release(ex, rec, flags, true);
}

static uint64_t h_ringbuf_query(struct gpuext_exec *ex, uint64_t rb, uint64_t flags, uint64_t a3,
				uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a3; (void)a4; (void)a5;
	return gpuext_ringbuf_query(arg_map(rb), flags);
}

#define A(...) { __VA_ARGS__ }
static const struct gpuext_func_proto std_helpers[] = {
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_map_lookup_elem, "bpf_map_lookup_elem", h_map_lookup_elem,
	  GPUEXT_RET_MAP_VALUE_OR_NULL, A(GPUEXT_ARG_CONST_MAP_PTR, GPUEXT_ARG_PTR_TO_MAP_KEY), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_map_update_elem, "bpf_map_update_elem", h_map_update_elem,
	  GPUEXT_RET_INTEGER,
	  A(GPUEXT_ARG_CONST_MAP_PTR, GPUEXT_ARG_PTR_TO_MAP_KEY, GPUEXT_ARG_PTR_TO_MAP_VALUE,
	    GPUEXT_ARG_SCALAR), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_map_delete_elem, "bpf_map_delete_elem", h_map_delete_elem,
	  GPUEXT_RET_INTEGER, A(GPUEXT_ARG_CONST_MAP_PTR, GPUEXT_ARG_PTR_TO_MAP_KEY), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_ktime_get_ns, "bpf_ktime_get_ns", h_ktime_get_ns,
	  GPUEXT_RET_INTEGER, A(GPUEXT_ARG_NONE), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_trace_printk, "bpf_trace_printk", h_trace_printk,
	  GPUEXT_RET_INTEGER,
	  A(GPUEXT_ARG_PTR_TO_MEM, GPUEXT_ARG_CONST_SIZE, GPUEXT_ARG_ANYTHING, GPUEXT_ARG_ANYTHING,
	    GPUEXT_ARG_ANYTHING), 0 },
	/* per lane on a GPU (seeded by the thread id): divergent for the SIMT rules */
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_get_prandom_u32, "bpf_get_prandom_u32", h_get_prandom_u32,
	  GPUEXT_RET_INTEGER, A(GPUEXT_ARG_NONE), GPUEXT_FN_DIVERGENT_RET },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_get_smp_processor_id, "bpf_get_smp_processor_id",
	  h_get_smp_processor_id, GPUEXT_RET_INTEGER, A(GPUEXT_ARG_NONE), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_ringbuf_output, "bpf_ringbuf_output", h_ringbuf_output,
	  GPUEXT_RET_INTEGER,
	  A(GPUEXT_ARG_CONST_MAP_PTR, GPUEXT_ARG_PTR_TO_MEM, GPUEXT_ARG_CONST_SIZE_OR_ZERO,
	    GPUEXT_ARG_SCALAR), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_ringbuf_reserve, "bpf_ringbuf_reserve", h_ringbuf_reserve,
	  GPUEXT_RET_RINGBUF_MEM_OR_NULL,
	  A(GPUEXT_ARG_CONST_MAP_PTR, GPUEXT_ARG_CONST_ALLOC_SIZE, GPUEXT_ARG_SCALAR), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_ringbuf_submit, "bpf_ringbuf_submit", h_ringbuf_submit,
	  GPUEXT_RET_VOID, A(GPUEXT_ARG_PTR_TO_RINGBUF_MEM, GPUEXT_ARG_SCALAR), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_ringbuf_discard, "bpf_ringbuf_discard", h_ringbuf_discard,
	  GPUEXT_RET_VOID, A(GPUEXT_ARG_PTR_TO_RINGBUF_MEM, GPUEXT_ARG_SCALAR), 0 },
	{ GPUEXT_FUNC_HELPER, BPF_FUNC_ringbuf_query, "bpf_ringbuf_query", h_ringbuf_query,
	  GPUEXT_RET_INTEGER, A(GPUEXT_ARG_CONST_MAP_PTR, GPUEXT_ARG_SCALAR), 0 },
};

/* ---- device helpers: declared for the verifier, host fallbacks for the interpreter ---- */

static uint64_t h_dev_zero(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			   uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	return 0;
}

static uint64_t h_dev_sm_id(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			    uint64_t a4, uint64_t a5)
{
	(void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	return gpuext_exec__cpu(ex);
}

static uint64_t h_dev_globaltimer(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
				  uint64_t a4, uint64_t a5)
{
	struct timespec ts;

	(void)ex; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A warp of one lane (lane 0): the vote is the lane's own predicate. */
static uint64_t h_dev_ballot(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			     uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a2; (void)a3; (void)a4; (void)a5;
	return a1 != 0;
}

static uint64_t h_dev_first(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			    uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a2; (void)a3; (void)a4; (void)a5;
	return a1;
}

static uint64_t h_dev_shfl(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			   uint64_t a4, uint64_t a5)
{
	(void)ex; (void)a3; (void)a4; (void)a5;
	return a2 == 0 ? a1 : 0;
}

/* Host threads may run probes at once: a CAS loop. */
static uint64_t h_dev_atomic_max(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
				 uint64_t a4, uint64_t a5)
{
	uint64_t *p = (uint64_t *)(uintptr_t)a1, old;

	(void)ex; (void)a4; (void)a5;
	if (a2 != 8 || (a1 & 7))
		return (uint64_t)-EINVAL;
	old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (old < a3 &&
	       !__atomic_compare_exchange_n(p, &old, a3, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return 0;
}

#define DEV_HELPER(id_, name_, fn_, flags_)                                               \
	{ GPUEXT_FUNC_HELPER, id_, name_, fn_, GPUEXT_RET_INTEGER, { GPUEXT_ARG_NONE },   \
	  GPUEXT_FN_DEVICE_ONLY | (flags_) }

static const struct gpuext_func_proto dev_helpers[] = {
	DEV_HELPER(GPUEXT_FUNC_get_globaltimer, "gpuext_get_globaltimer", h_dev_globaltimer, 0),
	DEV_HELPER(GPUEXT_FUNC_get_sm_id, "gpuext_get_sm_id", h_dev_sm_id, 0),
	DEV_HELPER(GPUEXT_FUNC_get_warp_id, "gpuext_get_warp_id", h_dev_zero, 0),
	/* per lane: the verifier treats their results as divergent */
	DEV_HELPER(GPUEXT_FUNC_get_lane_id, "gpuext_get_lane_id", h_dev_zero, GPUEXT_FN_DIVERGENT_RET),
	DEV_HELPER(GPUEXT_FUNC_get_thread_id, "gpuext_get_thread_id", h_dev_zero,
		   GPUEXT_FN_DIVERGENT_RET),
	DEV_HELPER(GPUEXT_FUNC_get_block_id, "gpuext_get_block_id", h_dev_zero, 0),
	/* warp collectives: under warp-uniform control only (the verifier checks) */
	{ GPUEXT_FUNC_HELPER, GPUEXT_FUNC_warp_ballot, "gpuext_warp_ballot", h_dev_ballot,
	  GPUEXT_RET_INTEGER, { GPUEXT_ARG_SCALAR },
	  GPUEXT_FN_DEVICE_ONLY | GPUEXT_FN_WARP_COLLECTIVE | GPUEXT_FN_UNIFORM_RET },
	{ GPUEXT_FUNC_HELPER, GPUEXT_FUNC_warp_first, "gpuext_warp_first", h_dev_first,
	  GPUEXT_RET_INTEGER, { GPUEXT_ARG_SCALAR },
	  GPUEXT_FN_DEVICE_ONLY | GPUEXT_FN_WARP_COLLECTIVE | GPUEXT_FN_UNIFORM_RET },
	/* the result is uniform only when the source lane is: left to the argument rule */
	{ GPUEXT_FUNC_HELPER, GPUEXT_FUNC_warp_shfl, "gpuext_warp_shfl", h_dev_shfl,
	  GPUEXT_RET_INTEGER, { GPUEXT_ARG_SCALAR, GPUEXT_ARG_SCALAR },
	  GPUEXT_FN_DEVICE_ONLY | GPUEXT_FN_WARP_COLLECTIVE },
	/* reads and writes the 8 bytes at p: the verifier wants them initialised and writable */
	{ GPUEXT_FUNC_HELPER, GPUEXT_FUNC_atomic_max, "gpuext_atomic_max", h_dev_atomic_max,
	  GPUEXT_RET_INTEGER, { GPUEXT_ARG_PTR_TO_UNINIT_MEM, GPUEXT_ARG_CONST_SIZE, GPUEXT_ARG_SCALAR },
	  GPUEXT_FN_DEVICE_ONLY | GPUEXT_FN_MEM_RMW },
};

int gpuext_register_std_helpers(struct gpuext_runtime *rt)
{
	for (size_t i = 0; i < sizeof(dev_helpers) / sizeof(dev_helpers[0]); i++) {
		int err = gpuext_runtime__register_func(rt, &dev_helpers[i]);

		if (err < 0)
			return err;
	}
	for (size_t i = 0; i < sizeof(std_helpers) / sizeof(std_helpers[0]); i++) {
		int err = gpuext_runtime__register_func(rt, &std_helpers[i]);

		if (err < 0)
			return err;
	}
	return 0;
}
