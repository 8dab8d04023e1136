// SPDX-License-Identifier: Apache-2.0
/*
 * Vulkan flavour: the data area of the buffer (device maps and variables),
 * after the stacks. The emitter resolves gpuext_rt_map / gpuext_rt_map_value
 * / gpuext_rt_var to addresses in it (spirv_emit.c); the runner copies it in
 * before the dispatch and back after (gpuext_spirv_vk_data_save/_load).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "internal.h"
#include "spirv.h"

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

int gpuext_spirv_vk_data_layout(struct gpuext_prog *prog, struct gpuext_spirv_vk_slot *maps,
				size_t map_cap, struct gpuext_spirv_vk_slot *vars, size_t var_cap,
				uint64_t *size)
{
	struct gpuext_runtime *rt = gpuext_prog__runtime(prog);
	size_t mc = gpuext_prog__map_cnt(prog);
	uint64_t off = 0;

	if ((maps && map_cap < mc) || (vars && var_cap < rt->var_cnt))
		return -EINVAL;
	for (size_t i = 0; i < mc; i++) {
		struct gpuext_map *m = gpuext_prog__map(prog, i);
		uint32_t type = gpuext_map__type(m);
		struct gpuext_spirv_vk_slot s = { 0 };

		if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			s.off = off;
			s.value_size = gpuext_map__value_size(m);
			s.stride = (uint32_t)align8(s.value_size);
			s.entries = gpuext_map__max_entries(m);
			s.size = (uint64_t)s.stride * s.entries;
			off = align8(off + s.size);
		}
		if (maps)
			maps[i] = s;
	}
	for (size_t i = 0; i < rt->var_cnt; i++) {
		struct gpuext_spirv_vk_slot s = { .off = off, .size = rt->vars[i].size };

		off = align8(off + s.size);
		if (vars)
			vars[i] = s;
	}
	*size = off;
	return 0;
}

/* Copies (@save) the maps and variables of @prog into @blob, or back (!@save). */
static int data_copy(struct gpuext_prog *prog, uint8_t *blob, size_t len, bool save)
{
	struct gpuext_runtime *rt = gpuext_prog__runtime(prog);
	size_t mc = gpuext_prog__map_cnt(prog), vc = rt->var_cnt;
	struct gpuext_spirv_vk_slot *ms = calloc(mc + 1, sizeof(*ms)), *vs = calloc(vc + 1, sizeof(*vs));
	uint64_t size = 0;
	int err = -ENOMEM;

	if (!ms || !vs)
		goto out;
	err = gpuext_spirv_vk_data_layout(prog, ms, mc, vs, vc, &size);
	if (err)
		goto out;
	err = -EINVAL;
	if (size > len)
		goto out;
	for (size_t i = 0; i < mc; i++) {
		struct gpuext_map *m = gpuext_prog__map(prog, i);
		size_t vbytes = (size_t)ms[i].stride * gpuext_runtime__nr_cpu_slots(rt);
		uint8_t *v;

		if (!ms[i].size)
			continue;
		v = calloc(1, vbytes ? vbytes : 1);
		if (!v) {
			err = -ENOMEM;
			goto out;
		}
		for (uint32_t k = 0; k < ms[i].entries; k++) {
			uint8_t *slot = blob + ms[i].off + (uint64_t)k * ms[i].stride;
			int r = gpuext_map__lookup(m, &k, v);

			if (r) {
				free(v);
				err = r;
				goto out;
			}
			/* Per-CPU arrays: the device is CPU slot 0 (one invocation). */
			if (save) {
				memcpy(slot, v, ms[i].value_size);
			} else if (memcmp(slot, v, ms[i].value_size)) {
				memcpy(v, slot, ms[i].value_size);
				r = gpuext_map__update(m, &k, v, BPF_ANY);
				if (r) {
					free(v);
					err = r;
					goto out;
				}
			}
		}
		free(v);
	}
	for (size_t i = 0; i < vc; i++) {
		if (!rt->vars[i].addr || !vs[i].size)
			continue;
		if (save)
			memcpy(blob + vs[i].off, rt->vars[i].addr, vs[i].size);
		else
			memcpy(rt->vars[i].addr, blob + vs[i].off, vs[i].size);
	}
	err = 0;
out:
	free(ms);
	free(vs);
	return err;
}

int gpuext_spirv_vk_data_save(struct gpuext_prog *prog, void **blob, size_t *len)
{
	uint64_t size = 0;
	int err = gpuext_spirv_vk_data_layout(prog, NULL, 0, NULL, 0, &size);

	*blob = NULL;
	*len = 0;
	if (err)
		return err;
	*blob = calloc(1, size ? size : 1);
	if (!*blob)
		return -ENOMEM;
	*len = size;
	err = data_copy(prog, *blob, size, true);
	if (err) {
		free(*blob);
		*blob = NULL;
		*len = 0;
	}
	return err;
}

int gpuext_spirv_vk_data_load(struct gpuext_prog *prog, const void *blob, size_t len)
{
	return data_copy(prog, (uint8_t *)blob, len, false);
}
