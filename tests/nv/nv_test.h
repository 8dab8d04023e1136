/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the tests of libgpuext-nvprobe.so (tests/test_nv_*.c). */
#ifndef GPUEXT_TESTS_NV_TEST_H
#define GPUEXT_TESTS_NV_TEST_H

#include <stdio.h>
#include <string.h>

#include "maps_impl.h"
#include "nv_impl.h"

/* The pack's entry for map @m of this process, as `gpuext trace` writes it. */
static inline void nv_test_pack_map(struct gx_pack_map *pm, struct gpuext_map *m,
				    uint32_t nr_slots)
{
	memset(pm, 0, sizeof(*pm));
	snprintf(pm->name, sizeof(pm->name), "%s", gpuext_map__name(m));
	snprintf(pm->shm, sizeof(pm->shm), "%s", m->shm_name);
	pm->type = gpuext_map__type(m);
	pm->key_size = gpuext_map__key_size(m);
	pm->value_size = gpuext_map__value_size(m);
	pm->max_entries = gpuext_map__max_entries(m);
	pm->nr_slots = nr_slots;
}

#endif
