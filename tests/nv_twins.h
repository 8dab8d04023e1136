/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the splicer's tests: the spliced text without its flat twins
 * (hal/nvidia/ptx_twin.c), so what they count is each kernel's splice once.
 * Each twin is the comment line the splicer puts before it, then the
 * function up to the '}' that starts a line.
 */
#ifndef GPUEXT_TESTS_NV_TWINS_H
#define GPUEXT_TESTS_NV_TWINS_H

#include <string.h>

static unsigned nv_drop_twins(char *t)
{
	static const char mark[] = "\n\n// gpuext: the flat twin of ";
	unsigned n = 0;
	char *p;

	while ((p = strstr(t, mark))) {
		char *e = strstr(p + 1, "\n}");

		if (!e)
			break;
		e += 2;
		memmove(p, e, strlen(e) + 1);
		n++;
	}
	return n;
}

#endif
