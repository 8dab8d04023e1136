// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpuext.ko: the vendor-neutral kernel side of gpuext. Registers the
 * gpu_mem_ops / gpu_sched_ops struct_ops types and their kfuncs
 * (gpuext_ops.c), keeps the dispatch API adapters call (gpuext_mem.c,
 * gpuext_sched.c), the event ring (gpuext_events.c) and debugfs:
 *
 *   /sys/kernel/debug/gpuext/events    decisions, one per line; reading consumes
 *   /sys/kernel/debug/gpuext/status    attached policies, ejections, counters
 *   /sys/kernel/debug/gpuext/selftest  a fake device to drive the dispatch
 *
 * There is no module_exit teardown of the struct_ops types: the kernel drops
 * them with the module's BTF, and every attached policy holds a module
 * reference, so the module cannot go while a policy is attached.
 */
#define pr_fmt(fmt) "gpuext: " fmt

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/seq_file.h>

#include "gpuext_internal.h"

bool gpuext_trace_hooks = true;
module_param_named(trace_hooks, gpuext_trace_hooks, bool, 0644);
MODULE_PARM_DESC(trace_hooks, "record every hook call and default in the event ring (default: on)");

unsigned int gpuext_kfunc_err_limit = 1000;
module_param_named(kfunc_err_limit, gpuext_kfunc_err_limit, uint, 0644);
MODULE_PARM_DESC(kfunc_err_limit,
		 "eject a policy after this many invalid kfunc calls (0: never; default 1000)");

unsigned int gpuext_prefetch_threshold = 51;
module_param_named(prefetch_threshold, gpuext_prefetch_threshold, uint, 0644);
MODULE_PARM_DESC(prefetch_threshold, "default prefetch: subtree population above this % (51)");

unsigned int gpuext_big_page_pages = 16;
module_param_named(big_page_pages, gpuext_big_page_pages, uint, 0644);
MODULE_PARM_DESC(big_page_pages, "default prefetch: big page size in 4 KiB pages (16 = 64 KiB; 1 = off)");

struct dentry *gpuext_debugfs_root;

static int status_show(struct seq_file *m, void *v)
{
	int k, h;

	mutex_lock(&gpuext_attach_lock);
	for (k = 0; k < GPUEXT_KINDS; k++) {
		struct gpuext_slot *s = &gpuext_slots[k];
		int n = k == GPUEXT_KIND_MEM ? GPUEXT_MEM_HOOKS : GPUEXT_SCHED_HOOKS;

		seq_printf(m, "%s: ", s->type_name);
		if (!s->kdata)
			seq_puts(m, "none (defaults)\n");
		else
			seq_printf(m, "%s%s\n", s->name,
				   atomic_read(&s->ejected) ? " (ejected, defaults)" : "");
		seq_printf(m, "  attaches %llu ejections %llu invalid_kfunc_calls %d\n",
			   s->attach_count, s->eject_count, atomic_read(&s->bad_calls));
		if (s->eject_count)
			seq_printf(m, "  last ejection: %s\n", s->eject_reason);
		for (h = 0; h < n; h++)
			seq_printf(m, "  %-20s calls %lld defaults %lld\n", s->hooks[h],
				   atomic64_read(&s->calls[h]), atomic64_read(&s->defaults[h]));
	}
	mutex_unlock(&gpuext_attach_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(status);

static int __init gpuext_init(void)
{
	int err;

	gpuext_debugfs_root = debugfs_create_dir("gpuext", NULL);
	err = gpuext_events_init(gpuext_debugfs_root);
	if (err)
		goto err_debugfs;
	debugfs_create_file("status", 0400, gpuext_debugfs_root, NULL, &status_fops);
	err = gpuext_selftest_init(gpuext_debugfs_root);
	if (err)
		goto err_events;
	/* Last: once registered, policies can attach and the module is pinned. */
	err = gpuext_ops_register();
	if (err)
		goto err_selftest;
	pr_info("loaded: struct_ops gpu_mem_ops, gpu_sched_ops and 7 kfuncs registered\n");
	return 0;

err_selftest:
	gpuext_selftest_exit();
err_events:
	debugfs_remove_recursive(gpuext_debugfs_root);
	gpuext_events_exit();
	return err;
err_debugfs:
	debugfs_remove_recursive(gpuext_debugfs_root);
	return err;
}

static void __exit gpuext_exit(void)
{
	/* Files first: no reader or selftest command may run past this point. */
	debugfs_remove_recursive(gpuext_debugfs_root);
	gpuext_selftest_exit();
	gpuext_events_exit();
	pr_info("unloaded\n");
}

module_init(gpuext_init);
module_exit(gpuext_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuext: vendor-neutral eBPF struct_ops for GPU memory and scheduling");
MODULE_AUTHOR("gpuext");
