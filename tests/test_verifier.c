/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier corpus runner: every hand-written case of tests/verifier/\*.vf
 * and every program of tests/bpf/vf_*.bpf.c is verified and its verdict
 * compared with the expectation written next to it (the rule that must
 * fire, and where, for rejects). The formats are described in
 * tests/verifier_corpus.h; the reader lives in tests/verifier_corpus.c so
 * the differential test against the kernel's verifier runs the same cases.
 *
 * Prints a table of expected vs matching verdicts per rule, and one line per
 * mismatch with the case, what was expected, what came out, and the first
 * lines of the verifier's log.
 */
#include <errno.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "verifier_corpus.h"

/*
 * Until the build links tests/verifier_corpus.c into this test (and the
 * differential one), take it in here. Define GPUEXT_VERIFIER_CORPUS_LINKED
 * when it is linked.
 */
#ifndef GPUEXT_VERIFIER_CORPUS_LINKED
#include "verifier_corpus.c"
#endif

#define LOG_SIZE (1u << 20)
#define LOG_LINES 8

/* Per-rule tallies; index 0 (GPUEXT_RULE_NONE) counts accepts. */
struct tally {
	unsigned want_c, want_asm, ok;
};

static struct tally tallies[GPUEXT_RULE_CNT];
static unsigned n_c, n_asm, n_fail;
static char *log_buf;

static void describe(const struct vc_expect *e, char *buf, size_t len)
{
	int n;

	if (e->accept) {
		snprintf(buf, len, "accept");
		return;
	}
	n = snprintf(buf, len, "reject %s", gpuext_rule_name(e->rule));
	if (e->has_at && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " at %u", e->at);
	if (e->msg[0] && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " \"%s\"", e->msg);
}

/* The first LOG_LINES lines of the log, indented, for a failure message. */
static void log_head(const char *log, char *buf, size_t len)
{
	size_t n = 0;
	int lines = 0;

	buf[0] = '\0';
	for (const char *p = log; *p && lines < LOG_LINES && n + 8 < len; lines++) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l > len - n - 8)
			l = len - n - 8;
		n += (size_t)snprintf(buf + n, len - n, "\n    | %.*s", (int)l, p);
		p = e ? e + 1 : p + l;
	}
}

/*
 * Verifies @prog as @type and compares with @e. @where:@line is the case,
 * for messages. Returns true when the verdict is the expected one.
 */
static bool check_verdict(struct gpuext_prog *prog, enum gpuext_prog_type type,
			  uint64_t budget, const struct vc_expect *e, const char *where, int line, const char *name,
			  bool is_c)
{
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = type, .log_level = 0, .log_buf = log_buf,
		    .log_size = LOG_SIZE, .ctx_size = e->ctx_size, .insn_budget = budget);
	struct gpuext_verify_result res = { .sz = sizeof(res) };
	char want[256], got[128], head[1200];
	struct tally *t = &tallies[e->accept ? GPUEXT_RULE_NONE : e->rule];
	bool ok;
	int err;

	if (is_c) {
		t->want_c++;
		n_c++;
	} else {
		t->want_asm++;
		n_asm++;
	}
	log_buf[0] = '\0';
	err = gpuext_prog__verify(prog, &vo, &res);
	describe(e, want, sizeof(want));
	if (err && err != -EACCES) {
		snprintf(got, sizeof(got), "internal error %d", err);
		ok = false;
	} else if (res.accepted) {
		snprintf(got, sizeof(got), "accept");
		ok = e->accept && err == 0;
	} else {
		snprintf(got, sizeof(got), "reject %s at %u", gpuext_rule_name(res.rule), res.insn_idx);
		ok = !e->accept && res.rule == e->rule && (!e->has_at || res.insn_idx == e->at) &&
		     (!e->msg[0] || strstr(log_buf, e->msg)) && err == -EACCES;
	}
	test_checks++;
	if (ok) {
		t->ok++;
		return true;
	}
	n_fail++;
	log_head(log_buf, head, sizeof(head));
	test_fail(where, line, "%s (%s): expected %s, got %s; log:%s", name,
		  gpuext_prog_type_name(type), want, got, head);
	return false;
}

static struct gpuext_runtime *new_runtime(struct test_log *log)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = log);
	struct gpuext_runtime *rt = NULL;

	test_log_clear(log);
	if (gpuext_runtime__new(&ro, &rt))
		return NULL;
	if (vc_register_funcs(rt)) {
		gpuext_runtime__free(rt);
		return NULL;
	}
	return rt;
}

/*
 * An invalid encoding is refused by gpuext_prog__new() already, with -EINVAL
 * and "insn N: invalid: ..." in the log: that is the invalid-insn verdict.
 */
static bool prog_err(int err, const char *log, const struct vc_expect *e)
{
	const char *p = strstr(log, "insn ");
	unsigned at;

	if (err != -EINVAL || !p || sscanf(p, "insn %u:", &at) != 1)
		return false;
	return (!e->has_at || at == e->at) && (!e->msg[0] || strstr(log, e->msg));
}

static void run_asm_case(const struct vc_case *tc)
{
	static struct test_log log;
	struct gpuext_runtime *rt = new_runtime(&log);
	struct gpuext_prog *prog = NULL;
	struct vc_env env;
	char where[256], err[512] = "";
	int r;

	snprintf(where, sizeof(where), "tests/verifier/%s.vf", tc->file);
	if (!rt) {
		test_fail(where, tc->line, "%s: no runtime", tc->name);
		return;
	}
	r = vc_env_init(&env, rt, tc, err, sizeof(err));
	if (!r)
		r = gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps, env.map_cnt,
				     &prog);
	if (r && tc->expect.rule == GPUEXT_RULE_INVALID_INSN && prog_err(r, log.buf, &tc->expect)) {
		/* gpuext_prog__new() runs the same encoding check and refuses first */
		tallies[GPUEXT_RULE_INVALID_INSN].want_asm++;
		tallies[GPUEXT_RULE_INVALID_INSN].ok++;
		n_asm++;
		test_checks++;
	} else if (r) {
		/* count it as expected-but-not-run so the totals stay honest */
		tallies[tc->expect.accept ? GPUEXT_RULE_NONE : tc->expect.rule].want_asm++;
		n_asm++;
		n_fail++;
		test_checks++;
		test_fail(where, tc->line, "%s: cannot build the program: %s %s", tc->name, err, log.buf);
	} else {
		check_verdict(prog, tc->type, tc->budget, &tc->expect, where, tc->line, tc->name, false);
	}
	gpuext_prog__free(prog);
	vc_env_fini(&env);
	gpuext_runtime__free(rt);
}

/* One vf_*.bpf.c: every program in the object must have an expectation and vice versa. */
static void run_c_file(const char *base)
{
	static struct test_log log;
	struct vc_csource src = { 0 };
	struct gpuext_object *obj = NULL;
	struct gpuext_runtime *rt;
	char path[4096], where[512], err[512] = "";
	char *text;
	int r;

	snprintf(path, sizeof(path), "%s/bpf/%s.bpf.c", GPUEXT_TEST_DATA_DIR, base);
	text = vc_read_file(path);
	if (!text) {
		test_fail(path, 0, "cannot read the source");
		return;
	}
	r = vc_csource_scan(&src, text, path, err, sizeof(err));
	free(text);
	if (r) {
		test_fail(path, 0, "%s", err);
		vc_csource_free(&src);
		return;
	}
	rt = new_runtime(&log);
	if (!rt) {
		test_fail(path, 0, "no runtime");
		vc_csource_free(&src);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s.bpf.o", GPUEXT_TEST_BPF_DIR, base);
	r = gpuext_object__open_file(rt, path, NULL, &obj);
	test_checks++;
	if (r) {
		test_fail(path, 0, "cannot open: %d %s", r, log.buf);
		goto out;
	}
	for (size_t i = 0; i < src.cnt; i++) {
		const struct vc_cprog *cp = &src.progs[i];
		struct gpuext_prog *prog = gpuext_object__find_prog(obj, cp->name);

		snprintf(where, sizeof(where), "tests/bpf/%s.bpf.c", base);
		if (!prog) {
			test_checks++;
			n_fail++;
			test_fail(where, cp->line, "%s: no such program in %s.bpf.o", cp->name, base);
			continue;
		}
		check_verdict(prog, cp->type, 0, &cp->expect, where, cp->line, cp->name, true);
	}
	test_checks++;
	if (gpuext_object__prog_cnt(obj) != src.cnt)
		test_fail(path, 0, "%zu programs in the object, %zu expectations in the source",
			  gpuext_object__prog_cnt(obj), src.cnt);
out:
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	vc_csource_free(&src);
}

static int vf_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return !strncmp(d->d_name, "vf_", 3) && n > 8 && !strcmp(d->d_name + n - 6, ".bpf.c");
}

static void run_c_cases(void)
{
	struct dirent **ents;
	int n = scandir(GPUEXT_TEST_DATA_DIR "/bpf", &ents, vf_filter, alphasort);

	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		char base[256];
		size_t len = strlen(ents[i]->d_name) - 6;

		if (len < sizeof(base)) {
			memcpy(base, ents[i]->d_name, len);
			base[len] = '\0';
			run_c_file(base);
		}
		free(ents[i]);
	}
	free(ents);
}

static void print_table(void)
{
	unsigned tw = 0, tok = 0;

	printf("\n%-22s %5s %5s %5s %5s\n", "verdict", "C", "asm", "want", "got");
	for (int r = 0; r < GPUEXT_RULE_CNT; r++) {
		const struct tally *t = &tallies[r];
		unsigned want = t->want_c + t->want_asm;

		printf("%-22s %5u %5u %5u %5u%s\n", r ? gpuext_rule_name((enum gpuext_rule)r) : "accept",
		       t->want_c, t->want_asm, want, t->ok, t->ok != want ? "  <-- mismatch" : "");
		tw += want;
		tok += t->ok;
	}
	printf("%-22s %5u %5u %5u %5u\n\n", "total", n_c, n_asm, tw, tok);
}

int main(int argc, char **argv)
{
	struct vc_corpus corpus = { 0 };
	const char *only = argc > 1 ? argv[1] : NULL; /* a case name, for debugging */
	char err[512] = "";
	int r;

	log_buf = malloc(LOG_SIZE);
	if (!log_buf)
		return 1;
	r = vc_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/verifier", err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (r)
		printf("corpus: %s\n", err);
	for (size_t i = 0; i < corpus.cnt; i++)
		if (!only || !strcmp(only, corpus.cases[i].name))
			run_asm_case(&corpus.cases[i]);
	if (!only)
		run_c_cases();
	print_table();
	if (!only) {
		/* the corpus itself: big enough, and every rule exercised twice */
		CHECK(n_c >= 60);
		CHECK(n_asm >= 90);
		CHECK(tallies[GPUEXT_RULE_NONE].want_c + tallies[GPUEXT_RULE_NONE].want_asm >= 40);
		for (int k = GPUEXT_RULE_NONE + 1; k < GPUEXT_RULE_CNT; k++) {
			test_checks++;
			if (tallies[k].want_c + tallies[k].want_asm < 2)
				test_fail(__FILE__, __LINE__, "rule %s has fewer than 2 reject cases",
					  gpuext_rule_name((enum gpuext_rule)k));
		}
	}
	printf("%u mismatches\n", n_fail);
	vc_corpus_free(&corpus);
	free(log_buf);
	return test_done("verifier");
}
