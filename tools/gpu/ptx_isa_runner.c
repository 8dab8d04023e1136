/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptx_isa_runner: the ISA corpus on a real NVIDIA GPU, checked against the
 * reference interpreter.
 *
 * For every case of tests/isa/\*.isa that expects success and that the
 * verifier accepts (host type, ctx_size = input length): emit PTX for the
 * GPU's sm, load it through the CUDA Driver API (libcuda.so.1, dlopen'ed by
 * libgpuext), run it in per-thread mode (one block of --threads threads,
 * each on its own copy of the input) and in warp mode (the lowest active
 * lane of each warp runs, r0 is broadcast), then compare every thread's r0
 * and every copy of the memory with the interpreter's. Then a few runtime
 * checks the corpus cannot express (maps, ring buffer, device helpers,
 * shared state across threads).
 *
 * Prints a per-family table and every disagreement with why. Exit status:
 * 0 all agree, 1 a disagreement or failure, 2 no usable GPU (the message
 * says what is missing), 3 bad usage.
 *
 *   ptx_isa_runner [--isa-dir DIR] [--threads N] [--case SUBSTR] [--timeout-ms N]
 *                  [--ptx-dir DIR] [--emit-only] [--bundle DIR]
 *
 * --bundle DIR does the same work without a GPU and writes it down for
 * tools/gpu/ptx_bundle_run.c, which needs only a C compiler and the driver
 * (a GPU machine without LLVM 22 or libbpf runs that).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "asm.h"
#include "gpuext/gpuext.h"
#include "gpuext/verifier.h"
#include "ptx/ptx.h"
#include "warp_votes_expect.h"

#ifndef GPUEXT_ISA_DIR
#define GPUEXT_ISA_DIR "tests/isa"
#endif

struct opts {
	const char *isa_dir, *filter, *ptx_dir, *bundle_dir;
	uint32_t threads, timeout_ms;
	bool emit_only;
};

struct family {
	char name[64];
	unsigned cases, skipped, ok[2], differ[2], expected[2];
};

static struct family fams[64];
static size_t fam_cnt;
static char *report;		/* the disagreements, printed at the end */
static size_t report_len;
static unsigned failures, expected_diffs, extra_ok, extra_fail;

static const char *const mode_name[2] = { "per-thread", "warp" };

static struct family *family(const char *name)
{
	for (size_t i = 0; i < fam_cnt; i++)
		if (!strcmp(fams[i].name, name))
			return &fams[i];
	if (fam_cnt == sizeof(fams) / sizeof(fams[0]))
		return &fams[fam_cnt - 1];
	snprintf(fams[fam_cnt].name, sizeof(fams[0].name), "%s", name);
	return &fams[fam_cnt++];
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(r = realloc(report, report_len + (size_t)n + 2)))
		return;
	report = r;
	va_start(ap, fmt);
	vsnprintf(report + report_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	report_len += (size_t)n;
	report[report_len++] = '\n';
	report[report_len] = '\0';
}

static struct {
	char buf[8192];
	size_t len;
} logbuf;

static void log_print(enum gpuext_log_level level, const char *msg, void *user)
{
	size_t n = strlen(msg);

	(void)level;
	(void)user;
	if (logbuf.len + n + 2 > sizeof(logbuf.buf))
		return;
	memcpy(logbuf.buf + logbuf.len, msg, n);
	logbuf.len += n;
	logbuf.buf[logbuf.len++] = '\n';
	logbuf.buf[logbuf.len] = '\0';
}

static struct gpuext_runtime *new_rt(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = log_print, .prandom_seed = 1);
	struct gpuext_runtime *rt = NULL;

	logbuf.len = 0;
	logbuf.buf[0] = '\0';
	if (gpuext_runtime__new(&ro, &rt))
		return NULL;
	return rt;
}

/* Helpers whose value differs between the interpreter and a GPU by design. */
static const char *nondeterministic(const struct isa_case_env *env)
{
	for (size_t i = 0; i < env->insn_cnt; i++) {
		const struct bpf_insn *in = &env->insns[i];

		if (in->code != (BPF_JMP | BPF_CALL) || in->src_reg != 0)
			continue;
		switch (in->imm) {
		case BPF_FUNC_ktime_get_ns: return "bpf_ktime_get_ns is %globaltimer on a GPU";
		case BPF_FUNC_get_prandom_u32: return "bpf_get_prandom_u32 has its own generator on a GPU";
		case BPF_FUNC_get_smp_processor_id: return "bpf_get_smp_processor_id is the SM id on a GPU";
		default:
			if (in->imm >= GPUEXT_FUNC_get_globaltimer && in->imm <= GPUEXT_FUNC_warp_shfl)
				return "a gpuext device helper (ids, timers, warp votes)";
		}
	}
	return NULL;
}

static void save_ptx(const struct opts *o, const char *fam, const char *name, int mode,
		     const char *ptx)
{
	char path[1024];
	FILE *f;

	if (!o->ptx_dir || !ptx)
		return;
	snprintf(path, sizeof(path), "%s/%s.%s.%s.ptx", o->ptx_dir, fam, name, mode_name[mode]);
	f = fopen(path, "w");
	if (f) {
		fputs(ptx, f);
		fclose(f);
	}
}

/*
 * Runs one mode and compares it with the interpreter. Returns 1 agree,
 * 0 disagree (noted), -1 device unusable (stop).
 */
static int run_mode(const struct opts *o, struct gpuext_ptx_device *dev, struct gpuext_prog *prog,
		    const struct isa_case *tc, const struct isa_case_env *env, int mode,
		    uint64_t want_r0, const uint8_t *want_mem, const char *why_nd)
{
	uint32_t threads = o->threads, copies = mode == 0 ? threads : (threads + 31) / 32;
	uint64_t *r0 = calloc(threads, sizeof(*r0));
	uint8_t *mem = calloc(copies, env->mem_len ? env->mem_len : 1);
	char err[2048] = "", *ptx = NULL, what[256];
	GPUEXT_OPTS(gpuext_ptx_run_opts, ro, .per_thread = mode == 0, .threads = threads,
		    .timeout_ms = o->timeout_ms, .mem = env->mem_len ? env->mem : NULL,
		    .mem_len = env->mem_len, .r0 = r0, .mem_out = mem, .err = err,
		    .err_len = sizeof(err), .ptx = &ptx);
	int ret = 1, e;

	snprintf(what, sizeof(what), "%s/%s [%s]", tc->family, tc->name, mode_name[mode]);
	if (!r0 || !mem) {
		free(r0);
		free(mem);
		return -1;
	}
	logbuf.len = 0;
	logbuf.buf[0] = '\0';
	e = gpuext_ptx_device__run(dev, prog, &ro);
	if (e) {
		note("  %s: did not run (%s): %s%s%.600s", what, strerror(-e), err,
		     logbuf.len ? " | log: " : "", logbuf.buf);
		save_ptx(o, tc->family, tc->name, mode, ptx);
		ret = e == -ETIMEDOUT || e == -ENODEV ? -1 : 0;
		goto out;
	}
	for (uint32_t t = 0; t < threads; t++) {
		if (r0[t] != want_r0) {
			note("  %s: r0 = 0x%" PRIx64 " on thread %u, interpreter 0x%" PRIx64 "%s%s%s",
			     what, r0[t], t, want_r0, why_nd ? " (expected: " : "", why_nd ? why_nd : "",
			     why_nd ? ")" : "");
			ret = 0;
			break;
		}
	}
	for (uint32_t c = 0; ret == 1 && c < copies && env->mem_len; c++) {
		const uint8_t *got = mem + (size_t)c * env->mem_len;

		for (size_t i = 0; i < env->mem_len; i++) {
			if (got[i] != want_mem[i]) {
				note("  %s: memory byte %zu of copy %u = 0x%02x, interpreter 0x%02x%s%s%s",
				     what, i, c, got[i], want_mem[i], why_nd ? " (expected: " : "",
				     why_nd ? why_nd : "", why_nd ? ")" : "");
				ret = 0;
				break;
			}
		}
	}
	if (!ret)
		save_ptx(o, tc->family, tc->name, mode, ptx);
out:
	free(ptx);
	free(r0);
	free(mem);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Bundles: PTX + expectations for tools/gpu/ptx_bundle_run.c          */
/* ------------------------------------------------------------------ */

static FILE *manifest;

static void hex_out(FILE *f, const uint8_t *b, size_t n)
{
	if (!b) {
		fputc('-', f);
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
}

/*
 * One manifest entry (docs/ptx.md has the format): the PTX of @prog for
 * sm_80 and sm_90 in @mode, its input, maps and variables in the device
 * layout, and the expectations. @want_r0 NULL: no uniform r0 to compare.
 * Returns false (noted) when emitting fails.
 */
static bool bundle_write(const struct opts *o, struct gpuext_prog *prog, const struct isa_case *tc,
			 const struct isa_case_env *env, int mode, const uint64_t *want_r0,
			 const uint8_t *want_mem, const char *nd, const char *checks)
{
	static const char *const sms[2] = { "sm_80", "sm_90" };
	char rel[2][512];

	for (int s = 0; s < 2; s++) {
		char path[2048], *ptx = NULL;
		size_t len;
		FILE *f;

		snprintf(rel[s], sizeof(rel[s]), "ptx/%s.%s.%s.%s.ptx", tc->family, tc->name,
			 mode_name[mode], sms[s]);
		snprintf(path, sizeof(path), "%s/%s", o->bundle_dir, rel[s]);
		logbuf.len = 0;
		logbuf.buf[0] = '\0';
		if (gpuext_ptx_emit(prog, sms[s], mode == 0, &ptx, &len)) {
			note("  %s/%s [%s, %s]: emit failed: %.600s", tc->family, tc->name,
			     mode_name[mode], sms[s], logbuf.buf);
			return false;
		}
		f = fopen(path, "w");
		if (!f || fwrite(ptx, 1, len, f) != len) {
			note("  cannot write %s", path);
			if (f)
				fclose(f);
			free(ptx);
			return false;
		}
		fclose(f);
		free(ptx);
	}
	fprintf(manifest, "case %s %s %s %u\n", tc->family, tc->name, mode_name[mode], o->threads);
	fprintf(manifest, "ptx sm_80 %s\nptx sm_90 %s\n", rel[0], rel[1]);
	fprintf(manifest, "input %zu ", env->mem_len);
	hex_out(manifest, env->mem_len ? env->mem : NULL, env->mem_len);
	fputc('\n', manifest);
	for (size_t i = 0; i < gpuext_prog__map_cnt(prog); i++) {
		struct gpuext_ptx_map_desc d;
		uint8_t *img = NULL;
		size_t bytes = 0;

		if (gpuext_ptx_map_image(gpuext_prog__map(prog, i), &d, &img, &bytes)) {
			note("  %s/%s: map %zu cannot be placed on the device: %.300s", tc->family,
			     tc->name, i, logbuf.buf);
			fprintf(manifest, "# map %zu is not on the device\n", i);
			continue;
		}
		fprintf(manifest, "map %u %u %u %u %u %u %zu ", d.type, d.key_size, d.value_size,
			d.max_entries, d.stride, d.nr_slots, bytes);
		hex_out(manifest, img, bytes);
		fputc('\n', manifest);
		free(img);
	}
	for (size_t i = 0; i < tc->var_cnt; i++) {
		fprintf(manifest, "var %u %zu ", tc->vars[i].id, tc->vars[i].size);
		hex_out(manifest, env->var_bufs[i], tc->vars[i].size);
		fputc('\n', manifest);
	}
	if (want_r0)
		fprintf(manifest, "expect_r0 %" PRIx64 "\n", *want_r0);
	if (want_mem && env->mem_len) {
		fputs("expect_mem ", manifest);
		hex_out(manifest, want_mem, env->mem_len);
		fputc('\n', manifest);
	}
	if (nd)
		fprintf(manifest, "nd %s\n", nd);
	if (checks)
		fputs(checks, manifest);
	fputs("end\n", manifest);
	return true;
}

/* Runs the reference interpreter on a fresh environment of @tc. 0 or an errno. */
static int reference(const struct isa_case *tc, uint8_t *want_mem, uint64_t *want_r0)
{
	struct gpuext_runtime *rt2 = new_rt();
	struct isa_case_env env2;
	struct gpuext_prog *p2 = NULL;
	char why[256];
	int ie = -ENOMEM;

	if (rt2 && !isa_case_env_init(&env2, rt2, tc, why, sizeof(why))) {
		GPUEXT_OPTS(gpuext_run_opts, io, .ctx = env2.mem_len ? want_mem : NULL,
			    .ctx_len = env2.mem_len, .ctx_writable = true, .insn_limit = 10000000);

		ie = gpuext_prog__new(rt2, tc->name, env2.insns, env2.insn_cnt, env2.maps,
				      env2.map_cnt, &p2);
		if (!ie) {
			memcpy(want_mem, env2.mem, env2.mem_len);
			ie = gpuext_prog__run(p2, &io, want_r0);
			gpuext_prog__free(p2);
		}
		isa_case_env_fini(&env2);
	}
	gpuext_runtime__free(rt2);
	return ie;
}

/* Returns false when the device became unusable. */
static bool run_case(const struct opts *o, struct gpuext_ptx_device *dev, const struct isa_case *tc)
{
	struct family *f = family(tc->family);
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_prog *prog = NULL;
	struct isa_case_env env;
	char why[512];
	bool alive = true;

	f->cases++;
	if (tc->error || tc->error_any || !rt) {
		f->skipped++;
		gpuext_runtime__free(rt);
		return true;
	}
	if (isa_case_env_init(&env, rt, tc, why, sizeof(why))) {
		note("  %s/%s: cannot set up: %s", tc->family, tc->name, why);
		failures++;
		gpuext_runtime__free(rt);
		return true;
	}
	if (gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps, env.map_cnt, &prog)) {
		f->skipped++;
		goto out;
	}
	{
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST,
			    .ctx_size = (uint32_t)env.mem_len);
		GPUEXT_OPTS(gpuext_verify_result, res);

		if (gpuext_prog__verify(prog, &vo, &res)) {
			f->skipped++;
			goto out;
		}
	}
	if (o->emit_only && !o->bundle_dir) {
		for (int m = 0; m < 2; m++) {
			char *ptx = NULL;
			size_t len;

			if (gpuext_ptx_emit(prog, NULL, m == 0, &ptx, &len)) {
				note("  %s/%s [%s]: emit failed: %.600s", tc->family, tc->name,
				     mode_name[m], logbuf.buf);
				f->differ[m]++;
				failures++;
			} else {
				f->ok[m]++;
				if (o->filter)
					printf("// ---- %s/%s [%s]\n%s", tc->family, tc->name,
					       mode_name[m], ptx);
				save_ptx(o, tc->family, tc->name, m, ptx);
			}
			free(ptx);
		}
		goto out;
	}
	{
		/* The reference runs on an environment of its own, so that the GPU runs
		 * start from the map state it started from. */
		uint8_t *want_mem = malloc(env.mem_len ? env.mem_len : 1);
		uint8_t *input = malloc(env.mem_len ? env.mem_len : 1);
		const char *nd = nondeterministic(&env);
		uint64_t want_r0 = 0;
		int res, ie;

		if (!want_mem || !input) {
			free(want_mem);
			free(input);
			goto out;
		}
		memcpy(input, env.mem, env.mem_len);
		ie = reference(tc, want_mem, &want_r0);
		if (ie) {
			note("  %s/%s: the interpreter failed (%d): not compared", tc->family,
			     tc->name, ie);
			f->skipped++;
			free(want_mem);
			free(input);
			goto out;
		}
		if (o->bundle_dir) {
			for (int m = 0; m < 2; m++) {
				if (bundle_write(o, prog, tc, &env, m, &want_r0, want_mem, nd, NULL)) {
					f->ok[m]++;
				} else {
					f->differ[m]++;
					failures++;
				}
			}
			free(want_mem);
			free(input);
			goto out;
		}
		if (tc->has_result && tc->result != want_r0)
			note("  %s/%s: note: interpreter r0 0x%" PRIx64 " differs from the corpus' "
			     "0x%" PRIx64, tc->family, tc->name, want_r0, tc->result);
		for (int m = 0; m < 2 && alive; m++) {
			memcpy(env.mem, input, env.mem_len);
			res = run_mode(o, dev, prog, tc, &env, m, want_r0, want_mem, nd);
			if (res < 0) {
				alive = false;
				f->differ[m]++;
				failures++;
			} else if (res == 1) {
				f->ok[m]++;
			} else if (nd) {
				f->expected[m]++;
				expected_diffs++;
			} else {
				f->differ[m]++;
				failures++;
			}
		}
		free(want_mem);
		free(input);
	}
out:
	gpuext_prog__free(prog);
	isa_case_env_fini(&env);
	gpuext_runtime__free(rt);
	return alive;
}

/* ------------------------------------------------------------------ */
/* Runtime checks beyond the corpus                                     */
/* ------------------------------------------------------------------ */

/* rt_ringbuf_full's map, program and result: 100-byte records until the ring is full. */
#define RB_FULL_CASE \
	"map rb ringbuf key=0 value=0 entries=4096\n" \
	"asm\n" \
	"	r1 = map[rb] ll\n" \
	"	r2 = r10\n" \
	"	r2 += -0x80\n" \
	"	r3 = 0x64\n" \
	"	r4 = 0x0\n" \
	"	*(u64 *)(r10 - 0x80) = 0x0\n" \
	"	*(u64 *)(r10 - 0x78) = 0x0\n" \
	"	*(u64 *)(r10 - 0x70) = 0x0\n" \
	"	*(u64 *)(r10 - 0x68) = 0x0\n" \
	"	*(u64 *)(r10 - 0x60) = 0x0\n" \
	"	*(u64 *)(r10 - 0x58) = 0x0\n" \
	"	*(u64 *)(r10 - 0x50) = 0x0\n" \
	"	*(u64 *)(r10 - 0x48) = 0x0\n" \
	"	*(u64 *)(r10 - 0x40) = 0x0\n" \
	"	*(u64 *)(r10 - 0x38) = 0x0\n" \
	"	*(u64 *)(r10 - 0x30) = 0x0\n" \
	"	*(u64 *)(r10 - 0x28) = 0x0\n" \
	"	*(u64 *)(r10 - 0x20) = 0x0\n" \
	"	call bpf_ringbuf_output\n" \
	"	exit\n" \
	"end\n" \
	"result 0x0\n"

static const char extra_text[] =
	"case rt_array_shared_counter\n"
	"map counts array key=4 value=8 entries=4\n"
	"asm\n"
	"	r1 = map[counts] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	*(u32 *)(r10 - 0x4) = 0x1\n"
	"	call bpf_map_lookup_elem\n"
	"	if r0 == 0x0 goto out\n"
	"	r1 = 0x1\n"
	"	lock *(u64 *)(r0 + 0x0) += r1\n"
	"	r0 = 0x0\n"
	"out:\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_array_update_out_of_range\n"
	"map v array key=4 value=8 entries=2\n"
	"asm\n"
	"	*(u32 *)(r10 - 0x4) = 0x7\n"
	"	*(u64 *)(r10 - 0x10) = 0x5\n"
	"	r1 = map[v] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	r3 = r10\n"
	"	r3 += -0x10\n"
	"	r4 = 0x0\n"
	"	call bpf_map_update_elem\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_percpu_counter\n"
	"map pc percpu_array key=4 value=8 entries=1\n"
	"asm\n"
	"	r1 = map[pc] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	*(u32 *)(r10 - 0x4) = 0x0\n"
	"	call bpf_map_lookup_elem\n"
	"	if r0 == 0x0 goto out\n"
	"	r1 = 0x1\n"
	"	lock *(u64 *)(r0 + 0x0) += r1\n"
	"	r0 = 0x0\n"
	"out:\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_ringbuf_output_ids\n"
	"map rb ringbuf key=0 value=0 entries=4096\n"
	"asm\n"
	"	call gpuext_get_thread_id\n"
	"	*(u64 *)(r10 - 0x8) = r0\n"
	"	r1 = map[rb] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x8\n"
	"	r3 = 0x8\n"
	"	r4 = 0x0\n"
	"	call bpf_ringbuf_output\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_ringbuf_reserve_submit\n"
	"map rb ringbuf key=0 value=0 entries=4096\n"
	"asm\n"
	"	r1 = map[rb] ll\n"
	"	r2 = 0x10\n"
	"	r3 = 0x0\n"
	"	call bpf_ringbuf_reserve\n"
	"	if r0 == 0x0 goto fail\n"
	"	r6 = r0\n"
	"	call gpuext_get_thread_id\n"
	"	*(u64 *)(r6 + 0x0) = r0\n"
	"	*(u64 *)(r6 + 0x8) = r0\n"
	"	r1 = r6\n"
	"	r2 = 0x0\n"
	"	call bpf_ringbuf_submit\n"
	"	r0 = 0x0\n"
	"	exit\n"
	"fail:\n"
	"	r0 = 0x1\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	/*
	 * Two reservations of different constant sizes on the two sides of a
	 * branch on the lane: each inlined copy groups its own active lanes
	 * without match.any (ptx_runtime.c, rt_rb_thread), and the records must
	 * come out whole, one per runner.
	 */
	"case rt_ringbuf_two_sizes\n"
	"map rb ringbuf key=0 value=0 entries=4096\n"
	"asm\n"
	"	call gpuext_get_thread_id\n"
	"	r7 = r0\n"
	"	r6 = r0\n"
	"	r6 &= 0x1\n"
	"	r1 = map[rb] ll\n"
	"	r3 = 0x0\n"
	"	if r6 == 0x0 goto big\n"
	"	r2 = 0x10\n"
	"	call bpf_ringbuf_reserve\n"
	"	goto have\n"
	"big:\n"
	"	r2 = 0x30\n"
	"	call bpf_ringbuf_reserve\n"
	"have:\n"
	"	if r0 == 0x0 goto fail\n"
	"	*(u64 *)(r0 + 0x0) = r7\n"
	"	*(u64 *)(r0 + 0x8) = r7\n"
	"	r1 = r0\n"
	"	r2 = 0x0\n"
	"	call bpf_ringbuf_submit\n"
	"	r0 = 0x0\n"
	"	exit\n"
	"fail:\n"
	"	r0 = 0x1\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_ringbuf_full\n" RB_FULL_CASE
	/*
	 * The same with the ring's positions starting at 2^32 - 2048 (ringpos): the
	 * reservations cross 2^32, where the runtime's 32-bit in-shard arithmetic
	 * wraps, and the shard's end at offset 4096 (a padding record).
	 */
	"case rt_ringbuf_full_pos32\n" RB_FULL_CASE
	/*
	 * Hash map: each runner inserts its thread id -> id * 3 + 1, reads it
	 * back, and deletes it again when bit 5 of the id is set. r0 = 0 when the
	 * update, the lookup's value and the delete were right.
	 */
	"case rt_hash_update_lookup_delete\n"
	"map h hash key=4 value=8 entries=1024\n"	/* --threads goes to 1024 */
	"asm\n"
	"	call gpuext_get_thread_id\n"
	"	r6 = r0\n"
	"	*(u32 *)(r10 - 0x4) = w6\n"
	"	r7 = r6\n"
	"	r7 *= 0x3\n"
	"	r7 += 0x1\n"
	"	*(u64 *)(r10 - 0x10) = r7\n"
	"	r1 = map[h] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	r3 = r10\n"
	"	r3 += -0x10\n"
	"	r4 = 0x0\n"
	"	call bpf_map_update_elem\n"
	"	if r0 != 0x0 goto out\n"
	"	r1 = map[h] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	call bpf_map_lookup_elem\n"
	"	if r0 == 0x0 goto missing\n"
	"	r1 = *(u64 *)(r0 + 0x0)\n"
	"	r0 = r1\n"
	"	r0 -= r7\n"
	"	if r0 != 0x0 goto out\n"
	"	r1 = r6\n"
	"	r1 &= 0x20\n"
	"	if r1 == 0x0 goto out\n"
	"	r1 = map[h] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	call bpf_map_delete_elem\n"
	"	goto out\n"
	"missing:\n"
	"	r0 = 0x2\n"
	"out:\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	/* Hash map with room for 8: the first 8 inserts win, the rest get -E2BIG. */
	"case rt_hash_full\n"
	"map h hash key=4 value=8 entries=8\n"
	"asm\n"
	"	call gpuext_get_thread_id\n"
	"	*(u32 *)(r10 - 0x4) = w0\n"
	"	r0 *= 0x3\n"
	"	r0 += 0x1\n"
	"	*(u64 *)(r10 - 0x10) = r0\n"
	"	r1 = map[h] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	r3 = r10\n"
	"	r3 += -0x10\n"
	"	r4 = 0x0\n"
	"	call bpf_map_update_elem\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	/*
	 * Hash map churn: each runner inserts and deletes its own key four
	 * times, then inserts it for good (id -> id * 3 + 1). A re-insert takes
	 * back its key's tombstone, so the 5 inserts of each of 64 keys (64
	 * threads, per-thread) fit the 128 buckets of a 64-entry map; with a new
	 * bucket each time (before) they needed 320, and inserts failed with
	 * -E2BIG. r0 = 0: all went right. Past 64 runners (--threads) some
	 * inserts get -E2BIG anyway.
	 */
	"case rt_hash_churn\n"
	"map h hash key=4 value=8 entries=64\n"
	"asm\n"
	"	call gpuext_get_thread_id\n"
	"	*(u32 *)(r10 - 0x4) = w0\n"
	"	r0 *= 0x3\n"
	"	r0 += 0x1\n"
	"	*(u64 *)(r10 - 0x10) = r0\n"
	"	r6 = 0x5\n"		/* inserts; a delete after each but the last */
	"again:\n"
	"	r1 = map[h] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	r3 = r10\n"
	"	r3 += -0x10\n"
	"	r4 = 0x0\n"
	"	call bpf_map_update_elem\n"
	"	if r0 != 0x0 goto out\n"
	"	r6 += -0x1\n"
	"	if r6 == 0x0 goto out\n"
	"	r1 = map[h] ll\n"
	"	r2 = r10\n"
	"	r2 += -0x4\n"
	"	call bpf_map_delete_elem\n"
	"	if r0 != 0x0 goto out\n"
	"	goto again\n"
	"out:\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_thread_and_lane\n"
	"asm\n"
	"	call gpuext_get_thread_id\n"
	"	r6 = r0\n"
	"	call gpuext_get_lane_id\n"
	"	r0 <<= 0x20\n"
	"	r0 |= r6\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_warp_votes\n"
	"asm\n"
	"	call gpuext_get_lane_id\n"
	"	r6 = r0\n"
	"	r1 = r6\n"
	"	r1 &= 0x1\n"
	"	call gpuext_warp_ballot\n"
	"	r7 = r0\n"
	"	r1 = r6\n"
	"	r1 += 0x64\n"
	"	call gpuext_warp_first\n"
	"	r0 <<= 0x20\n"
	"	r7 |= r0\n"
	"	r1 = r6\n"
	"	r1 *= 0x3\n"
	"	r2 = 0x5\n"
	"	call gpuext_warp_shfl\n"
	"	r0 <<= 0x28\n"
	"	r0 |= r7\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_timers\n"
	"asm\n"
	"	call bpf_ktime_get_ns\n"
	"	r6 = r0\n"
	"	call gpuext_get_globaltimer\n"
	"	r0 -= r6\n"
	"	exit\n"
	"end\n"
	"result 0x0\n" /* the reader wants one; check_extra() decides */
	"case rt_prandom\n"
	"asm\n"
	"	call bpf_get_prandom_u32\n"
	"	exit\n"
	"end\n"
	"result 0x0\n";

struct rb_seen {
	unsigned records;
	uint64_t ids[128];
	size_t size;
};

static int rb_sample(void *user, const void *data, size_t size)
{
	struct rb_seen *s = user;

	if (s->records < 128 && size >= 8)
		memcpy(&s->ids[s->records], data, 8);
	s->size = size;
	s->records++;
	return 0;
}

static unsigned rb_drain(struct gpuext_map *rb, struct rb_seen *s)
{
	struct gpuext_ringbuf_consumer *c = NULL;

	memset(s, 0, sizeof(*s));
	if (gpuext_ringbuf_consumer__new(rb, rb_sample, s, &c))
		return 0;
	gpuext_ringbuf_consumer__consume(c);
	gpuext_ringbuf_consumer__free(c);
	return s->records;
}

static bool ids_are(const struct rb_seen *s, uint32_t threads, bool per_thread)
{
	uint64_t mask[2] = { 0, 0 };
	unsigned want = per_thread ? threads : (threads + 31) / 32;

	if (s->records != want || threads > 128)
		return false;
	for (unsigned i = 0; i < s->records; i++) {
		uint64_t id = s->ids[i];

		if (id >= threads || (!per_thread && id % 32))
			return false;
		mask[id / 64] |= 1ull << (id % 64);
	}
	return (unsigned)(__builtin_popcountll(mask[0]) + __builtin_popcountll(mask[1])) == want;
}

/* Checks one extra case after a run; returns NULL or why it is wrong. */
static const char *check_extra(const char *name, const struct isa_case_env *env, uint32_t threads,
			       bool per_thread, const uint64_t *r0, char *buf, size_t len)
{
	unsigned runners = per_thread ? threads : (threads + 31) / 32;
	struct rb_seen seen;
	uint64_t v[64];
	uint32_t key;

	if (!strcmp(name, "rt_array_shared_counter")) {
		key = 1;
		if (gpuext_map__lookup(env->maps[0], &key, v) || v[0] != runners) {
			snprintf(buf, len, "counter = %" PRIu64 ", want %u (one atomic add per runner)",
				 v[0], runners);
			return buf;
		}
		for (uint32_t t = 0; t < threads; t++)
			if (r0[t])
				return "r0 != 0";
		return NULL;
	}
	if (!strcmp(name, "rt_array_update_out_of_range")) {
		for (uint32_t t = 0; t < threads; t++)
			if (r0[t] != (uint64_t)-E2BIG) {
				snprintf(buf, len, "r0 = 0x%" PRIx64 " on thread %u, want -E2BIG", r0[t], t);
				return buf;
			}
		return NULL;
	}
	if (!strcmp(name, "rt_percpu_counter")) {
		uint64_t sum = 0;

		/* The runtime has one slot (nr_cpu_slots 0 = 1): every SM shares it. */
		key = 0;
		if (gpuext_map__lookup(env->maps[0], &key, v))
			return "lookup failed";
		sum = v[0];
		if (sum != runners) {
			snprintf(buf, len, "sum over slots = %" PRIu64 ", want %u", sum, runners);
			return buf;
		}
		return NULL;
	}
	if (!strcmp(name, "rt_ringbuf_output_ids") || !strcmp(name, "rt_ringbuf_reserve_submit") ||
	    !strcmp(name, "rt_ringbuf_two_sizes")) {
		rb_drain(env->maps[0], &seen);
		if (!ids_are(&seen, threads, per_thread)) {
			snprintf(buf, len, "%u records; want one per runner (%u) with distinct ids",
				 seen.records, runners);
			return buf;
		}
		for (uint32_t t = 0; t < threads; t++)
			if (r0[t])
				return "r0 != 0";
		return NULL;
	}
	if (!strcmp(name, "rt_ringbuf_full") || !strcmp(name, "rt_ringbuf_full_pos32")) {
		unsigned ok = 0, eagain = 0;

		rb_drain(env->maps[0], &seen);
		for (uint32_t t = 0; t < threads; t += per_thread ? 1 : 32) {
			if (r0[t] == 0)
				ok++;
			else if (r0[t] == (uint64_t)-EAGAIN)
				eagain++;
		}
		/* 100-byte records take 112 bytes: at most 36 fit in 4096. */
		if (ok != seen.records || ok + eagain != runners || ok > 36 ||
		    (runners > 36 && ok != 36)) {
			snprintf(buf, len, "%u ok, %u -EAGAIN, %u records consumed (runners %u)", ok,
				 eagain, seen.records, runners);
			return buf;
		}
		return NULL;
	}
	if (!strcmp(name, "rt_hash_update_lookup_delete") || !strcmp(name, "rt_hash_full") ||
	    !strcmp(name, "rt_hash_churn")) {
		bool full = !strcmp(name, "rt_hash_full"), churn = !strcmp(name, "rt_hash_churn");
		unsigned ok = 0, e2big = 0, want_keys = 0, keys = 0;
		uint32_t k, next;
		bool first = true;

		for (uint32_t t = 0; t < threads; t += per_thread ? 1 : 32) {
			if (r0[t] == 0) {
				ok++;
				want_keys += full || churn || !(t & 0x20);
			} else if ((full || (churn && runners > 64)) && r0[t] == (uint64_t)-E2BIG) {
				e2big++;
			} else {
				snprintf(buf, len, "r0 = %" PRId64 " on thread %u", (int64_t)r0[t], t);
				return buf;
			}
		}
		if (ok + e2big != runners || (full && ok != (runners < 8 ? runners : 8))) {
			snprintf(buf, len, "%u inserts ok, %u -E2BIG of %u runners", ok, e2big,
				 runners);
			return buf;
		}
		/* the host map read back: the keys kept, each with its value */
		while (!gpuext_map__next_key(env->maps[0], first ? NULL : &k, &next)) {
			first = false;
			k = next;
			keys++;
			if (gpuext_map__lookup(env->maps[0], &k, v) || v[0] != (uint64_t)k * 3 + 1 ||
			    k >= threads || (!per_thread && k % 32) || (!full && !churn && (k & 0x20)) ||
			    ((full || churn) && r0[k] != 0)) {
				snprintf(buf, len, "key %u = %" PRIu64 " in the map read back", k, v[0]);
				return buf;
			}
		}
		if (keys != want_keys) {
			snprintf(buf, len, "%u keys read back, want %u", keys, want_keys);
			return buf;
		}
		return NULL;
	}
	if (!strcmp(name, "rt_thread_and_lane")) {
		for (uint32_t t = 0; t < threads; t++) {
			uint64_t want = per_thread ? ((uint64_t)(t % 32) << 32 | t) : (t & ~31u);

			if (r0[t] != want) {
				snprintf(buf, len, "r0 = 0x%" PRIx64 " on thread %u, want 0x%" PRIx64,
					 r0[t], t, want);
				return buf;
			}
		}
		return NULL;
	}
	if (!strcmp(name, "rt_warp_votes")) {
		for (uint32_t t = 0; t < threads; t++) {
			uint64_t want = warp_votes_expect(t, threads, !per_thread);

			if (r0[t] != want) {
				snprintf(buf, len, "r0 = 0x%" PRIx64 " on thread %u, want 0x%" PRIx64,
					 r0[t], t, want);
				return buf;
			}
		}
		return NULL;
	}
	if (!strcmp(name, "rt_timers")) {
		for (uint32_t t = 0; t < threads; t++)
			if ((int64_t)r0[t] < 0 || r0[t] > 1000000000ull) {
				snprintf(buf, len, "globaltimer - ktime = %" PRId64 " ns on thread %u",
					 (int64_t)r0[t], t);
				return buf;
			}
		return NULL;
	}
	if (!strcmp(name, "rt_prandom")) {
		unsigned distinct = 0;

		for (uint32_t t = 0; t < threads; t++) {
			bool seen_before = false;

			if (r0[t] >> 32)
				return "a value wider than 32 bits";
			for (uint32_t u = 0; u < t; u++)
				seen_before |= r0[u] == r0[t];
			distinct += !seen_before;
		}
		if (per_thread && threads > 8 && distinct < threads / 2) {
			snprintf(buf, len, "only %u distinct values over %u threads", distinct, threads);
			return buf;
		}
		return NULL;
	}
	return "no check for this case";
}

/* rt_ringbuf_full_pos32: 2048 bytes below 2^32, half-way into a 4096-byte ring. */
#define RB_POS32 UINT64_C(0xfffff800)

/*
 * The same checks as check_extra(), in the bundle's terms (ptx_bundle_run
 * evaluates them): a uniform r0 and/or "check" lines. Returns @checks.
 */
static const char *extra_bundle_checks(const char *name, uint32_t threads, bool per_thread,
				       bool *has_r0, uint64_t *r0, char *checks, size_t len)
{
	unsigned runners = per_thread ? threads : (threads + 31) / 32;

	*has_r0 = true;
	*r0 = 0;
	checks[0] = '\0';
	if (!strcmp(name, "rt_array_shared_counter"))
		snprintf(checks, len, "check map_u64 0 8 %u\n", runners); /* key 1, stride 8 */
	else if (!strcmp(name, "rt_array_update_out_of_range"))
		*r0 = (uint64_t)-E2BIG;
	else if (!strcmp(name, "rt_percpu_counter"))
		snprintf(checks, len, "check map_u64 0 0 %u\n", runners);
	else if (!strcmp(name, "rt_ringbuf_output_ids") || !strcmp(name, "rt_ringbuf_reserve_submit") ||
		 !strcmp(name, "rt_ringbuf_two_sizes"))
		snprintf(checks, len, "check ring_ids 0 %u\n", runners);
	else if (!strcmp(name, "rt_ringbuf_full") && (*has_r0 = false, true))
		snprintf(checks, len, "check ring_vs_r0 0 36\n"); /* 112-byte records in 4096 */
	else if (!strcmp(name, "rt_ringbuf_full_pos32") && (*has_r0 = false, true))
		snprintf(checks, len, "ringpos 0x%" PRIx64 "\ncheck ring_vs_r0 0 36\n", RB_POS32);
	else if (!strcmp(name, "rt_hash_update_lookup_delete")) /* ids 0-31 of every 64 stay */
		snprintf(checks, len, "check hash_keys 0 %u 3\n",
			 per_thread ? threads / 64 * 32 + (threads % 64 < 32 ? threads % 64 : 32) :
				      (threads / 64) + (threads % 64 ? 1 : 0));
	else if (!strcmp(name, "rt_hash_churn") && runners <= 64) /* every runner's key, once */
		snprintf(checks, len, "check hash_keys 0 %u 3\n", runners);
	else if (!strcmp(name, "rt_hash_full") && (*has_r0 = false, true))
		snprintf(checks, len, "check hash_keys 0 %u 3\ncheck r0_ok_or_e2big %u\n",
			 runners < 8 ? runners : 8, runners < 8 ? runners : 8);
	else if (!strcmp(name, "rt_thread_and_lane") && (*has_r0 = false, true))
		snprintf(checks, len, "check r0_lane_thread\n");
	else if (!strcmp(name, "rt_warp_votes") && (*has_r0 = false, true))
		snprintf(checks, len, "check r0_warp_votes\n");
	else if (!strcmp(name, "rt_timers") && (*has_r0 = false, true))
		snprintf(checks, len, "check r0_range 0 1000000000\n");
	else if (!strcmp(name, "rt_prandom") && (*has_r0 = false, true))
		snprintf(checks, len, "check r0_range 0 0xffffffff\ncheck r0_distinct %u\n",
			 per_thread ? threads / 2 : 1);
	return checks;
}

static bool run_extras(const struct opts *o, struct gpuext_ptx_device *dev)
{
	static const struct gpuext_prog_type_desc any = {
		.name = "ptx-selftest", .r2_is_ctx_size = true, .ret_min = INT64_MIN,
		.ret_max = INT64_MAX,
	};
	struct isa_corpus c = { 0 };
	char err[512];
	bool alive = true;

	if (isa_corpus_parse(&c, extra_text, "runtime", err, sizeof(err))) {
		note("  runtime checks: do not parse: %s", err);
		extra_fail++;
		return true;
	}
	for (size_t i = 0; i < c.cnt && alive; i++) {
		const struct isa_case *tc = &c.cases[i];

		for (int m = 0; m < 2 && alive; m++) {
			struct gpuext_runtime *rt = new_rt();
			struct gpuext_prog *prog = NULL;
			struct isa_case_env env;
			uint64_t r0[1024];
			char why[512] = "", buf[256];
			GPUEXT_OPTS(gpuext_ptx_run_opts, ro, .per_thread = m == 0,
				    .threads = o->threads, .timeout_ms = o->timeout_ms, .r0 = r0,
				    .sync_maps = true, .err = why, .err_len = sizeof(why),
				    .rb_start = strcmp(tc->name, "rt_ringbuf_full_pos32") ? 0 : RB_POS32);
			GPUEXT_OPTS(gpuext_verify_opts, vo, .type_desc = &any);
			GPUEXT_OPTS(gpuext_verify_result, res);
			const char *bad = NULL;
			int e;

			if (o->filter && !strstr(tc->name, o->filter)) {
				gpuext_runtime__free(rt);
				continue;
			}
			if (!rt || isa_case_env_init(&env, rt, tc, why, sizeof(why))) {
				note("  runtime/%s: cannot set up: %s", tc->name, why);
				extra_fail++;
				gpuext_runtime__free(rt);
				continue;
			}
			e = gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps,
					     env.map_cnt, &prog);
			if (!e && gpuext_prog__verify(prog, &vo, &res)) {
				bad = "the verifier rejects it";
				e = -EACCES;
			}
			if (!e && o->bundle_dir) {
				char checks[256];
				bool has_r0;
				uint64_t want;

				extra_bundle_checks(tc->name, o->threads, m == 0, &has_r0, &want, checks,
						    sizeof(checks));
				if (!bundle_write(o, prog, tc, &env, m, has_r0 ? &want : NULL, NULL, NULL,
						  checks))
					bad = "emit failed";
			} else if (!e && o->emit_only) {
				char *ptx = NULL;
				size_t len;

				e = gpuext_ptx_emit(prog, NULL, m == 0, &ptx, &len);
				if (e)
					bad = "emit failed";
				save_ptx(o, "runtime", tc->name, m, ptx);
				free(ptx);
			} else if (!e) {
				e = gpuext_ptx_device__run(dev, prog, &ro);
				if (e == -ETIMEDOUT || e == -ENODEV)
					alive = false;
				if (e)
					bad = why[0] ? why : "did not run";
				else
					bad = check_extra(tc->name, &env, o->threads, m == 0, r0, buf,
							  sizeof(buf));
			}
			if (bad) {
				note("  runtime/%s [%s]: %s%s%.400s", tc->name, mode_name[m], bad,
				     logbuf.len ? " | log: " : "", logbuf.buf);
				extra_fail++;
			} else {
				extra_ok++;
			}
			gpuext_prog__free(prog);
			isa_case_env_fini(&env);
			gpuext_runtime__free(rt);
		}
	}
	isa_corpus_free(&c);
	return alive;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ptx_isa_runner [--isa-dir DIR] [--threads N] [--case SUBSTR] [--timeout-ms N]\n"
		"                      [--ptx-dir DIR] [--emit-only] [--bundle DIR]\n"
		"\n"
		"Runs every ISA corpus case the verifier accepts on GPU 0 as PTX, per thread and per\n"
		"warp, and compares r0 and memory with the interpreter; then runtime checks (maps,\n"
		"ring buffer, device helpers). Exit 0 = all agree, 1 = disagreement, 2 = no GPU.\n"
		"  --isa-dir DIR   corpus directory (default %s)\n"
		"  --threads N     threads of the one block (default 64; a multiple of 32)\n"
		"  --case SUBSTR   only cases whose name contains SUBSTR (with --emit-only: print PTX)\n"
		"  --timeout-ms N  per launch (default 10000)\n"
		"  --ptx-dir DIR   write the PTX of every disagreeing case there\n"
		"  --emit-only     no GPU: only emit PTX (checks the runner on any machine)\n"
		"  --bundle DIR    no GPU: write PTX (sm_80 + sm_90) and the interpreter's expectations\n"
		"                  to DIR for tools/gpu/ptx_bundle_run on a machine without gpuext\n",
		GPUEXT_ISA_DIR);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "isa-dir", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "case", required_argument, NULL, 'c' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "ptx-dir", required_argument, NULL, 'p' },
		{ "emit-only", no_argument, NULL, 'e' },
		{ "bundle", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { .isa_dir = GPUEXT_ISA_DIR, .threads = 64, .timeout_ms = 10000 };
	struct gpuext_ptx_device *dev = NULL;
	struct isa_corpus corpus = { 0 };
	unsigned tot[6] = { 0 };
	char err[1024];
	bool alive = true;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o.isa_dir = optarg; break;
		case 't': o.threads = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'c': o.filter = optarg; break;
		case 'T': o.timeout_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': o.ptx_dir = optarg; break;
		case 'e': o.emit_only = true; break;
		case 'b': o.bundle_dir = optarg; o.emit_only = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 3;
		}
	}
	if (!o.threads || o.threads > 1024 || o.threads % 32) {
		fprintf(stderr, "--threads must be a multiple of 32 in 32..1024\n");
		return 3;
	}
	if (o.ptx_dir)
		mkdir(o.ptx_dir, 0755);
	if (o.bundle_dir) {
		char path[1024];

		mkdir(o.bundle_dir, 0755);
		snprintf(path, sizeof(path), "%s/ptx", o.bundle_dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/manifest.txt", o.bundle_dir);
		manifest = fopen(path, "w");
		if (!manifest) {
			fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
			return 3;
		}
		fprintf(manifest, "gpuext-ptx-bundle 1\n# written by ptx_isa_runner --bundle; "
			"run with tools/gpu/ptx_bundle_run (docs/ptx.md)\n");
	}
	if (isa_corpus_load_dir(&corpus, o.isa_dir, err, sizeof(err))) {
		fprintf(stderr, "cannot load the ISA corpus from %s: %s\n", o.isa_dir, err);
		return 3;
	}
	if (!o.emit_only) {
		int e = gpuext_ptx_device__open(0, &dev, err, sizeof(err));

		if (e) {
			fprintf(stderr, "ptx_isa_runner: no usable GPU: %s\n", err);
			isa_corpus_free(&corpus);
			return 2;
		}
		printf("device: %s\n", gpuext_ptx_device__desc(dev));
	} else {
		printf("device: none (%s)\n", o.bundle_dir ? "writing a bundle" : "--emit-only");
	}
	printf("corpus: %zu cases from %s; %u threads per launch (per-thread: %u copies, warp: %u)\n",
	       corpus.cnt, o.isa_dir, o.threads, o.threads, o.threads / 32);
	for (size_t i = 0; i < corpus.cnt && alive; i++) {
		const struct isa_case *tc = &corpus.cases[i];

		if (o.filter && !strstr(tc->name, o.filter))
			continue;
		alive = run_case(&o, dev, tc);
	}
	if (alive)
		alive = run_extras(&o, dev);

	printf("\n%-10s %6s %8s %11s %9s %11s %9s %11s\n", "family", "cases", "skipped",
	       "thread-ok", "warp-ok", "thread-diff", "warp-diff", "expected");
	for (size_t i = 0; i < fam_cnt; i++) {
		struct family *f = &fams[i];

		printf("%-10s %6u %8u %11u %9u %11u %9u %11u\n", f->name, f->cases, f->skipped,
		       f->ok[0], f->ok[1], f->differ[0], f->differ[1], f->expected[0] + f->expected[1]);
		tot[0] += f->cases;
		tot[1] += f->skipped;
		tot[2] += f->ok[0];
		tot[3] += f->ok[1];
		tot[4] += f->differ[0] + f->differ[1];
		tot[5] += f->expected[0] + f->expected[1];
	}
	printf("%-10s %6u %8u %11u %9u %11s %9s %11u\n", "total", tot[0], tot[1], tot[2], tot[3],
	       "", "", tot[5]);
	printf("runtime checks: %u ok, %u failed\n", extra_ok, extra_fail);
	printf("skipped = expects an error, or the verifier rejects it (host type, ctx = input)\n");
	if (report_len)
		printf("\ndisagreements and notes:\n%s", report);
	if (!alive)
		printf("\nSTOPPED EARLY: the GPU became unusable (a timeout or a lost device); "
		       "the cases after it did not run\n");
	printf("\nresult: %s (%u disagreements, %u expected differences, %u runtime check "
	       "failures)\n", failures || extra_fail || !alive ? "FAIL" : "PASS", failures,
	       expected_diffs, extra_fail);
	if (manifest && fclose(manifest)) {
		fprintf(stderr, "writing the manifest failed\n");
		failures++;
	}
	gpuext_ptx_device__close(dev);
	isa_corpus_free(&corpus);
	free(report);
	return failures || extra_fail || !alive ? 1 : 0;
}
