/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Linked programs: construction from raw bytecode, function discovery and
 * accessors. Objects (loader.c) build their programs through the same
 * gpuext_prog_init().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int gpuext_prog_find_funcs(struct gpuext_prog *prog)
{
	uint32_t *starts;
	size_t n = 0, i;
	struct isa_decoded d;

	starts = malloc((prog->insn_cnt + 1) * sizeof(*starts));
	if (!starts)
		return -ENOMEM;
	starts[n++] = 0;
	for (i = 0; i < prog->insn_cnt; i += d.slots) {
		const struct bpf_insn *in = &prog->insns[i];
		int64_t t = -1;

		if (isa_decode(prog->insns, prog->insn_cnt, i, &d, NULL, 0)) {
			d.slots = 1;
			continue;
		}
		if (d.kind == ISA_CALL && in->src_reg == BPF_PSEUDO_CALL)
			t = isa_jump_target(in, i);
		else if (d.kind == ISA_LDDW && in->src_reg == BPF_PSEUDO_FUNC)
			t = isa_func_addr_target(in, i);
		if (t > 0 && t < (int64_t)prog->insn_cnt)
			starts[n++] = (uint32_t)t;
	}
	qsort(starts + 1, n - 1, sizeof(*starts), cmp_u32);

	for (i = 0; i < prog->func_cnt; i++)
		free(prog->funcs[i].name);
	free(prog->funcs);
	prog->funcs = calloc(n, sizeof(*prog->funcs));
	prog->func_cnt = 0;
	if (!prog->funcs) {
		free(starts);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		char name[64];

		if (i > 0 && starts[i] == starts[i - 1])
			continue;
		if (starts[i] == 0)
			snprintf(name, sizeof(name), "%s", prog->name);
		else
			snprintf(name, sizeof(name), "func_%u", starts[i]);
		prog->funcs[prog->func_cnt].start = starts[i];
		prog->funcs[prog->func_cnt].name = strdup(name);
		if (!prog->funcs[prog->func_cnt].name) {
			free(starts);
			return -ENOMEM;
		}
		prog->func_cnt++;
	}
	free(starts);
	return 0;
}

int gpuext_prog_init(struct gpuext_prog *prog, struct gpuext_runtime *rt,
		     struct gpuext_object *obj, const char *name, const char *section,
		     struct bpf_insn *insns, size_t insn_cnt)
{
	memset(prog, 0, sizeof(*prog));
	prog->rt = rt;
	prog->obj = obj;
	prog->insns = insns;
	prog->insn_cnt = insn_cnt;
	prog->name = strdup(name ? name : "prog");
	prog->section = strdup(section ? section : "");
	if (!prog->name || !prog->section)
		return -ENOMEM;
	return gpuext_prog_find_funcs(prog);
}

void gpuext_prog_fini(struct gpuext_prog *prog)
{
	if (!prog)
		return;
	for (size_t i = 0; i < prog->func_cnt; i++)
		free(prog->funcs[i].name);
	free(prog->funcs);
	free(prog->decoded);
	free(prog->insns);
	free(prog->name);
	free(prog->section);
	memset(prog, 0, sizeof(*prog));
}

/* Checks the map and variable references of a raw program. */
static int check_refs(struct gpuext_prog *prog)
{
	struct isa_decoded d;

	for (size_t i = 0; i < prog->insn_cnt; i += d.slots) {
		const struct bpf_insn *in = &prog->insns[i];
		struct gpuext_map *map = NULL;

		isa_decode(prog->insns, prog->insn_cnt, i, &d, NULL, 0);
		if (d.kind != ISA_LDDW)
			continue;
		switch (in->src_reg) {
		case BPF_PSEUDO_MAP_FD:
		case BPF_PSEUDO_MAP_VALUE:
			map = gpuext_runtime__map_by_id(prog->rt, (uint32_t)in->imm);
			if (!map) {
				gpuext_log(prog->rt, GPUEXT_LOG_WARN,
					   "prog '%s': insn %zu: ld_imm64 refers to map id %d, which does not exist",
					   prog->name, i, in->imm);
				return -EINVAL;
			}
			break;
		case BPF_PSEUDO_MAP_IDX:
		case BPF_PSEUDO_MAP_IDX_VALUE:
			if (in->imm < 0 || (size_t)in->imm >= prog->map_cnt) {
				gpuext_log(prog->rt, GPUEXT_LOG_WARN,
					   "prog '%s': insn %zu: ld_imm64 refers to map index %d; the program has %zu maps",
					   prog->name, i, in->imm, prog->map_cnt);
				return -EINVAL;
			}
			map = prog->maps[in->imm];
			break;
		case BPF_PSEUDO_BTF_ID: {
			bool found = false;

			for (size_t v = 0; v < prog->rt->var_cnt; v++)
				found |= prog->rt->vars[v].id == (uint32_t)in->imm;
			if (!found) {
				gpuext_log(prog->rt, GPUEXT_LOG_WARN,
					   "prog '%s': insn %zu: ld_imm64 refers to variable %d, which is not registered",
					   prog->name, i, in->imm);
				return -EINVAL;
			}
			break;
		}
		}
		if (map && (in->src_reg == BPF_PSEUDO_MAP_VALUE ||
			    in->src_reg == BPF_PSEUDO_MAP_IDX_VALUE) &&
		    !gpuext_map_direct_value(map, (uint32_t)prog->insns[i + 1].imm)) {
			gpuext_log(prog->rt, GPUEXT_LOG_WARN,
				   "prog '%s': insn %zu: direct value access at offset %d of map '%s' is not possible "
				   "(needs a single-entry array map and an offset below value_size %u)",
				   prog->name, i, prog->insns[i + 1].imm, gpuext_map__name(map),
				   gpuext_map__value_size(map));
			return -EINVAL;
		}
	}
	return 0;
}

int gpuext_prog__new(struct gpuext_runtime *rt, const char *name, const struct bpf_insn *insns,
		     size_t insn_cnt, struct gpuext_map *const *maps, size_t map_cnt,
		     struct gpuext_prog **out)
{
	struct gpuext_prog *prog;
	struct bpf_insn *copy;
	char why[160];
	size_t bad_idx = 0;
	int err;

	if (!rt || !out || (!insns && insn_cnt) || (!maps && map_cnt))
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	err = isa_check_program(insns, insn_cnt, &bad_idx, why, sizeof(why));
	if (err) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "prog '%s': insn %zu: invalid: %s",
			   name ? name : "prog", bad_idx, why);
		return GPUEXT_ERR(-err);
	}
	prog = calloc(1, sizeof(*prog));
	copy = malloc(insn_cnt * sizeof(*copy));
	if (!prog || !copy) {
		free(prog);
		free(copy);
		return GPUEXT_ERR(ENOMEM);
	}
	memcpy(copy, insns, insn_cnt * sizeof(*copy));
	err = gpuext_prog_init(prog, rt, NULL, name, "", copy, insn_cnt);
	if (!err && map_cnt) {
		prog->maps = malloc(map_cnt * sizeof(*prog->maps));
		if (!prog->maps)
			err = -ENOMEM;
		else
			memcpy(prog->maps, maps, map_cnt * sizeof(*prog->maps));
		prog->map_cnt = map_cnt;
	}
	if (!err)
		err = check_refs(prog);
	if (err) {
		gpuext_prog__free(prog);
		return GPUEXT_ERR(-err);
	}
	*out = prog;
	return 0;
}

void gpuext_prog__free(struct gpuext_prog *prog)
{
	if (!prog)
		return;
	if (prog->obj) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN,
			   "prog '%s' belongs to an object: close the object instead", prog->name);
		return;
	}
	free(prog->maps);
	gpuext_prog_fini(prog);
	free(prog);
}

const char *gpuext_prog__name(const struct gpuext_prog *prog) { return prog->name; }
const char *gpuext_prog__section(const struct gpuext_prog *prog) { return prog->section; }
const struct bpf_insn *gpuext_prog__insns(const struct gpuext_prog *prog) { return prog->insns; }
size_t gpuext_prog__insn_cnt(const struct gpuext_prog *prog) { return prog->insn_cnt; }
size_t gpuext_prog__map_cnt(const struct gpuext_prog *prog) { return prog->map_cnt; }
struct gpuext_runtime *gpuext_prog__runtime(const struct gpuext_prog *prog) { return prog->rt; }
size_t gpuext_prog__func_cnt(const struct gpuext_prog *prog) { return prog->func_cnt; }

struct gpuext_map *gpuext_prog__map(const struct gpuext_prog *prog, size_t idx)
{
	return idx < prog->map_cnt ? prog->maps[idx] : NULL;
}

uint32_t gpuext_prog__func_start(const struct gpuext_prog *prog, size_t idx)
{
	return idx < prog->func_cnt ? prog->funcs[idx].start : 0;
}

const char *gpuext_prog__func_name(const struct gpuext_prog *prog, size_t idx)
{
	return idx < prog->func_cnt ? prog->funcs[idx].name : NULL;
}
