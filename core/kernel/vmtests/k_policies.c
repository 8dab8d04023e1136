// SPDX-License-Identifier: Apache-2.0
/*
 * Every shipped policy (every .bpf.o in $GXVM_POLICIES) loads through libbpf (the
 * kernel's verifier accepts each program), attaches as struct_ops to
 * gpuext.ko, runs on the selftest device (memory policies: faults with
 * evictions and prefetches; scheduling: init/bind/destroy) without being
 * ejected, and detaches, leaving the defaults and the module's refcount as
 * they were. Prints one verdict line per policy.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kt.h"
#include "tools/kattach/gx_kattach.h"

static char buf[1 << 16], ev[1 << 18];

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A short fault pattern: 12 blocks through 4 slots, some reuse, a sequential run. */
static void drive_mem(void)
{
	kt_st(NULL, 0, "reset 4 16");
	for (int round = 0; round < 3; round++) {
		for (int b = 0; b < 12; b++) {
			kt_st(NULL, 0, "fault %d %d%s tgid=%d", b, (b * 37 + round * 64) % 512,
			      b % 3 ? "" : " w", 100 + b % 2);
			if (b % 4 == 0)
				kt_st(NULL, 0, "fault 0 %d", (round * 8 + b) % 512);
		}
	}
	kt_st(NULL, 0, "evict");
}

static void drive_sched(void)
{
	static const char *const comms[] = { "lc_server", "trainer", "infer_llm", "batch" };

	for (int t = 0; t < 4; t++)
		kt_st(NULL, 0, "task-init %d %s", t, comms[t]);
	for (int t = 0; t < 4; t++)
		kt_st(NULL, 0, "task-bind %d", t);
	for (int t = 0; t < 4; t++)
		kt_st(NULL, 0, "task-destroy %d", t);
}

int main(void)
{
	const char *dir = getenv("GXVM_POLICIES") ? getenv("GXVM_POLICIES") : "/gx/policies";
	char *names[64];
	int n = 0, attached = 0;
	long ref0;
	struct dirent *de;
	DIR *d;

	kt_require_module();
	kt_require_libbpf();
	d = opendir(dir);
	if (!d) {
		printf("FAIL: cannot open %s: %s\n", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) && n < 64) {
		size_t len = strlen(de->d_name);

		if (len > 6 && !strcmp(de->d_name + len - 6, ".bpf.o"))
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp);
	KT_CHECK(n >= 10, "expected the shipped policies in %s, found %d objects", dir, n);
	ref0 = kt_settled_refcnt();

	for (int i = 0; i < n; i++) {
		char path[512];
		struct gx_kattach *k;
		bool mem = false, sched = false;
		int err;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		kt_events_clear();
		err = gx_kattach__open(path, &k);
		if (!KT_CHECK(!err, "%s: not attached: %s", names[i], strerror(-err))) {
			printf("policy %-24s kernel verifier: REJECTED\n%s\n", names[i],
			       gx_kattach_log);
			continue;
		}
		attached++;
		for (int m = 0; m < k->n; m++) {
			mem |= !strcmp(k->types[m], "gpu_mem_ops");
			sched |= !strcmp(k->types[m], "gpu_sched_ops");
			printf("policy %-24s kernel verifier: accepted; attached %s (%s)\n", names[i],
			       k->policies[m], k->types[m]);
			char shown[32];

			snprintf(shown, sizeof(shown), ": %s", k->policies[m]);
			KT_CHECK(kt_read(KT_DEBUGFS "/status", buf, sizeof(buf)) > 0 &&
				 strstr(buf, shown), "%s: status does not show %s", names[i],
				 k->names[m]);
		}
		KT_CHECK(kt_refcnt() > ref0, "%s: module refcount %ld not above %ld while attached",
			 names[i], kt_refcnt(), ref0);
		if (mem)
			drive_mem();
		if (sched)
			drive_sched();
		kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
		KT_CHECK(!strstr(buf, "(ejected"), "%s: ejected while driven:\n%s", names[i], buf);
		kt_events(ev, sizeof(ev));
		KT_CHECK(kt_count_lines(ev, "hook ") > 0, "%s: no hook call reached the policy",
			 names[i]);
		KT_CHECK(!kt_count_lines(ev, "ejected"), "%s: ejected", names[i]);
		printf("  ran: %d hook calls, %d defaults, %d evictions, %d prefetch runs\n",
		       kt_count_lines(ev, "hook "), kt_count_lines(ev, "default "),
		       kt_count_lines(ev, "evict "), kt_count_lines(ev, "prefetch "));
		gx_kattach__destroy(k);
		KT_CHECK(kt_wait_file(KT_DEBUGFS "/status", "(defaults)", true, 2000),
			 "%s: still attached after its links were closed", names[i]);
		kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
		KT_CHECK(kt_count_lines(buf, "none (defaults)") == 2,
			 "%s: both kinds should be back to the defaults:\n%s", names[i], buf);
		free(names[i]);
	}
	/* Struct_ops maps are freed after an RCU grace period: poll the count down. */
	for (int t = 0; t < 100 && kt_refcnt() != ref0; t++)
		usleep(20000);
	KT_CHECK(kt_refcnt() == ref0, "module refcount %ld, was %ld before", kt_refcnt(), ref0);
	printf("%d/%d shipped policies accepted by the kernel verifier and attached\n", attached, n);
	return kt_finish("k_policies");
}
