/* SPDX-License-Identifier: Apache-2.0 */
#include "testlib.h"

#include <stdarg.h>
#include <stdlib.h>

unsigned test_checks, test_failures;

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	test_failures++;
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void test_log_print(enum gpuext_log_level level, const char *msg, void *user)
{
	struct test_log *log = user;
	size_t n = strlen(msg);

	(void)level;
	if (getenv("GPUEXT_TEST_VERBOSE"))
		fprintf(stderr, "log: %s\n", msg);
	if (log->len + n + 2 > sizeof(log->buf))
		return;
	memcpy(log->buf + log->len, msg, n);
	log->len += n;
	log->buf[log->len++] = '\n';
	log->buf[log->len] = '\0';
}

void test_log_clear(struct test_log *log)
{
	log->len = 0;
	log->buf[0] = '\0';
}

int test_done(const char *name)
{
	printf("%s: %u checks, %u failures\n", name, test_checks, test_failures);
	return test_failures ? 1 : 0;
}
