// SPDX-License-Identifier: GPL-2.0-only
/*
 * gxvm_hello: the VM harness's self-test module. It proves, before any real
 * module of ours is involved, that an out-of-tree module built by the
 * harness loads into the track's kernel, carries module BTF (the test
 * finds struct gxvm_hello_state in it through libbpf) and can publish a
 * value the user-space test reads back (debugfs gxvm_hello/state).
 */
#define pr_fmt(fmt) "gxvm_hello: " fmt

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/seq_file.h>

#define GXVM_HELLO_MAGIC 0x67786d76u	/* "gxvm" */

/* Lives as long as the module; its layout is what the test checks in BTF. */
struct gxvm_hello_state {
	u32 magic;
	u32 opens;
	u64 loaded_jiffies;
};

static struct gxvm_hello_state hello_state;
static struct dentry *hello_dir;

static int hello_show(struct seq_file *m, void *v)
{
	/* Counting opens shows the test reads the live module, not a cache. */
	hello_state.opens++;
	seq_printf(m, "magic=%#x opens=%u\n", hello_state.magic, hello_state.opens);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hello);

/*
 * Writing to debugfs gxvm_hello/warn raises a WARN: the way to check, by
 * hand, that the harness fails a run whose kernel log has one (README.md).
 */
static ssize_t warn_write(struct file *file, const char __user *buf,
			  size_t len, loff_t *ppos)
{
	WARN(1, "gxvm_hello: WARN requested through debugfs (harness check)\n");
	return len;
}

static const struct file_operations warn_fops = {
	.owner = THIS_MODULE,
	.write = warn_write,
};

static int __init gxvm_hello_init(void)
{
	hello_state.magic = GXVM_HELLO_MAGIC;
	hello_state.loaded_jiffies = get_jiffies_64();
	hello_dir = debugfs_create_dir("gxvm_hello", NULL);
	if (IS_ERR(hello_dir)) {
		pr_err("cannot create debugfs dir: %ld\n", PTR_ERR(hello_dir));
		return PTR_ERR(hello_dir);
	}
	debugfs_create_file("state", 0444, hello_dir, NULL, &hello_fops);
	debugfs_create_file("warn", 0200, hello_dir, NULL, &warn_fops);
	pr_info("loaded (state at %zu bytes)\n", sizeof(hello_state));
	return 0;
}

static void __exit gxvm_hello_exit(void)
{
	debugfs_remove(hello_dir);
	pr_info("unloaded after %u opens\n", hello_state.opens);
}

module_init(gxvm_hello_init);
module_exit(gxvm_hello_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuext VM harness self-test module");
