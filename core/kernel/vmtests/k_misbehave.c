// SPDX-License-Identifier: Apache-2.0
/*
 * Policies that break the rules, in the real kernel:
 *  - a kfunc the hook may not call (badpolicy_call: bpf_gpu_set_attr from
 *    gpu_block_access; kpolicy_*: reject_bind from task_init,
 *    set_prefetch_region from gpu_block_access, block_id from
 *    gpu_page_prefetch) is refused at load by the kfunc filter, with the
 *    verifier naming the kfunc; nothing stays attached;
 *  - handles of the wrong type (simtest_lists passes a block as a list) are
 *    refused at load by the kernel's BTF type checks;
 *  - a hook returning a value outside its range (badpolicy_ret: 2 from
 *    gpu_block_access on a write) is ejected at run time: one kernel log
 *    line naming policy, hook and reason, "ejected ..." in the events, no
 *    more calls, defaults resume, and the slot takes a new policy;
 *  - bad kfunc arguments (schedtest_badattr: out-of-range timeslices and
 *    levels, an unknown attribute) get -EINVAL each while a good one works,
 *    and past kfunc_err_limit invalid calls the policy is ejected.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tools/kattach/gx_kattach.h"

static char buf[1 << 16], ev[1 << 18], klog[1 << 20];

static void refused_at_load(void)
{
	struct gx_kattach *k;
	int err;

	err = gx_kattach__open(kt_testbpf("badpolicy_call"), &k);
	KT_CHECK(err == -EACCES, "badpolicy_call: want -EACCES, got %d", err);
	KT_CHECK(strstr(gx_kattach_log, "calling kernel function bpf_gpu_set_attr is not allowed"),
		 "badpolicy_call: the verifier log does not name the refused kfunc:\n%s",
		 gx_kattach_log);
	printf("badpolicy_call: refused at load (%s): %s\n", strerror(-err),
	       "calling kernel function bpf_gpu_set_attr is not allowed");
	if (!err)
		gx_kattach__destroy(k);

	/* One object per hook kind; the user-space verifier refuses the same three. */
	static const char *const per_hook[][2] = {
		{ "kpolicy_bind_in_init", "bpf_gpu_reject_bind" },
		{ "kpolicy_prefetch_in_access", "bpf_gpu_set_prefetch_region" },
		{ "kpolicy_blockid_in_prefetch", "bpf_gpu_block_id" },
	};
	for (unsigned int i = 0; i < sizeof(per_hook) / sizeof(per_hook[0]); i++) {
		char want[128];

		snprintf(want, sizeof(want), "calling kernel function %s is not allowed",
			 per_hook[i][1]);
		err = gx_kattach__open(kt_testbpf(per_hook[i][0]), &k);
		KT_CHECK(err == -EACCES && strstr(gx_kattach_log, want),
			 "%s: want -EACCES and '%s', got %d:\n%s", per_hook[i][0], want, err,
			 gx_kattach_log);
		printf("%s: refused at load: %s\n", per_hook[i][0], want);
		if (!err)
			gx_kattach__destroy(k);
	}

	err = gx_kattach__open(kt_testbpf("simtest_lists"), &k);
	KT_CHECK(err == -EINVAL, "simtest_lists: want -EINVAL (type mismatch), got %d", err);
	KT_CHECK(strstr(gx_kattach_log, "expected pointer to STRUCT gpu_list") ||
		 strstr(gx_kattach_log, "gpu_list"),
		 "simtest_lists: log does not mention the mismatched handle:\n%s", gx_kattach_log);
	printf("simtest_lists: refused at load (%s)\n", strerror(-err));
	if (!err)
		gx_kattach__destroy(k);
	kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
	KT_CHECK(kt_count_lines(buf, "none (defaults)") == 2,
		 "a refused load left something attached:\n%s", buf);
}

static void ejected_for_return_value(void)
{
	struct gx_kattach *k, *k2;
	int err;

	kt_events_clear();
	err = gx_kattach__open(kt_testbpf("badpolicy_ret"), &k);
	if (!KT_CHECK(!err, "badpolicy_ret: not attached: %s\n%s", strerror(-err), gx_kattach_log))
		return;
	kt_st(NULL, 0, "reset 4 8");
	kt_st(NULL, 0, "fault 0 0");		/* read: returns 1, legal */
	kt_st(NULL, 0, "fault 1 0 w");		/* write: returns 2 */
	kt_st(NULL, 0, "fault 2 0 w");		/* after the ejection: the default */
	kt_events(ev, sizeof(ev));
	KT_CHECK(kt_count_lines(ev, "hook gpu_block_access id=0 ret=1") == 1,
		 "the legal call is not in the events:\n%s", ev);
	KT_CHECK(kt_count_lines(ev, "hook gpu_block_access id=1 ret=2") == 1,
		 "the bad call is not in the events:\n%s", ev);
	KT_CHECK(kt_count_lines(ev, "ejected policy=bad_ret hook=gpu_block_access returned 2, outside 0..1") == 1,
		 "no (or not one) ejection event:\n%s", ev);
	KT_CHECK(!strstr(ev, "id=2 ret="), "the ejected policy was called again:\n%s", ev);
	KT_CHECK(kt_count_lines(ev, "default gpu_block_access id=2") == 1,
		 "the default did not run after the ejection:\n%s", ev);
	kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
	KT_CHECK(strstr(buf, "bad_ret (ejected, defaults)") && strstr(buf, "returned 2"),
		 "status does not show the ejection:\n%s", buf);
	kt_dmesg(klog, sizeof(klog));
	KT_CHECK(kt_count_lines(klog, "policy bad_ret (gpu_mem_ops) ejected at hook gpu_block_access: returned 2, outside 0..1") == 1,
		 "want one kernel log line naming policy, hook and reason");
	printf("badpolicy_ret: ejected at its first out-of-range return; defaults resumed\n");

	/* The ejected policy's link is still open, yet a new policy may attach. */
	err = gx_kattach__open(kt_policy("lru"), &k2);
	KT_CHECK(!err, "lru after an ejection: not attached: %s\n%s", strerror(-err),
		 gx_kattach_log);
	if (!err) {
		kt_events_clear();
		kt_st(NULL, 0, "fault 3 0");
		kt_events(ev, sizeof(ev));
		KT_CHECK(kt_count_lines(ev, "hook gpu_block_access id=3 ret=") == 1,
			 "lru is not called after replacing the ejected policy:\n%s", ev);
		gx_kattach__destroy(k2);
	}
	gx_kattach__destroy(k);
	kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
	KT_CHECK(strstr(buf, "gpu_mem_ops: none (defaults)"), "not back to defaults:\n%s", buf);
}

static void bad_kfunc_arguments(void)
{
	static const long want[6] = { -EINVAL, -EINVAL, -EINVAL, -EINVAL, -EINVAL, 0 };
	struct gx_kattach *k;
	struct bpf_map *res;
	char out[512], old[32];
	int err;

	err = gx_kattach__open(kt_testbpf("schedtest_badattr"), &k);
	if (!KT_CHECK(!err, "schedtest_badattr: not attached: %s\n%s", strerror(-err),
		      gx_kattach_log))
		return;
	kt_events_clear();
	kt_st(out, sizeof(out), "task-init 1 badattr");
	KT_CHECK(strstr(out, "timeslice_us=500 level=1"),
		 "the one valid set_attr (500 us) did not apply: %s", out);
	res = bpf_object__find_map_by_name(k->obj, "results");
	for (unsigned int i = 0; res && i < 6; i++) {
		long long v = 1;

		KT_CHECK(!bpf_map__lookup_elem(res, &i, sizeof(i), &v, sizeof(v), 0),
			 "results[%u] unreadable", i);
		KT_CHECK(v == want[i], "bpf_gpu_set_attr case %u returned %lld, want %ld", i, v,
			 want[i]);
	}
	KT_CHECK(res != NULL, "schedtest_badattr has no results map");
	printf("schedtest_badattr: 5 invalid set_attr calls got -EINVAL, the valid one 0\n");

	/* Invalid calls count against the policy: 5 per task_init, limit 7. */
	kt_param("kfunc_err_limit", "7", old, sizeof(old));
	kt_st(NULL, 0, "task-init 2 badattr");
	kt_events(ev, sizeof(ev));
	KT_CHECK(kt_count_lines(ev, "ejected policy=badattr hook=bpf_gpu_set_attr more than 7 invalid kfunc calls") == 1,
		 "not ejected after 10 invalid kfunc calls (limit 7):\n%s", ev);
	kt_st(out, sizeof(out), "task-init 3 badattr");
	KT_CHECK(strstr(out, "timeslice_us=1024 level=1"),
		 "after the ejection task 3 should get the defaults: %s", out);
	kt_param("kfunc_err_limit", old[0] ? old : "1000", NULL, 0);
	printf("schedtest_badattr: ejected past kfunc_err_limit; defaults resumed\n");
	kt_st(NULL, 0, "task-destroy 1");
	kt_st(NULL, 0, "task-destroy 2");
	kt_st(NULL, 0, "task-destroy 3");
	gx_kattach__destroy(k);
}

int main(void)
{
	kt_require_module();
	kt_require_libbpf();
	refused_at_load();
	ejected_for_return_value();
	bad_kfunc_arguments();
	return kt_finish("k_misbehave");
}
