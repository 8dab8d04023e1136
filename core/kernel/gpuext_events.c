// SPDX-License-Identifier: GPL-2.0-only
/*
 * The event ring: the last GPUEXT_EVENTS lines of what gpuext.ko and the
 * adapters decided (hook calls, defaults, evictions, prefetches, attributes,
 * refused binds, attach/detach, ejections), read as text from debugfs
 * gpuext/events, one event per line in conformance/scenario.h's vocabulary.
 *
 * Reading *consumes*: a test reads only what happened since its last read
 * (writing anything to the file clears it instead). When the ring wraps,
 * the oldest lines are dropped and the next read starts with
 * "dropped N", so a reader knows it missed some.
 */
#define pr_fmt(fmt) "gpuext: " fmt

#include <linux/debugfs.h>
#include <linux/export.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "gpuext_internal.h"

#define GPUEXT_EVENTS 8192
#define GPUEXT_EVENT_LEN 120	/* with the newline; longer lines are cut */

struct gpuext_ring {
	spinlock_t lock;
	char (*lines)[GPUEXT_EVENT_LEN];
	u64 head, tail;		/* tail - head lines are stored, oldest at head */
	u64 dropped;
};

static struct gpuext_ring ring = { .lock = __SPIN_LOCK_UNLOCKED(ring.lock) };

void gpuext_event_str(const char *s)
{
	unsigned long flags;
	char *line;
	size_t n;

	if (!ring.lines)
		return;
	spin_lock_irqsave(&ring.lock, flags);
	if (ring.tail - ring.head == GPUEXT_EVENTS) {
		ring.head++;
		ring.dropped++;
	}
	line = ring.lines[ring.tail % GPUEXT_EVENTS];
	n = strscpy(line, s, GPUEXT_EVENT_LEN - 1) < 0 ? GPUEXT_EVENT_LEN - 2 : strlen(line);
	line[n] = '\n';
	line[n + 1] = '\0';
	ring.tail++;
	spin_unlock_irqrestore(&ring.lock, flags);
}

void gpuext_event(const char *fmt, ...)
{
	char buf[GPUEXT_EVENT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	gpuext_event_str(buf);
}
EXPORT_SYMBOL_GPL(gpuext_event);

/* Whole lines only, as many as fit in @count; they leave the ring. */
static ssize_t events_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	size_t len = 0, cap = min_t(size_t, count, 64 * 1024);
	unsigned long flags;
	ssize_t ret;
	char *buf;

	buf = kvmalloc(cap, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	spin_lock_irqsave(&ring.lock, flags);
	if (ring.dropped) {
		int n = snprintf(buf, cap, "dropped %llu\n", ring.dropped);

		if (n < cap) {
			len = n;
			ring.dropped = 0;
		}
	}
	while (ring.head != ring.tail) {
		const char *line = ring.lines[ring.head % GPUEXT_EVENTS];
		size_t n = strlen(line);

		if (len + n > cap)
			break;
		memcpy(buf + len, line, n);
		len += n;
		ring.head++;
	}
	spin_unlock_irqrestore(&ring.lock, flags);
	ret = len;
	if (len && copy_to_user(ubuf, buf, len))
		ret = -EFAULT;
	kvfree(buf);
	if (ret > 0)
		*ppos += ret;
	return ret;
}

static ssize_t events_write(struct file *file, const char __user *ubuf, size_t count,
			    loff_t *ppos)
{
	unsigned long flags;

	spin_lock_irqsave(&ring.lock, flags);
	ring.head = ring.tail;
	ring.dropped = 0;
	spin_unlock_irqrestore(&ring.lock, flags);
	return count;
}

static const struct file_operations events_fops = {
	.owner = THIS_MODULE,
	.read = events_read,
	.write = events_write,
	.llseek = noop_llseek,
};

int gpuext_events_init(struct dentry *root)
{
	ring.lines = vzalloc(array_size(GPUEXT_EVENTS, GPUEXT_EVENT_LEN));
	if (!ring.lines)
		return -ENOMEM;
	debugfs_create_file("events", 0600, root, NULL, &events_fops);
	return 0;
}

void gpuext_events_exit(void)
{
	unsigned long flags;
	void *lines;

	spin_lock_irqsave(&ring.lock, flags);
	lines = ring.lines;
	ring.lines = NULL;
	spin_unlock_irqrestore(&ring.lock, flags);
	vfree(lines);
}
