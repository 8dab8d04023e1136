/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext trace: run a CUDA application with verified eBPF probes spliced
 * into its kernels, and show what they saw while it runs.
 *
 * This process opens and verifies the probe object, emits its probes as PTX,
 * creates the object's maps in shared memory (published as
 * /dev/shm/gpuext.<pid>.<id>), writes the pack into a trace directory and
 * runs the application with LD_PRELOAD=libgpuext-nvprobe.so and
 * GPUEXT_TRACE_DIR (hal/nvidia/nvprobe.h). The preload library splices the
 * probes into every module, places the maps on the GPU and mirrors them into
 * the shared-memory maps, which this process reads through its own map
 * handles: arrays by lookup, ring buffers through consumers. The GPU-free
 * parts live in trace_lib.c.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpuext/verifier.h"
#include "maps_impl.h"
#include "sim/trace_io.h"
#include "trace_lib.h"

#ifndef GPUEXT_BUILD_PROBE_DIR
#define GPUEXT_BUILD_PROBE_DIR ""
#endif
#ifndef GPUEXT_INSTALL_PROBE_DIR
#define GPUEXT_INSTALL_PROBE_DIR "/usr/local/share/gpuext/probes"
#endif
#define NVPROBE_LIB "libgpuext-nvprobe.so"

enum tool_kind { T_GENERIC, T_RETSNOOP, T_THREADHIST, T_LAUNCHLATE, T_MEMTRACE, T_SMLOAD, T_KDUR };

static const struct tool_info {
	const char *name;
	enum tool_kind kind;
	bool per_thread;	/* the default mode */
	const char *summary;
} tools[] = {
	{ "kernelretsnoop", T_RETSNOOP, false, "per-block exit timestamps and SM, one line per block" },
	{ "threadhist", T_THREADHIST, false, "exits per global warp (per thread with --per-thread); totals" },
	{ "launchlate", T_LAUNCHLATE, false, "host launch -> first block start latency, histogram" },
	{ "memtrace", T_MEMTRACE, true, "every global load/store address; --out writes a simulator trace" },
	{ "smload", T_SMLOAD, false, "blocks per SM and the imbalance" },
	{ "kerneldur", T_KDUR, false, "kernel durations measured on the device, log2 histogram" },
};

/* Keeps memtrace's memory bounded: past this many accesses the rest are counted, not kept. */
#define MEMTRACE_MAX_KEEP (16ull << 20)
/* Snoop lines printed per live refresh before "... and N more". */
#define SNOOP_LINES 20

struct vec {
	void *v;
	size_t n, cap, elem;
};

static int vec_push(struct vec *a, const void *e)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 1024;
		void *p = realloc(a->v, nc * a->elem);

		if (!p)
			return -ENOMEM;
		a->v = p;
		a->cap = nc;
	}
	memcpy((char *)a->v + a->n * a->elem, e, a->elem);
	a->n++;
	return 0;
}

/* One trace session: owned by cmd_trace() from start to cleanup. */
struct tracer {
	const struct tool_info *tool;	/* NULL: a .bpf.o of the user's */
	enum tool_kind kind;
	const char *dir;
	struct gpuext_object *obj;
	struct gpuext_ringbuf_consumer *rb[GX_PACK_MAX_MAPS];
	const char *rb_name[GX_PACK_MAX_MAPS];
	uint64_t rb_records[GX_PACK_MAX_MAPS];
	void *rb_user[GX_PACK_MAX_MAPS][2];	/* each consumer's {tracer, index} */
	int nrb;
	struct vec recs;	/* tool records (gx_rec_exit/start/mem), as they came */
	struct trace_mem_stats mem;	/* memtrace: the accesses in recs */
	uint64_t dropped_local;	/* accesses over MEMTRACE_MAX_KEEP, records of a wrong size */
	uint64_t malformed;	/* memtrace records with no first lane (trace_mem_expand) */
	size_t shown;		/* snoop: records already printed */
	uint64_t t0_ns;		/* first timestamp seen (snoop lines are relative to it) */
	struct gpuext_map *slot_ctr, *slot_recs;	/* launchlate: its slot ring (probes.h) */
	struct trace_slots slots;
	unsigned drains;
	bool per_thread;
	struct trace_kernel *kernels;
	size_t nkernels;
	/* threadhist: its 32-bit counters widened as they are polled (threadhist_poll) */
	uint64_t *th_sum;
	uint32_t *th_last;
	unsigned th_polls;
};

static void trace_usage(FILE *f)
{
	fprintf(f,
		"usage: gpuext trace TOOL [OPTIONS] -- ./app [ARGS...]\n"
		"       gpuext trace --list\n"
		"       gpuext trace TOOL --pack-only --dir DIR [--kernel GLOB] [--per-thread]\n"
		"\n"
		"Runs a CUDA application with eBPF probes spliced into its kernels (no change to\n"
		"the application, no recompilation) and shows what the probes see, live.\n"
		"\n"
		"TOOL is a probe tool by name (gpuext trace --list) or a BPF object of your own\n"
		"with programs in SEC(\"probe/entry\"), SEC(\"probe/exit\"), SEC(\"probe/load\"),\n"
		"SEC(\"probe/store\") (struct gpuext_probe_ctx, include/gpuext/probe.h). Every\n"
		"program is verified as a device_probe first; a rejection stops here.\n"
		"\n"
		"How: the probes are compiled to PTX; the app runs with LD_PRELOAD=%s,\n"
		"which sees every module the app loads through the CUDA Driver API (also static\n"
		"cudart, NVRTC, PyTorch, Triton), splices the probes into its PTX (cached on\n"
		"disk by content hash) and has the driver JIT it. Maps live on the GPU and\n"
		"are mirrored into shared memory, where this process reads them.\n"
		"\n"
		"options:\n"
		"  --kernel GLOB    instrument only kernels whose (mangled) name matches GLOB\n"
		"  --per-thread     run the probes in every thread (default: once per warp, by its\n"
		"                   lowest active lane, at exits by lane 0; memtrace defaults to\n"
		"                   per-thread)\n"
		"  --per-warp       force warp mode\n"
		"  --out FILE       write what was recorded: memtrace -> a simulator trace (binary,\n"
		"                   or text when FILE ends in .txt: replay with gpuext sim --trace\n"
		"                   FILE); other tools -> their records/table as text\n"
		"  --interval MS    live refresh period (default 1000; 0 = final report only)\n"
		"  --keep           keep the trace directory (pack, kernels.txt, launches.bin)\n"
		"  --dir DIR        use DIR as the trace directory (kept afterwards)\n"
		"  --sm sm_XX       target of the emitted probe PTX (default sm_80; the driver JITs\n"
		"                   it for the GPU in use)\n"
		"  --preload PATH   the preload library (default: $GPUEXT_NVPROBE_LIB, else next to\n"
		"                   the gpuext binary)\n"
		"  --pack-only      verify, emit and write the pack into --dir; run nothing\n"
		"  --no-flat-twins  no flat twins: by default each instrumented kernel whose probes\n"
		"                   read a z component (block, thread or grid) also gets a copy\n"
		"                   where those reads are the constants a launch flat in z gives\n"
		"                   (0, 1), and launches flat in z run the copy: 0.1 to 1.1 points\n"
		"                   less overhead on an H200, but twice the JIT time on a cold\n"
		"                   cache (hal/nvidia/ptx_twin.c)\n"
		"\n"
		"Ring buffers: a full ring drops records on the GPU; drops are counted and\n"
		"reported at exit. The preload library copies rings and maps back every 100 ms\n"
		"(GPUEXT_NV_MIRROR_MS), and after the app's synchronize calls within 1%% of the\n"
		"app thread's time (GPUEXT_NV_SYNC_SHARE=PCT, 0 = never). For more records at a\n"
		"higher cost: a larger share, a shorter period, or a ring with more max_entries.\n"
		"launchlate writes a slot ring instead (tools/probes/probes.h): more than 65536\n"
		"launches on one GPU between two copies overwrite the oldest starts; those are\n"
		"counted too, and so are starts never read whole (two contexts or processes on one\n"
		"GPU write one ring; several GPUs are fine).\n"
		"\n"
		"GPU ids (records, per-GPU state, \"GPU n\") are nvidia-smi's numbers, the same in\n"
		"every process whatever CUDA_VISIBLE_DEVICES says: a GPU's rank by PCI address in\n"
		"/proc/driver/nvidia/gpus, else /sys/bus/pci/drivers/nvidia (GPUEXT_NV_GPU_LIST=\n"
		"DIR:DIR names others). Where none lists it, the app's CUDA device numbers, said.\n"
		"\n"
		"On sm_80 and later the probes' map atomics (counters) ask the L2 to keep their\n"
		"lines, with a policy each GPU makes once (hal/nvidia/README.md); without it a\n"
		"counter the app's data streams past goes to DRAM and back on every update.\n"
		"GPUEXT_NV_L2_KEEP=0 turns it off.\n"
		"\n"
		"The exit status is the application's (128+N if signal N ended it); 1 or 2 when\n"
		"gpuext trace itself could not start it.\n"
		"\n"
		"examples:\n"
		"  gpuext trace --list\n"
		"  gpuext trace threadhist -- ./vector_add 1048576\n"
		"  gpuext trace kernelretsnoop --kernel '*gemm*' -- python3 train.py\n"
		"  gpuext trace memtrace --out run.gxtr -- ./app && gpuext sim --trace run.gxtr\n"
		"  gpuext trace launchlate --interval 500 -- ./server\n"
		"  gpuext trace ./my_probe.bpf.o -- ./app\n",
		NVPROBE_LIB);
}

/* ---- locating files ----------------------------------------------------------- */

static void exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0) {
		snprintf(buf, len, ".");
		return;
	}
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

/* Directories searched for tools by name, in order. @v gets up to 5 entries. */
static size_t probe_dirs(char v[][PATH_MAX])
{
	char ed[PATH_MAX];
	size_t n = 0;
	const char *env = getenv("GPUEXT_PROBE_DIR");

	char c[5][PATH_MAX];
	size_t m = 0;

	exe_dir(ed, sizeof(ed));
	if (env && *env)
		snprintf(c[m++], PATH_MAX, "%s", env);
	/* A bundle keeps the tools next to the binary; a build tree under tools/probes. */
	snprintf(c[m++], PATH_MAX, "%.*s/probes", PATH_MAX - 10, ed);
	snprintf(c[m++], PATH_MAX, "%.*s/tools/probes", PATH_MAX - 16, ed);
	if (*GPUEXT_BUILD_PROBE_DIR)
		snprintf(c[m++], PATH_MAX, "%s", GPUEXT_BUILD_PROBE_DIR);
	snprintf(c[m++], PATH_MAX, "%s", GPUEXT_INSTALL_PROBE_DIR);
	for (size_t i = 0; i < m; i++) {
		bool dup = false;

		for (size_t j = 0; j < n; j++)
			dup |= !strcmp(v[j], c[i]);
		if (!dup)
			memcpy(v[n++], c[i], PATH_MAX);
	}
	return n;
}

static const struct tool_info *tool_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (!strcmp(tools[i].name, name))
			return &tools[i];
	return NULL;
}

/* Resolves TOOL to an object path; prints why not. */
static int find_tool(const char *tool, char *path, size_t len)
{
	char dirs[5][PATH_MAX];
	size_t nd;
	size_t tl = strlen(tool);

	if (strchr(tool, '/') || (tl > 2 && !strcmp(tool + tl - 2, ".o"))) {
		if (access(tool, R_OK)) {
			fprintf(stderr, "gpuext trace: cannot read '%s': %s\n", tool, strerror(errno));
			return -ENOENT;
		}
		snprintf(path, len, "%s", tool);
		return 0;
	}
	nd = probe_dirs(dirs);
	for (size_t i = 0; i < nd; i++) {
		snprintf(path, len, "%s/%s.bpf.o", dirs[i], tool);
		if (!access(path, R_OK))
			return 0;
	}
	fprintf(stderr, "gpuext trace: no tool named '%s'; looked in:", tool);
	for (size_t i = 0; i < nd; i++)
		fprintf(stderr, " %s", dirs[i]);
	fprintf(stderr, "\n  see 'gpuext trace --list', or give a path to a .bpf.o\n");
	return -ENOENT;
}

static int find_preload(const char *opt, char *path, size_t len)
{
	const char *env = getenv("GPUEXT_NVPROBE_LIB");
	char ed[PATH_MAX], cand[4][PATH_MAX];
	size_t n = 0;

	if (opt || (env && *env)) {
		const char *p = opt ? opt : env;

		if (!realpath(p, path) || access(path, R_OK)) {
			fprintf(stderr, "gpuext trace: the preload library %s (%s) cannot be read: %s\n",
				p, opt ? "--preload" : "$GPUEXT_NVPROBE_LIB", strerror(errno));
			return -ENOENT;
		}
		(void)len;
		return 0;
	}
	exe_dir(ed, sizeof(ed));
	snprintf(cand[n++], PATH_MAX, "%.*s/" NVPROBE_LIB, PATH_MAX - 32, ed);
	snprintf(cand[n++], PATH_MAX, "%.*s/hal/nvidia/" NVPROBE_LIB, PATH_MAX - 48, ed);
	snprintf(cand[n++], PATH_MAX, "%.*s/../lib/" NVPROBE_LIB, PATH_MAX - 40, ed);
	snprintf(cand[n++], PATH_MAX, "%.*s/lib/" NVPROBE_LIB, PATH_MAX - 40, ed);
	for (size_t i = 0; i < n; i++)
		if (realpath(cand[i], path) && !access(path, R_OK))
			return 0;
	fprintf(stderr, "gpuext trace: the preload library %s is missing; looked in:\n", NVPROBE_LIB);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "  %s\n", cand[i]);
	fprintf(stderr, "  build it (target gpuext-nvprobe), or name it with --preload PATH or $GPUEXT_NVPROBE_LIB\n");
	return -ENOENT;
}

static int check_libcuda(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr,
			"gpuext trace: no NVIDIA driver here: libcuda.so.1 cannot be loaded (%s).\n"
			"  gpuext trace needs an NVIDIA GPU and its driver; 'gpuext backends' says what this machine has\n",
			dlerror());
		return -ENODEV;
	}
	dlclose(h);
	return 0;
}

static int list_tools(void)
{
	char dirs[5][PATH_MAX], path[PATH_MAX + 64];
	size_t nd = probe_dirs(dirs);

	printf("%-16s %-9s %s\n", "TOOL", "MODE", "WHAT IT SHOWS");
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		const char *where = NULL;

		for (size_t d = 0; d < nd && !where; d++) {
			snprintf(path, sizeof(path), "%s/%s.bpf.o", dirs[d], tools[i].name);
			if (!access(path, R_OK))
				where = dirs[d];
		}
		printf("%-16s %-9s %s%s\n", tools[i].name, tools[i].per_thread ? "thread" : "warp",
		       tools[i].summary, where ? "" : "  [object not found]");
	}
	printf("\nObjects are looked up in:");
	for (size_t d = 0; d < nd; d++)
		printf(" %s", dirs[d]);
	printf("\nSources: tools/probes/*.bpf.c (each opens with a comment saying what it shows and how).\n");
	return 0;
}

/* ---- verifying --------------------------------------------------------------- */

static int verify_probes(struct gpuext_object *obj)
{
	size_t log_size = 1 << 20, n = gpuext_object__prog_cnt(obj);
	char *log = malloc(log_size);
	int bad = 0;

	if (!log)
		return -ENOMEM;
	if (!n) {
		fprintf(stderr, "gpuext trace: '%s' has no programs\n", gpuext_object__name(obj));
		free(log);
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++) {
		struct gpuext_prog *p = gpuext_object__prog(obj, i);
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_DEVICE_PROBE, .log_level = 1,
			    .log_buf = log, .log_size = log_size);
		struct gpuext_verify_result res = { .sz = sizeof(res) };
		int err;

		if (trace_probe_event(gpuext_prog__section(p)) < 0) {
			fprintf(stderr,
				"gpuext trace: program '%s' is in section '%s': a probe object holds only SEC(\"probe/entry\"), \"probe/exit\", \"probe/load\" or \"probe/store\" programs\n",
				gpuext_prog__name(p), gpuext_prog__section(p));
			bad = 1;
			continue;
		}
		log[0] = '\0';
		err = gpuext_prog__verify(p, &vo, &res);
		if (err && err != -EACCES) {
			fprintf(stderr, "gpuext trace: verifying '%s' failed: %s\n", gpuext_prog__name(p),
				strerror(-err));
			bad = 1;
		} else if (!res.accepted) {
			fprintf(stderr, "%s", log);
			fprintf(stderr,
				"gpuext trace: the verifier rejected '%s' (%s) at insn %u: %s - %s\n",
				gpuext_prog__name(p), gpuext_prog__section(p), res.insn_idx,
				gpuext_rule_name(res.rule), gpuext_rule_desc(res.rule));
			bad = 1;
		} else if (cli_verbosity) {
			fprintf(stderr, "gpuext: %s (%s): verified, at most %" PRIu64 " insns per invocation\n",
				gpuext_prog__name(p), gpuext_prog__section(p), res.max_work);
		}
	}
	free(log);
	return bad ? -EACCES : 0;
}

/* ---- collecting ----------------------------------------------------------------- */

static int on_record(void *user, const void *data, size_t size)
{
	struct tracer *t = ((void **)user)[0];
	int idx = (int)(intptr_t)((void **)user)[1];

	t->rb_records[idx]++;
	if (t->kind == T_GENERIC)
		return 0;
	if (size < t->recs.elem) {
		t->dropped_local++;
		return 0;
	}
	if (t->kind == T_MEMTRACE) {
		/*
		 * Kept as the warp's one record and expanded into single accesses
		 * only for --out: copying 32 lanes here made this reader the slow
		 * end, and the shm ring filled up behind it.
		 */
		struct gx_rec_mem w;
		size_t n;

		memcpy(&w, data, sizeof(w));
		n = trace_mem_account(&w, NULL);
		if (!n)
			t->malformed++;
		else if (t->mem.accesses + n > MEMTRACE_MAX_KEEP || vec_push(&t->recs, &w))
			t->dropped_local += n;
		else
			trace_mem_account(&w, &t->mem);
		return 0;
	}
	if (vec_push(&t->recs, data))
		t->dropped_local++;
	return 0;
}

static int setup_consumers(struct tracer *t)
{
	for (size_t i = 0; i < gpuext_object__map_cnt(t->obj); i++) {
		struct gpuext_map *m = gpuext_object__map(t->obj, i);
		int err;

		if (gpuext_map__type(m) != BPF_MAP_TYPE_RINGBUF)
			continue;
		t->rb_user[t->nrb][0] = t;
		t->rb_user[t->nrb][1] = (void *)(intptr_t)t->nrb;
		err = gpuext_ringbuf_consumer__new(m, on_record, t->rb_user[t->nrb], &t->rb[t->nrb]);
		if (err) {
			fprintf(stderr, "gpuext trace: cannot read ring buffer '%s': %s\n",
				gpuext_map__name(m), strerror(-err));
			return err;
		}
		t->rb_name[t->nrb] = gpuext_map__name(m);
		t->nrb++;
	}
	return 0;
}

/* launchlate's slot ring: its two maps, checked against probes.h. */
static int setup_slots(struct tracer *t)
{
	t->slot_ctr = gpuext_object__find_map(t->obj, "start_seq");
	t->slot_recs = gpuext_object__find_map(t->obj, "starts");
	if (!t->slot_ctr || !t->slot_recs ||
	    gpuext_map__type(t->slot_ctr) != BPF_MAP_TYPE_ARRAY ||
	    gpuext_map__type(t->slot_recs) != BPF_MAP_TYPE_ARRAY ||
	    gpuext_map__value_size(t->slot_ctr) != 8 ||
	    gpuext_map__max_entries(t->slot_ctr) != GX_LL_GPUS ||
	    gpuext_map__value_size(t->slot_recs) != sizeof(struct gx_slot_start) ||
	    gpuext_map__max_entries(t->slot_recs) != GX_LL_GPUS * GX_LL_SLOTS) {
		fprintf(stderr,
			"gpuext trace: %s has no slot ring as tools/probes/probes.h defines it (array maps "
			"'start_seq' of %u u64 and 'starts' of %u x %zu bytes): a launchlate.bpf.o from "
			"another build?\n",
			gpuext_object__name(t->obj), GX_LL_GPUS, GX_LL_GPUS * GX_LL_SLOTS,
			sizeof(struct gx_slot_start));
		return -EINVAL;
	}
	if (trace_slots_init(&t->slots, GX_LL_GPUS, GX_LL_SLOTS))
		return -ENOMEM;
	/* Polls come every 20 ms: wait for an unreadable record ten of the preload's copies, >= 1 s. */
	if (getenv("GPUEXT_NV_MIRROR_MS") && atoi(getenv("GPUEXT_NV_MIRROR_MS")) > 100)
		t->slots.patience = (uint32_t)atoi(getenv("GPUEXT_NV_MIRROR_MS")) / 2;
	return 0;
}

static int slot_get(void *user, uint32_t idx, struct gx_slot_start *rec)
{
	return gpuext_map__lookup(((struct tracer *)user)->slot_recs, &idx, rec);
}

static void slot_take(void *user, uint32_t ring, const struct gx_slot_start *rec)
{
	struct tracer *t = user;
	struct gx_rec_start s = { .kernel_id = rec->kernel_id, .timer_ns = rec->timer_ns,
				  .sm_id = rec->sm_id, .gpu_id = ring };

	if (vec_push(&t->recs, &s))
		t->dropped_local++;
}

static void poll_slots(struct tracer *t, bool final)
{
	uint64_t ctr[GX_LL_GPUS];

	for (uint32_t k = 0; k < GX_LL_GPUS; k++)
		if (gpuext_map__lookup(t->slot_ctr, &k, &ctr[k]))
			ctr[k] = 0;
	trace_slots_poll(&t->slots, ctr, slot_get, slot_take, t, final);
}

/*
 * Takes what came: ring records every call (5 ms apart), the slot ring
 * every fourth (the preload copies it every 100 ms), all of it when @final.
 */
static int threadhist_poll(struct tracer *t);

static void drain(struct tracer *t, bool final)
{
	for (int i = 0; i < t->nrb; i++)
		while (gpuext_ringbuf_consumer__consume(t->rb[i]) > 0)
			;
	if (t->slot_recs && (final || t->drains++ % 4 == 0))
		poll_slots(t, final);
	if (t->kind == T_THREADHIST && t->th_polls++ % 40 == 0)
		threadhist_poll(t);
}

static struct gpuext_map *map_named(struct tracer *t, const char *name)
{
	return gpuext_object__find_map(t->obj, name);
}

/* Reads array map @name into @v (max_entries u64 values). 0 or -errno. */
static int read_u64_array(struct tracer *t, const char *name, uint64_t *v, uint32_t n)
{
	struct gpuext_map *m = map_named(t, name);

	if (!m || gpuext_map__value_size(m) != 8 || gpuext_map__max_entries(m) < n)
		return -ENOENT;
	for (uint32_t k = 0; k < n; k++)
		if (gpuext_map__lookup(m, &k, &v[k]))
			v[k] = 0;
	return 0;
}

static const char *kname(struct tracer *t, uint64_t id, char *buf, size_t len)
{
	return trace_kernel_name(t->kernels, t->nkernels, id, buf, len);
}

static void reload_kernels(struct tracer *t)
{
	struct trace_kernel *k;
	size_t n;

	if (trace_kernels_load(t->dir, &k, &n))
		return;
	trace_kernels_free(t->kernels, t->nkernels);
	t->kernels = k;
	t->nkernels = n;
}

/* DIR/launches.bin, whole records only (the writer may be mid-append). */
static struct gx_launch_rec *load_launches(const char *dir, size_t *n)
{
	char path[PATH_MAX];
	struct gx_launch_rec *v;
	struct stat st;
	FILE *f;

	*n = 0;
	snprintf(path, sizeof(path), "%s/launches.bin", dir);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) || st.st_size < (off_t)sizeof(*v)) {
		fclose(f);
		return NULL;
	}
	v = malloc((size_t)st.st_size);
	if (v)
		*n = fread(v, sizeof(*v), (size_t)st.st_size / sizeof(*v), f);
	fclose(f);
	return v;
}

/* ---- per-tool printers ---------------------------------------------------------- */

static void show_retsnoop(struct tracer *t, FILE *f, bool final)
{
	const struct gx_rec_exit *r = t->recs.v;
	size_t n = t->recs.n, shown = 0;
	char nb[64], tb[32];

	/* Records arrive out of order: times are relative to the earliest of the first batch. */
	if (!t->t0_ns && n) {
		t->t0_ns = r[0].timer_ns;
		for (size_t i = 1; i < n; i++)
			if (r[i].timer_ns < t->t0_ns)
				t->t0_ns = r[i].timer_ns;
	}
	if (!final) {
		if (t->shown == 0 && n)
			fprintf(f, "%-12s %-32s %-16s %4s\n", "TIME(+us)", "KERNEL", "BLOCK", "SM");
		for (; t->shown < n; t->shown++, shown++) {
			const struct gx_rec_exit *e = &r[t->shown];
			char blk[48];

			if (shown == SNOOP_LINES) {
				fprintf(f, "... and %zu more exits\n", n - t->shown);
				t->shown = n;
				break;
			}
			snprintf(blk, sizeof(blk), "(%u,%u,%u)", e->block[0], e->block[1], e->block[2]);
			fprintf(f, "%-12.1f %-32.32s %-16s %4u\n",
				((int64_t)(e->timer_ns - t->t0_ns)) / 1e3,
				kname(t, e->kernel_id, nb, sizeof(nb)), blk, e->sm_id);
		}
		return;
	}
	/* Final: per kernel, blocks and the span of their exits. */
	fprintf(f, "kernelretsnoop: %zu block exits\n", n);
	fprintf(f, "  %-40s %10s %14s %14s\n", "KERNEL", "EXITS", "FIRST(+us)", "SPAN");
	bool *done = calloc(n ? n : 1, 1);
	for (size_t i = 0; done && i < n; i++) {
		uint64_t lo = r[i].timer_ns, hi = r[i].timer_ns, c = 0;

		if (done[i])
			continue;
		for (size_t j = i; j < n; j++) {
			if (r[j].kernel_id != r[i].kernel_id)
				continue;
			done[j] = true;
			c++;
			lo = r[j].timer_ns < lo ? r[j].timer_ns : lo;
			hi = r[j].timer_ns > hi ? r[j].timer_ns : hi;
		}
		fprintf(f, "  %-40.40s %10" PRIu64 " %14.1f %14s\n", kname(t, r[i].kernel_id, nb, sizeof(nb)),
			c, ((int64_t)(lo - t->t0_ns)) / 1e3, trace_fmt_ns(hi - lo, tb, sizeof(tb)));
	}
	free(done);
}

/*
 * threadhist's counters are 32 bits on the GPU and in the shared-memory map
 * (tools/probes/threadhist.bpf.c): each poll adds every slot's change since
 * the last one, modulo 2^32, into 64-bit sums here. Polled every drain
 * round's 40th (~200 ms) and before each read, so a slot would have to take
 * 2^32 exits between two polls to be miscounted. 64-bit counters (an
 * older threadhist.bpf.o) are read as they are. -ENOENT if the map is
 * missing or of another shape.
 */
static int threadhist_poll(struct tracer *t)
{
	struct gpuext_map *m = map_named(t, "warp_exits");

	if (!m || (gpuext_map__value_size(m) != 4 && gpuext_map__value_size(m) != 8) ||
	    gpuext_map__max_entries(m) < GX_THREADHIST_SLOTS)
		return -ENOENT;
	if (!t->th_sum) {
		t->th_sum = calloc(GX_THREADHIST_SLOTS, sizeof(*t->th_sum));
		t->th_last = calloc(GX_THREADHIST_SLOTS, sizeof(*t->th_last));
		if (!t->th_sum || !t->th_last) {
			free(t->th_sum);
			free(t->th_last);
			t->th_sum = NULL;
			t->th_last = NULL;
			return -ENOMEM;
		}
	}
	for (uint32_t k = 0; k < GX_THREADHIST_SLOTS; k++) {
		uint64_t w;
		uint32_t v;

		/* a threadhist.bpf.o of before, with 64-bit counters: read as they are */
		if (gpuext_map__value_size(m) == 8) {
			if (!gpuext_map__lookup(m, &k, &w))
				t->th_sum[k] = w;
		} else if (!gpuext_map__lookup(m, &k, &v)) {
			trace_widen_u32(&t->th_sum[k], &t->th_last[k], &v, 1);
		}
	}
	return 0;
}

/* threadhist's slots, their sum and the highest slot hit; NULL if the map is missing. */
static uint64_t *threadhist_read(struct tracer *t, uint64_t *sum, uint64_t *top)
{
	uint64_t *v = calloc(GX_THREADHIST_SLOTS, sizeof(*v));

	*sum = *top = 0;
	if (!v || threadhist_poll(t)) {
		free(v);
		return NULL;
	}
	memcpy(v, t->th_sum, GX_THREADHIST_SLOTS * sizeof(*v));
	for (uint32_t i = 0; i < GX_THREADHIST_SLOTS; i++) {
		*sum += v[i];
		if (v[i])
			*top = i;
	}
	return v;
}

static void show_threadhist(struct tracer *t, FILE *f, bool final)
{
	uint64_t warps = 0, vmin = 0, vmax = 0, sum, top;
	uint64_t *v = threadhist_read(t, &sum, &top);
	struct trace_hist h = { 0 };

	if (!v) {
		fprintf(f, "threadhist: map warp_exits not found\n");
		return;
	}
	for (uint32_t i = 0; i < GX_THREADHIST_SLOTS; i++) {
		if (!v[i])
			continue;
		if (!warps || v[i] < vmin)
			vmin = v[i];
		if (v[i] > vmax)
			vmax = v[i];
		warps++;
		trace_hist_add(&h, v[i]);
	}
	fprintf(f, "threadhist: %" PRIu64 " exits counted (%s), %" PRIu64 " warp slots hit (highest %" PRIu64 "), per slot min %" PRIu64 " max %" PRIu64 "\n",
		sum, t->per_thread ? "threads" : "warps", warps, top, vmin, vmax);
	if (final) {
		fprintf(f, "  exits per warp slot (log2 buckets):\n");
		trace_hist_print(f, &h, false);
	}
	free(v);
}

static void show_launchlate(struct tracer *t, FILE *f, bool final, FILE *out)
{
	size_t nl = 0, nclk = 0, uncorr = 0;
	struct gx_launch_rec *l = load_launches(t->dir, &nl);
	int64_t *lat = calloc(nl ? nl : 1, sizeof(*lat));
	struct trace_clock *clk = NULL;
	struct trace_hist h = { 0 };
	long pairs;
	uint64_t neg = 0;
	char a[32], b[32], c[32], nb[64];

	if (!lat) {
		free(l);
		return;
	}
	/* The clocks differ by tens of us: launches move onto their GPU's clock first. */
	if (trace_clocks_load(t->dir, &clk, &nclk))
		nclk = 0;
	pairs = trace_match_launches_clk(l, nl, t->recs.v, t->recs.n, clk, nclk, lat, &uncorr);
	for (size_t i = 0; i < nl; i++) {
		if (lat[i] == INT64_MIN)
			continue;
		if (lat[i] < 0)
			neg++;
		else
			trace_hist_add(&h, (uint64_t)lat[i]);
		if (out)
			fprintf(out, "%" PRIu64 ",%s,%" PRIu64 ",%" PRId64 "\n", l[i].seq,
				kname(t, l[i].kernel_id, nb, sizeof(nb)), l[i].host_ns, lat[i]);
	}
	fprintf(f, "launchlate: %zu launches, %zu first-block starts, %ld paired; latency p50 < %s, p99 < %s, max %s%s\n",
		nl, t->recs.n, pairs, trace_fmt_ns(trace_hist_quantile(&h, 0.5), a, sizeof(a)),
		trace_fmt_ns(trace_hist_quantile(&h, 0.99), b, sizeof(b)),
		trace_fmt_ns(h.max, c, sizeof(c)), neg ? " (some negative: the clocks disagree)" : "");
	if (t->slots.lost || t->slots.unreadable)
		fprintf(f, "  %" PRIu64 " first-block starts lost: %" PRIu64 " overwritten before they were read "
			"(over %u launches on one GPU between two of the preload's copies of the ring, or this reader fell behind), %" PRIu64
			" never read whole (two contexts or processes on one GPU, or GPUs 8 apart, wrote one ring, or a kernel stopped mid-write)\n",
			t->slots.lost + t->slots.unreadable, t->slots.lost, GX_LL_SLOTS, t->slots.unreadable);
	{
		/* Two processes on one GPU claim the same numbers in its ring. */
		struct trace_ring_clash rc;

		if (trace_ll_ring_clash(l, nl, &rc) && rc.gpu[0] == rc.gpu[1])
			fprintf(f, "  processes %u and %u both launched on GPU %u: they write one slot ring, "
				"so their starts overwrite each other (counted as never read whole)\n",
				rc.pid[0], rc.pid[1], rc.gpu[0]);
		else if (trace_ll_ring_clash(l, nl, &rc))
			fprintf(f, "  processes %u (GPU %u) and %u (GPU %u) write one slot ring (GPU ids "
				"%u apart share one), so their starts overwrite each other (counted as "
				"never read whole)\n", rc.pid[0], rc.gpu[0], rc.pid[1], rc.gpu[1],
				GX_LL_GPUS);
	}
	if (final && (t->slots.lost || t->slots.unreadable))
		fprintf(f, "  so the latencies above are NOT reliable: a kernel's n-th start pairs with its n-th "
			"launch, and a lost start pairs every later start of its kernel with an earlier launch\n");
	if (neg)
		fprintf(f, "  %" PRIu64 " pairs had the start before the launch: %%globaltimer and CLOCK_REALTIME differ here\n", neg);
	if (final && pairs >= 0 && t->recs.n > (size_t)pairs)
		fprintf(f, "  %zu first-block starts have no launch to pair with (launch records lost, or a CUDA "
			"graph whose kernel nodes the driver could not list)\n", t->recs.n - (size_t)pairs);
	if (final) {
		for (size_t i = 0; i < nclk; i++)
			fprintf(f, "  clock: pid %u GPU %u: %%globaltimer - CLOCK_REALTIME = %s%s +- %s (latencies corrected by it, so exact to +- that)\n",
				clk[i].pid, clk[i].gpu, clk[i].offset_ns < 0 ? "-" : "",
				trace_fmt_ns(clk[i].offset_ns < 0 ? (uint64_t)-clk[i].offset_ns :
					     (uint64_t)clk[i].offset_ns, a, sizeof(a)),
				trace_fmt_ns(clk[i].uncertainty_ns, b, sizeof(b)));
		if (uncorr)
			fprintf(f, "  %zu pairs had no clock calibration for their GPU: raw CLOCK_REALTIME vs %%globaltimer (may be off by tens of us)\n",
				uncorr);
		trace_hist_print(f, &h, true);
	}
	free(clk);
	free(lat);
	free(l);
}

static void show_memtrace(struct tracer *t, FILE *f, bool final)
{
	const struct trace_mem_stats *m = &t->mem;

	fprintf(f, "memtrace: %" PRIu64 " accesses (%" PRIu64 " loads, %" PRIu64 " stores, %" PRIu64
		" bytes) in %zu warp records", m->accesses, m->loads, m->stores, m->bytes, t->recs.n);
	if (m->accesses)
		fprintf(f, ", addresses 0x%" PRIx64 "..0x%" PRIx64, m->lo, m->hi);
	if (t->dropped_local)
		fprintf(f, ", %" PRIu64 " not kept", t->dropped_local);
	if (t->malformed)
		fprintf(f, ", %" PRIu64 " malformed records (no first lane) skipped", t->malformed);
	fprintf(f, "\n");
	(void)final;
}

static void show_smload(struct tracer *t, FILE *f, bool final, FILE *out)
{
	uint64_t v[GX_SMLOAD_SLOTS];
	struct trace_smload s;

	if (read_u64_array(t, "blocks", v, GX_SMLOAD_SLOTS)) {
		fprintf(f, "smload: map 'blocks' not found\n");
		return;
	}
	trace_smload(v, GX_SMLOAD_SLOTS, &s);
	fprintf(f, "smload: %" PRIu64 " blocks on %u SMs; per SM min %" PRIu64 " mean %.1f max %" PRIu64 "; imbalance (max/mean) %.2f\n",
		s.total, s.sms, s.min, s.mean, s.max, s.imbalance);
	if (final) {
		int col = 0;

		for (uint32_t i = 0; i < GX_SMLOAD_SLOTS; i++) {
			if (!v[i])
				continue;
			fprintf(f, "%s SM%-3u %8" PRIu64, col ? " " : " ", i, v[i]);
			if (++col == 8) {
				fputc('\n', f);
				col = 0;
			}
		}
		if (col)
			fputc('\n', f);
	}
	for (uint32_t i = 0; out && i < GX_SMLOAD_SLOTS; i++)
		if (v[i])
			fprintf(out, "%u,%" PRIu64 "\n", i, v[i]);
}

static void show_kerneldur(struct tracer *t, FILE *f, bool final, FILE *out)
{
	uint64_t b[GX_KDUR_BUCKETS], unfinished = 0;
	struct gpuext_map *sm = map_named(t, "state");
	struct gx_kdur_state e[GX_KDUR_GPUS];
	struct trace_kdur_slot *ks;
	struct trace_hist h = { 0 };
	char a[32], c[32], nb[64];

	if (read_u64_array(t, "hist", b, GX_KDUR_BUCKETS) || !sm ||
	    gpuext_map__value_size(sm) != sizeof(struct gx_kdur_state) ||
	    gpuext_map__max_entries(sm) != GX_KDUR_GPUS * GX_KDUR_KSLOTS) {
		fprintf(f, "kerneldur: maps hist/state not found (or not %u x %u states)\n",
			GX_KDUR_GPUS, GX_KDUR_KSLOTS);
		return;
	}
	ks = calloc(GX_KDUR_KSLOTS, sizeof(*ks));
	if (!ks) {
		fprintf(f, "kerneldur: out of memory\n");
		return;
	}
	trace_hist_add_buckets(&h, b, GX_KDUR_BUCKETS);
	/* The device folded every launch but each kernel's last on each GPU: that one is folded here. */
	for (uint32_t k = 0; k < GX_KDUR_KSLOTS; k++) {
		for (uint32_t g = 0; g < GX_KDUR_GPUS; g++) {
			uint32_t key = g * GX_KDUR_KSLOTS + k;

			if (gpuext_map__lookup(sm, &key, &e[g]))
				memset(&e[g], 0, sizeof(e[g]));
		}
		trace_kdur_slot(e, GX_KDUR_GPUS, k, t->kernels, t->nkernels, &h, &ks[k]);
		unfinished += ks[k].unfinished;
	}
	fprintf(f, "kerneldur: %" PRIu64 " kernel runs timed; p50 < %s, p99 < %s", h.n,
		trace_fmt_ns(trace_hist_quantile(&h, 0.5), a, sizeof(a)),
		trace_fmt_ns(trace_hist_quantile(&h, 0.99), c, sizeof(c)));
	if (unfinished)
		fprintf(f, "; %" PRIu64 " launch(es) overlapped by the next one of their kernel, "
			"not timed", unfinished);
	fputc('\n', f);
	if (final)
		trace_hist_print(f, &h, true);
	if (final)
		fprintf(f, "  %-40s %8s %12s %12s\n", "KERNEL", "RUNS", "MEAN", "MAX");
	for (uint32_t k = 0; (final || out) && k < GX_KDUR_KSLOTS; k++) {
		const struct trace_kdur_slot *q = &ks[k];

		if (!q->runs)
			continue;
		if (final)
			/* processes sharing a GPU id add their maxima: an upper bound */
			fprintf(f, "  %-40.40s %8" PRIu64 " %12s %s%s\n",
				kname(t, q->kernel_id, nb, sizeof(nb)), q->runs,
				trace_fmt_ns(q->total_ns / q->runs, a, sizeof(a)),
				q->max_shared ? "<= " : "", trace_fmt_ns(q->max_ns, c, sizeof(c)));
		if (out)
			fprintf(out, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
				kname(t, q->kernel_id, nb, sizeof(nb)), q->runs, q->total_ns, q->max_ns);
	}
	free(ks);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A hash map with 4-byte keys and 4- or 8-byte values: "hash NAME: [k]=v ...", keys in order. */
static void show_hash(struct gpuext_map *m, FILE *f, bool final)
{
	uint32_t vs = gpuext_map__value_size(m), cap = final ? 64 : 8, n = 0, k, *keys;
	uint64_t v;
	bool more = false;

	keys = malloc(sizeof(*keys) * 4096);
	if (!keys)
		return;
	for (int e = gpuext_map__next_key(m, NULL, &k); !e && n < 4096;
	     e = gpuext_map__next_key(m, &keys[n - 1], &k))
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_u32);
	fprintf(f, "hash %s:", gpuext_map__name(m));
	for (uint32_t i = 0, shown = 0; i < n; i++) {
		v = 0;
		if (gpuext_map__lookup(m, &keys[i], &v))
			continue;	/* deleted meanwhile */
		if (shown++ == cap) {
			more = true;
			break;
		}
		fprintf(f, " [%u]=%" PRIu64, keys[i], vs == 4 ? (uint64_t)(uint32_t)v : v);
	}
	fprintf(f, "%s\n", !n ? " (empty)" : more ? " ..." : "");
	free(keys);
}

static void show_generic(struct tracer *t, FILE *f, bool final)
{
	for (int i = 0; i < t->nrb; i++)
		fprintf(f, "ring buffer %s: %" PRIu64 " records\n", t->rb_name[i], t->rb_records[i]);
	for (size_t i = 0; i < gpuext_object__map_cnt(t->obj); i++) {
		struct gpuext_map *m = gpuext_object__map(t->obj, i);
		uint32_t type = gpuext_map__type(m), n = gpuext_map__max_entries(m), shown = 0;
		uint32_t vs = gpuext_map__value_size(m);
		uint8_t *val;

		if ((type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_LRU_HASH) &&
		    gpuext_map__key_size(m) == 4 && (vs == 4 || vs == 8)) {
			show_hash(m, f, final);
			continue;
		}
		if (type != BPF_MAP_TYPE_ARRAY || gpuext_map__key_size(m) != 4)
			continue;
		val = malloc(vs);
		if (!val)
			return;
		fprintf(f, "array %s:", gpuext_map__name(m));
		for (uint32_t k = 0; k < n && shown < (final ? 64u : 8u); k++) {
			bool nz = false;

			if (gpuext_map__lookup(m, &k, val))
				continue;
			for (uint32_t j = 0; j < vs; j++)
				nz |= val[j] != 0;
			if (!nz)
				continue;
			if (vs == 8)
				fprintf(f, " [%u]=%" PRIu64, k, *(uint64_t *)val);
			else if (vs == 4)
				fprintf(f, " [%u]=%u", k, *(uint32_t *)val);
			else
				fprintf(f, " [%u]=(%u bytes)", k, vs);
			shown++;
		}
		fprintf(f, "%s\n", shown ? "" : " (all zero)");
		free(val);
	}
}

static void show(struct tracer *t, FILE *f, bool final, FILE *out)
{
	reload_kernels(t);
	switch (t->kind) {
	case T_RETSNOOP: show_retsnoop(t, f, final); break;
	case T_THREADHIST: show_threadhist(t, f, final); break;
	case T_LAUNCHLATE: show_launchlate(t, f, final, out); break;
	case T_MEMTRACE: show_memtrace(t, f, final); break;
	case T_SMLOAD: show_smload(t, f, final, out); break;
	case T_KDUR: show_kerneldur(t, f, final, out); break;
	default: show_generic(t, f, final); break;
	}
	fflush(f);
}

/* The kernels the preload library saw, and any it could not instrument. */
static void show_kernels(struct tracer *t, FILE *f)
{
	size_t inst = 0, funcs = 0;

	reload_kernels(t);
	for (size_t i = 0; i < t->nkernels; i++) {
		inst += !strcmp(t->kernels[i].status, "instrumented");
		funcs += !strcmp(t->kernels[i].status, "device-function");
	}
	fprintf(f, "kernels: %zu seen, %zu instrumented", t->nkernels - funcs, inst);
	if (funcs)	/* .func bodies with load/store sites (hal/nvidia/ptx_splice.c) */
		fprintf(f, "; %zu device functions traced as their own", funcs);
	fprintf(f, "\n");
	for (size_t i = 0; i < t->nkernels; i++)
		if (strcmp(t->kernels[i].status, "instrumented") &&
		    strcmp(t->kernels[i].status, "device-function"))
			fprintf(f, "  %-12s %s\n", t->kernels[i].status, t->kernels[i].name);
}

/* --out for the record-keeping tools; the table tools write from show(). */
static int write_out(struct tracer *t, const char *path, pid_t app)
{
	char err[SIM_TRACE_ERR_LEN], nb[64];
	FILE *f;

	if (t->kind == T_MEMTRACE) {
		struct gx_rec_mem *one;
		struct sim_trace st;
		size_t n;
		int ret;

		reload_kernels(t);	/* which ids are device functions' */
		ret = trace_mem_expand_all(t->recs.v, t->recs.n, &one, &n);
		if (ret) {
			fprintf(stderr, "gpuext trace: writing %s: no memory for %" PRIu64 " accesses\n",
				path, t->mem.accesses);
			return ret;
		}
		ret = trace_memtrace_to_sim(one, n, (uint32_t)app, t->kernels, t->nkernels, &st, err,
					    sizeof(err));
		free(one);

		if (ret) {
			fprintf(stderr, "gpuext trace: writing %s: %s\n", path, err);
			return ret;
		}
		ret = sim_trace__save(&st, path, SIM_TRACE_AUTO, err, sizeof(err));
		if (ret)
			fprintf(stderr, "gpuext trace: writing %s: %s\n", path, err);
		else
			fprintf(stderr, "gpuext trace: wrote %zu accesses in %zu ranges to %s (replay: gpuext sim --trace %s)\n",
				st.acc_cnt, st.range_cnt, path, path);
		sim_trace__free(&st);
		return ret;
	}
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "gpuext trace: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (t->kind == T_RETSNOOP) {
		const struct gx_rec_exit *r = t->recs.v;

		fprintf(f, "# kernel,block_x,block_y,block_z,sm,gpu,timer_ns\n");
		for (size_t i = 0; i < t->recs.n; i++)
			fprintf(f, "%s,%u,%u,%u,%u,%u,%" PRIu64 "\n", kname(t, r[i].kernel_id, nb, sizeof(nb)),
				r[i].block[0], r[i].block[1], r[i].block[2], r[i].sm_id, r[i].gpu_id,
				r[i].timer_ns);
	} else if (t->kind == T_THREADHIST) {
		uint64_t sum, top, *v = threadhist_read(t, &sum, &top);

		if (v) {
			fprintf(f, "# total_exits %" PRIu64 " max_warp %" PRIu64 "\n# warp,exits\n", sum, top);
			for (uint32_t i = 0; i < GX_THREADHIST_SLOTS; i++)
				if (v[i])
					fprintf(f, "%u,%" PRIu64 "\n", i, v[i]);
		}
		free(v);
	} else if (t->kind == T_LAUNCHLATE) {
		FILE *null = fopen("/dev/null", "w");

		fprintf(f, "# seq,kernel,host_ns,latency_ns\n");
		if (null) {
			show_launchlate(t, null, false, f);
			fclose(null);
		}
	} else if (t->kind == T_SMLOAD) {
		fprintf(f, "# sm,blocks\n");
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			show_smload(t, null, false, f);
			fclose(null);
		}
	} else if (t->kind == T_KDUR) {
		fprintf(f, "# kernel,runs,total_ns,max_ns\n");
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			show_kerneldur(t, null, false, f);
			fclose(null);
		}
	} else {
		show_generic(t, f, true);
	}
	if (fclose(f)) {
		fprintf(stderr, "gpuext trace: writing %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* ---- running the application ------------------------------------------------------- */

/* The one piece of global state: a signal handler can reach nothing else. */
static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* @clock_sync: the tool compares device and host times (GPUEXT_CLOCK_SYNC, nv_launch.c). */
static pid_t spawn(char **argv, const char *preload, const char *dir, bool clock_sync)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	{
		const char *old = getenv("LD_PRELOAD");
		size_t len = strlen(preload) + (old ? strlen(old) + 2 : 1);
		char *pl = malloc(len);

		if (!pl)
			_exit(127);
		snprintf(pl, len, "%s%s%s", preload, old && *old ? ":" : "", old ? old : "");
		setenv("LD_PRELOAD", pl, 1);
		setenv("GPUEXT_TRACE_DIR", dir, 1);
		if (clock_sync)
			setenv("GPUEXT_CLOCK_SYNC", "1", 1);
		execvp(argv[0], argv);
		fprintf(stderr, "gpuext trace: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* ---- the command ---------------------------------------------------------------- */

int cmd_trace(int argc, char **argv)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print, .publish_maps = true,
		    .nr_cpu_slots = GX_SMLOAD_SLOTS);
	char err[512], obj_path[PATH_MAX + 64], preload[PATH_MAX], dirbuf[PATH_MAX];
	struct tracer t = { 0 };
	struct gpuext_runtime *rt = NULL;
	struct trace_opts o;
	struct gx_pack pack = { 0 };
	bool made_dir = false, per_thread;
	int ret = 1, status = 0;
	pid_t pid;

	if (trace_parse_args(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "gpuext trace: %s\n\n", err);
		trace_usage(stderr);
		return 2;
	}
	if (o.help) {
		trace_usage(stdout);
		return 0;
	}
	if (o.list)
		return list_tools();
	if (find_tool(o.tool, obj_path, sizeof(obj_path)))
		return 1;
	{
		/* A tool's kind comes from its object's base name (memtrace.bpf.o -> memtrace). */
		const char *base = strrchr(obj_path, '/');
		char name[128];
		char *dot;

		snprintf(name, sizeof(name), "%.127s", base ? base + 1 : obj_path);
		dot = strstr(name, ".bpf.o");
		if (dot)
			*dot = '\0';
		t.tool = tool_by_name(name);
		t.kind = t.tool ? t.tool->kind : T_GENERIC;
	}
	per_thread = o.per_thread >= 0 ? o.per_thread : (t.tool && t.tool->per_thread);
	t.per_thread = per_thread;
	if (t.kind == T_MEMTRACE && !per_thread)
		fprintf(stderr, "gpuext trace: memtrace in warp mode records only each warp leader's address\n");
	if (!o.pack_only) {
		if (find_preload(o.preload, preload, sizeof(preload)) || check_libcuda())
			return 1;
	}

	if (gpuext_runtime__new(&ro, &rt)) {
		fprintf(stderr, "gpuext trace: cannot create a runtime\n");
		return 1;
	}
	if (gpuext_object__open_file(rt, obj_path, NULL, &t.obj)) {
		fprintf(stderr, "gpuext trace: cannot open '%s' (the messages above say why)\n", obj_path);
		goto out;
	}
	if (verify_probes(t.obj))
		goto out;
	if (trace_build_pack(t.obj, o.sm, per_thread, o.kernel_glob, &pack, err, sizeof(err))) {
		fprintf(stderr, "gpuext trace: %s\n", err);
		goto out;
	}
	pack.no_flat_twins = o.no_flat_twins;
	if (o.dir) {
		if (mkdir(o.dir, 0700) && errno != EEXIST) {
			fprintf(stderr, "gpuext trace: cannot create %s: %s\n", o.dir, strerror(errno));
			goto out;
		}
		t.dir = o.dir;
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(dirbuf, sizeof(dirbuf), "%s/gpuext-trace.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dirbuf)) {
			fprintf(stderr, "gpuext trace: cannot create a trace directory %s: %s\n", dirbuf,
				strerror(errno));
			goto out;
		}
		t.dir = dirbuf;
		made_dir = true;
	}
	{
		int werr = trace_pack_write(t.dir, &pack);

		if (werr) {
			fprintf(stderr, "gpuext trace: cannot write the pack into %s: %s\n", t.dir,
				strerror(-werr));
			goto out;
		}
	}
	if (o.pack_only) {
		struct gx_pack back;
		char hex[65];

		/* The hash is the writer's: read the pack back as the preload library will. */
		if (trace_pack_read(t.dir, &back, err, sizeof(err))) {
			fprintf(stderr, "gpuext trace: the pack written to %s does not read back: %s\n",
				t.dir, err);
			goto out;
		}
		memcpy(pack.hash, back.hash, sizeof(pack.hash));
		trace_pack_release(&back);
		for (int i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", pack.hash[i]);
		printf("pack: %s/pack\n  events:", t.dir);
		for (int e = 0; e < GX_PROBE_NR; e++)
			if (pack.events & (1u << e))
				printf(" %s", (const char *[]){ "entry", "exit", "load", "store" }[e]);
		printf("\n  mode: %s%s\n  kernels: %s\n  maps: %u\n", pack.per_thread ? "per-thread" : "warp",
		       pack.no_flat_twins ? ", no flat twins" : "",
		       pack.kernel_filter[0] ? pack.kernel_filter : "(all)", pack.map_cnt);
		for (uint32_t i = 0; i < pack.map_cnt; i++)
			printf("    %-20s %-9s key %u value %u max %u\n", pack.maps[i].name,
			       gpuext_map_type_name(pack.maps[i].type), pack.maps[i].key_size,
			       pack.maps[i].value_size, pack.maps[i].max_entries);
		printf("  ptx: %zu bytes\n  hash: %s\n", pack.ptx_len, hex);
		ret = 0;
		goto out;
	}

	trace_mem_stats_init(&t.mem);
	t.recs.elem = t.kind == T_RETSNOOP ? sizeof(struct gx_rec_exit) :
		      t.kind == T_LAUNCHLATE ? sizeof(struct gx_rec_start) :
		      t.kind == T_MEMTRACE ? sizeof(struct gx_rec_mem) : 1;
	if (setup_consumers(&t) || (t.kind == T_LAUNCHLATE && setup_slots(&t)))
		goto out;

	fprintf(stderr, "gpuext trace: %s (%s mode%s%s) -> %s; trace dir %s\n",
		t.tool ? t.tool->name : obj_path, per_thread ? "per-thread" : "warp",
		o.kernel_glob ? ", kernels " : "", o.kernel_glob ? o.kernel_glob : "", o.app_argv[0],
		t.dir);
	fflush(stdout);
	signal(SIGINT, forward_signal);
	signal(SIGTERM, forward_signal);
	pid = spawn(o.app_argv, preload, t.dir, t.kind == T_LAUNCHLATE);
	if (pid < 0) {
		fprintf(stderr, "gpuext trace: fork failed: %s\n", strerror(errno));
		goto out;
	}
	child_pid = pid;
	{
		uint64_t next = now_ms() + o.interval_ms;

		for (;;) {
			pid_t w = waitpid(pid, &status, WNOHANG);

			drain(&t, false);
			if (w == pid || (w < 0 && errno != EINTR))
				break;
			if (o.interval_ms && now_ms() >= next) {
				printf("--- %s ---\n", t.tool ? t.tool->name : "probes");
				show(&t, stdout, false, NULL);
				next = now_ms() + o.interval_ms;
			}
			usleep(5000);
		}
	}
	child_pid = 0;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	drain(&t, true);
	if (t.kind == T_RETSNOOP && o.interval_ms)
		show(&t, stdout, false, NULL);	/* the lines that came last */
	printf("=== %s: final report ===\n", t.tool ? t.tool->name : obj_path);
	show(&t, stdout, true, NULL);
	show_kernels(&t, stdout);
	if (!t.nkernels)
		fprintf(stderr,
			"gpuext trace: the preload library reported no kernels: did the app use CUDA? (%s/kernels.txt is empty)\n",
			t.dir);
	fflush(stdout);
	if (WIFEXITED(status))
		ret = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		ret = 128 + WTERMSIG(status);
	/* The app's status wins; a failed --out still must not look like success. */
	if (o.out && write_out(&t, o.out, pid) && !ret)
		ret = 1;
out:
	for (int i = 0; i < t.nrb; i++)
		gpuext_ringbuf_consumer__free(t.rb[i]);
	if (pack.ptx)
		trace_pack_release(&pack);
	gpuext_object__close(t.obj);
	gpuext_runtime__free(rt);	/* unlinks the shared-memory maps */
	if (made_dir && !o.keep)
		nftw(t.dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	else if (t.dir && !o.pack_only)
		fprintf(stderr, "gpuext trace: trace directory kept: %s\n", t.dir);
	free(t.recs.v);
	trace_slots_free(&t.slots);
	trace_kernels_free(t.kernels, t.nkernels);
	free(t.th_sum);
	free(t.th_last);
	return ret;
}
