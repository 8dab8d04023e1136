/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential test: our verifier against the running kernel's.
 *
 * Every corpus program that Linux can load as a plain socket filter
 * (BPF_PROG_TYPE_SOCKET_FILTER) -- our socket_filter programs, and host
 * programs that take no context -- is loaded into the kernel through
 * libbpf's low-level API and verified by us as GPUEXT_PROG_SOCKET_FILTER;
 * the two verdicts (accept / reject) must agree. The kernel loads without a
 * log; where the verdicts differ, a refused program is loaded again with a
 * level-1 log for the kernel's reason. Sources: a few cases of
 * our own (below), the verifier corpus (tests/verifier/\*.vf and
 * tests/bpf/vf_*.bpf.c, read by tests/verifier_corpus.c), the other socket
 * programs among the test objects, and the ISA corpus (tests/isa/\*.isa)
 * cases that take no input memory.
 *
 * Our relocated form is translated for the kernel: ld_imm64 src=5/6 (map
 * index) and src=1/2 (runtime map id) become src=1/2 with the fd of a
 * kernel map of the same type, sizes and flags (a BPF_F_RDONLY_PROG map
 * gets our values and is frozen, so the kernel may read it as constants).
 * kfunc calls, callx, ld_imm64 src=3 (variables), ld_imm64 src=4 (the
 * kernel wants BTF func_info for it) and gpuext-only helpers have no kernel
 * equivalent without BTF: such programs are skipped, counted by reason.
 *
 * Intended differences are listed in tests/verifier/kernel-differences.txt,
 * one line per case:
 *   <case>  ours=<accept|reject:rule>  kernel=<accept|reject>  reason: <why>
 * The test fails on a difference not listed there, and on a listed line
 * that no longer matches (stale). Without a usable bpf() (no CAP_BPF, a
 * seccomp filter, ENOSYS) it prints "SKIPPED: ..." and exits 77.
 *
 * VK_VERBOSE=1 prints every compared case; VK_SKIP=name,name skips cases
 * (to get past one that crashes while it is being fixed); VK_ONLY=text
 * compares only the cases whose name contains it (the list is not checked).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "asm.h"
#include "gpuext/verifier.h"
#include "testlib.h"
#include "verifier_corpus.h"

/* As in test_verifier.c: until the build links tests/verifier_corpus.c into the
 * corpus tests and defines GPUEXT_VERIFIER_CORPUS_LINKED, take it in here. */
#ifndef GPUEXT_VERIFIER_CORPUS_LINKED
#include "verifier_corpus.c"
#endif

#define DIFF_FILE GPUEXT_TEST_DATA_DIR "/verifier/kernel-differences.txt"
#define KLOG_SIZE (1u << 20)
#define ENOTSUPP_KERNEL 524 /* the kernel's internal ENOTSUPP (e.g. a JIT limit) */

/* ------------------------------------------------------------------ */
/* Our own cases: kernel behaviours worth pinning, in the .vf format   */
/* ------------------------------------------------------------------ */

static const char own_cases[] =
	"case ret_zero\ntype socket_filter\nasm\n\tr0 = 0x0\n\texit\nend\nexpect accept\n"
	"case no_r0\ntype socket_filter\nasm\n\texit\nend\nexpect reject uninit-reg\n"
	"case skb_len\ntype socket_filter\nasm\n\tr0 = *(u32 *)(r1 + 0x0)\n\texit\nend\n"
	"expect accept\n"
	/* Linux allows aligned narrow reads of __sk_buff fields. */
	"case skb_len_narrow\ntype socket_filter\nasm\n\tr0 = *(u8 *)(r1 + 0x0)\n\texit\nend\n"
	"expect accept\n"
	"case skb_len_misaligned\ntype socket_filter\nasm\n\tr0 = *(u16 *)(r1 + 0x1)\n"
	"\texit\nend\nexpect reject ctx-access\n"
	"case skb_len_write\ntype socket_filter\nasm\n\tr2 = 0x1\n\t*(u32 *)(r1 + 0x0) = r2\n"
	"\tr0 = 0x0\n\texit\nend\nexpect reject readonly\n"
	"case skb_cb_write\ntype socket_filter\nasm\n\tr2 = 0x1\n\t*(u32 *)(r1 + 0x30) = r2\n"
	"\tr0 = 0x0\n\texit\nend\nexpect accept\n"
	/* BPF_ST (an immediate) into the context: older kernels refused it. */
	"case skb_cb_store_imm\ntype socket_filter\nasm\n\t*(u32 *)(r1 + 0x30) = 0x1\n"
	"\tr0 = 0x0\n\texit\nend\nexpect accept\n"
	"case skb_past_end\ntype socket_filter\nasm\n\tr0 = *(u32 *)(r1 + 0x100)\n\texit\nend\n"
	"expect reject ctx-access\n"
	/* Linux: "dereference of modified ctx ptr": the offset must be in the insn. */
	"case skb_modified_ctx\ntype socket_filter\nasm\n\tr1 += 0x4\n"
	"\tr0 = *(u32 *)(r1 + 0x0)\n\texit\nend\nexpect reject ctx-access\n"
	/* Privileged Linux reads uninitialised stack; we never do. */
	"case uninit_stack_read\ntype socket_filter\nasm\n\tr0 = *(u64 *)(r10 - 0x8)\n"
	"\texit\nend\nexpect reject uninit-stack\n"
	"case stack_oob\ntype socket_filter\nasm\n\tr1 = 0x0\n\t*(u64 *)(r10 - 0x208) = r1\n"
	"\tr0 = 0x0\n\texit\nend\nexpect reject oob-stack\n"
	"case map_lookup_checked\ntype socket_filter\nmap m array key=4 value=8 entries=4\nasm\n"
	"\t*(u32 *)(r10 - 0x4) = 0x0\n\tr2 = r10\n\tr2 += -0x4\n\tr1 = map[m] ll\n"
	"\tcall bpf_map_lookup_elem\n\tif r0 == 0x0 goto out\n\tr0 = *(u64 *)(r0 + 0x0)\n"
	"out:\n\texit\nend\nexpect accept\n"
	"case map_lookup_unchecked\ntype socket_filter\nmap m array key=4 value=8 entries=4\n"
	"asm\n\t*(u32 *)(r10 - 0x4) = 0x0\n\tr2 = r10\n\tr2 += -0x4\n\tr1 = map[m] ll\n"
	"\tcall bpf_map_lookup_elem\n\tr0 = *(u64 *)(r0 + 0x0)\n\texit\nend\n"
	"expect reject null-deref\n"
	"case map_value_var_off\ntype socket_filter\nmap m hash key=4 value=8 entries=4\nasm\n"
	"\t*(u32 *)(r10 - 0x4) = 0x0\n\tr2 = r10\n\tr2 += -0x4\n\tr1 = map[m] ll\n"
	"\tcall bpf_map_lookup_elem\n\tif r0 == 0x0 goto out\n\tr6 = r0\n"
	"\tcall bpf_get_prandom_u32\n\tr0 &= 0x7\n\tr6 += r0\n\tr0 = *(u8 *)(r6 + 0x0)\n"
	"out:\n\texit\nend\nexpect accept\n"
	"case map_value_var_off_oob\ntype socket_filter\nmap m hash key=4 value=8 entries=4\n"
	"asm\n\t*(u32 *)(r10 - 0x4) = 0x0\n\tr2 = r10\n\tr2 += -0x4\n\tr1 = map[m] ll\n"
	"\tcall bpf_map_lookup_elem\n\tif r0 == 0x0 goto out\n\tr6 = r0\n"
	"\tcall bpf_get_prandom_u32\n\tr0 &= 0xf\n\tr6 += r0\n\tr0 = *(u8 *)(r6 + 0x0)\n"
	"out:\n\texit\nend\nexpect reject oob-map-value\n"
	"case rdonly_map_write\ntype socket_filter\nmap m array key=4 value=8 entries=1 rdonly\n"
	"asm\n\tr1 = map_value[m]+0x0 ll\n\tr2 = 0x1\n\t*(u64 *)(r1 + 0x0) = r2\n\tr0 = 0x0\n"
	"\texit\nend\nexpect reject readonly\n"
	"case rdonly_map_read\ntype socket_filter\nmap m array key=4 value=8 entries=1 rdonly\n"
	"asm\n\tr1 = map_value[m]+0x0 ll\n\tr0 = *(u64 *)(r1 + 0x0)\n\texit\nend\nexpect accept\n"
	"case bounded_loop\nasm\n\tr1 = 0x0\nloop:\n\tr1 += 0x1\n\tif r1 < 0xa goto loop\n"
	"\tr0 = 0x0\n\texit\nend\nexpect accept\n"
	"case infinite_loop\nasm\n\tr0 = 0x0\nloop:\n\tif r0 == 0x0 goto loop\n\texit\nend\n"
	"expect reject loop-bound\n"
	"case div_by_zero_reg\nasm\n\tr0 = 0x1\n\tr1 = 0x0\n\tr0 /= r1\n\texit\nend\n"
	"expect accept\n"
	"case ringbuf_ok\ntype socket_filter\nmap rb ringbuf key=0 value=0 entries=4096\nasm\n"
	"\tr1 = map[rb] ll\n\tr2 = 0x8\n\tr3 = 0x0\n\tcall bpf_ringbuf_reserve\n"
	"\tif r0 == 0x0 goto out\n\tr1 = r0\n\tr2 = 0x0\n\tcall bpf_ringbuf_submit\n"
	"out:\n\tr0 = 0x0\n\texit\nend\nexpect accept\n"
	"case ringbuf_leak\ntype socket_filter\nmap rb ringbuf key=0 value=0 entries=4096\nasm\n"
	"\tr1 = map[rb] ll\n\tr2 = 0x8\n\tr3 = 0x0\n\tcall bpf_ringbuf_reserve\n"
	"\tr0 = 0x0\n\texit\nend\nexpect reject ref-leak\n"
	/* Privileged: pointers may be returned, compared and stored in maps. */
	"case return_pointer\ntype socket_filter\nasm\n\tr0 = r10\n\texit\nend\nexpect accept\n"
	"case pointer_compare\ntype socket_filter\nasm\n\tr0 = 0x0\n\tr2 = r10\n"
	"\tif r2 > r1 goto out\n\tr0 = 0x1\nout:\n\texit\nend\nexpect accept\n"
	"case pointer_into_map\ntype socket_filter\nmap m array key=4 value=8 entries=1\nasm\n"
	"\tr6 = r1\n\tr1 = map_value[m]+0x0 ll\n\t*(u64 *)(r1 + 0x0) = r6\n\tr0 = 0x0\n"
	"\texit\nend\nexpect accept\n"
	"case local_call\nasm\n\tr1 = 0x2\n\tcall twice\n\texit\ntwice:\n\tr0 = r1\n"
	"\tr0 += r1\n\texit\nend\nexpect accept\n"
	"case unreachable_tail\nasm\n\tr0 = 0x0\n\texit\n\tr0 = 0x1\n\texit\nend\n"
	"expect reject unreachable\n"
	/* bpf_skb_load_bytes(skb, off, to, len): a kernel helper we do not have. */
	"case skb_load_bytes\ntype socket_filter\nasm\n\tr2 = 0x0\n\tr3 = r10\n\tr3 += -0x8\n"
	"\tr4 = 0x4\n\tcall 0x1a\n\tr0 = 0x0\n\texit\nend\nexpect reject bad-call\n"
	"case helper_bad_arg\ntype socket_filter\nmap m array key=4 value=8 entries=1\nasm\n"
	"\tr1 = map[m] ll\n\tr2 = 0x0\n\tcall bpf_map_lookup_elem\n\tr0 = 0x0\n\texit\nend\n"
	"expect reject call-arg\n"
	/* A 32-bit bound says nothing of the upper half of a helper's 64-bit result. */
	"case alu32_bounds\ntype socket_filter\nmap m array key=4 value=8 entries=4\nasm\n"
	"\t*(u32 *)(r10 - 0x4) = 0x0\n\tr2 = r10\n\tr2 += -0x4\n\tr1 = map[m] ll\n"
	"\tcall bpf_map_lookup_elem\n\tif r0 == 0x0 goto out\n\tr6 = r0\n"
	"\tcall bpf_get_prandom_u32\n\tif w0 > 0x7 goto out\n\tr6 += r0\n"
	"\tr0 = *(u8 *)(r6 + 0x0)\nout:\n\tr0 = 0x0\n\texit\nend\nexpect reject ptr-arith\n";

/* ------------------------------------------------------------------ */
/* Outcomes and the list of intended differences                        */
/* ------------------------------------------------------------------ */

enum source { SRC_OWN, SRC_VF, SRC_VF_C, SRC_OBJ, SRC_ISA, SRC_CNT };
static const char *const source_names[SRC_CNT] = { "own", "verifier .vf", "verifier C",
						    "test objects", "isa corpus" };

enum verdict { V_AGREE_ACCEPT, V_AGREE_REJECT, V_LISTED, V_UNLISTED, V_SKIPPED, V_CNT };

struct diff_entry {
	char name[192];
	char ours[64];
	char kernel[16];
	int line;
	bool seen;
};

struct skip_reason {
	char why[96];
	unsigned cnt;
};

/* Everything main() accumulates; one per run. */
struct vk {
	struct diff_entry *diffs;
	size_t diff_cnt;
	unsigned counts[SRC_CNT][V_CNT];
	struct skip_reason skips[32];
	size_t skip_cnt;
	char *klog;		/* KLOG_SIZE bytes for the kernel's verifier log */
	bool verbose;
	const char *skip_list;	/* VK_SKIP */
	const char *only;	/* VK_ONLY: compare only names containing it */
};

static void count_skip(struct vk *vk, enum source src, const char *name, const char *why)
{
	size_t i;

	vk->counts[src][V_SKIPPED]++;
	for (i = 0; i < vk->skip_cnt; i++)
		if (!strcmp(vk->skips[i].why, why))
			break;
	if (i == vk->skip_cnt && vk->skip_cnt < sizeof(vk->skips) / sizeof(vk->skips[0]))
		snprintf(vk->skips[vk->skip_cnt++].why, sizeof(vk->skips[0].why), "%s", why);
	if (i < vk->skip_cnt)
		vk->skips[i].cnt++;
	if (vk->verbose)
		printf("  skip      %-48s %s\n", name, why);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/*
 * Reads the list. A missing file is an empty list; a malformed line is a
 * failure (it would otherwise hide a difference).
 */
static void load_diffs(struct vk *vk, const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[1024];
	int line = 0;

	if (!f) {
		printf("note: %s: %s (no listed differences)\n", path, strerror(errno));
		return;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *s = trim(buf), *reason, *ours, *kern, *sp;
		struct diff_entry *d, *grown;

		line++;
		if (!*s || *s == '#')
			continue;
		reason = strstr(s, "reason:");
		ours = strstr(s, " ours=");
		kern = strstr(s, " kernel=");
		sp = strpbrk(s, " \t");
		if (!reason || !ours || !kern || !sp || ours > reason || kern > reason ||
		    !*trim(reason + 7)) {
			test_fail(path, line, "malformed line; want \"<case>  ours=<accept|reject:rule>"
				  "  kernel=<accept|reject>  reason: <why>\"");
			continue;
		}
		grown = realloc(vk->diffs, (vk->diff_cnt + 1) * sizeof(*vk->diffs));
		if (!grown)
			break;
		vk->diffs = grown;
		d = &vk->diffs[vk->diff_cnt++];
		memset(d, 0, sizeof(*d));
		d->line = line;
		*sp = '\0';
		snprintf(d->name, sizeof(d->name), "%s", s);
		sscanf(ours + 6, "%63s", d->ours);
		sscanf(kern + 8, "%15s", d->kernel);
	}
	fclose(f);
}

static struct diff_entry *find_diff(struct vk *vk, const char *name)
{
	for (size_t i = 0; i < vk->diff_cnt; i++)
		if (!strcmp(vk->diffs[i].name, name))
			return &vk->diffs[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The kernel side                                                      */
/* ------------------------------------------------------------------ */

/* Is bpf() usable here? Loads "r0 = 0; exit" as a socket filter. */
static int probe_bpf(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, 2, NULL);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Kernel twins of the maps one program uses; closed after each case. */
struct kmaps {
	struct gpuext_map *map[64];
	int fd[64];
	size_t cnt;
};

static void kmaps_close(struct kmaps *km)
{
	for (size_t i = 0; i < km->cnt; i++)
		close(km->fd[i]);
	km->cnt = 0;
}

/* A read-only map is filled with our values and frozen, as libbpf does for .rodata. */
static int fill_and_freeze(struct gpuext_map *m, int fd)
{
	uint32_t n = gpuext_map__max_entries(m), vs = gpuext_map__value_size(m);
	uint8_t *val = calloc(1, vs ? vs : 1);
	int err = 0;

	if (!val)
		return -ENOMEM;
	if (gpuext_map__type(m) == BPF_MAP_TYPE_ARRAY) {
		for (uint32_t k = 0; k < n && !err; k++) {
			if (gpuext_map__lookup(m, &k, val))
				continue;
			if (bpf_map_update_elem(fd, &k, val, BPF_ANY))
				err = -errno;
		}
	}
	free(val);
	if (!err && bpf_map_freeze(fd))
		err = -errno;
	return err;
}

/* The kernel map standing for @m; created on first use. -errno on failure. */
static int kmap_fd(struct kmaps *km, struct gpuext_map *m)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo);
	int fd, err;

	for (size_t i = 0; i < km->cnt; i++)
		if (km->map[i] == m)
			return km->fd[i];
	if (km->cnt == sizeof(km->map) / sizeof(km->map[0]))
		return -E2BIG;
	mo.map_flags = gpuext_map__flags(m);
	fd = bpf_map_create(gpuext_map__type(m), NULL, gpuext_map__key_size(m),
			    gpuext_map__value_size(m), gpuext_map__max_entries(m), &mo);
	if (fd < 0)
		return -errno;
	if (gpuext_map__flags(m) & BPF_F_RDONLY_PROG) {
		err = fill_and_freeze(m, fd);
		if (err) {
			close(fd);
			return err;
		}
	}
	km->map[km->cnt] = m;
	km->fd[km->cnt++] = fd;
	return fd;
}

/* Helper names of the kernel this test was built against, by id. */
#define KERNEL_HELPER_NAME(name, id) [id] = "bpf_" #name,
static const char *const kernel_helpers[] = { ___BPF_FUNC_MAPPER(KERNEL_HELPER_NAME) };

/*
 * Rewrites @insns (a copy) for the kernel. Returns 0, 1 with @why set when
 * the program has no kernel equivalent, or a negative errno (with @why).
 */
static int to_kernel(struct gpuext_runtime *rt, struct gpuext_map *const *maps, size_t map_cnt,
		     struct bpf_insn *insns, size_t cnt, struct kmaps *km, char *why, size_t len)
{
	for (size_t i = 0; i < cnt; i++) {
		struct bpf_insn *in = &insns[i];

		if (in->code == (BPF_LD | BPF_DW | BPF_IMM)) {
			struct gpuext_map *m = NULL;
			int fd;

			switch (in->src_reg) {
			case BPF_PSEUDO_MAP_FD:
			case BPF_PSEUDO_MAP_VALUE:
				m = gpuext_runtime__map_by_id(rt, (uint32_t)in->imm);
				break;
			case BPF_PSEUDO_MAP_IDX:
			case BPF_PSEUDO_MAP_IDX_VALUE:
				m = (uint32_t)in->imm < map_cnt ? maps[in->imm] : NULL;
				break;
			case BPF_PSEUDO_BTF_ID:
				snprintf(why, len, "ld_imm64 src=3 (variable)");
				return 1;
			case BPF_PSEUDO_FUNC: /* the kernel wants BTF func_info for callbacks */
				snprintf(why, len, "ld_imm64 src=4 (needs BTF func_info)");
				return 1;
			default: /* imm64, or invalid: as is */
				i++;
				continue;
			}
			if (!m) {
				/* A dangling reference: the kernel must reject it too. */
				in->imm = -1;
				in->src_reg = in->src_reg == BPF_PSEUDO_MAP_IDX ? BPF_PSEUDO_MAP_FD
					    : in->src_reg == BPF_PSEUDO_MAP_IDX_VALUE ? BPF_PSEUDO_MAP_VALUE
					    : in->src_reg;
				i++;
				continue;
			}
			fd = kmap_fd(km, m);
			if (fd < 0) {
				snprintf(why, len, "kernel map '%s' (type %u): %s", gpuext_map__name(m),
					 gpuext_map__type(m), strerror(-fd));
				return fd;
			}
			in->src_reg = (in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_IDX)
					      ? BPF_PSEUDO_MAP_FD : BPF_PSEUDO_MAP_VALUE;
			in->imm = fd;
			i++;
		} else if (in->code == (BPF_JMP | BPF_CALL | BPF_X)) {
			snprintf(why, len, "callx");
			return 1;
		} else if (in->code == (BPF_JMP | BPF_CALL)) {
			const struct gpuext_func_proto *p;
			uint32_t id = (uint32_t)in->imm;

			if (in->src_reg == BPF_PSEUDO_KFUNC_CALL) {
				snprintf(why, len, "kfunc call");
				return 1;
			}
			if (in->src_reg != 0)
				continue; /* local call (src=1) or invalid: as is */
			p = gpuext_runtime__find_func(rt, GPUEXT_FUNC_HELPER, id);
			/* A helper only we have (or one we number differently) means nothing
			 * to the kernel; unknown ids go through so both sides reject them. */
			if (p && (id >= sizeof(kernel_helpers) / sizeof(kernel_helpers[0]) ||
				  !kernel_helpers[id] || strcmp(kernel_helpers[id], p->name))) {
				snprintf(why, len, "gpuext-only helper");
				return 1;
			}
		}
	}
	return 0;
}

struct kverdict {
	bool accept;
	int err;		/* positive errno of the load */
	char msg[200];		/* the log line that says why */
};

/* The last line of the log that is not a statistic. */
static void log_reason(const char *log, char *out, size_t len)
{
	const char *p = log, *best = NULL, *best_end = NULL;

	while (*p) {
		const char *e = strchr(p, '\n');

		if (!e)
			e = p + strlen(p);
		if (e > p && strncmp(p, "processed ", 10) && strncmp(p, "verification time", 17) &&
		    strncmp(p, "stack depth", 11) && strncmp(p, "mark_precise", 12)) {
			best = p;
			best_end = e;
		}
		p = *e ? e + 1 : e;
	}
	if (best)
		snprintf(out, len, "%.*s", (int)(best_end - best), best);
	else
		snprintf(out, len, "(no log)");
}

/*
 * Loads @insns as a socket filter, without a log: a level-1 log can fail a
 * good program with ENOSPC, and costs several times the verification on
 * programs that reach the kernel's 1M-instruction limit. Returns 0 or a
 * negative errno that is not a verdict (out of memory, a bad fd: a bug here).
 */
static int kernel_verdict(const struct bpf_insn *insns, size_t cnt, struct kverdict *kv)
{
	int fd, err;

	memset(kv, 0, sizeof(*kv));
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, cnt, NULL);
	if (fd >= 0) {
		close(fd);
		kv->accept = true;
		return 0;
	}
	err = errno;
	kv->err = err;
	switch (err) {
	case EACCES: case EINVAL: case E2BIG: case EFAULT: case ERANGE: case ENOTSUPP_KERNEL:
		return 0;
	default:
		snprintf(kv->msg, sizeof(kv->msg), "load failed: %s", strerror(err));
		return -err;
	}
}

/* Why the kernel refused @insns: loads it again with a level-1 log (only for differences). */
static void kernel_reason(struct vk *vk, const struct bpf_insn *insns, size_t cnt,
			  struct kverdict *kv)
{
	LIBBPF_OPTS(bpf_prog_load_opts, lo);
	int fd;

	vk->klog[0] = '\0';
	lo.log_buf = vk->klog;
	lo.log_size = KLOG_SIZE;
	lo.log_level = 1;
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, cnt, &lo);
	if (fd >= 0) { /* the same program was just refused */
		close(fd);
		snprintf(kv->msg, sizeof(kv->msg), "(accepted when loaded again with a log)");
		return;
	}
	vk->klog[KLOG_SIZE - 1] = '\0';
	log_reason(vk->klog, kv->msg, sizeof(kv->msg));
}

/* ------------------------------------------------------------------ */
/* One comparison                                                       */
/* ------------------------------------------------------------------ */

/* What one case is: the program in our relocated form, and how it was made. */
struct vk_case {
	char name[192];
	enum source src;
	enum gpuext_prog_type type;
	uint32_t ctx_size;		/* host programs: bytes at r1 */
	struct gpuext_runtime *rt;
	struct gpuext_map *const *maps;	/* what src=5/6 index */
	size_t map_cnt;
	const struct bpf_insn *insns;
	size_t insn_cnt;
	struct gpuext_prog *prog;	/* NULL when gpuext_prog__new() refused it */
	int new_err;			/* its error then */
};

static bool skip_listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/*
 * Compares one case; sets *@our_rule to our verdict (GPUEXT_RULE_NONE =
 * accepted) when we got one, else leaves it alone.
 */
static void compare(struct vk *vk, const struct vk_case *c, enum gpuext_rule *our_rule)
{
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_SOCKET_FILTER);
	GPUEXT_OPTS(gpuext_verify_result, res);
	struct kmaps km = { .cnt = 0 };
	struct kverdict kv;
	struct bpf_insn *kinsns = NULL;
	struct diff_entry *d;
	char why[160] = "", ours[64], kernel[16], ours_log[4096] = "";
	bool ours_accept;
	int r;

	if (vk->only && !strstr(c->name, vk->only))
		return;
	if (vk->skip_list && skip_listed(vk->skip_list, c->name)) {
		count_skip(vk, c->src, c->name, "VK_SKIP");
		return;
	}
	if (c->type != GPUEXT_PROG_SOCKET_FILTER &&
	    !(c->type == GPUEXT_PROG_HOST && c->ctx_size == 0)) {
		snprintf(why, sizeof(why), "type %s%s", gpuext_prog_type_name(c->type),
			 c->type == GPUEXT_PROG_HOST ? " with a context" : "");
		count_skip(vk, c->src, c->name, why);
		return;
	}
	kinsns = malloc((c->insn_cnt ? c->insn_cnt : 1) * sizeof(*kinsns));
	if (!kinsns) {
		test_fail(__FILE__, __LINE__, "%s: out of memory", c->name);
		return;
	}
	memcpy(kinsns, c->insns, c->insn_cnt * sizeof(*kinsns));
	r = to_kernel(c->rt, c->maps, c->map_cnt, kinsns, c->insn_cnt, &km, why, sizeof(why));
	if (r == 1) {
		count_skip(vk, c->src, c->name, why);
		goto out;
	}
	if (r < 0) {
		test_fail(__FILE__, __LINE__, "%s: %s", c->name, why);
		goto out;
	}
	r = kernel_verdict(kinsns, c->insn_cnt, &kv);
	test_checks++;
	if (r) {
		test_fail(__FILE__, __LINE__, "%s: the kernel gave no verdict: %s", c->name, kv.msg);
		goto out;
	}

	if (c->prog) {
		vo.log_buf = ours_log;
		vo.log_size = sizeof(ours_log);
		r = gpuext_prog__verify(c->prog, &vo, &res);
		if (r && r != -EACCES) {
			test_fail(__FILE__, __LINE__, "%s: our verifier failed: %s", c->name,
				  strerror(-r));
			goto out;
		}
		ours_accept = r == 0;
		*our_rule = ours_accept ? GPUEXT_RULE_NONE : res.rule;
		snprintf(ours, sizeof(ours), "%s%s", ours_accept ? "accept" : "reject:",
			 ours_accept ? "" : gpuext_rule_name(res.rule));
	} else {
		/* gpuext_prog__new() refused the encoding: that is our rejection. */
		ours_accept = false;
		snprintf(ours, sizeof(ours), "reject:load");
	}
	snprintf(kernel, sizeof(kernel), "%s", kv.accept ? "accept" : "reject");

	d = find_diff(vk, c->name);
	if (ours_accept == kv.accept) {
		vk->counts[c->src][kv.accept ? V_AGREE_ACCEPT : V_AGREE_REJECT]++;
		if (vk->verbose)
			printf("  agree     %-48s ours=%s kernel=%s\n", c->name, ours, kernel);
		if (d) {
			d->seen = true;
			test_fail(DIFF_FILE, d->line, "%s: stale: both now %s (ours=%s); remove the line",
				  c->name, kernel, ours);
		}
		goto out;
	}
	if (d && !d->seen && !strcmp(d->ours, ours) && !strcmp(d->kernel, kernel)) {
		d->seen = true;
		vk->counts[c->src][V_LISTED]++;
		if (vk->verbose)
			printf("  listed    %-48s ours=%s kernel=%s\n", c->name, ours, kernel);
		goto out;
	}
	vk->counts[c->src][V_UNLISTED]++;
	if (d) {
		d->seen = true;
		test_fail(DIFF_FILE, d->line, "%s: listed as ours=%s kernel=%s, now ours=%s kernel=%s",
			  c->name, d->ours, d->kernel, ours, kernel);
	} else {
		test_fail(__FILE__, __LINE__, "unlisted difference:\n    %s  ours=%s  kernel=%s  "
			  "reason: ?", c->name, ours, kernel);
	}
	printf("    ours:   %s", ours_accept ? "accepted\n" : "");
	if (!ours_accept) {
		if (c->prog)
			printf("%s at insn %u\n", gpuext_rule_name(res.rule), res.insn_idx);
		else
			printf("gpuext_prog__new: %s\n", strerror(-c->new_err));
	}
	if (!kv.accept)
		kernel_reason(vk, kinsns, c->insn_cnt, &kv);
	printf("    kernel: %s%s%s\n", kv.accept ? "accepted" : strerror(kv.err),
	       kv.accept ? "" : ": ", kv.accept ? "" : kv.msg);
out:
	kmaps_close(&km);
	free(kinsns);
}

/* ------------------------------------------------------------------ */
/* Sources                                                              */
/* ------------------------------------------------------------------ */

static struct gpuext_runtime *new_runtime(void)
{
	static struct test_log log; /* messages are not checked here */
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &log,
		    .prandom_seed = 1);
	struct gpuext_runtime *rt = NULL;

	test_log_clear(&log);
	if (gpuext_runtime__new(&ro, &rt) || vc_register_funcs(rt)) {
		gpuext_runtime__free(rt);
		test_fail(__FILE__, __LINE__, "no runtime");
		return NULL;
	}
	return rt;
}

/* Every case of a .vf corpus (ours, or tests/verifier). */
static void run_vf(struct vk *vk, const struct vc_corpus *corpus, enum source src,
		   const char *prefix)
{
	for (size_t i = 0; i < corpus->cnt; i++) {
		const struct vc_case *tc = &corpus->cases[i];
		struct gpuext_runtime *rt = new_runtime();
		struct vc_env env;
		struct vk_case c = { .src = src, .type = tc->type, .rt = rt };
		char err[256] = "";

		if (!rt)
			return;
		snprintf(c.name, sizeof(c.name), "%s%s/%s", prefix, tc->file, tc->name);
		c.ctx_size = tc->expect.ctx_size;
		if (vc_env_init(&env, rt, tc, err, sizeof(err))) {
			test_fail(tc->file, tc->line, "%s: %s", tc->name, err);
		} else {
			c.maps = env.maps;
			c.map_cnt = env.map_cnt;
			c.insns = env.insns;
			c.insn_cnt = env.insn_cnt;
			enum gpuext_rule got = GPUEXT_RULE_CNT;

			c.new_err = gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps,
						     env.map_cnt, &c.prog);
			compare(vk, &c, &got);
			gpuext_prog__free(c.prog);
			/* Our own cases pin our verdicts too (the corpus has test_verifier). */
			if (src == SRC_OWN && got != GPUEXT_RULE_CNT && tc->has_expect &&
			    got != (tc->expect.accept ? GPUEXT_RULE_NONE : tc->expect.rule))
				test_fail("own cases", tc->line, "%s: ours=%s, expected %s", tc->name,
					  gpuext_rule_name(got), tc->expect.accept ? "accept"
					  : gpuext_rule_name(tc->expect.rule));
		}
		vc_env_fini(&env);
		gpuext_runtime__free(rt);
	}
}

/* The ISA corpus: programs that take no input memory are context-free host programs. */
static void run_isa(struct vk *vk)
{
	struct isa_corpus corpus = { 0 };
	char err[512] = "";

	if (isa_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/isa", err, sizeof(err))) {
		test_fail(__FILE__, __LINE__, "isa corpus: %s", err);
		return;
	}
	for (size_t i = 0; i < corpus.cnt; i++) {
		const struct isa_case *tc = &corpus.cases[i];
		struct vk_case c = { .src = SRC_ISA, .type = GPUEXT_PROG_HOST };
		struct isa_case_env env;

		snprintf(c.name, sizeof(c.name), "isa/%s/%s", tc->family, tc->name);
		if (tc->has_input) {
			count_skip(vk, SRC_ISA, c.name, "type host with a context");
			continue;
		}
		c.rt = new_runtime();
		if (!c.rt)
			break;
		if (isa_case_env_init(&env, c.rt, tc, err, sizeof(err))) {
			test_fail(__FILE__, __LINE__, "%s: %s", c.name, err);
		} else {
			c.maps = env.maps;
			c.map_cnt = env.map_cnt;
			c.insns = env.insns;
			c.insn_cnt = env.insn_cnt;
			enum gpuext_rule got;

			c.new_err = gpuext_prog__new(c.rt, tc->name, env.insns, env.insn_cnt, env.maps,
						     env.map_cnt, &c.prog);
			compare(vk, &c, &got);
			gpuext_prog__free(c.prog);
		}
		isa_case_env_fini(&env);
		gpuext_runtime__free(c.rt);
	}
	isa_corpus_free(&corpus);
}

/* The expectations (types, ctx sizes) of tests/bpf/<base>.bpf.c, if it is a vf_ source. */
static bool scan_csource(const char *base, struct vc_csource *cs)
{
	char path[512], err[256] = "";
	char *text;
	int r;

	if (strncmp(base, "vf_", 3))
		return false;
	snprintf(path, sizeof(path), "%s/bpf/%s.bpf.c", GPUEXT_TEST_DATA_DIR, base);
	text = vc_read_file(path);
	if (!text) {
		test_fail(path, 0, "cannot read the source of %s.bpf.o", base);
		return false;
	}
	r = vc_csource_scan(cs, text, base, err, sizeof(err));
	free(text);
	if (r) {
		test_fail(path, 0, "%s", err);
		return false;
	}
	return true;
}

static void run_object(struct vk *vk, const char *dir, const char *file)
{
	struct vc_csource cs = { 0 };
	struct gpuext_object *obj = NULL;
	struct gpuext_runtime *rt;
	char path[512], base[128];
	bool vf;
	int r;

	snprintf(base, sizeof(base), "%.*s", (int)(strlen(file) - strlen(".bpf.o")), file);
	vf = scan_csource(base, &cs);
	rt = new_runtime();
	if (!rt)
		goto out;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	r = gpuext_object__open_file(rt, path, NULL, &obj);
	if (r) {
		/* Objects that exist to be refused by the loader (malformed kconfig, ...). */
		char name[192];

		snprintf(name, sizeof(name), "obj/%s", base);
		count_skip(vk, vf ? SRC_VF_C : SRC_OBJ, name, "object refused by the loader");
		goto out;
	}
	for (size_t i = 0; i < gpuext_object__prog_cnt(obj); i++) {
		struct gpuext_prog *prog = gpuext_object__prog(obj, i);
		struct gpuext_map *maps[64];
		struct vk_case c = { .src = vf ? SRC_VF_C : SRC_OBJ, .rt = rt, .prog = prog };
		const struct vc_cprog *cp = NULL;
		size_t n = gpuext_prog__map_cnt(prog);
		enum gpuext_rule got;

		snprintf(c.name, sizeof(c.name), "%s/%s", base, gpuext_prog__name(prog));
		for (size_t k = 0; vf && k < cs.cnt; k++)
			if (!strcmp(cs.progs[k].name, gpuext_prog__name(prog)))
				cp = &cs.progs[k];
		if (vf && !cp) {
			count_skip(vk, c.src, c.name, "no expect comment");
			continue;
		}
		c.type = cp ? cp->type : vc_type_for_section(gpuext_prog__section(prog));
		c.ctx_size = cp ? cp->expect.ctx_size : 0;
		if (n > sizeof(maps) / sizeof(maps[0])) {
			count_skip(vk, c.src, c.name, "more than 64 maps");
			continue;
		}
		for (size_t k = 0; k < n; k++)
			maps[k] = gpuext_prog__map(prog, k);
		c.maps = maps;
		c.map_cnt = n;
		c.insns = gpuext_prog__insns(prog);
		c.insn_cnt = gpuext_prog__insn_cnt(prog);
		compare(vk, &c, &got);
	}
out:
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	vc_csource_free(&cs);
}

/* Open file descriptors of this process: every kernel map and program must be closed. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.bpf.o of the test objects, sorted. */
static void run_objects(struct vk *vk, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t cnt = 0;

	if (!d) {
		test_fail(__FILE__, __LINE__, "%s: %s", dir, strerror(errno));
		return;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char **grown;

		if (len <= 6 || strcmp(e->d_name + len - 6, ".bpf.o"))
			continue;
		grown = realloc(names, (cnt + 1) * sizeof(*names));
		if (!grown)
			break;
		names = grown;
		names[cnt] = strdup(e->d_name);
		if (names[cnt])
			cnt++;
	}
	closedir(d);
	qsort(names, cnt, sizeof(*names), cmp_str);
	for (size_t i = 0; i < cnt; i++) {
		run_object(vk, dir, names[i]);
		free(names[i]);
	}
	free(names);
}

/* ------------------------------------------------------------------ */

static void print_table(const struct vk *vk, const char *kernel)
{
	static const char *const cols[V_CNT] = { "agree/acc", "agree/rej", "listed", "unlisted",
						  "skipped" };
	unsigned tot[V_CNT] = { 0 }, compared = 0;

	printf("\nverifier vs kernel (%s), socket filter, privileged\n", kernel);
	printf("%-14s", "source");
	for (int v = 0; v < V_CNT; v++)
		printf(" %10s", cols[v]);
	printf("\n");
	for (int s = 0; s < SRC_CNT; s++) {
		printf("%-14s", source_names[s]);
		for (int v = 0; v < V_CNT; v++) {
			printf(" %10u", vk->counts[s][v]);
			tot[v] += vk->counts[s][v];
		}
		printf("\n");
	}
	printf("%-14s", "total");
	for (int v = 0; v < V_CNT; v++)
		printf(" %10u", tot[v]);
	for (int v = V_AGREE_ACCEPT; v <= V_UNLISTED; v++)
		compared += tot[v];
	printf("\ncompared %u, agree %u, listed differences %u, unlisted %u, skipped %u\n",
	       compared, tot[V_AGREE_ACCEPT] + tot[V_AGREE_REJECT], tot[V_LISTED], tot[V_UNLISTED],
	       tot[V_SKIPPED]);
	if (vk->skip_cnt)
		printf("skipped, by reason:\n");
	for (size_t i = 0; i < vk->skip_cnt; i++)
		printf("  %5u  %s\n", vk->skips[i].cnt, vk->skips[i].why);
}

int main(void)
{
	struct vk vk = { .verbose = getenv("VK_VERBOSE") && *getenv("VK_VERBOSE") == '1',
			 .skip_list = getenv("VK_SKIP"), .only = getenv("VK_ONLY") };
	struct vc_corpus own = { 0 }, corpus = { 0 };
	struct utsname u;
	char kernel[256] = "unknown kernel", err[512] = "";
	int r, fds;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!uname(&u))
		snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
	printf("kernel: %s\n", kernel);
	r = probe_bpf();
	if (r) {
		printf("SKIPPED: bpf() unavailable: %s (%s)\n", strerror(-r),
		       -r == EPERM ? "needs CAP_BPF (root)" : "kernel or sandbox");
		return 77;
	}
	vk.klog = malloc(KLOG_SIZE);
	if (!vk.klog)
		return 1;
	load_diffs(&vk, DIFF_FILE);
	fds = count_fds();

	r = vc_corpus_parse(&own, own_cases, "own", err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (r)
		printf("own cases: %s\n", err);
	run_vf(&vk, &own, SRC_OWN, "");

	r = vc_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/verifier", err, sizeof(err));
	if (r) /* test_verifier says the same; its listed lines are not reported stale */
		test_fail(GPUEXT_TEST_DATA_DIR "/verifier", 0, "verifier corpus: %s", err);
	else
		run_vf(&vk, &corpus, SRC_VF, "verifier/");
	run_objects(&vk, GPUEXT_TEST_BPF_DIR);
	run_isa(&vk);

	for (size_t i = 0; i < vk.diff_cnt && !vk.only; i++)
		if (!vk.diffs[i].seen && !(r && !strncmp(vk.diffs[i].name, "verifier/", 9)))
			test_fail(DIFF_FILE, vk.diffs[i].line,
				  "%s: stale: no such case was compared (renamed, removed or skipped)",
				  vk.diffs[i].name);
	CHECK_EQ_INT(count_fds(), fds); /* no kernel map or program left open */
	print_table(&vk, kernel);

	vc_corpus_free(&own);
	vc_corpus_free(&corpus);
	free(vk.diffs);
	free(vk.klog);
	return test_done("verifier_kernel");
}
