/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs every conformance/scenarios/NAME.scn on the simulator and fails on any
 * unmet expectation, printing the scenario, the line, the variant and what
 * happened instead. Also checks the .scn parser on bad input, which needs no
 * backend.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>

#include "testlib.h"

/* The runner is not part of libgpuext; build it into this test directly. */
#include "scenario.h"

#define SCN_DIR GPUEXT_TEST_DATA_DIR "/../conformance/scenarios"

static const char *const policy_dirs[] = { GPUEXT_POLICY_DIR, GPUEXT_TEST_BPF_DIR, NULL };

static void expect_syntax_error(const char *text, const char *want)
{
	struct scn_scenario *s = NULL;
	char err[512] = "";
	int ret = scn_parse_text("t.scn", text, &s, err, sizeof(err));

	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(s == NULL);
	CHECK_STR_CONTAINS(err, want);
	scn_free(s);
}

static void test_parser(void)
{
	struct scn_scenario *s = NULL;
	char err[512] = "";

	expect_syntax_error("gpu capacity=4\nbogus 1 2\n", "t.scn:2: unknown command 'bogus'");
	expect_syntax_error("gpu\n", "t.scn:1: gpu: capacity=N (blocks) is required");
	expect_syntax_error("gpu capacity=2\n\n# c\naccess 1 3:512 r\n", "t.scn:4: access TGID ADDR");
	expect_syntax_error("expect evict x\n", "t.scn:1: evict B ...: 'x' is not a block id");
	expect_syntax_error("expect prefetch 1 9-3\n", "FIRST <= LAST");
	expect_syntax_error("expect hook gpu_nothing\n", "unknown hook 'gpu_nothing'");
	expect_syntax_error("expect[a attr task=1\n", "a variant list is written WORD[A,B,...]");
	expect_syntax_error("task create 1 100 a_name_that_is_too_long\n", "longer than 15");
	expect_syntax_error("expect attr task=1\n", "attr task=T [timeslice_us=V] [level=L]");
	/* $V is substituted before the syntax check, in every variant */
	expect_syntax_error("variants lru 5\nexpect evict $V\n", "t.scn:2: evict B ...: 'lru'");

	CHECK_EQ_INT(scn_parse_text("t.scn",
				    "scenario the title\nvariants a b  c\ngpu capacity=2 batch=4\n"
				    "range 7 1:0 4M\naccess 7 1:3 w count=3 step=P2\n"
				    "expect[a,c] evict 1 2\nexpect hook access ret=1 id=1\n",
				    &s, err, sizeof(err)),
		     0);
	if (s) {
		CHECK(!strcmp(scn_title(s), "the title"));
		CHECK_EQ_INT(scn_variant_cnt(s), 3);
		CHECK(!strcmp(scn_variant(s, 2), "c"));
		CHECK(scn_variant(s, 3) == NULL);
	}
	scn_free(s);
	CHECK_EQ_INT(scn_parse_text("t.scn", "gpu capacity=1\n", &s, err, sizeof(err)), 0);
	if (s)
		CHECK_EQ_INT(scn_variant_cnt(s), 1);
	scn_free(s);
}

/* An unmet expectation is reported with its line and what happened instead. */
static void test_runner_reports(void)
{
	struct scn_run_opts o = { .sz = sizeof(o), .policy_dirs = policy_dirs, .only_variant = -1 };
	struct scn_scenario *s = NULL;
	struct scn_report rep;
	char err[512] = "";
	int ret;

	CHECK_EQ_INT(scn_parse_text("bad.scn",
				    "gpu capacity=1 prefetch=off\nrange 1 1:0 4M\naccess 1 1:0\nflush\n"
				    "access 1 2:0\nexpect evict 2\nexpect resident 1\n"
				    "expect hook access\npolicy no_such_policy\n",
				    &s, err, sizeof(err)), 0);
	if (!s)
		return;
	ret = scn_run(s, &o, &rep);
	if (ret == -ENODEV) {
		printf("  SKIP runner reports: no sim device\n");
	} else {
		CHECK_EQ_INT(ret, 0);
		CHECK_EQ_INT(rep.failure_cnt, 4);
		CHECK_EQ_INT(rep.failures[0].line, 6);
		CHECK_STR_CONTAINS(rep.failures[0].text, "expect evict 2: the next eviction was 1");
		CHECK_EQ_INT(rep.failures[1].line, 7);
		CHECK_STR_CONTAINS(rep.failures[1].text, "expect resident 1: it is not resident");
		CHECK_STR_CONTAINS(rep.failures[2].text, "no such call since the last check; seen: none");
		CHECK_STR_CONTAINS(rep.failures[3].text, "no no_such_policy.bpf.o");
	}
	scn_free(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_scenario_files(void)
{
	DIR *d = opendir(SCN_DIR);
	char *names[256];
	size_t cnt = 0;
	unsigned ran = 0, skipped = 0;
	struct dirent *e;

	CHECK(d != NULL);
	if (!d)
		return;
	while ((e = readdir(d)) && cnt < 256) {
		size_t n = strlen(e->d_name);

		if (n > 4 && !strcmp(e->d_name + n - 4, ".scn"))
			names[cnt++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, cnt, sizeof(names[0]), cmp_str);
	CHECK(cnt >= 10);
	for (size_t i = 0; i < cnt; i++) {
		struct scn_run_opts o = { .sz = sizeof(o), .backend = "sim",
					  .policy_dirs = policy_dirs, .only_variant = -1,
					  .trace = getenv("SCN_TRACE") ? stderr : NULL };
		struct scn_scenario *s = NULL;
		struct scn_report rep;
		char path[1024], err[512] = "";
		int ret;

		snprintf(path, sizeof(path), "%s/%s", SCN_DIR, names[i]);
		ret = scn_parse_file(path, &s, err, sizeof(err));
		CHECK_EQ_INT(ret, 0);
		if (ret) {
			fprintf(stderr, "  %s\n", err);
			free(names[i]);
			continue;
		}
		ret = scn_run(s, &o, &rep);
		if (ret == -ENODEV || ret == -ENOSYS) {
			/* the simulator is the reference backend: it must take every event */
			fprintf(stderr, "FAIL %s: %s\n", names[i],
				ret == -ENODEV ? "the sim backend cannot open a device"
					       : "the sim does not take these events");
			test_failures++;
			skipped++;
		} else {
			CHECK_EQ_INT(ret, 0);
			test_checks++;
			if (rep.failure_cnt) {
				test_failures++;
				fprintf(stderr, "FAIL %s (%s): %u of %u expectations unmet\n", names[i],
					scn_title(s), rep.failure_cnt, rep.checks);
				scn_report_print(s, &rep, stderr);
			} else {
				printf("  ok   %-28s %u variants, %u checks%s\n", names[i],
				       (unsigned)scn_variant_cnt(s), rep.checks,
				       rep.skipped ? " (some skipped)" : "");
			}
			ran++;
		}
		scn_free(s);
		free(names[i]);
	}
	printf("scenarios: %u ran, %u skipped\n", ran, skipped);
}

int main(void)
{
	test_parser();
	test_runner_reports();
	test_scenario_files();
	return test_done("test_scenarios");
}
