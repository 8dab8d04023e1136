/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by gpuext.ko's VM tests (lib/kt.c): debugfs access, the
 * selftest device, the event ring, the kernel log, checks that count
 * failures. Every test: exit 0 pass, 77 skip (with a "skip: why" line),
 * 1 fail. See core/kernel/README.md for the debugfs interface.
 */
#ifndef GPUEXT_KT_H
#define GPUEXT_KT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define KT_DEBUGFS "/sys/kernel/debug/gpuext"

extern int kt_failures;

/* Counts a failure and says what was expected; true when @cond held. */
#define KT_CHECK(cond, ...)                                                         \
	({                                                                          \
		bool kt_ok_ = (cond);                                               \
		if (!kt_ok_) {                                                      \
			kt_failures++;                                              \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                 \
			printf(__VA_ARGS__);                                        \
			printf("\n");                                               \
		}                                                                   \
		kt_ok_;                                                             \
	})

/* Skips (exit 77) unless gpuext.ko is loaded and its debugfs is there. */
void kt_require_module(void);
/* Skips (exit 77, after kt_failures == 0) when kt_libbpf_unusable(). */
void kt_require_libbpf(void);

/* The object @name.bpf.o in $GXVM_POLICIES (shipped) or $GXVM_TESTBPF (tests). */
const char *kt_policy(const char *name);
const char *kt_testbpf(const char *name);

/* Whole file into @buf (NUL-terminated); bytes read or -errno. */
ssize_t kt_read(const char *path, char *buf, size_t cap);
int kt_write(const char *path, const char *s);

/* One selftest command; its output into @out. 0 or -errno of the command. */
int kt_selftest(const char *cmd, char *out, size_t cap);
/* Same, printf-style, failing the test (KT_CHECK) when the command fails. */
int kt_st(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Drains gpuext/events into @buf (consumes them). */
ssize_t kt_events(char *buf, size_t cap);
void kt_events_clear(void);

/* /sys/module/gpuext/refcnt, or -1. */
long kt_refcnt(void);
/*
 * The refcount once policies detached by earlier tests are gone (their
 * struct_ops maps, which hold the module, are freed after RCU grace
 * periods): polls until it stays the same for 300 ms (3 s at most).
 */
long kt_settled_refcnt(void);

/* The kernel log (klogctl), for pr_warn lines. */
ssize_t kt_dmesg(char *buf, size_t cap);

/* Number of lines of @text that contain @needle. */
int kt_count_lines(const char *text, const char *needle);

/* Polls @path until it contains (@want true) or lacks @needle, up to @ms. */
bool kt_wait_file(const char *path, const char *needle, bool want, int ms);

/* Writes @val to a gpuext module parameter; returns the old value via @old. */
int kt_param(const char *name, const char *val, char *old, size_t cap);

/*
 * libbpf refuses to load anything on a kernel where its start-up probe (a
 * trivial SOCKET_FILTER, else TRACEPOINT program) cannot load: no CONFIG_NET
 * and no CONFIG_BPF_EVENTS. Returns NULL if libbpf can work, else why not.
 */
const char *kt_libbpf_unusable(void);

int kt_finish(const char *test);

#endif
