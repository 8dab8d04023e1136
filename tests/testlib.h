/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A very small test harness: CHECK_* macros record failures with file:line
 * and the values seen; test_done() prints a summary and gives the exit code.
 */
#ifndef GPUEXT_TESTLIB_H
#define GPUEXT_TESTLIB_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuext/gpuext.h"

extern unsigned test_checks, test_failures;

void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                           \
	do {                                                                  \
		test_checks++;                                                \
		if (!(cond))                                                  \
			test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);   \
	} while (0)

#define CHECK_EQ_U64(got, want)                                               \
	do {                                                                  \
		uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);         \
		test_checks++;                                                \
		if (g_ != w_)                                                 \
			test_fail(__FILE__, __LINE__,                         \
				  "%s == 0x%" PRIx64 ", want 0x%" PRIx64,     \
				  #got, g_, w_);                              \
	} while (0)

#define CHECK_EQ_INT(got, want)                                               \
	do {                                                                  \
		long long g_ = (long long)(got), w_ = (long long)(want);      \
		test_checks++;                                                \
		if (g_ != w_)                                                 \
			test_fail(__FILE__, __LINE__, "%s == %lld, want %lld", \
				  #got, g_, w_);                              \
	} while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                       \
	do {                                                                  \
		const char *h_ = (hay), *n_ = (needle);                      \
		test_checks++;                                                \
		if (!h_ || !strstr(h_, n_))                                   \
			test_fail(__FILE__, __LINE__,                         \
				  "%s does not contain \"%s\" (it is \"%s\")",  \
				  #hay, n_, h_ ? h_ : "(null)");              \
	} while (0)

/* Collects library log messages so tests can assert on error text. */
struct test_log {
	char buf[16384];
	size_t len;
};
void test_log_print(enum gpuext_log_level level, const char *msg, void *user);
void test_log_clear(struct test_log *log);

/* Prints "name: N checks, M failures" and returns the process exit code. */
int test_done(const char *name);

#endif
