/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ISA corpus runner: every case of tests/isa/\*.isa, assembled, run in
 * the reference interpreter and checked; plus a disasm -> asm round trip of
 * each program. The corpus reader is in core/isa_corpus.c (isa_corpus_load_dir,
 * isa_case_env_init) so that the conformance plugin, the JIT and the
 * PTX/SPIR-V backends run the same cases.
 *
 * Format of a .isa file (one file per instruction family; the file name is
 * the family). Lines starting with '#' are comments.
 *
 *   case NAME                      starts a case
 *   input 01 02 0a0b ...           input memory, hex bytes (may repeat: appended).
 *                                  The runner passes it as the context: r1 points
 *                                  to a writable copy, r2 = its length. Without
 *                                  it r1 = 0 and r2 = 0.
 *   map NAME TYPE key=K value=V entries=N
 *                                  a map (TYPE: array, percpu_array, hash,
 *                                  lru_hash, ringbuf), created in the case's
 *                                  runtime; map_fd[NAME] names its runtime id,
 *                                  map[NAME] its index in the case's map list
 *   update NAME KEYHEX VALUEHEX    an element stored before the run
 *   var ID SIZE [ro] [HEX]         a variable for ld_imm64 src=3 (var[ID]):
 *                                  SIZE bytes, initialised from HEX (rest 0),
 *                                  writable unless "ro"
 *   asm                            the program, in the assembler's syntax
 *     ...                          (core/asm.h), up to a line "end"
 *   end
 *   result 0x2a                    expected r0 (any 64-bit number, -1 allowed)
 *   mem 01 02 ...                  expected input memory after the run
 *   error EFAULT [text]            expected failure (of gpuext_prog__new() or of
 *                                  the run) with this errno, and a logged
 *                                  message containing [text] if given;
 *                                  "error any" accepts any failure
 *
 * Expected values are computed by hand from RFC 9669, not by running an
 * implementation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asm.h"
#include "internal.h"
#include "testlib.h"

struct family_count {
	char name[64];
	unsigned pass, fail;
};

static struct family_count families[64];
static size_t family_cnt;

static struct family_count *family(const char *name)
{
	for (size_t i = 0; i < family_cnt; i++)
		if (!strcmp(families[i].name, name))
			return &families[i];
	if (family_cnt == sizeof(families) / sizeof(families[0]))
		return &families[family_cnt - 1];
	snprintf(families[family_cnt].name, sizeof(families[0].name), "%s", name);
	return &families[family_cnt++];
}

/* disasm -> asm of the whole program must give the same bytes back. */
static bool round_trip(const struct gpuext_prog *prog, const struct isa_case_env *env,
		       struct gpuext_runtime *rt, char *why, size_t why_len)
{
	GPUEXT_OPTS(gpuext_asm_opts, ao, .rt = rt, .maps = env->maps, .map_cnt = env->map_cnt);
	size_t cap = env->insn_cnt * 128 + 1, len = 0, cnt = 0;
	char *text = malloc(cap), err[256];
	struct bpf_insn *back = NULL;
	bool ok = true;

	if (!text)
		return false;
	text[0] = '\0';
	for (size_t idx = 0; idx < env->insn_cnt;) {
		char line[256];
		int n = gpuext_disasm_insn(prog, env->insns, env->insn_cnt, idx, line, sizeof(line));

		if (n < 0) { /* a deliberately invalid program: nothing to compare */
			free(text);
			return true;
		}
		len += (size_t)snprintf(text + len, cap - len, "%s\n", line);
		idx += (size_t)n;
	}
	if (gpuext_asm(text, &ao, &back, &cnt, err, sizeof(err))) {
		snprintf(why, why_len, "assembling our own disassembly failed: %s", err);
		ok = false;
	} else if (cnt != env->insn_cnt || memcmp(back, env->insns, cnt * sizeof(*back))) {
		snprintf(why, why_len, "disasm -> asm gives other bytes");
		ok = false;
	}
	free(back);
	free(text);
	return ok;
}

/* Runs one case; returns true if it behaved as expected, else explains in @why. */
static bool run_case(const struct isa_case *tc, char *why, size_t why_len)
{
	static struct test_log log;
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &log,
		    .prandom_seed = 1);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_prog *prog = NULL;
	struct isa_case_env env;
	uint64_t r0 = 0;
	bool ok = false;
	int err;

	test_log_clear(&log);
	if (gpuext_runtime__new(&ro, &rt)) {
		snprintf(why, why_len, "no runtime");
		return false;
	}
	err = isa_case_env_init(&env, rt, tc, why, why_len);
	if (err)
		goto out;
	err = gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps, env.map_cnt,
			       &prog);
	if (!err) {
		GPUEXT_OPTS(gpuext_run_opts, opts, .ctx = env.mem, .ctx_len = env.mem_len,
			    .ctx_writable = true, .insn_limit = 10000000);

		if (!round_trip(prog, &env, rt, why, why_len))
			goto out;
		err = gpuext_prog__run(prog, &opts, &r0);
	}
	if (tc->error || tc->error_any) {
		if (!err) {
			snprintf(why, why_len, "succeeded with r0 = 0x%llx; want error %s",
				 (unsigned long long)r0, tc->error_any ? "any" : isa_errno_name(tc->error));
		} else if (!tc->error_any && err != tc->error) {
			snprintf(why, why_len, "failed with %s, want %s (log: %.400s)", isa_errno_name(err),
				 isa_errno_name(tc->error), log.buf);
		} else if (tc->error_msg && !strstr(log.buf, tc->error_msg)) {
			snprintf(why, why_len, "log does not mention \"%.100s\": %.400s", tc->error_msg, log.buf);
		} else {
			ok = true;
		}
		goto out;
	}
	if (err) {
		snprintf(why, why_len, "failed with %s (%d): %.400s", isa_errno_name(err), err, log.buf);
		goto out;
	}
	if (tc->has_result && r0 != tc->result) {
		snprintf(why, why_len, "r0 = 0x%llx, want 0x%llx", (unsigned long long)r0,
			 (unsigned long long)tc->result);
		goto out;
	}
	if (tc->has_mem && (tc->mem_len != env.mem_len || memcmp(tc->mem, env.mem, env.mem_len))) {
		size_t at = 0;

		while (at < env.mem_len && at < tc->mem_len && tc->mem[at] == env.mem[at])
			at++;
		snprintf(why, why_len, "memory differs at byte %zu: 0x%02x, want 0x%02x", at,
			 at < env.mem_len ? env.mem[at] : 0, at < tc->mem_len ? tc->mem[at] : 0);
		goto out;
	}
	ok = true;
out:
	gpuext_prog__free(prog);
	isa_case_env_fini(&env);
	gpuext_runtime__free(rt);
	return ok;
}

/*
 * isa_corpus_each_file (both corpora load through it): files in name order,
 * the stem without the suffix, the first error stops it, and a folder with
 * none or no folder at all is an error that names it.
 */
static int collect(void *c, const char *text, const char *stem, char *err, size_t err_len)
{
	char *seen = c;

	if (!strcmp(text, "fail\n")) {
		snprintf(err, err_len, "%s: refused", stem);
		return -EINVAL;
	}
	strcat(seen, stem);
	strcat(seen, "=");
	strncat(seen, text, strcspn(text, "\n"));
	strcat(seen, ";");
	return 0;
}

static void test_each_file(void)
{
	char dir[] = "/tmp/gpuext-isa-each-XXXXXX", path[256], seen[256] = "", err[256] = "";
	static const char *const files[][2] = { { "b.isa", "2\n" }, { "a.isa", "1\n" },
						{ "c.vf", "x\n" }, { ".isa", "dot\n" } };

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	CHECK_EQ_INT(isa_corpus_each_file(dir, ".isa", collect, seen, err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "no .isa files in /tmp/gpuext-isa-each-");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
		f = fopen(path, "w");
		CHECK(f != NULL);
		if (f) {
			fputs(files[i][1], f);
			fclose(f);
		}
	}
	CHECK_EQ_INT(isa_corpus_each_file(dir, ".isa", collect, seen, err, sizeof(err)), 0);
	CHECK(!strcmp(seen, "a=1;b=2;"));	/* name order; ".isa" alone has no stem */
	snprintf(path, sizeof(path), "%s/ab.isa", dir);	/* sorts between a and b */
	{
		FILE *f = fopen(path, "w");

		if (f) {
			fputs("fail\n", f);
			fclose(f);
		}
	}
	seen[0] = '\0';
	CHECK_EQ_INT(isa_corpus_each_file(dir, ".isa", collect, seen, err, sizeof(err)), -EINVAL);
	CHECK(!strcmp(seen, "a=1;"));
	CHECK(!strcmp(err, "ab: refused"));
	CHECK(isa_corpus_each_file("/nonexistent/gpuext", ".isa", collect, seen, err, sizeof(err)) < 0);
	CHECK_STR_CONTAINS(err, "cannot read /nonexistent/gpuext");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/ab.isa", dir);
	unlink(path);
	rmdir(dir);
	CHECK_EQ_INT(isa_map_type_by_name("lru_hash"), BPF_MAP_TYPE_LRU_HASH);
	CHECK_EQ_INT(isa_map_type_by_name("ringbuf"), BPF_MAP_TYPE_RINGBUF);
	CHECK_EQ_INT(isa_map_type_by_name("stack"), 0);
}

int main(void)
{
	struct isa_corpus corpus = { 0 };
	char err[512] = "";
	unsigned total_fail = 0;
	int r;

	test_each_file();
	r = isa_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/isa", err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (r) {
		printf("corpus: %s\n", err);
		return test_done("isa");
	}
	CHECK(corpus.cnt >= 300);
	for (size_t i = 0; i < corpus.cnt; i++) {
		const struct isa_case *tc = &corpus.cases[i];
		struct family_count *fc = family(tc->family);
		char why[1024] = "";

		test_checks++;
		if (run_case(tc, why, sizeof(why))) {
			fc->pass++;
		} else {
			fc->fail++;
			total_fail++;
			char where[128];

			snprintf(where, sizeof(where), "tests/isa/%s.isa", tc->family);
			test_fail(where, tc->line, "%s: %s", tc->name, why);
		}
	}
	printf("\n%-14s %6s %6s\n", "family", "pass", "fail");
	for (size_t i = 0; i < family_cnt; i++)
		printf("%-14s %6u %6u\n", families[i].name, families[i].pass, families[i].fail);
	printf("%-14s %6zu %6u\n\n", "total", corpus.cnt - total_fail, total_fail);
	isa_corpus_free(&corpus);
	return test_done("isa");
}
