/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct_ops variables of an object: SEC(".struct_ops") and
 * SEC(".struct_ops.link") globals whose function-pointer members name
 * programs. libbpf found the variables (its struct_ops maps); the ELF tells
 * where each lives and, through the relocations of its section, which
 * program fills which member; BTF gives the struct type and member names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "loader_impl.h"

static void so_err(const struct gpuext_object *obj, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void so_err(const struct gpuext_object *obj, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpuext_log(obj->rt, GPUEXT_LOG_WARN, "%s: %s", obj->name, msg);
}

static bool is_struct_ops_sec(const char *name)
{
	return strcmp(name, ".struct_ops") == 0 || strcmp(name, ".struct_ops.link") == 0;
}

/* The object symbol of variable @name in a struct_ops section. */
static const Elf64_Sym *find_var(const struct ldr_elf *elf, const char *name)
{
	for (size_t i = 1; i < elf->sym_cnt; i++) {
		const Elf64_Sym *s = &elf->syms[i];

		if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || s->st_shndx == SHN_UNDEF ||
		    s->st_shndx >= elf->sec_cnt)
			continue;
		if (is_struct_ops_sec(elf->secs[s->st_shndx].name) &&
		    strcmp(elf->strtab + s->st_name, name) == 0)
			return s;
	}
	return NULL;
}

/* The struct type of @var in datasec @secname, skipping typedefs and qualifiers. */
static int var_struct_type(const struct btf *btf, const char *secname, const char *var,
			   const struct btf_type **out)
{
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	int id = btf__find_by_name_kind(btf, secname, BTF_KIND_DATASEC);

	if (id <= 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);
		const struct btf_type *t;
		int tid, depth = 0;

		if (!v || !btf_is_var(v) || strcmp(btf__name_by_offset(btf, v->name_off), var))
			continue;
		tid = (int)v->type;
		t = btf__type_by_id(btf, tid);
		while (t && (btf_is_mod(t) || btf_is_typedef(t)) && depth++ < 32) {
			tid = (int)t->type;
			t = btf__type_by_id(btf, tid);
		}
		if (!t || !btf_is_struct(t))
			return -EINVAL;
		*out = t;
		return tid;
	}
	return -ENOENT;
}

/* The program whose entry function starts at byte @byte of section @sec. */
static struct gpuext_prog *prog_at(struct gpuext_object *obj, uint32_t sec, uint64_t byte)
{
	if (byte % 8)
		return NULL;
	for (size_t i = 0; i < obj->prog_cnt; i++)
		if (obj->prog_sec[i] == sec && obj->prog_off[i] == byte / 8)
			return &obj->progs[i];
	return NULL;
}

static int fill_members(struct gpuext_object *obj, const struct ldr_elf *elf,
			const struct btf *btf, const struct btf_type *t, const Elf64_Sym *var,
			struct gpuext_struct_ops *so, uint8_t *data)
{
	const struct ldr_sec *s = &elf->secs[var->st_shndx];
	struct gpuext_struct_ops_member *mem;
	size_t cnt = 0;

	mem = calloc(s->rel_cnt + 1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	so->members = mem;
	for (size_t r = 0; r < s->rel_cnt; r++) {
		const struct ldr_rel *rel = &s->rels[r];
		const Elf64_Sym *sym = &elf->syms[rel->sym];
		const struct btf_member *m = btf_members(t);
		uint64_t moff, target;
		const char *mname = NULL;
		struct gpuext_prog *prog;

		if (rel->offset < var->st_value || rel->offset >= var->st_value + t->size)
			continue;
		moff = rel->offset - var->st_value;
		for (int k = 0; k < btf_vlen(t); k++, m++) {
			if (btf_member_bit_offset(t, (uint32_t)k) == moff * 8) {
				mname = btf__name_by_offset(btf, m->name_off);
				break;
			}
		}
		if (!mname || !*mname) {
			so_err(obj, "struct_ops '%s': relocation %u at offset 0x%llx of %s is not at a member of struct %s",
			       so->var_name, rel->idx, (unsigned long long)rel->offset, s->name,
			       so->type_name);
			return -EINVAL;
		}
		if (rel->type != LDR_R_BPF_64_ABS64 || moff + 8 > t->size) {
			so_err(obj, "struct_ops '%s': member '%s' has relocation type %u; expected an R_BPF_64_ABS64 function pointer",
			       so->var_name, mname, rel->type);
			return -EINVAL;
		}
		/* REL: the addend sits in the data (non-zero only for section symbols). */
		target = sym->st_value;
		if (s->data) {
			uint64_t addend;

			memcpy(&addend, s->data + rel->offset, 8);
			target += addend;
		}
		prog = sym->st_shndx < elf->sec_cnt ? prog_at(obj, sym->st_shndx, target) : NULL;
		if (!prog) {
			so_err(obj, "struct_ops '%s': member '%s' points to '%s', which is not a program of this object (use SEC(\"struct_ops/...\"))",
			       so->var_name, mname, ldr_sym_name(elf, sym));
			return -EINVAL;
		}
		memset(data + moff, 0, 8);
		mem[cnt].member = strdup(mname);
		if (!mem[cnt].member)
			return -ENOMEM;
		mem[cnt].offset = (uint32_t)moff;
		mem[cnt].prog = prog;
		so->member_cnt = ++cnt;
	}
	return 0;
}

static int collect_one(struct gpuext_object *obj, const struct ldr_elf *elf,
		       const struct bpf_map *m, struct gpuext_struct_ops *so)
{
	const struct btf *btf = bpf_object__btf(obj->bobj);
	const char *var_name = bpf_map__name(m);
	const struct btf_type *t = NULL;
	const Elf64_Sym *var = find_var(elf, var_name);
	const struct ldr_sec *s;
	uint8_t *data;
	int tid;

	so->var_name = strdup(var_name);
	if (!so->var_name)
		return -ENOMEM;
	if (!var || !btf) {
		so_err(obj, "struct_ops '%s': %s", var_name,
		       !var ? "no variable of that name in .struct_ops or .struct_ops.link" :
			      "the object has no BTF");
		return -EINVAL;
	}
	s = &elf->secs[var->st_shndx];
	so->link = strcmp(s->name, ".struct_ops.link") == 0;
	tid = var_struct_type(btf, s->name, var_name, &t);
	if (tid <= 0) {
		so_err(obj, "struct_ops '%s': BTF datasec %s has no variable of a struct type by that name",
		       var_name, s->name);
		return -EINVAL;
	}
	so->type_id = (uint32_t)tid;
	so->type_name = strdup(btf__name_by_offset(btf, t->name_off));
	if (!so->type_name)
		return -ENOMEM;
	if ((uint64_t)var->st_value + t->size > s->size) {
		so_err(obj, "struct_ops '%s': struct %s (%u bytes) at offset 0x%llx runs past section %s (size 0x%llx)",
		       var_name, so->type_name, t->size, (unsigned long long)var->st_value, s->name,
		       (unsigned long long)s->size);
		return -EINVAL;
	}
	data = calloc(1, t->size ? t->size : 1);
	if (!data)
		return -ENOMEM;
	so->data = data;
	so->data_size = t->size;
	if (s->data)
		memcpy(data, s->data + var->st_value, t->size);
	return fill_members(obj, elf, btf, t, var, so, data);
}

int ldr_collect_struct_ops(struct gpuext_object *obj, const struct ldr_elf *elf)
{
	const struct bpf_map *m;
	size_t n = 0;
	int err;

	bpf_object__for_each_map(m, obj->bobj)
		n += bpf_map__type(m) == BPF_MAP_TYPE_STRUCT_OPS;
	if (!n)
		return 0;
	obj->st_ops = calloc(n, sizeof(*obj->st_ops));
	if (!obj->st_ops)
		return -ENOMEM;
	bpf_object__for_each_map(m, obj->bobj) {
		if (bpf_map__type(m) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		err = collect_one(obj, elf, m, &obj->st_ops[obj->st_ops_cnt++]);
		if (err)
			return err;
	}
	return 0;
}

void ldr_free_struct_ops(struct gpuext_object *obj)
{
	for (size_t i = 0; i < obj->st_ops_cnt; i++) {
		struct gpuext_struct_ops *so = &obj->st_ops[i];

		for (size_t k = 0; k < so->member_cnt; k++)
			free((char *)so->members[k].member);
		free((void *)so->members);
		free((void *)so->data);
		free((char *)so->type_name);
		free((char *)so->var_name);
	}
	free(obj->st_ops);
	obj->st_ops = NULL;
	obj->st_ops_cnt = 0;
}
