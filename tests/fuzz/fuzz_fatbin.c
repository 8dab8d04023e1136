/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for module images (hal/nvidia/fatbin.c) and the two
 * decompressors behind them: any byte string must give PTX or an error,
 * never a crash, an out-of-bounds read or a leak. The first byte picks the
 * entry point and the sm, unless the input is a fatbin as it is. Seed it with
 * the fatbins tests/nv/gen.sh builds:
 *
 *   fuzz_fatbin -max_total_time=60 corpus/ build/tests/nv/
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUEXT_NV_IMAGE_LINKED
#include "decompress.h"
#include "nvprobe.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef GPUEXT_NV_IMAGE_LINKED
	static const unsigned sms[] = { 75, 80, 86, 90, 100, 120 };
	static uint8_t out[1 << 20];
	char err[256], *ptx = NULL;
	size_t len = 0;
	uint8_t sel;

	if (size < 1)
		return 0;
	/* A raw fatbin (tests/nv seeds as they are): the image path directly. */
	if (size >= 4 && !memcmp(data, "\x50\xed\x55\xba", 4)) {
		if (gx_image_ptx(data, size, sms[size % 6], &ptx, &len, err, sizeof(err)) == 0 &&
		    strlen(ptx) != len)
			abort();
		free(ptx);
		return 0;
	}
	sel = data[0];
	data++, size--;
	switch (sel & 3) {
	case 0:
		gx_zstd_decode(data, size, out, sel & 4 ? 4096 : sizeof(out), err, sizeof(err));
		break;
	case 1:
		gx_lz4_decode(data, size, out, sel & 4 ? 4096 : sizeof(out), err, sizeof(err));
		break;
	default:
		/*
		 * A wrapper holds a pointer the fuzzer would choose; the image
		 * length is always given (0 would mean "trust the header").
		 */
		if (size < 4 || !memcmp(data, "\xb1\x43\x62\x46", 4))
			return 0;
		if (gx_image_ptx(data, size, sms[(sel >> 2) % 6], &ptx, &len, err, sizeof(err)) == 0 &&
		    strlen(ptx) != len)
			abort();
		free(ptx);
		break;
	}
#else
	(void)data;
	(void)size;
#endif
	return 0;
}
