/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF ELF loader: gpuext_object__open_*().
 *
 * libbpf parses the object (programs, maps, BTF) without touching a
 * kernel; it relocates only at load time, which we never reach. So the
 * loader links each program itself from the ELF file (validated first by
 * elf_check.c): the entry function, then every function it reaches through
 * a call or a function address, each appended once, with every relocation
 * turned into the encoding our interpreter and verifier read:
 *
 *   call to a BPF function        call src=1, imm = target - (pc + 1)
 *   address of a BPF function     ld_imm64 src=4, imm = target - (pc + 1)
 *   map (.maps symbol)            ld_imm64 src=5, imm = map index
 *   global data, .kconfig extern  ld_imm64 src=6, imm = map index,
 *                                 second imm = offset in the value
 *   kfunc (extern function)       call src=2, imm = kfunc id in the runtime
 *
 * "map index" is the index in the object's map list (gpuext_object__map()),
 * which every program of the object shares as its prog->maps.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "loader_impl.h"

/* ------------------------------------------------------------------ */
/* libbpf's messages                                                   */
/* ------------------------------------------------------------------ */

/*
 * libbpf_set_print() is process-global, the runtime is not: while a thread
 * is inside libbpf on behalf of a runtime, libbpf_rt names it and the
 * forwarder logs there. Messages from other threads (or from libbpf calls
 * we did not make) go to whatever callback was installed before us. The
 * forwarder stays installed while any thread is inside an open.
 */
static pthread_mutex_t libbpf_pr_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned libbpf_pr_users;
static libbpf_print_fn_t libbpf_pr_prev;
static _Thread_local struct {
	const struct gpuext_runtime *rt;
	const char *objname;
} libbpf_ctx;

static int libbpf_forward(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum gpuext_log_level lvl;
	char msg[1024];
	size_t n;

	if (!libbpf_ctx.rt) {
		libbpf_print_fn_t prev = __atomic_load_n(&libbpf_pr_prev, __ATOMIC_RELAXED);

		return prev ? prev(level, fmt, ap) : 0;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	lvl = level == LIBBPF_WARN ? GPUEXT_LOG_WARN :
	      level == LIBBPF_INFO ? GPUEXT_LOG_INFO : GPUEXT_LOG_DEBUG;
	gpuext_log(libbpf_ctx.rt, lvl, "%s: %s", libbpf_ctx.objname, msg);
	return 0;
}

static void libbpf_enter(const struct gpuext_runtime *rt, const char *objname)
{
	pthread_mutex_lock(&libbpf_pr_lock);
	if (libbpf_pr_users++ == 0)
		__atomic_store_n(&libbpf_pr_prev, libbpf_set_print(libbpf_forward),
				 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&libbpf_pr_lock);
	libbpf_ctx.rt = rt;
	libbpf_ctx.objname = objname;
}

static void libbpf_leave(void)
{
	libbpf_ctx.rt = NULL;
	libbpf_ctx.objname = NULL;
	pthread_mutex_lock(&libbpf_pr_lock);
	if (--libbpf_pr_users == 0)
		libbpf_set_print(libbpf_pr_prev);
	pthread_mutex_unlock(&libbpf_pr_lock);
}

/* ------------------------------------------------------------------ */
/* Opening context                                                     */
/* ------------------------------------------------------------------ */

/* A function of the ELF file: an STT_FUNC symbol in an executable section. */
struct ldr_func {
	uint32_t sec;
	uint32_t start, cnt;	/* in instructions */
	const char *name;
};

/* A variable of the .kconfig map. */
struct ldr_kcfg {
	const char *name;	/* in the object's BTF */
	uint32_t off;
};

struct ldr_ctx {
	struct gpuext_runtime *rt;
	struct gpuext_object *obj;
	struct ldr_elf elf;
	struct ldr_func *funcs;
	size_t func_cnt;
	int *sec_map;		/* section index -> object map index, or -1 */
	int kconfig_map;	/* object map index of .kconfig, or -1 */
	struct ldr_kcfg *kcfg;
	size_t kcfg_cnt;
};

static void ldr_err(const struct ldr_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void ldr_err(const struct ldr_ctx *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpuext_log(c->rt, GPUEXT_LOG_WARN, "%s: %s", c->obj->name, msg);
}

/* ------------------------------------------------------------------ */
/* Maps                                                                */
/* ------------------------------------------------------------------ */

static bool is_global_data_sec(const char *name)
{
	return strncmp(name, ".rodata", 7) == 0 || strncmp(name, ".data", 5) == 0 ||
	       strcmp(name, ".bss") == 0 || strncmp(name, ".bss.", 5) == 0;
}

static int find_map_index(const struct ldr_ctx *c, const struct bpf_map *m)
{
	const struct bpf_map *it;
	int idx = 0;

	bpf_object__for_each_map(it, c->obj->bobj) {
		if (bpf_map__type(it) == BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		if (it == m)
			return idx;
		idx++;
	}
	return -1;
}

static uint32_t kernel_version(void)
{
	struct utsname u;
	unsigned a = 0, b = 0, p = 0;

	if (uname(&u) || sscanf(u.release, "%u.%u.%u", &a, &b, &p) < 2)
		return 0;
	return (a << 16) + (b << 8) + (p > 255 ? 255 : p);
}

static const Elf64_Sym *find_undef_sym(const struct ldr_elf *elf, const char *name)
{
	for (size_t i = 1; i < elf->sym_cnt; i++) {
		const Elf64_Sym *s = &elf->syms[i];

		if (s->st_shndx == SHN_UNDEF && strcmp(elf->strtab + s->st_name, name) == 0)
			return s;
	}
	return NULL;
}

/*
 * The .kconfig map's value: libbpf has laid the externs out in the BTF
 * datasec (offsets fixed up at open). Only LINUX_KERNEL_VERSION is known in
 * user space; the rest read 0 when __weak and are refused otherwise.
 */
static int fill_kconfig(struct ldr_ctx *c, const struct bpf_map *m, uint8_t *val,
			uint32_t val_size)
{
	const struct btf *btf = bpf_object__btf(c->obj->bobj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	int id;

	id = btf ? btf__find_by_name_kind(btf, ".kconfig", BTF_KIND_DATASEC) : -1;
	if (id <= 0) {
		ldr_err(c, "map '%s': .kconfig externs without a .kconfig BTF datasec",
			bpf_map__name(m));
		return -EINVAL;
	}
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	c->kcfg = calloc(btf_vlen(sec) + 1, sizeof(*c->kcfg));
	if (!c->kcfg)
		return -ENOMEM;
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);
		const char *name = v ? btf__name_by_offset(btf, v->name_off) : NULL;
		const Elf64_Sym *sym;

		if (!name || (uint64_t)vs->offset + vs->size > val_size) {
			ldr_err(c, ".kconfig extern %d: bad BTF (offset %u size %u in a %u-byte map)",
				i, vs->offset, vs->size, val_size);
			return -EINVAL;
		}
		c->kcfg[c->kcfg_cnt++] = (struct ldr_kcfg){ .name = name, .off = vs->offset };
		sym = find_undef_sym(&c->elf, name);
		if (strcmp(name, "LINUX_KERNEL_VERSION") == 0) {
			uint64_t ver = kernel_version();

			memcpy(val + vs->offset, &ver, vs->size < 8 ? vs->size : 8);
			continue;
		}
		if (sym && ELF64_ST_BIND(sym->st_info) == STB_WEAK)
			continue; /* reads 0 */
		ldr_err(c, "extern '%s' (.kconfig): its value is not known in user space; declare it __weak to read 0",
			name);
		return -ENOENT;
	}
	return 0;
}

static int create_maps(struct ldr_ctx *c)
{
	struct gpuext_object *obj = c->obj;
	struct bpf_map *m;
	size_t n = 0;
	int err;

	c->kconfig_map = -1;
	c->sec_map = malloc(c->elf.sec_cnt * sizeof(*c->sec_map));
	if (!c->sec_map)
		return -ENOMEM;
	for (size_t i = 0; i < c->elf.sec_cnt; i++)
		c->sec_map[i] = -1;

	bpf_object__for_each_map(m, obj->bobj)
		n++;
	obj->maps = calloc(n ? n : 1, sizeof(*obj->maps));
	if (!obj->maps)
		return -ENOMEM;

	bpf_object__for_each_map(m, obj->bobj) {
		struct gpuext_map_def def = { .sz = sizeof(def) };
		char name[GPUEXT_MAP_NAME_MAX];
		const char *real = bpf_map__name(m);
		size_t init_sz = 0;
		const void *init = NULL;
		uint8_t *kcfg = NULL;
		bool internal = bpf_map__is_internal(m);

		if (bpf_map__type(m) == BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		if (internal) {
			/* Name internal maps after their section (".rodata"). */
			for (size_t s = 1; s < c->elf.sec_cnt; s++) {
				const char *sn = c->elf.secs[s].name;

				if (is_global_data_sec(sn) && bpf_object__find_map_by_name(obj->bobj, sn) == m) {
					real = sn;
					c->sec_map[s] = (int)obj->map_cnt;
				}
			}
			if (bpf_object__find_map_by_name(obj->bobj, ".kconfig") == m) {
				real = ".kconfig";
				c->kconfig_map = (int)obj->map_cnt;
			}
			init = bpf_map__initial_value(m, &init_sz);
		}
		snprintf(name, sizeof(name), "%s", real);
		def.name = name;
		def.type = bpf_map__type(m);
		def.key_size = bpf_map__key_size(m);
		def.value_size = bpf_map__value_size(m);
		def.max_entries = bpf_map__max_entries(m);
		def.map_flags = bpf_map__map_flags(m);
		if (internal) {
			/* libbpf's BPF_F_MMAPABLE is its own business: our maps are all shared memory. */
			def.map_flags = (strncmp(real, ".rodata", 7) == 0 || strcmp(real, ".kconfig") == 0) ?
					BPF_F_RDONLY_PROG : 0;
		}
		if ((int)obj->map_cnt == c->kconfig_map) {
			kcfg = calloc(1, def.value_size ? def.value_size : 1);
			if (!kcfg)
				return -ENOMEM;
			err = fill_kconfig(c, m, kcfg, def.value_size);
			if (err) {
				free(kcfg);
				return err;
			}
			init = kcfg;
			init_sz = def.value_size;
		}
		err = gpuext_map__create(c->rt, &def, &obj->maps[obj->map_cnt]);
		if (err) {
			ldr_err(c, "map '%s' (type %u, key %u, value %u, max_entries %u, flags 0x%x): cannot create it: %s",
				name, def.type, def.key_size, def.value_size, def.max_entries,
				def.map_flags, strerror(-err));
			free(kcfg);
			return err;
		}
		obj->map_cnt++;
		if (internal && init && init_sz) {
			err = gpuext_map_set_initial(obj->maps[obj->map_cnt - 1], init, init_sz);
			if (err) {
				ldr_err(c, "map '%s': cannot set its initial value (%zu bytes): %s",
					name, init_sz, strerror(-err));
				free(kcfg);
				return err;
			}
		}
		free(kcfg);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Linking                                                             */
/* ------------------------------------------------------------------ */

static int cmp_func(const void *a, const void *b)
{
	const struct ldr_func *x = a, *y = b;

	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int collect_funcs(struct ldr_ctx *c)
{
	const struct ldr_elf *elf = &c->elf;

	c->funcs = calloc(elf->sym_cnt, sizeof(*c->funcs));
	if (!c->funcs)
		return -ENOMEM;
	for (size_t i = 1; i < elf->sym_cnt; i++) {
		const Elf64_Sym *s = &elf->syms[i];

		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
		    s->st_shndx >= elf->sec_cnt || !elf->secs[s->st_shndx].exec)
			continue;
		c->funcs[c->func_cnt++] = (struct ldr_func){
			.sec = s->st_shndx,
			.start = (uint32_t)(s->st_value / 8),
			.cnt = (uint32_t)(s->st_size / 8),
			.name = elf->strtab + s->st_name,
		};
	}
	qsort(c->funcs, c->func_cnt, sizeof(*c->funcs), cmp_func);
	/* A symbol without a size runs to the next function (or the section end). */
	for (size_t i = 0; i < c->func_cnt; i++) {
		struct ldr_func *f = &c->funcs[i];
		uint64_t end = elf->secs[f->sec].size / 8;

		for (size_t k = i + 1; k < c->func_cnt && c->funcs[k].sec == f->sec; k++) {
			if (c->funcs[k].start > f->start) {
				end = c->funcs[k].start;
				break;
			}
		}
		if (f->cnt == 0 || f->start + (uint64_t)f->cnt > end)
			f->cnt = end > f->start ? (uint32_t)(end - f->start) : 0;
	}
	return 0;
}

static int find_func(const struct ldr_ctx *c, uint32_t sec, int64_t start)
{
	size_t lo = 0, hi = c->func_cnt;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct ldr_func *f = &c->funcs[mid];

		if (f->sec < sec || (f->sec == sec && (int64_t)f->start < start))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->func_cnt && c->funcs[lo].sec == sec && c->funcs[lo].start == start &&
	    c->funcs[lo].cnt)
		return (int)lo;
	return -1;
}

/* One program being linked. */
struct link_state {
	const char *prog;
	struct bpf_insn *out;
	size_t cnt, cap;
	uint32_t *out_pos;	/* per ldr_func: position in out, or UINT32_MAX */
	uint32_t *queue;	/* ldr_func indices in append order */
	size_t queued;
};

static int append_func(struct ldr_ctx *c, struct link_state *ls, int fi)
{
	const struct ldr_func *f = &c->funcs[fi];
	const struct ldr_sec *s = &c->elf.secs[f->sec];

	if (ls->cnt + f->cnt > ls->cap) {
		size_t cap = (ls->cap ? ls->cap * 2 : 64);
		struct bpf_insn *n;

		while (cap < ls->cnt + f->cnt)
			cap *= 2;
		n = realloc(ls->out, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		ls->out = n;
		ls->cap = cap;
	}
	memcpy(ls->out + ls->cnt, s->data + (size_t)f->start * 8, (size_t)f->cnt * 8);
	ls->out_pos[fi] = (uint32_t)ls->cnt;
	ls->queue[ls->queued++] = (uint32_t)fi;
	ls->cnt += f->cnt;
	return 0;
}

/* Position of the function at (@sec, @start) in the linked program, appending it if new. */
static int func_pos(struct ldr_ctx *c, struct link_state *ls, const struct ldr_func *from,
		    uint32_t pc_in_sec, uint32_t sec, int64_t start, uint32_t *pos)
{
	const char *sn = c->elf.secs[sec].name;
	int fi, err;

	if (sec != from->sec && sec != c->elf.text_idx) {
		ldr_err(c, "prog '%s': insn %u of %s (in function %s) refers to code in section '%s'; only the same section or .text can be called",
			ls->prog, pc_in_sec, c->elf.secs[from->sec].name, from->name, sn);
		return -EINVAL;
	}
	fi = find_func(c, sec, start);
	if (fi < 0) {
		ldr_err(c, "prog '%s': insn %u of %s (in function %s) targets insn %" PRId64 " of section '%s', which is not the start of a function",
			ls->prog, pc_in_sec, c->elf.secs[from->sec].name, from->name, start, sn);
		return -EINVAL;
	}
	if (ls->out_pos[fi] == UINT32_MAX) {
		err = append_func(c, ls, fi);
		if (err)
			return err;
	}
	*pos = ls->out_pos[fi];
	return 0;
}

static int link_call(struct ldr_ctx *c, struct link_state *ls, const struct ldr_func *f,
		     uint32_t i, const struct ldr_rel *rel)
{
	uint32_t pc = ls->out_pos[f - c->funcs] + i;
	struct bpf_insn in;
	uint32_t sec = f->sec, pos;
	int64_t target;
	int err;

	/* The original encoding: ls->out may move while functions are appended. */
	memcpy(&in, c->elf.secs[f->sec].data + (size_t)(f->start + i) * 8, sizeof(in));
	if (rel) {
		const Elf64_Sym *sym = &c->elf.syms[rel->sym];

		if (sym->st_shndx == SHN_UNDEF) {
			const char *name = c->elf.strtab + sym->st_name;
			const struct gpuext_func_proto *p =
				gpuext_runtime__find_func_by_name(c->rt, GPUEXT_FUNC_KFUNC, name);
			struct bpf_insn *o = &ls->out[pc];

			o->src_reg = BPF_PSEUDO_KFUNC_CALL;
			o->off = 0;
			if (p) {
				o->imm = (int32_t)p->id;
			} else if (ELF64_ST_BIND(sym->st_info) == STB_WEAK) {
				/* Unresolved __weak kfunc: imm 0, which the verifier refuses if reachable. */
				o->imm = 0;
			} else {
				ldr_err(c, "prog '%s': insn %u of %s calls kfunc '%s', which is not registered in this runtime (register it with gpuext_runtime__register_func() before opening, or declare it __weak)",
					ls->prog, f->start + i, c->elf.secs[f->sec].name, name);
				return -ENOENT;
			}
			return 0;
		}
		if (sym->st_shndx >= c->elf.sec_cnt || !c->elf.secs[sym->st_shndx].exec) {
			ldr_err(c, "prog '%s': call at insn %u of %s is relocated against '%s', which is not code",
				ls->prog, f->start + i, c->elf.secs[f->sec].name,
				ldr_sym_name(&c->elf, sym));
			return -EINVAL;
		}
		sec = sym->st_shndx;
		target = (int64_t)(sym->st_value / 8) + in.imm + 1;
	} else {
		target = (int64_t)f->start + i + in.imm + 1;
	}
	err = func_pos(c, ls, f, f->start + i, sec, target, &pos);
	if (err)
		return err;
	ls->out[pc].imm = (int32_t)((int64_t)pos - pc - 1);
	return 0;
}

static const struct ldr_kcfg *find_kcfg(const struct ldr_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->kcfg_cnt; i++)
		if (strcmp(c->kcfg[i].name, name) == 0)
			return &c->kcfg[i];
	return NULL;
}

static int link_ldimm64(struct ldr_ctx *c, struct link_state *ls, const struct ldr_func *f,
			uint32_t i, const struct ldr_rel *rel)
{
	const struct ldr_elf *elf = &c->elf;
	const char *secname = elf->secs[f->sec].name;
	const Elf64_Sym *sym = &elf->syms[rel->sym];
	const char *symname = ldr_sym_name(elf, sym);
	uint32_t pc = ls->out_pos[f - c->funcs] + i;
	struct bpf_insn *o = &ls->out[pc];
	int64_t addend = o->imm;
	const struct ldr_sec *ts;
	int idx;

	if (rel->type != LDR_R_BPF_64_64) {
		ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s has relocation type %u, expected R_BPF_64_64",
			ls->prog, f->start + i, secname, rel->type);
		return -EINVAL;
	}
	if (sym->st_shndx == SHN_UNDEF) {
		const struct ldr_kcfg *k = find_kcfg(c, symname);
		const struct gpuext_func_proto *p;

		if (k && c->kconfig_map >= 0) {
			o[0].src_reg = BPF_PSEUDO_MAP_IDX_VALUE;
			o[0].imm = c->kconfig_map;
			o[1].imm = (int32_t)(k->off + addend);
			return 0;
		}
		p = gpuext_runtime__find_func_by_name(c->rt, GPUEXT_FUNC_KFUNC, symname);
		if (p || ELF64_ST_BIND(sym->st_info) == STB_WEAK) {
			/* Address of a kfunc: a non-zero scalar when present, 0 when not. */
			o[0].src_reg = 0;
			o[0].imm = p ? (int32_t)p->id : 0;
			o[1].imm = 0;
			return 0;
		}
		ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s refers to extern '%s', which is neither a .kconfig variable nor a registered kfunc (ksym variables are not supported)",
			ls->prog, f->start + i, secname, symname);
		return -ENOENT;
	}
	if (sym->st_shndx >= elf->sec_cnt) {
		ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s refers to absolute symbol '%s'; expected a map, global data or a function",
			ls->prog, f->start + i, secname, symname);
		return -EINVAL;
	}
	ts = &elf->secs[sym->st_shndx];
	if (ts->exec) {
		int64_t byte = (int64_t)sym->st_value + addend;
		uint32_t pos;
		int err;

		if (byte % 8) {
			ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s takes the address of byte 0x%" PRIx64 " of '%s', which is not an instruction boundary",
				ls->prog, f->start + i, secname, (uint64_t)byte, ts->name);
			return -EINVAL;
		}
		err = func_pos(c, ls, f, f->start + i, sym->st_shndx, byte / 8, &pos);
		if (err)
			return err;
		o = &ls->out[pc]; /* func_pos may have moved the array */
		o[0].src_reg = BPF_PSEUDO_FUNC;
		o[0].imm = (int32_t)((int64_t)pos - pc - 1);
		o[1].imm = 0;
		return 0;
	}
	if (strcmp(ts->name, ".maps") == 0) {
		struct bpf_map *m = bpf_object__find_map_by_name(c->obj->bobj, symname);

		idx = m ? find_map_index(c, m) : -1;
		if (idx < 0) {
			ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s refers to '%s' in .maps, which libbpf did not define as a map",
				ls->prog, f->start + i, secname, symname);
			return -EINVAL;
		}
		o[0].src_reg = BPF_PSEUDO_MAP_IDX;
		o[0].imm = idx;
		o[1].imm = 0;
		return 0;
	}
	idx = c->sec_map[sym->st_shndx];
	if (idx >= 0) {
		int64_t off = (int64_t)sym->st_value + addend;

		if (off < 0 || (uint64_t)off >= ts->size) {
			ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s refers to offset %" PRId64 " of '%s' (size 0x%" PRIx64 ")",
				ls->prog, f->start + i, secname, off, ts->name, ts->size);
			return -EINVAL;
		}
		o[0].src_reg = BPF_PSEUDO_MAP_IDX_VALUE;
		o[0].imm = idx;
		o[1].imm = (int32_t)off;
		return 0;
	}
	ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s refers to '%s' in section '%s', which is neither a map, global data nor code",
		ls->prog, f->start + i, secname, symname, ts->name);
	return -EINVAL;
}

static int link_func(struct ldr_ctx *c, struct link_state *ls, int fi)
{
	const struct ldr_func *f = &c->funcs[fi];
	const struct ldr_sec *s = &c->elf.secs[f->sec];
	int err = 0;

	for (uint32_t i = 0; i < f->cnt && !err; i++) {
		uint32_t at = f->start + i;
		const struct ldr_rel *rel = s->rel_at && s->rel_at[at] ? &s->rels[s->rel_at[at] - 1] : NULL;
		struct bpf_insn in;

		memcpy(&in, s->data + (size_t)at * 8, sizeof(in));
		if (in.code == (BPF_LD | BPF_DW | BPF_IMM)) {
			if (i + 1 >= f->cnt) {
				ldr_err(c, "prog '%s': ld_imm64 at insn %u of %s is cut by the end of function %s",
					ls->prog, at, s->name, f->name);
				return -EINVAL;
			}
			if (rel)
				err = link_ldimm64(c, ls, f, i, rel);
			i++;
			continue;
		}
		if (in.code == (BPF_JMP | BPF_CALL) && in.src_reg == BPF_PSEUDO_CALL) {
			err = link_call(c, ls, f, i, rel);
			continue;
		}
		if (rel) {
			ldr_err(c, "prog '%s': relocation %u against '%s' at insn %u of %s: the instruction (opcode 0x%02x) is neither a call nor an ld_imm64",
				ls->prog, rel->idx, ldr_sym_name(&c->elf, &c->elf.syms[rel->sym]),
				at, s->name, in.code);
			return -EINVAL;
		}
	}
	return err;
}

/* CO-RE needs BTF-based field relocation, which the loader does not do (yet). */
static int check_core(struct ldr_ctx *c, const struct link_state *ls)
{
	for (size_t q = 0; q < ls->queued; q++) {
		const struct ldr_func *f = &c->funcs[ls->queue[q]];

		for (size_t k = 0; k < c->elf.core_cnt; k++) {
			const struct ldr_core_relo *r = &c->elf.core[k];
			uint64_t insn = r->insn_off / 8;

			if (r->sec != f->sec || insn < f->start || insn >= (uint64_t)f->start + f->cnt)
				continue;
			ldr_err(c, "prog '%s': insn %" PRIu64 " of %s (function %s) has a CO-RE relocation (.BTF.ext core_relo); CO-RE is not supported yet: build without BPF_CORE_READ()/preserve_access_index",
				ls->prog, insn, c->elf.secs[f->sec].name, f->name);
			return -ENOTSUP;
		}
	}
	return 0;
}

static int link_prog(struct ldr_ctx *c, struct bpf_program *bp, size_t pi)
{
	struct gpuext_object *obj = c->obj;
	struct gpuext_prog *prog = &obj->progs[pi];
	const char *name = bpf_program__name(bp), *secname = bpf_program__section_name(bp);
	struct link_state ls = { .prog = name };
	int entry = -1, err;

	for (size_t i = 0; i < c->func_cnt; i++) {
		const struct ldr_func *f = &c->funcs[i];

		if (strcmp(f->name, name) == 0 && strcmp(c->elf.secs[f->sec].name, secname) == 0) {
			entry = (int)i;
			break;
		}
	}
	if (entry < 0 || c->funcs[entry].cnt == 0) {
		ldr_err(c, "prog '%s': no function symbol '%s' in section '%s'", name, name, secname);
		return -EINVAL;
	}
	ls.out_pos = malloc(c->func_cnt * sizeof(*ls.out_pos));
	ls.queue = malloc(c->func_cnt * sizeof(*ls.queue));
	if (!ls.out_pos || !ls.queue) {
		err = -ENOMEM;
		goto out;
	}
	memset(ls.out_pos, 0xff, c->func_cnt * sizeof(*ls.out_pos));
	err = append_func(c, &ls, entry);
	for (size_t q = 0; !err && q < ls.queued; q++)
		err = link_func(c, &ls, (int)ls.queue[q]);
	if (!err)
		err = check_core(c, &ls);
	if (err)
		goto out;

	obj->prog_sec[pi] = c->funcs[entry].sec;
	obj->prog_off[pi] = c->funcs[entry].start;
	err = gpuext_prog_init(prog, c->rt, obj, name, secname, ls.out, ls.cnt);
	ls.out = NULL; /* owned by prog now, even on failure */
	obj->prog_cnt++;
	if (err)
		goto out;
	prog->maps = obj->maps;
	prog->map_cnt = obj->map_cnt;

	/* Function table: one entry per appended function, named after its symbol. */
	for (size_t i = 0; i < prog->func_cnt; i++)
		free(prog->funcs[i].name);
	free(prog->funcs);
	prog->func_cnt = 0;
	prog->funcs = calloc(ls.queued, sizeof(*prog->funcs));
	if (!prog->funcs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t q = 0; q < ls.queued; q++) {
		prog->funcs[q].start = ls.out_pos[ls.queue[q]];
		prog->funcs[q].name = strdup(c->funcs[ls.queue[q]].name);
		if (!prog->funcs[q].name) {
			err = -ENOMEM;
			goto out;
		}
		prog->func_cnt++;
	}
out:
	free(ls.out);
	free(ls.out_pos);
	free(ls.queue);
	return err;
}

static int link_progs(struct ldr_ctx *c)
{
	struct gpuext_object *obj = c->obj;
	struct bpf_program *bp;
	size_t n = 0, i = 0;
	int err;

	bpf_object__for_each_program(bp, obj->bobj)
		n++;
	obj->progs = calloc(n ? n : 1, sizeof(*obj->progs));
	obj->prog_sec = calloc(n ? n : 1, sizeof(*obj->prog_sec));
	obj->prog_off = calloc(n ? n : 1, sizeof(*obj->prog_off));
	if (!obj->progs || !obj->prog_sec || !obj->prog_off)
		return -ENOMEM;
	err = collect_funcs(c);
	if (err)
		return err;
	bpf_object__for_each_program(bp, obj->bobj) {
		err = link_prog(c, bp, i++);
		if (err)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

void gpuext_object__close(struct gpuext_object *obj)
{
	if (!obj)
		return;
	ldr_free_struct_ops(obj);
	for (size_t i = 0; i < obj->prog_cnt; i++)
		gpuext_prog_fini(&obj->progs[i]);
	free(obj->progs);
	free(obj->prog_sec);
	free(obj->prog_off);
	for (size_t i = 0; i < obj->map_cnt; i++)
		gpuext_map__destroy(obj->maps[i]);
	free(obj->maps);
	bpf_object__close(obj->bobj);
	free(obj->name);
	free(obj);
}

/* Largest .kconfig/.ksyms extern we accept. */
#define LDR_EXTERN_MAX 4096

/* libbpf leaves a broken BTF out when it thinks it can do without; we cannot. */
static int check_btf_with_libbpf(struct ldr_ctx *c)
{
	const struct ldr_sec *s;
	struct btf *btf;
	int err;

	if (!c->elf.btf_idx)
		return 0;
	s = &c->elf.secs[c->elf.btf_idx];
	btf = btf__new(s->data, (uint32_t)s->size);
	err = libbpf_get_error(btf);
	if (err) {
		ldr_err(c, "section %u (.BTF): libbpf rejects the BTF data (size 0x%" PRIx64 "): %s",
			c->elf.btf_idx, s->size, strerror(-err));
		return -EINVAL;
	}
	/*
	 * libbpf allocates a variable's type size for struct_ops data before it
	 * compares it with the section: a forged size would ask for gigabytes.
	 */
	for (uint32_t id = 1; id < btf__type_cnt(btf); id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_var_secinfo *vs;
		const char *sn;
		uint32_t sec;

		if (!btf_is_datasec(t))
			continue;
		sn = btf__name_by_offset(btf, t->name_off);
		sec = sn ? ldr_find_sec(&c->elf, sn) : 0;
		vs = btf_var_secinfos(t);
		for (int k = 0; k < btf_vlen(t); k++, vs++) {
			const struct btf_type *v = btf__type_by_id(btf, vs->type);
			long long sz;

			if (!sec) {
				/*
				 * Externs (.kconfig, .ksyms): libbpf keeps their size in
				 * an int and returns a truncated one as an error code.
				 */
				if (!v || !btf_is_var(v))
					continue;
				sz = btf__resolve_size(btf, v->type);
				if (sz >= 0 && sz <= LDR_EXTERN_MAX)
					continue;
				ldr_err(c, "section %u (.BTF): extern variable %d of datasec '%s' has %s (type %u); at most %d bytes",
					c->elf.btf_idx, k, sn ? sn : "?",
					sz < 0 ? "a type without a size" : "an oversized type", v->type,
					LDR_EXTERN_MAX);
				btf__free(btf);
				return -EINVAL;
			}
			sz = btf__resolve_size(btf, vs->type);
			if (sz >= 0 && (uint64_t)sz <= c->elf.secs[sec].size)
				continue;
			ldr_err(c, "section %u (.BTF): variable %d of datasec '%s' has %s (type %u); section %u is 0x%" PRIx64 " bytes",
				c->elf.btf_idx, k, sn, sz < 0 ? "a type without a size" : "a type larger than its section",
				vs->type, sec, c->elf.secs[sec].size);
			btf__free(btf);
			return -EINVAL;
		}
	}
	btf__free(btf);
	return 0;
}

int gpuext_object__open_mem(struct gpuext_runtime *rt, const void *buf, size_t len,
			    const struct gpuext_object_open_opts *opts,
			    struct gpuext_object **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, bopts);
	struct ldr_ctx c = { .rt = rt };
	const char *name = "mem";
	int err;

	if (!rt || !out || (!buf && len))
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	if (opts && opts->sz >= offsetof(struct gpuext_object_open_opts, object_name) +
				 sizeof(opts->object_name) && opts->object_name)
		name = opts->object_name;

	c.obj = calloc(1, sizeof(*c.obj));
	if (!c.obj)
		return GPUEXT_ERR(ENOMEM);
	c.obj->rt = rt;
	c.obj->name = strdup(name);
	if (!c.obj->name) {
		free(c.obj);
		return GPUEXT_ERR(ENOMEM);
	}

	err = ldr_elf_parse(rt, c.obj->name, buf ? buf : "", len, &c.elf);
	if (err)
		goto fail;

	libbpf_enter(rt, c.obj->name);
	err = check_btf_with_libbpf(&c);
	if (!err) {
		bopts.object_name = c.obj->name;
		c.obj->bobj = bpf_object__open_mem(buf, len, &bopts);
		if ((intptr_t)c.obj->bobj < 0) {
			/* An error code libbpf failed to recognise as one (outside -4095..-1). */
			ldr_err(&c, "libbpf returned error %" PRIdPTR " as an object; treating the input as malformed",
				(intptr_t)c.obj->bobj);
			c.obj->bobj = NULL;
			err = -EINVAL;
		} else if (!c.obj->bobj) {
			char why[128];

			err = errno ? -errno : -EINVAL;
			libbpf_strerror(err, why, sizeof(why));
			ldr_err(&c, "libbpf cannot parse the object: %s", why);
			if (err != -ENOMEM)
				err = -EINVAL;
		}
	}
	libbpf_leave();
	if (err)
		goto fail;

	err = create_maps(&c);
	if (!err)
		err = link_progs(&c);
	if (!err)
		err = ldr_collect_struct_ops(c.obj, &c.elf);
	if (err)
		goto fail;

	ldr_elf_free(&c.elf);
	free(c.funcs);
	free(c.sec_map);
	free(c.kcfg);
	*out = c.obj;
	return 0;

fail:
	if (err == -ENOMEM)
		ldr_err(&c, "out of memory");
	ldr_elf_free(&c.elf);
	free(c.funcs);
	free(c.sec_map);
	free(c.kcfg);
	gpuext_object__close(c.obj);
	return GPUEXT_ERR(-err);
}

int gpuext_object__open_file(struct gpuext_runtime *rt, const char *path,
			     const struct gpuext_object_open_opts *opts,
			     struct gpuext_object **out)
{
	struct gpuext_object_open_opts o = { .sz = sizeof(o) };
	const char *base;
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;
	int fd, err;

	if (!rt || !path || !out)
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		gpuext_log(rt, GPUEXT_LOG_WARN, "%s: cannot open: %s", path, strerror(err));
		return GPUEXT_ERR(err);
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "%s: not a regular file", path);
		close(fd);
		return GPUEXT_ERR(EINVAL);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return GPUEXT_ERR(ENOMEM);
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			gpuext_log(rt, GPUEXT_LOG_WARN, "%s: read failed after %zu bytes: %s", path,
				   got, strerror(err));
			close(fd);
			free(buf);
			return GPUEXT_ERR(err);
		}
		got += (size_t)n;
	}
	close(fd);

	if (opts && opts->sz >= offsetof(struct gpuext_object_open_opts, object_name) +
				 sizeof(opts->object_name) && opts->object_name) {
		o.object_name = opts->object_name;
	} else {
		base = strrchr(path, '/');
		o.object_name = base ? base + 1 : path;
	}
	err = gpuext_object__open_mem(rt, buf, got, &o, out);
	free(buf);
	return err;
}

const char *gpuext_object__name(const struct gpuext_object *obj)
{
	return obj ? obj->name : "";
}

size_t gpuext_object__prog_cnt(const struct gpuext_object *obj)
{
	return obj ? obj->prog_cnt : 0;
}

struct gpuext_prog *gpuext_object__prog(const struct gpuext_object *obj, size_t idx)
{
	return obj && idx < obj->prog_cnt ? &obj->progs[idx] : NULL;
}

struct gpuext_prog *gpuext_object__find_prog(const struct gpuext_object *obj, const char *name)
{
	for (size_t i = 0; obj && name && i < obj->prog_cnt; i++)
		if (strcmp(obj->progs[i].name, name) == 0)
			return &obj->progs[i];
	return NULL;
}

size_t gpuext_object__map_cnt(const struct gpuext_object *obj)
{
	return obj ? obj->map_cnt : 0;
}

struct gpuext_map *gpuext_object__map(const struct gpuext_object *obj, size_t idx)
{
	return obj && idx < obj->map_cnt ? obj->maps[idx] : NULL;
}

struct gpuext_map *gpuext_object__find_map(const struct gpuext_object *obj, const char *name)
{
	for (size_t i = 0; obj && name && i < obj->map_cnt; i++)
		if (strcmp(gpuext_map__name(obj->maps[i]), name) == 0)
			return obj->maps[i];
	return NULL;
}

const struct btf *gpuext_object__btf(const struct gpuext_object *obj)
{
	return obj && obj->bobj ? bpf_object__btf(obj->bobj) : NULL;
}

size_t gpuext_object__struct_ops_cnt(const struct gpuext_object *obj)
{
	return obj ? obj->st_ops_cnt : 0;
}

const struct gpuext_struct_ops *gpuext_object__struct_ops(const struct gpuext_object *obj,
							  size_t idx)
{
	return obj && idx < obj->st_ops_cnt ? &obj->st_ops[idx] : NULL;
}
