/* SPDX-License-Identifier: Apache-2.0 */
/* Hex text <-> bytes, as used by the conformance-plugin protocol and the CLI. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int gpuext_parse_hex(const char *text, uint8_t **out, size_t *len, char *why, size_t why_len)
{
	size_t cap = 64, n = 0;
	uint8_t *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; text[i];) {
		int hi, lo;

		if (isspace((unsigned char)text[i])) {
			i++;
			continue;
		}
		hi = hexval((unsigned char)text[i]);
		lo = hi < 0 ? -1 : hexval((unsigned char)text[i + 1]);
		if (hi < 0 || lo < 0) {
			if (why)
				snprintf(why, why_len,
					 "character %zu: expected a pair of hex digits, got '%.2s'", i,
					 text + i);
			free(buf);
			return -EINVAL;
		}
		if (n == cap) {
			uint8_t *b = realloc(buf, cap *= 2);

			if (!b) {
				free(buf);
				return -ENOMEM;
			}
			buf = b;
		}
		buf[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	*out = buf;
	*len = n;
	return 0;
}
