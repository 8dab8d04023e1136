/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eBPF -> PTX (codegen/ptx): every program of the ISA corpus that is a valid
 * encoding (gpuext_prog__new accepts it) -- whether the verifier accepts it
 * or not, whether it expects a result or a runtime error -- and every
 * struct_ops program of the shipped policies, is lowered to PTX in
 * per-thread and warp mode for sm_80 and sm_90, and each PTX must assemble
 * with NVIDIA's ptxas for its sm. An unverified program is only assembled,
 * never run. Cases that are not valid programs, and any valid program that
 * cannot be lowered or assembled, are listed with the reason. Plus unit
 * checks of the emitter (kernel ABI, determinism, sm selection, kfunc stubs,
 * device helpers).
 *
 * ptxas is required: without it this test fails and says how to get it.
 * Running the code on a GPU is tools/gpu/run.sh's job.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asm.h"
#include "gpuext/policy.h"
#include "gpuext/verifier.h"
#include "internal.h"
#include "ptx/ptx.h"
#include "testlib.h"

static struct test_log logbuf;
static char ptxas[1024];
static char tmpdir[64];

static const char *const sms[2] = { "sm_80", "sm_90" };
static const char *const modes[2] = { "per-thread", "warp" };

/* [sm][mode] */
static unsigned lowered[2][2], assembled[2][2];
/* ISA corpus: every case; not a valid program (the assembler or gpuext_prog__new
 * refuses it); valid programs, of which the verifier accepts (expecting a result
 * / expecting a runtime error) or rejects; valid programs lowered and assembled
 * in all four sm x mode combinations. */
static unsigned case_total, case_invalid, case_valid, case_ok, case_runtime_error,
	case_rejected, case_expect_err, case_all_lowered, case_all_assembled;
static unsigned pol_objs, pol_progs;

/* A case or program that is not lowered / assembled, and why (listed at the end). */
#define MAX_NOTES 128
struct note {
	char what[160];
	char why[240];
};
static struct note invalid_notes[MAX_NOTES], exc_notes[MAX_NOTES];
static unsigned invalid_cnt, exc_cnt;

static void add_note(struct note *notes, unsigned *cnt, const char *what, const char *why)
{
	char *nl;

	if (*cnt < MAX_NOTES) {
		/* cut to fit, on purpose (the precision says so to gcc -O3 as well) */
		snprintf(notes[*cnt].what, sizeof(notes[*cnt].what), "%.*s",
			 (int)sizeof(notes[*cnt].what) - 1, what);
		snprintf(notes[*cnt].why, sizeof(notes[*cnt].why), "%.*s",
			 (int)sizeof(notes[*cnt].why) - 1, why);
		nl = strchr(notes[*cnt].why, '\n');
		if (nl)
			*nl = '\0';
	}
	(*cnt)++;
}

static struct gpuext_runtime *new_rt(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &logbuf,
		    .prandom_seed = 1);
	struct gpuext_runtime *rt = NULL;

	test_log_clear(&logbuf);
	if (gpuext_runtime__new(&ro, &rt))
		return NULL;
	return rt;
}

static bool find_ptxas(void)
{
	const char *p = getenv("GPUEXT_PTXAS");

	if (!p || !*p)
		p = GPUEXT_PTXAS;
	if (!*p || strstr(p, "NOTFOUND") || access(p, X_OK)) {
		test_fail(__FILE__, __LINE__,
			  "ptxas not found (GPUEXT_PTXAS='%s'): the PTX backend is checked with NVIDIA's "
			  "assembler. Install the CUDA toolkit (CUDA 12.x/13.x: NVIDIA's cuda-toolkit "
			  "package puts ptxas in /usr/local/cuda/bin, or `apt install nvidia-cuda-toolkit`), "
			  "then re-run cmake, or point GPUEXT_PTXAS at it", p);
		return false;
	}
	snprintf(ptxas, sizeof(ptxas), "%s", p);
	return true;
}

/*
 * Assembles @text with ptxas -arch=@sm. true on success; else prints ptxas'
 * output (the first lines) with @what and leaves its first line in @why.
 */
static bool run_ptxas(const char *text, size_t len, const char *sm, const char *what, char *why,
		      size_t why_len)
{
	char path[128], cmd[1400], out[2048];
	size_t n = 0;
	FILE *f, *p;
	int st;

	if (why && why_len)
		why[0] = '\0';
	snprintf(path, sizeof(path), "%s/prog.ptx", tmpdir);
	f = fopen(path, "w");
	if (!f || fwrite(text, 1, len, f) != len) {
		if (f)
			fclose(f);
		fprintf(stderr, "%s: cannot write %s\n", what, path);
		if (why && why_len)
			snprintf(why, why_len, "cannot write %s", path);
		return false;
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' -arch=%s -o /dev/null '%s' 2>&1", ptxas, sm, path);
	p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "%s: cannot run %s\n", what, ptxas);
		if (why && why_len)
			snprintf(why, why_len, "cannot run ptxas");
		return false;
	}
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s: ptxas -arch=%s failed (status %d):\n%s\n", what, sm, st, out);
		if (getenv("GPUEXT_TEST_VERBOSE"))
			fprintf(stderr, "%s\n", text);
		if (why && why_len)
			snprintf(why, why_len, "ptxas -arch=%s: %.400s", sm, out);
		return false;
	}
	return true;
}

/*
 * Lowers @prog for both sms and both modes; each must assemble. A failure
 * fails the test and is listed among the exceptions with its reason.
 * true when all four lowered and assembled; *all_lowered says whether all
 * four lowered.
 */
static bool lower_all(struct gpuext_prog *prog, const char *what, bool *all_lowered)
{
	bool ok = true, low = true;

	for (int s = 0; s < 2; s++) {
		for (int m = 0; m < 2; m++) {
			char *text = NULL, label[320], why[512];
			size_t len = 0;
			int err;

			snprintf(label, sizeof(label), "%s [%s, %s]", what, sms[s], modes[m]);
			test_log_clear(&logbuf);
			err = gpuext_ptx_emit(prog, sms[s], m == 0, &text, &len);
			test_checks++;
			if (err) {
				snprintf(why, sizeof(why), "gpuext_ptx_emit = %d: %.400s", err, logbuf.buf);
				add_note(exc_notes, &exc_cnt, label, why);
				test_fail(__FILE__, __LINE__, "%s: %s", label, why);
				ok = low = false;
				continue;
			}
			lowered[s][m]++;
			test_checks++;
			if (run_ptxas(text, len, sms[s], label, why, sizeof(why))) {
				assembled[s][m]++;
			} else {
				add_note(exc_notes, &exc_cnt, label, why);
				test_fail(__FILE__, __LINE__, "%s: ptxas rejected the PTX", label);
				ok = false;
			}
			free(text);
		}
	}
	if (all_lowered)
		*all_lowered = low;
	return ok;
}

/* ------------------------------------------------------------------ */
/* Unit checks                                                          */
/* ------------------------------------------------------------------ */

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
						 .off = (o), .imm = (i) })
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define CALL(id) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, id)
#define EXIT INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static char *emit(struct gpuext_prog *prog, const char *sm, bool per_thread)
{
	char *text = NULL;
	size_t len = 0;
	int err = gpuext_ptx_emit(prog, sm, per_thread, &text, &len);

	CHECK_EQ_INT(err, 0);
	if (err) {
		fprintf(stderr, "emit: %s\n", logbuf.buf);
		return NULL;
	}
	CHECK_EQ_U64(len, strlen(text));
	return text;
}

static void test_kernel_abi(void)
{
	const struct bpf_insn insns[] = { MOV64_IMM(0, 42), EXIT };
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_prog *prog = NULL;
	char *a, *b, *w, *s90, *bad = NULL;
	size_t len = 0;

	CHECK(rt);
	CHECK_EQ_INT(gpuext_prog__new(rt, "answer", insns, 2, NULL, 0, &prog), 0);
	if (!prog)
		goto out;
	a = emit(prog, NULL, true);
	b = emit(prog, "sm_80", true);
	w = emit(prog, "sm_80", false);
	s90 = emit(prog, "sm_90", true);
	if (a && b && w && s90) {
		/* Deterministic, default sm_80, PTX ISA 8.0, the documented kernel. */
		CHECK(!strcmp(a, b));
		CHECK_STR_CONTAINS(a, ".version 8.0");
		CHECK_STR_CONTAINS(a, ".target sm_80");
		CHECK_STR_CONTAINS(s90, ".target sm_90");
		CHECK_STR_CONTAINS(a, ".visible .entry " GPUEXT_PTX_KERNEL "(");
		CHECK_STR_CONTAINS(a, GPUEXT_PTX_KERNEL "_param_4");
		CHECK(!strstr(a, GPUEXT_PTX_KERNEL "_param_5"));
		CHECK_STR_CONTAINS(a, ".visible .global .align 8 .b8 gpuext_rt_maps[40]");
		CHECK_STR_CONTAINS(a, "gpuext_rt_prandom_seed");
		CHECK_STR_CONTAINS(a, "42");
		/* O2 inlined the program: one function, the kernel. */
		CHECK(!strstr(a, ".func"));
		/* Warp mode: leader election and the broadcast. */
		CHECK(!strstr(a, "activemask"));
		CHECK_STR_CONTAINS(w, "activemask.b32");
		CHECK_STR_CONTAINS(w, "shfl.sync.idx.b32");
		CHECK(run_ptxas(a, strlen(a), "sm_80", "answer", NULL, 0));
		CHECK(run_ptxas(w, strlen(w), "sm_80", "answer warp", NULL, 0));
		CHECK(run_ptxas(s90, strlen(s90), "sm_90", "answer sm_90", NULL, 0));
	}
	free(a);
	free(b);
	free(w);
	free(s90);
	/* An sm gpuext does not emit for. */
	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_ptx_emit(prog, "sm_10", true, &bad, &len), -EINVAL);
	CHECK(!bad);
	CHECK_STR_CONTAINS(logbuf.buf, "unsupported target 'sm_10'");
	gpuext_prog__free(prog);
out:
	gpuext_runtime__free(rt);
}

/* Emits @prog for sm_80, checks that its PTX holds every string of @want, assembles it. */
static void emit_has(struct gpuext_prog *prog, const char *name, const char *const *want)
{
	char *t = emit(prog, "sm_80", true);

	if (t) {
		for (; *want; want++)
			CHECK_STR_CONTAINS(t, *want);
		CHECK(run_ptxas(t, strlen(t), "sm_80", name, NULL, 0));
	}
	free(t);
}

/* How many times @needle occurs in @prog's per-thread PTX for sm_80 (-1: no PTX). */
static int emit_count(struct gpuext_prog *prog, const char *needle)
{
	char *t = emit(prog, "sm_80", true);
	int n = 0;

	if (!t)
		return -1;
	for (const char *p = t; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(t);
	return n;
}

/*
 * A program of warp collectives: its result on the host interpreter, and in
 * its per-thread PTX one active mask and @ballots votes (and a shfl where it
 * has none: the other collectives).
 */
static void check_collectives(struct gpuext_runtime *rt, const char *name, const struct bpf_insn *insns,
			      size_t n, uint64_t want_r0, int ballots)
{
	struct gpuext_prog *prog = NULL;
	GPUEXT_OPTS(gpuext_run_opts, ro);
	uint64_t r0 = 0;

	CHECK_EQ_INT(gpuext_prog__new(rt, name, insns, n, NULL, 0, &prog), 0);
	if (!prog)
		return;
	CHECK_EQ_INT(gpuext_prog__run(prog, &ro, &r0), 0);
	CHECK_EQ_U64(r0, want_r0);
	emit_has(prog, name, (const char *const[]){ "activemask.b32",
			 ballots ? "vote.sync.ballot.b32" : "shfl.sync.idx.b32", NULL });
	CHECK_EQ_INT(emit_count(prog, "activemask.b32"), 1);
	CHECK_EQ_INT(emit_count(prog, "vote.sync.ballot"), ballots);
	gpuext_prog__free(prog);
}

/* Helpers: the device ones inline to special registers, unknown ones to -EOPNOTSUPP. */
static void test_helpers(void)
{
	const struct bpf_insn lane[] = { CALL(GPUEXT_FUNC_get_lane_id), EXIT };
	const struct bpf_insn helpers[] = {
		CALL(BPF_FUNC_ktime_get_ns), INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 0, 0, 0),
		CALL(BPF_FUNC_get_smp_processor_id), INSN(BPF_ALU64 | BPF_ADD | BPF_X, 6, 0, 0, 0),
		CALL(BPF_FUNC_get_prandom_u32), INSN(BPF_ALU64 | BPF_ADD | BPF_X, 0, 6, 0, 0), EXIT,
	};
	const struct bpf_insn votes[] = {
		MOV64_IMM(1, 5), CALL(GPUEXT_FUNC_warp_ballot), INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 0, 0, 0),
		MOV64_IMM(1, 7), CALL(GPUEXT_FUNC_warp_first), INSN(BPF_ALU64 | BPF_ADD | BPF_X, 6, 0, 0, 0),
		MOV64_IMM(1, 9), MOV64_IMM(2, 0), CALL(GPUEXT_FUNC_warp_shfl),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 6, 0, 0, 0),
		MOV64_IMM(1, 11), MOV64_IMM(2, 40), CALL(GPUEXT_FUNC_warp_shfl),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 0, 6, 0, 0), EXIT,
	};
	/* two ballots of lane bits: votes that stay, over one mask */
	const struct bpf_insn lanevotes[] = {
		CALL(GPUEXT_FUNC_get_lane_id), INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0), INSN(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, 1),
		CALL(GPUEXT_FUNC_warp_ballot), INSN(BPF_ALU64 | BPF_MOV | BPF_X, 7, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0), INSN(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, 2),
		CALL(GPUEXT_FUNC_warp_ballot), INSN(BPF_ALU64 | BPF_ADD | BPF_X, 0, 7, 0, 0), EXIT,
	};
	const struct bpf_insn varstack[] = {
		CALL(BPF_FUNC_get_prandom_u32), INSN(BPF_ALU64 | BPF_AND | BPF_K, 0, 0, 0, 8),
		INSN(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, 0),
		INSN(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -16, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 1, 0, 0, 0), MOV64_IMM(2, 5),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, -16, BPF_ADD),
		INSN(BPF_LDX | BPF_MEM | BPF_DW, 0, 10, -8, 0),
		INSN(BPF_LDX | BPF_MEM | BPF_DW, 3, 10, -16, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 0, 3, 0, 0), EXIT,
	};
	const struct bpf_insn amax[] = {
		INSN(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, 5),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0), INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -8),
		MOV64_IMM(2, 8), MOV64_IMM(3, 9), CALL(GPUEXT_FUNC_atomic_max),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0), INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -8),
		MOV64_IMM(2, 8), MOV64_IMM(3, 3), CALL(GPUEXT_FUNC_atomic_max),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 6, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0), INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -8),
		MOV64_IMM(2, 4), MOV64_IMM(3, 100), CALL(GPUEXT_FUNC_atomic_max),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 6, 0, 0, 0),
		INSN(BPF_LDX | BPF_MEM | BPF_DW, 0, 10, -8, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 0, 6, 0, 0), EXIT,
	};
	const struct bpf_insn printk[] = {
		MOV64_IMM(1, 0), INSN(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -8, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0), INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -8),
		MOV64_IMM(2, 1), CALL(BPF_FUNC_trace_printk), EXIT,
	};
	struct gpuext_runtime *rt = new_rt();
	const struct gpuext_func_proto *p;
	struct gpuext_prog *prog = NULL;

	if (!rt) {
		CHECK(rt);
		return;
	}
	/* every runtime declares the device helpers (core/helpers.c) */
	p = gpuext_runtime__find_func(rt, GPUEXT_FUNC_HELPER, GPUEXT_FUNC_get_lane_id);
	CHECK(p && !strcmp(p->name, "gpuext_get_lane_id") && (p->flags & GPUEXT_FN_DEVICE_ONLY));
	p = gpuext_runtime__find_func(rt, GPUEXT_FUNC_HELPER, GPUEXT_FUNC_get_globaltimer);
	CHECK(p && !strcmp(p->name, "gpuext_get_globaltimer"));

	CHECK_EQ_INT(gpuext_prog__new(rt, "lane", lane, 2, NULL, 0, &prog), 0);
	if (prog) {
		GPUEXT_OPTS(gpuext_verify_opts, host, .type = GPUEXT_PROG_HOST);
		GPUEXT_OPTS(gpuext_verify_result, res);

		/* Device only: a host program may not call it, a probe may. */
		CHECK_EQ_INT(gpuext_prog__verify(prog, &host, &res), -EACCES);
		CHECK_EQ_INT(res.rule, GPUEXT_RULE_BAD_CALL);
		emit_has(prog, "lane", (const char *const[]){ "%laneid", NULL });
		gpuext_prog__free(prog);
		prog = NULL;
	}
	CHECK_EQ_INT(gpuext_prog__new(rt, "helpers", helpers, 7, NULL, 0, &prog), 0);
	if (prog) {
		emit_has(prog, "helpers",
			 (const char *const[]){ "%globaltimer", "%smid", "%clock64", NULL });
		gpuext_prog__free(prog);
		prog = NULL;
	}
	/*
	 * Warp votes: ballot(5) + first(7) + shfl(9, lane 0) + shfl(11, lane 40).
	 * On the host a warp is lane 0 alone: 1 + 7 + 9 + 0 = 17.
	 */
	/*
	 * The collectives run under warp-uniform control only (the verifier), so
	 * one active mask serves them all (ptx_runtime.c, gx.warp_mask): read
	 * once for the program, not once per call; and a ballot of a constant
	 * true is that mask, no vote (votes: ballot(5), first, two shfl: r0 17 on
	 * the host). lanevotes: two ballots of lane bits, which stay; on the host
	 * one lane, lane 0, so r0 is 0.
	 */
	check_collectives(rt, "votes", votes, sizeof(votes) / sizeof(votes[0]), 17, 0);
	check_collectives(rt, "lanevotes", lanevotes, sizeof(lanevotes) / sizeof(lanevotes[0]), 0, 2);
	/*
	 * An atomic on the stack at a variable offset (what clang emits for
	 * __sync_fetch_and_add(&local[i], v)): r0 = (random & 8), the add lands on
	 * one of two zeroed slots, their sum is 5. PTX has no .local atomics and
	 * the address is not global, so it must become plain code, never an
	 * atomic (a global one would write at a meaningless address).
	 */
	CHECK_EQ_INT(gpuext_prog__new(rt, "varstack", varstack,
				      sizeof(varstack) / sizeof(varstack[0]), NULL, 0, &prog), 0);
	if (prog) {
		GPUEXT_OPTS(gpuext_run_opts, ro);
		uint64_t r0 = 0;
		char *t;

		CHECK_EQ_INT(gpuext_prog__run(prog, &ro, &r0), 0);
		CHECK_EQ_U64(r0, 5);
		t = emit(prog, "sm_80", true);
		if (t) {
			CHECK(!strstr(t, "atom.") && !strstr(t, "red."));
			CHECK(run_ptxas(t, strlen(t), "sm_80", "varstack", NULL, 0));
		}
		free(t);
		gpuext_prog__free(prog);
		prog = NULL;
	}
	/*
	 * gpuext_atomic_max on a stack slot holding 5: max with 9 (0), with 3
	 * (0), then a 4-byte size (-EINVAL, nothing written): 9 + 0 + 0 - 22.
	 * On the stack the atomic becomes plain code (a compare and a select).
	 */
	CHECK_EQ_INT(gpuext_prog__new(rt, "amax", amax, sizeof(amax) / sizeof(amax[0]), NULL, 0,
				      &prog), 0);
	if (prog) {
		GPUEXT_OPTS(gpuext_run_opts, ro);
		uint64_t r0 = 0;
		char *t;

		CHECK_EQ_INT(gpuext_prog__run(prog, &ro, &r0), 0);
		CHECK_EQ_U64(r0, (uint64_t)(9 - 22));
		t = emit(prog, "sm_80", true);
		if (t) {
			CHECK(!strstr(t, "atom.") && !strstr(t, "red."));
			CHECK(strstr(t, "max.u64") || strstr(t, "selp.b64") || strstr(t, "setp.gt.u64"));
			CHECK(run_ptxas(t, strlen(t), "sm_80", "amax", NULL, 0));
		}
		free(t);
		gpuext_prog__free(prog);
		prog = NULL;
	}
	/* trace_printk has no device form: its stub returns -EOPNOTSUPP (-95). */
	CHECK_EQ_INT(gpuext_prog__new(rt, "printk", printk, 7, NULL, 0, &prog), 0);
	if (prog) {
		emit_has(prog, "printk", (const char *const[]){ "-95", NULL });
		gpuext_prog__free(prog);
	}
	gpuext_runtime__free(rt);
}

/*
 * A hash map's device table (ptx.h's layout, built from the host map) and
 * what a run's table does to the host map when read back: a key the device
 * deleted goes, a changed value and a new key come in, a bucket left BUSY
 * (a claim never finished) is no entry, and a damaged header is refused.
 */
static void test_hash_image_and_read_back(struct gpuext_map *hash)
{
	struct gpuext_ptx_map_desc d;
	uint8_t *img = NULL, *b;
	size_t bytes = 0;
	uint64_t v, got;
	uint32_t k, nk = 0, next, first = 1, busy = GPUEXT_PTX_HASH_BUSY;

	for (k = 1; k <= 3; k++) {
		v = k * 10;
		CHECK_EQ_INT(gpuext_map__update(hash, &k, &v, BPF_ANY), 0);
	}
	CHECK_EQ_INT(gpuext_ptx_map_image(hash, &d, &img, &bytes), 0);
	CHECK_EQ_U64(d.type, BPF_MAP_TYPE_HASH);
	CHECK_EQ_U64(d.max_entries, 4);
	CHECK_EQ_U64(bytes, 16 + 8 * 24);	/* 8 buckets of u32 state, u32 hash, key, value */
	if (!img || bytes != 16 + 8 * 24) {
		free(img);
		return;
	}
	k = 2;
	CHECK(gpuext_ptx_hash_lookup(img, 4, &k) != NULL);
	if (gpuext_ptx_hash_lookup(img, 4, &k)) {
		memcpy(&got, gpuext_ptx_hash_lookup(img, 4, &k), 8);
		CHECK_EQ_U64(got, 20);
		/* what a run could leave: key 2 deleted, key 3 = 33, key 4 = 40 */
		b = (uint8_t *)gpuext_ptx_hash_lookup(img, 4, &k) - 16;
		busy = GPUEXT_PTX_HASH_DELETED;
		memcpy(b, &busy, 4);
		((struct gpuext_ptx_hash_hdr *)img)->count--;
	}
	k = 3;
	v = 33;
	CHECK_EQ_INT(gpuext_ptx_hash_insert(img, 4, 8, &k, &v), 0);
	k = 4;
	v = 40;
	CHECK_EQ_INT(gpuext_ptx_hash_insert(img, 4, 8, &k, &v), 0);
	/* key 9 claimed but never filled */
	k = 9;
	v = 90;
	CHECK_EQ_INT(gpuext_ptx_hash_insert(img, 4, 8, &k, &v), 0);
	CHECK_EQ_INT(gpuext_ptx_hash_insert(img, 4, 8, &(uint32_t){ 11 }, &v), -E2BIG); /* 4 live */
	if (gpuext_ptx_hash_lookup(img, 4, &k)) {
		busy = GPUEXT_PTX_HASH_BUSY;
		memcpy((uint8_t *)gpuext_ptx_hash_lookup(img, 4, &k) - 16, &busy, 4);
	}
	CHECK_EQ_INT(gpuext_ptx_hash_read_back(hash, img, bytes), 0);
	for (k = 1; k <= 9; k++) {
		uint64_t want = k == 1 ? 10 : k == 3 ? 33 : k == 4 ? 40 : 0;

		v = 0;
		CHECK_EQ_INT(gpuext_map__lookup(hash, &k, &v), want ? 0 : -ENOENT);
		CHECK_EQ_U64(v, want);
	}
	while (!gpuext_map__next_key(hash, first ? NULL : &k, &next)) {
		first = 0;
		k = next;
		nk++;
	}
	CHECK_EQ_INT(nk, 3);
	/* a damaged table changes nothing */
	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_ptx_hash_read_back(hash, img, 15), -EBADMSG);
	((struct gpuext_ptx_hash_hdr *)img)->nr_buckets = 64;
	CHECK_EQ_INT(gpuext_ptx_hash_read_back(hash, img, bytes), -EBADMSG);
	CHECK_STR_CONTAINS(logbuf.buf, "map 'h': the device's table header is damaged");
	k = 1;
	CHECK_EQ_INT(gpuext_map__lookup(hash, &k, &v), 0);
	free(img);
}

/* Device images of maps, and the runner's answer on a machine without a GPU. */
static void test_maps_and_runner(void)
{
	const struct bpf_insn insns[] = { MOV64_IMM(0, 1), EXIT };
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_map *arr = NULL, *hash = NULL, *rb = NULL;
	struct gpuext_ptx_map_desc d;
	struct gpuext_prog *prog = NULL;
	uint8_t *img = NULL;
	size_t bytes = 0;
	uint64_t r0 = 0, v = 0x1122334455667788ull;
	uint32_t key = 2;
	int err;

	if (!rt) {
		CHECK(rt);
		return;
	}
	{
		GPUEXT_OPTS(gpuext_map_def, a, .name = "a", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
			    .value_size = 12, .max_entries = 3);
		GPUEXT_OPTS(gpuext_map_def, h, .name = "h", .type = BPF_MAP_TYPE_HASH, .key_size = 4,
			    .value_size = 8, .max_entries = 4);
		GPUEXT_OPTS(gpuext_map_def, r, .name = "r", .type = BPF_MAP_TYPE_RINGBUF,
			    .max_entries = 4096);

		CHECK_EQ_INT(gpuext_map__create(rt, &a, &arr), 0);
		CHECK_EQ_INT(gpuext_map__create(rt, &h, &hash), 0);
		CHECK_EQ_INT(gpuext_map__create(rt, &r, &rb), 0);
	}
	if (arr && hash && rb) {
		uint8_t val[12] = { 0 };

		memcpy(val, &v, 8);
		CHECK_EQ_INT(gpuext_map__update(arr, &key, val, BPF_ANY), 0);
		CHECK_EQ_INT(gpuext_ptx_map_image(arr, &d, &img, &bytes), 0);
		CHECK_EQ_U64(d.type, BPF_MAP_TYPE_ARRAY);
		CHECK_EQ_U64(d.stride, 16);
		CHECK_EQ_U64(d.nr_slots, 1);
		CHECK_EQ_U64(d.base, 0);
		CHECK_EQ_U64(bytes, 3 * 16);
		if (img && bytes == 48) {
			uint64_t got;

			memcpy(&got, img + 2 * 16, 8);
			CHECK_EQ_U64(got, v);
			CHECK_EQ_U64(img[16], 0);
		}
		free(img);
		img = NULL;
		CHECK_EQ_INT(gpuext_ptx_map_image(rb, &d, &img, &bytes), 0);
		CHECK(!img);
		CHECK_EQ_U64(bytes, 4096);
		test_hash_image_and_read_back(hash);
	}
	/* Without libcuda or a GPU the runner says so and fails cleanly. */
	CHECK_EQ_INT(gpuext_prog__new(rt, "one", insns, 2, NULL, 0, &prog), 0);
	if (prog) {
		test_log_clear(&logbuf);
		err = gpuext_ptx_run(prog, NULL, 0, true, &r0);
		if (err == -ENODEV) {
			CHECK_STR_CONTAINS(logbuf.buf, "ptx: program one on the GPU: ");
		} else {
			/* A machine with a GPU: it must have run. */
			CHECK_EQ_INT(err, 0);
			CHECK_EQ_U64(r0, 1);
		}
		gpuext_prog__free(prog);
	}
	gpuext_map__destroy(arr);
	gpuext_map__destroy(hash);
	gpuext_map__destroy(rb);
	gpuext_runtime__free(rt);
}

/* ------------------------------------------------------------------ */
/* The ISA corpus                                                       */
/* ------------------------------------------------------------------ */

/*
 * Every case whose program is a valid encoding is lowered and assembled:
 * verified or not, expecting a result or a runtime error (an unverified
 * program is never run here, only assembled). A case that is not a valid
 * program (its text does not assemble, or gpuext_prog__new refuses it) is
 * listed; it is a failure only when the case expects to run successfully.
 */
static void lower_case(const struct isa_case *tc)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_prog *prog = NULL;
	struct isa_case_env env;
	bool expect_err = tc->error || tc->error_any;
	bool all_lowered = false;
	char why[512], what[256];

	case_total++;
	snprintf(what, sizeof(what), "%s/%s", tc->family, tc->name);
	if (!rt) {
		test_fail(__FILE__, __LINE__, "%s: no runtime", what);
		return;
	}
	if (isa_case_env_init(&env, rt, tc, why, sizeof(why))) {
		case_invalid++;
		add_note(invalid_notes, &invalid_cnt, what, why);
		if (!expect_err)
			test_fail(__FILE__, __LINE__, "%s: cannot set up the case: %s", what, why);
		gpuext_runtime__free(rt);
		return;
	}
	test_log_clear(&logbuf);
	if (gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps, env.map_cnt, &prog)) {
		snprintf(why, sizeof(why), "gpuext_prog__new: %.400s", logbuf.buf);
		case_invalid++;
		add_note(invalid_notes, &invalid_cnt, what, why);
		if (!expect_err)
			test_fail(__FILE__, __LINE__, "%s: gpuext_prog__new failed: %s", what,
				  logbuf.buf);
	} else {
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST,
			    .ctx_size = (uint32_t)env.mem_len);
		GPUEXT_OPTS(gpuext_verify_result, res);

		case_valid++;
		case_expect_err += expect_err;
		test_log_clear(&logbuf);
		if (gpuext_prog__verify(prog, &vo, &res)) {
			case_rejected++;
			if (getenv("GPUEXT_TEST_VERBOSE"))
				fprintf(stderr, "%s: verifier rejects (%s), lowered anyway\n", what,
					gpuext_rule_name(res.rule));
		} else if (expect_err) {
			case_runtime_error++;
		} else {
			case_ok++;
		}
		if (lower_all(prog, what, &all_lowered))
			case_all_assembled++;
		if (all_lowered)
			case_all_lowered++;
		gpuext_prog__free(prog);
	}
	isa_case_env_fini(&env);
	gpuext_runtime__free(rt);
}

static void test_isa_corpus(void)
{
	struct isa_corpus corpus = { 0 };
	char err[512];

	if (isa_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/isa", err, sizeof(err))) {
		test_fail(__FILE__, __LINE__, "ISA corpus: %s", err);
		return;
	}
	for (size_t i = 0; i < corpus.cnt; i++)
		lower_case(&corpus.cases[i]);
	isa_corpus_free(&corpus);
	CHECK(case_ok > 300);
	CHECK(case_valid > 400);
	CHECK_EQ_U64(case_total, case_invalid + case_valid);
	CHECK_EQ_U64(case_valid, case_ok + case_runtime_error + case_rejected);
}

/* ------------------------------------------------------------------ */
/* Policies: struct_ops programs call kfuncs, stubbed to -EINVAL         */
/* ------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lower_policy(const char *dir, const char *file)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj = NULL;
	struct gpuext_policy *pol = NULL;
	char path[1024];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	err = rt ? gpuext_object__open_file(rt, path, NULL, &obj) : -ENOMEM;
	if (!err)
		err = gpuext_policy__open(obj, NULL, &pol); /* verifies every member as its hook */
	test_checks++;
	if (err) {
		test_fail(__FILE__, __LINE__, "%s: cannot open/verify the policy (%d): %s", path, err,
			  logbuf.buf);
		goto out;
	}
	pol_objs++;
	for (size_t i = 0; i < gpuext_object__struct_ops_cnt(obj); i++) {
		const struct gpuext_struct_ops *so = gpuext_object__struct_ops(obj, i);

		for (size_t m = 0; m < so->member_cnt; m++) {
			char what[256];

			snprintf(what, sizeof(what), "%s:%s.%s", file, so->type_name,
				 so->members[m].member);
			pol_progs++;
			lower_all(so->members[m].prog, what, NULL);
		}
	}
out:
	gpuext_policy__close(pol);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

static void test_policies(void)
{
	DIR *d = opendir(GPUEXT_POLICY_DIR);
	char *names[128];
	size_t n = 0;
	struct dirent *de;

	if (!d) {
		test_fail(__FILE__, __LINE__, "no policy directory %s (build the 'policies' target)",
			  GPUEXT_POLICY_DIR);
		return;
	}
	while ((de = readdir(d)) && n < 128) {
		size_t l = strlen(de->d_name);

		if (l > 6 && !strcmp(de->d_name + l - 6, ".bpf.o"))
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (names[i])
			lower_policy(GPUEXT_POLICY_DIR, names[i]);
		free(names[i]);
	}
	CHECK(n >= 10);
	CHECK_EQ_U64(pol_objs, n);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gpuext-ptx-XXXXXX");
	if (!find_ptxas())
		return test_done("test_codegen_ptx");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_kernel_abi();
	test_helpers();
	test_maps_and_runner();
	test_isa_corpus();
	test_policies();

	printf("ISA corpus: %u cases: %u not a valid program, %u valid programs (%u verified "
	       "expecting a result, %u verified expecting a runtime error, %u rejected by the "
	       "verifier; %u of them expect an error); %u lowered and %u assembled in all 4 "
	       "sm x mode combinations\n",
	       case_total, case_invalid, case_valid, case_ok, case_runtime_error, case_rejected,
	       case_expect_err, case_all_lowered, case_all_assembled);
	printf("not a valid program (%u, not lowered):\n", invalid_cnt);
	for (unsigned i = 0; i < invalid_cnt && i < MAX_NOTES; i++)
		printf("  %s: %s\n", invalid_notes[i].what, invalid_notes[i].why);
	printf("valid programs not lowered or not assembled (%u):\n", exc_cnt);
	for (unsigned i = 0; i < exc_cnt && i < MAX_NOTES; i++)
		printf("  %s: %s\n", exc_notes[i].what, exc_notes[i].why);
	printf("policies: %u objects, %u struct_ops programs\n", pol_objs, pol_progs);
	printf("%-6s %-10s %8s %10s\n", "sm", "mode", "lowered", "assembled");
	for (int s = 0; s < 2; s++)
		for (int m = 0; m < 2; m++)
			printf("%-6s %-10s %8u %10u\n", sms[s], modes[m], lowered[s][m],
			       assembled[s][m]);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/prog.ptx", tmpdir);
		unlink(path);
		rmdir(tmpdir);
	}
	return test_done("test_codegen_ptx");
}
