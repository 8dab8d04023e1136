// SPDX-License-Identifier: Apache-2.0
/* Helpers of gpuext.ko's VM tests: see ../kt.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "kt.h"

int kt_failures;

void kt_require_module(void)
{
	if (access(KT_DEBUGFS "/selftest", R_OK | W_OK)) {
		printf("skip: gpuext.ko is not loaded (no %s/selftest: %s)\n", KT_DEBUGFS,
		       strerror(errno));
		exit(77);
	}
}

static const char *obj_path(const char *env, const char *dflt, const char *name)
{
	static char paths[8][512];
	static int next;
	const char *dir = getenv(env);
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s.bpf.o", dir && *dir ? dir : dflt, name);
	return p;
}

const char *kt_policy(const char *name)
{
	return obj_path("GXVM_POLICIES", "/gx/policies", name);
}

const char *kt_testbpf(const char *name)
{
	return obj_path("GXVM_TESTBPF", "/gx/testbpf", name);
}

ssize_t kt_read(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	return (ssize_t)len;
}

int kt_write(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		err = -errno;
	close(fd);
	return err;
}

int kt_selftest(const char *cmd, char *out, size_t cap)
{
	int fd = open(KT_DEBUGFS "/selftest", O_RDWR), err = 0;
	ssize_t n, len = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, cmd, strlen(cmd)) < 0)
		err = -errno;
	if (out && cap) {
		lseek(fd, 0, SEEK_SET);
		while ((size_t)len + 1 < cap && (n = read(fd, out + len, cap - 1 - len)) > 0)
			len += n;
		out[len] = '\0';
	}
	close(fd);
	return err;
}

int kt_st(char *out, size_t cap, const char *fmt, ...)
{
	char cmd[128], local[4096];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (!out) {
		out = local;
		cap = sizeof(local);
	}
	err = kt_selftest(cmd, out, cap);
	KT_CHECK(!err, "selftest '%s' failed: %s (%s)", cmd, strerror(-err), out);
	return err;
}

ssize_t kt_events(char *buf, size_t cap)
{
	int fd = open(KT_DEBUGFS "/events", O_RDONLY);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	/* Each read hands out whole lines and removes them: read until empty. */
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	return (ssize_t)len;
}

void kt_events_clear(void)
{
	kt_write(KT_DEBUGFS "/events", "clear\n");
}

long kt_refcnt(void)
{
	char buf[32];

	if (kt_read("/sys/module/gpuext/refcnt", buf, sizeof(buf)) <= 0)
		return -1;
	return strtol(buf, NULL, 10);
}

long kt_settled_refcnt(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	long last = kt_refcnt();
	int same = 0;

	for (int t = 0; t < 60 && same < 6; t++) {
		long now;

		nanosleep(&ts, NULL);
		now = kt_refcnt();
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

ssize_t kt_dmesg(char *buf, size_t cap)
{
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);

	if (n <= 0)
		return -1;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, (int)(cap - 1));
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

int kt_count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *hit = strstr(p, needle);

		if (hit && hit < p + len)
			n++;
		p = nl ? nl + 1 : NULL;
	}
	return n;
}

bool kt_wait_file(const char *path, const char *needle, bool want, int ms)
{
	static char buf[16384];
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	for (int t = 0; t <= ms; t += 20) {
		if (kt_read(path, buf, sizeof(buf)) >= 0 && (strstr(buf, needle) != NULL) == want)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

int kt_param(const char *name, const char *val, char *old, size_t cap)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/gpuext/parameters/%s", name);
	if (old && kt_read(path, old, cap) < 0)
		return -errno;
	if (old)
		old[strcspn(old, "\n")] = '\0';
	return kt_write(path, val);
}

const char *kt_libbpf_unusable(void)
{
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SOCKET_FILTER, NULL) > 0 ||
	    libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, NULL) > 0)
		return NULL;
	return "libbpf cannot load objects on this kernel: its start-up probe needs a "
	       "SOCKET_FILTER or TRACEPOINT program type and this kernel has neither "
	       "(CONFIG_NET and CONFIG_BPF_EVENTS are off)";
}

void kt_require_libbpf(void)
{
	const char *why = kt_libbpf_unusable();

	if (!why)
		return;
	if (kt_failures) {
		printf("(policy checks not run: %s)\n", why);
		exit(1);
	}
	printf("skip: %s\n", why);
	exit(77);
}

int kt_finish(const char *test)
{
	if (kt_failures) {
		printf("%s: %d check(s) failed\n", test, kt_failures);
		return 1;
	}
	printf("%s: all checks passed\n", test);
	return 0;
}
