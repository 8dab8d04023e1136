// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs gpuext/selftest: a fake device that plays adapter, so the dispatch
 * and attached policies can be driven without hooks-hmm or hooks-drmsched
 * (VM tests, the differential test). Write one command, read its output:
 *
 *   reset CAP [NBLOCKS]      new device "selftest0": CAP blocks of GPU memory,
 *                            NBLOCKS (default 64, at most 4096) VA blocks,
 *                            ids 0..NBLOCKS-1, none resident; tasks cleared
 *   fault ID PAGE [w] [tgid=T]
 *                            a GPU fault on page PAGE of block ID, serviced as
 *                            UVM does: prefetch hint, then (if the block has
 *                            no memory) evict the victim and activate, copy,
 *                            access. Out: "evict V" / "prefetch ID A-B" lines
 *   access ID PAGE [w]       just the access hook (block resident)
 *   evict                    pick a victim and evict it; out: its id or "none"
 *   lists                    "used ID..." and "unused ID..." (head first)
 *   task-init ID [COMM]      task-bind ID      task-destroy ID   (ID 0..63)
 *                            out: "task ID timeslice_us=V level=L bound=B
 *                            rejected=R" (bind: "bind ID ERR" first)
 *
 * The same decisions also go to gpuext/events, as an adapter would report
 * (unless the trace_hooks parameter is off: stress tests keep the ring for
 * attach/detach/eject lines).
 * Commands are serialised by a mutex; a bad command gets -EINVAL and a
 * line in the output saying why.
 */
#define pr_fmt(fmt) "gpuext: " fmt

#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "gpuext_internal.h"

#define ST_MAX_BLOCKS 4096
#define ST_TASKS 64
#define ST_OUT 4096
#define TREE_WORDS (GPU_PAGES_PER_BLOCK / 64)

struct st_block {
	struct gpu_block b;
	u64 resident[TREE_WORDS];
};

static struct {
	struct mutex lock;
	struct gpuext_mem_dev *dev;
	struct st_block *blocks;
	u32 nblocks;
	struct gpuext_task tasks[ST_TASKS];
	bool task_live[ST_TASKS];
	char out[ST_OUT];
	size_t out_len;
} st = { .lock = __MUTEX_INITIALIZER(st.lock) };

static __printf(1, 2) void out(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (st.out_len >= ST_OUT - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(st.out + st.out_len, ST_OUT - st.out_len, fmt, ap);
	va_end(ap);
	st.out_len = min_t(size_t, st.out_len + n, ST_OUT - 1);
}

static void st_mem_free(void)
{
	u32 i;

	if (!st.dev)
		return;
	for (i = 0; i < st.nblocks; i++)
		gpuext_mem_remove(st.dev, &st.blocks[i].b);
	gpuext_mem_dev_unregister(st.dev);
	vfree(st.blocks);
	st.dev = NULL;
	st.blocks = NULL;
	st.nblocks = 0;
}

static void st_tasks_free(void)
{
	int i;

	for (i = 0; i < ST_TASKS; i++) {
		if (st.task_live[i])
			gpuext_task_destroy(&st.tasks[i]);
		st.task_live[i] = false;
	}
}

static int cmd_reset(u64 cap, u32 nblocks)
{
	struct gpuext_mem_dev *dev;
	u32 i;

	if (!cap || !nblocks || nblocks > ST_MAX_BLOCKS) {
		out("reset: CAP must be > 0 and NBLOCKS 1..%d\n", ST_MAX_BLOCKS);
		return -EINVAL;
	}
	st_mem_free();
	st_tasks_free();
	st.blocks = vzalloc(array_size(nblocks, sizeof(*st.blocks)));
	if (!st.blocks)
		return -ENOMEM;
	dev = gpuext_mem_dev_register("selftest0", 0, cap);
	if (IS_ERR(dev)) {
		vfree(st.blocks);
		st.blocks = NULL;
		return PTR_ERR(dev);
	}
	st.dev = dev;
	st.nblocks = nblocks;
	for (i = 0; i < nblocks; i++)
		gpuext_block_init(dev, &st.blocks[i].b, (u64)i << GPU_BLOCK_SHIFT, 1, &st.blocks[i]);
	out("reset cap=%llu blocks=%u\n", cap, nblocks);
	return 0;
}

static void evict_block(struct st_block *v)
{
	if (gpuext_trace_hooks)
		gpuext_event("evict %llu", v->b.info.block_id);
	out("evict %llu\n", v->b.info.block_id);
	gpuext_mem_remove(st.dev, &v->b);
	memset(v->resident, 0, sizeof(v->resident));
	v->b.info.resident_pages = 0;
}

static int cmd_evict(void)
{
	struct gpu_block *v = gpuext_mem_pick_victim(st.dev, 1);

	if (!v) {
		out("none\n");
		return 0;
	}
	evict_block(v->owner);
	return 0;
}

static void emit_runs(struct st_block *sb, const u64 *pf)
{
	u32 p = 0, q;

	while (p < GPU_PAGES_PER_BLOCK) {
		if (!(pf[p / 64] >> (p % 64) & 1)) {
			p++;
			continue;
		}
		for (q = p; q + 1 < GPU_PAGES_PER_BLOCK && (pf[(q + 1) / 64] >> ((q + 1) % 64) & 1);)
			q++;
		if (gpuext_trace_hooks)
			gpuext_event("prefetch %llu %u-%u", sb->b.info.block_id, p, q);
		out("prefetch %llu %u-%u\n", sb->b.info.block_id, p, q);
		p = q + 1;
	}
}

static int cmd_fault(u32 id, u32 page, bool w, u32 tgid)
{
	struct gpu_page_range max = { 0, GPU_PAGES_PER_BLOCK - 1 }, r;
	struct st_block *sb = &st.blocks[id];
	struct gpu_page_tree tree = {};
	u64 pf[TREE_WORDS] = {};
	bool first;
	u32 p, n;

	if (sb->resident[page / 64] >> (page % 64) & 1) {
		out("page %u of block %u is resident: no fault\n", page, id);
		return 0;
	}
	/* uvm_perf_prefetch_get_hint_va_block(): before memory is found. */
	memcpy(tree.resident, sb->resident, sizeof(tree.resident));
	tree.faulted[page / 64] |= 1ULL << (page % 64);
	sb->b.info.fault_count++;
	gpuext_mem_prefetch(st.dev, &sb->b, tgid, page, &tree, &max, &r);
	for (p = r.first_page; p <= r.last_page && r.first_page <= r.last_page; p++)
		pf[p / 64] |= 1ULL << (p % 64);
	for (n = 0; n < TREE_WORDS; n++)
		pf[n] &= ~sb->resident[n] & ~tree.faulted[n];

	/* block_populate_pages(): a root chunk, evicting if the GPU is full. */
	if (!sb->b.list) {
		if (st.dev->resident >= st.dev->capacity_blocks) {
			struct gpu_block *v = gpuext_mem_pick_victim(st.dev, tgid);

			if (v)
				evict_block(v->owner);
		}
		gpuext_mem_activate(st.dev, &sb->b, tgid);
	}
	first = sb->b.info.resident_pages == 0;
	n = 0;
	for (p = 0; p < TREE_WORDS; p++) {
		sb->resident[p] |= pf[p] | tree.faulted[p];
		n += hweight64(sb->resident[p]);
	}
	sb->b.info.resident_pages = n;
	emit_runs(sb, pf);
	gpuext_mem_access(st.dev, &sb->b, tgid, page, w, first);
	return 0;
}

static void list_out(u32 kind)
{
	u64 ids[64];
	u32 n, i;

	n = gpuext_mem_list_ids(st.dev, kind, ids, ARRAY_SIZE(ids));
	out("%s", kind == GPUEXT_LIST_USED ? "used" : "unused");
	for (i = 0; i < n; i++)
		out(" %llu", ids[i]);
	out("\n");
}

static void task_out(u32 id)
{
	struct gpuext_task *t = &st.tasks[id];

	out("task %u timeslice_us=%u level=%u bound=%d rejected=%d\n", id,
	    t->ctx.timeslice_us, t->ctx.level, t->bound, t->bind_rejected);
}

static int cmd_task(const char *verb, u32 id, const char *comm)
{
	struct gpuext_task *t = &st.tasks[id];
	int err;

	if (!strcmp(verb, "task-init")) {
		if (st.task_live[id])
			gpuext_task_destroy(t);
		memset(t, 0, sizeof(*t));
		t->ctx.task_id = id;
		t->ctx.tgid = current->tgid;
		strscpy(t->ctx.comm, comm && *comm ? comm : "selftest", sizeof(t->ctx.comm));
		gpuext_task_init(t);
		st.task_live[id] = true;
	} else if (!st.task_live[id]) {
		out("%s: task %u does not exist (task-init first)\n", verb, id);
		return -ENOENT;
	} else if (!strcmp(verb, "task-bind")) {
		err = gpuext_task_bind(t);
		out("bind %u %d\n", id, err);
	} else {
		gpuext_task_destroy(t);
		st.task_live[id] = false;
	}
	task_out(id);
	return 0;
}

static int run_cmd(char *line)
{
	char *argv[6], *p = strim(line), *tok;
	int argc = 0;
	u32 a = 0, b = 0, tgid = 1;
	bool w = false;
	u64 cap;

	while ((tok = strsep(&p, " \t")) && argc < ARRAY_SIZE(argv))
		if (*tok)
			argv[argc++] = tok;
	if (!argc)
		return -EINVAL;
	if (!strcmp(argv[0], "reset")) {
		if (argc < 2 || kstrtou64(argv[1], 0, &cap) ||
		    (argc > 2 && kstrtou32(argv[2], 0, &b)))
			goto usage;
		return cmd_reset(cap, argc > 2 ? b : 64);
	}
	if (!strncmp(argv[0], "task-", 5)) {
		if (argc < 2 || kstrtou32(argv[1], 0, &a) || a >= ST_TASKS ||
		    (strcmp(argv[0], "task-init") && strcmp(argv[0], "task-bind") &&
		     strcmp(argv[0], "task-destroy")))
			goto usage;
		return cmd_task(argv[0], a, argc > 2 ? argv[2] : NULL);
	}
	if (!st.dev) {
		out("%s: no device (reset CAP first)\n", argv[0]);
		return -ENODEV;
	}
	if (!strcmp(argv[0], "evict"))
		return cmd_evict();
	if (!strcmp(argv[0], "lists")) {
		list_out(GPUEXT_LIST_USED);
		list_out(GPUEXT_LIST_UNUSED);
		return 0;
	}
	if (strcmp(argv[0], "fault") && strcmp(argv[0], "access"))
		goto usage;
	if (argc < 3 || kstrtou32(argv[1], 0, &a) || kstrtou32(argv[2], 0, &b) ||
	    a >= st.nblocks || b >= GPU_PAGES_PER_BLOCK)
		goto usage;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "w"))
			w = true;
		else if (strncmp(argv[i], "tgid=", 5) || kstrtou32(argv[i] + 5, 0, &tgid))
			goto usage;
	}
	if (!strcmp(argv[0], "fault"))
		return cmd_fault(a, b, w, tgid);
	if (!st.blocks[a].b.list) {
		out("access: block %u is not resident\n", a);
		return -EINVAL;
	}
	gpuext_mem_access(st.dev, &st.blocks[a].b, tgid, b, w, false);
	return 0;
usage:
	out("bad command '%s' (see core/kernel/README.md: reset, fault, access, evict, lists, task-init/bind/destroy)\n",
	    argv[0]);
	return -EINVAL;
}

static ssize_t selftest_write(struct file *file, const char __user *ubuf, size_t count,
			      loff_t *ppos)
{
	char buf[128];
	int err;

	if (count >= sizeof(buf))
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	mutex_lock(&st.lock);
	st.out_len = 0;
	st.out[0] = '\0';
	err = run_cmd(buf);
	mutex_unlock(&st.lock);
	return err ? err : count;
}

static ssize_t selftest_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&st.lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, st.out, st.out_len);
	mutex_unlock(&st.lock);
	return ret;
}

static const struct file_operations selftest_fops = {
	.owner = THIS_MODULE,
	.read = selftest_read,
	.write = selftest_write,
	.llseek = default_llseek,
};

int gpuext_selftest_init(struct dentry *root)
{
	debugfs_create_file("selftest", 0600, root, NULL, &selftest_fops);
	return 0;
}

void gpuext_selftest_exit(void)
{
	mutex_lock(&st.lock);
	st_tasks_free();
	st_mem_free();
	mutex_unlock(&st.lock);
}
