// SPDX-License-Identifier: Apache-2.0
/*
 * gx_mockgpu with policies attached through libbpf (tools/kattach): the
 * kernel verifier accepts the shipped object, the mock GPU's eviction order
 * and prefetches follow the policy, and detaching brings the stock order
 * back on the same device. Runs:
 *  - mru (every fault moves the block to the head): four blocks loaded
 *    1..4, the fifth evicts 4, not 1 (policies/mru.bpf.c, mru_scan.scn);
 *    after the link is destroyed the next victim is the head again (stock);
 *  - prefetch_max: one fault brings the whole 2 MiB block;
 *  - fifo (every hook returns 0): the same victims as no policy at all.
 * Policies come from $GXVM_POLICIES (the harness sets it), else
 * /gx/policies; a missing object is a failure, not a skip.
 */
#include "gxtest.h"
#include "tools/kattach/gx_kattach.h"

static char pol_dir[256];

static struct gx_kattach *attach(const char *name)
{
	struct gx_kattach *k;
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/%s.bpf.o", pol_dir, name);
	err = gx_kattach__open(path, &k);
	if (err)
		gx_die("attach %s: %s\n%s", path, strerror(-err), gx_kattach_log);
	return k;
}

/* Blocks 1..4 loaded one batch each; returns the used list "a b c d". */
static void load_four(int fd, uint64_t va)
{
	for (int b = 1; b <= 4; b++)
		gx_access(fd, va + b * GX_BLOCK, 1, GX_ACC_FLUSH);
}

static void check_victims(const char *what, int fd, uint64_t va, uint64_t id0,
			  const char *want_before, const char *want_after)
{
	char list[256];

	gx_used_list(fd, id0, list, sizeof(list));
	GX_CHECK(!strcmp(list, want_before), "%s: used list '%s', want '%s'", what, list,
		 want_before);
	gx_access(fd, va + 5 * GX_BLOCK, 1, GX_ACC_FLUSH);
	gx_used_list(fd, id0, list, sizeof(list));
	GX_CHECK(!strcmp(list, want_after), "%s: after pressure '%s', want '%s'", what, list,
		 want_after);
	printf("policy_order: %s: used list %s, after one more block %s\n", what, want_before,
	       list);
}

int main(void)
{
	const char *env = getenv("GXVM_POLICIES");
	struct gx_kattach *k;
	struct gx_block_state bs;
	uint64_t va, id0;
	char list[256];
	uint8_t *m;
	int fd;

	gx_test_name = "policy_order";
	snprintf(pol_dir, sizeof(pol_dir), "%s", env ? env : "/gx/policies");
	fd = gx_open();		/* skips before attaching anything */
	close(fd);
	/*
	 * libbpf's start-up probe loads a SOCKET_FILTER or TRACEPOINT program;
	 * a kernel with neither (no CONFIG_NET, no CONFIG_BPF_EVENTS) cannot
	 * load any object, whatever the policy.
	 */
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SOCKET_FILTER, NULL) <= 0 &&
	    libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, NULL) <= 0) {
		printf("policy_order: SKIP: libbpf cannot load objects on this kernel "
		       "(CONFIG_NET and CONFIG_BPF_EVENTS are both off)\n");
		return GX_SKIP;
	}
	m = gx_map(8 * GX_BLOCK, 0);
	va = (uintptr_t)m;
	id0 = va >> 21;
	memset(m, 0x5a, 8 * GX_BLOCK);

	/* mru, then detach on the same device. */
	fd = gx_open();
	gx_config(fd, 4, 0, GX_CFG_PREFETCH_OFF);
	if (gx_range_add(fd, m, 0, 8 * GX_BLOCK, 0))
		gx_die("range add: %s", strerror(errno));
	k = attach("mru");
	load_four(fd, va);
	check_victims("mru", fd, va, id0, "4 3 2 1", "5 3 2 1");
	bs = gx_block(fd, id0 + 4);
	GX_CHECK(!bs.has_chunk, "mru: block 4 must have been evicted");
	gx_kattach__destroy(k);
	/* Stock again: block 6 goes to the tail, the head (5) is the victim. */
	gx_access(fd, va + 6 * GX_BLOCK, 1, GX_ACC_FLUSH);
	gx_used_list(fd, id0, list, sizeof(list));
	GX_CHECK(!strcmp(list, "3 2 1 6"), "after detach: '%s', want '3 2 1 6'", list);
	printf("policy_order: mru detached: used list %s (stock: the head went)\n", list);
	close(fd);

	/* fifo decides exactly like no policy. */
	fd = gx_open();
	gx_config(fd, 4, 0, GX_CFG_PREFETCH_OFF);
	if (gx_range_add(fd, m, 0, 8 * GX_BLOCK, 0))
		gx_die("range add: %s", strerror(errno));
	k = attach("fifo");
	load_four(fd, va);
	check_victims("fifo", fd, va, id0, "1 2 3 4", "2 3 4 5");
	gx_kattach__destroy(k);
	close(fd);

	/* prefetch_max: the whole block on one fault (default prefetch on). */
	fd = gx_open();
	gx_config(fd, 4, 0, 0);
	if (gx_range_add(fd, m, 0, 8 * GX_BLOCK, 0))
		gx_die("range add: %s", strerror(errno));
	k = attach("prefetch_max");
	gx_access(fd, va + 10 * GX_PAGE, 1, GX_ACC_FLUSH);
	bs = gx_block(fd, id0);
	GX_CHECK(bs.resident_pages == 512 && gx_stats(fd).pages_prefetched == 511,
		 "prefetch_max: %u pages resident (want 512)", bs.resident_pages);
	gx_kattach__destroy(k);
	gx_access(fd, va + GX_BLOCK + 10 * GX_PAGE, 1, GX_ACC_FLUSH);
	bs = gx_block(fd, id0 + 1);
	GX_CHECK(bs.resident_pages == 16, "after detach: %u pages (want the stock 16)",
		 bs.resident_pages);
	printf("policy_order: prefetch_max: 512 pages on one fault; detached: %u (stock)\n",
	       bs.resident_pages);
	for (size_t i = 0; i < 2 * GX_BLOCK; i++)
		if (m[i] != 0x5a) {
			GX_CHECK(0, "data changed at byte %zu", i);
			break;
		}
	close(fd);
	munmap(m, 8 * GX_BLOCK);
	return gx_finish();
}
