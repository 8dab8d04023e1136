/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF ELF loader on real clang output (tests/bpf/loader_*.bpf.c): maps,
 * global data, subprograms, function addresses, kfuncs, .kconfig, CO-RE
 * refusal and struct_ops. Programs are run in the interpreter so the
 * relocations are proven by the values they compute, not only by their
 * encodings.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/utsname.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "internal.h"
#include "testlib.h"

#define OBJ(name) GPUEXT_TEST_BPF_DIR "/" name ".bpf.o"

static struct test_log logbuf;
static uint32_t add_kfunc_id;

static uint64_t kf_add(struct gpuext_exec *ex, uint64_t r1, uint64_t r2, uint64_t r3,
		       uint64_t r4, uint64_t r5)
{
	(void)ex; (void)r3; (void)r4; (void)r5;
	return (uint32_t)((int32_t)r1 + (int32_t)r2);
}

static struct gpuext_runtime *new_rt(bool with_kfunc)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf);
	struct gpuext_runtime *rt = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	if (rt && with_kfunc) {
		struct gpuext_func_proto p = {
			.kind = GPUEXT_FUNC_KFUNC,
			.name = "bpf_gpuext_test_add",
			.fn = kf_add,
			.ret = GPUEXT_RET_INTEGER,
			.args = { GPUEXT_ARG_SCALAR, GPUEXT_ARG_SCALAR },
		};
		int id = gpuext_runtime__register_func(rt, &p);

		CHECK(id > 0);
		add_kfunc_id = (uint32_t)id;
	}
	return rt;
}

static struct gpuext_object *open_obj(struct gpuext_runtime *rt, const char *path)
{
	struct gpuext_object *obj = NULL;
	int err;

	test_log_clear(&logbuf);
	err = gpuext_object__open_file(rt, path, NULL, &obj);
	CHECK_EQ_INT(err, 0);
	if (err)
		fprintf(stderr, "open %s: %s\n%s", path, strerror(-err), logbuf.buf);
	return obj;
}

static int64_t run(struct gpuext_object *obj, const char *name)
{
	struct gpuext_prog *prog = gpuext_object__find_prog(obj, name);
	uint8_t ctx[64] = { 0 };
	GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = ctx, .ctx_len = sizeof(ctx), .insn_limit = 100000);
	uint64_t r0 = 0;
	int err;

	CHECK(prog != NULL);
	if (!prog)
		return -1;
	test_log_clear(&logbuf);
	err = gpuext_prog__run(prog, &ro, &r0);
	CHECK_EQ_INT(err, 0);
	if (err) {
		fprintf(stderr, "run %s: %s\n%s", name, strerror(-err), logbuf.buf);
		return -1;
	}
	return (int64_t)r0;
}

static int map_index(const struct gpuext_object *obj, const char *name)
{
	for (size_t i = 0; i < gpuext_object__map_cnt(obj); i++)
		if (!strcmp(gpuext_map__name(gpuext_object__map(obj, i)), name))
			return (int)i;
	return -1;
}

/* First ld_imm64 of @prog with source @src, or -1. */
static long find_lddw(const struct gpuext_prog *prog, uint8_t src, long from)
{
	const struct bpf_insn *in = gpuext_prog__insns(prog);

	for (size_t i = (size_t)from; i + 1 < gpuext_prog__insn_cnt(prog); i++) {
		if (in[i].code == (BPF_LD | BPF_DW | BPF_IMM)) {
			if (in[i].src_reg == src)
				return (long)i;
			i++;
		}
	}
	return -1;
}

static long find_func(const struct gpuext_prog *prog, const char *name)
{
	for (size_t i = 0; i < gpuext_prog__func_cnt(prog); i++)
		if (!strcmp(gpuext_prog__func_name(prog, i), name))
			return gpuext_prog__func_start(prog, i);
	return -1;
}

static void check_map(const struct gpuext_object *obj, const char *name, uint32_t type,
		      uint32_t ks, uint32_t vs, uint32_t max)
{
	struct gpuext_map *m = gpuext_object__find_map(obj, name);

	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "no map '%s'\n", name);
		return;
	}
	CHECK_EQ_INT(gpuext_map__type(m), type);
	CHECK_EQ_INT(gpuext_map__key_size(m), ks);
	CHECK_EQ_INT(gpuext_map__value_size(m), vs);
	CHECK_EQ_INT(gpuext_map__max_entries(m), max);
}

static void test_maps(struct gpuext_object *obj)
{
	struct gpuext_prog *prog = gpuext_object__find_prog(obj, "map_read");
	uint32_t key = 1;
	uint64_t val = 41;
	long at;

	/* 6 user maps + .rodata, .data, .bss, .rodata.str1.1, .kconfig */
	CHECK_EQ_INT(gpuext_object__map_cnt(obj), 11);
	check_map(obj, "arr", BPF_MAP_TYPE_ARRAY, 4, 8, 4);
	check_map(obj, "pcpu", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 16, 8);
	check_map(obj, "hash", BPF_MAP_TYPE_HASH, 8, 4, 16);
	check_map(obj, "lru", BPF_MAP_TYPE_LRU_HASH, 4, 16, 32);
	check_map(obj, "hash_noprealloc", BPF_MAP_TYPE_HASH, 4, 4, 64);
	check_map(obj, "rb", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096);
	check_map(obj, ".rodata", BPF_MAP_TYPE_ARRAY, 4, 8, 1);
	check_map(obj, ".data", BPF_MAP_TYPE_ARRAY, 4, 12, 1);
	check_map(obj, ".bss", BPF_MAP_TYPE_ARRAY, 4, 8, 1);
	check_map(obj, ".rodata.str1.1", BPF_MAP_TYPE_ARRAY, 4, 7, 1);
	check_map(obj, ".kconfig", BPF_MAP_TYPE_ARRAY, 4, 8, 1);
	CHECK(gpuext_object__find_map(obj, "nope") == NULL);

	CHECK(prog != NULL);
	if (!prog)
		return;
	CHECK_EQ_INT(gpuext_prog__map_cnt(prog), gpuext_object__map_cnt(obj));
	for (size_t i = 0; i < gpuext_prog__map_cnt(prog); i++)
		CHECK(gpuext_prog__map(prog, i) == gpuext_object__map(obj, i));
	at = find_lddw(prog, BPF_PSEUDO_MAP_IDX, 0);
	CHECK(at >= 0);
	if (at >= 0) {
		CHECK_EQ_INT(gpuext_prog__insns(prog)[at].imm, map_index(obj, "arr"));
		CHECK_EQ_INT(gpuext_prog__insns(prog)[at + 1].imm, 0);
	}
	CHECK_EQ_INT(run(obj, "map_read"), 1);
	CHECK_EQ_INT(gpuext_map__update(gpuext_object__find_map(obj, "arr"), &key, &val, BPF_ANY), 0);
	CHECK_EQ_INT(run(obj, "map_read"), 42);
}

static void test_globals(struct gpuext_object *obj)
{
	struct gpuext_prog *prog = gpuext_object__find_prog(obj, "globals_sum");
	struct gpuext_map *data = gpuext_object__find_map(obj, ".data");
	struct gpuext_map *ro = gpuext_object__find_map(obj, ".rodata");
	uint8_t buf[12];
	uint64_t v;
	uint32_t key = 0;
	long at;

	CHECK(prog && data && ro);
	if (!prog || !data || !ro)
		return;
	/* .rodata const at offset 0 of map ".rodata"; .data value at offset 0 of ".data" */
	at = find_lddw(prog, BPF_PSEUDO_MAP_IDX_VALUE, 0);
	CHECK(at >= 0);
	if (at >= 0) {
		int idx = gpuext_prog__insns(prog)[at].imm;

		CHECK(idx == map_index(obj, ".rodata") || idx == map_index(obj, ".data"));
		CHECK_EQ_INT(gpuext_prog__insns(prog)[at + 1].imm, 0);
		at = find_lddw(prog, BPF_PSEUDO_MAP_IDX_VALUE, at + 2);
		CHECK(at >= 0);
		if (at >= 0)
			CHECK(gpuext_prog__insns(prog)[at].imm != idx);
	}
	/* Initial values come from the ELF. */
	CHECK_EQ_INT(gpuext_map__lookup(ro, &key, &v), 0);
	CHECK_EQ_U64(v, 40);
	CHECK_EQ_INT(gpuext_map__lookup(data, &key, buf), 0);
	memcpy(&v, buf, 8);
	CHECK_EQ_U64(v, 2);
	CHECK_EQ_INT(run(obj, "globals_sum"), 42);

	/* The program reads the map, not a copy: 40 + 10. */
	v = 10;
	memcpy(buf, &v, 8);
	CHECK_EQ_INT(gpuext_map__update(data, &key, buf, BPF_ANY), 0);
	CHECK_EQ_INT(run(obj, "globals_sum"), 50);

	/* .bss starts at zero and keeps its value between runs. */
	CHECK_EQ_INT(run(obj, "bss_bump"), 5);
	CHECK_EQ_INT(run(obj, "bss_bump"), 10);

	/* A string literal in .rodata.str1.1, indexed by data_idx (.data offset 8). */
	prog = gpuext_object__find_prog(obj, "string_byte");
	CHECK(prog != NULL);
	if (prog) {
		at = find_lddw(prog, BPF_PSEUDO_MAP_IDX_VALUE, 0);
		CHECK(at >= 0);
		if (at >= 0) {
			CHECK_EQ_INT(gpuext_prog__insns(prog)[at].imm, map_index(obj, ".data"));
			CHECK_EQ_INT(gpuext_prog__insns(prog)[at + 1].imm, 8);
			at = find_lddw(prog, BPF_PSEUDO_MAP_IDX_VALUE, at + 2);
			CHECK(at >= 0);
			if (at >= 0)
				CHECK_EQ_INT(gpuext_prog__insns(prog)[at].imm,
					     map_index(obj, ".rodata.str1.1"));
		}
	}
	CHECK_EQ_INT(run(obj, "string_byte"), 'u');
}

/* Every local call and function address lands on a function start. */
static void check_call_targets(const struct gpuext_prog *prog)
{
	const struct bpf_insn *in = gpuext_prog__insns(prog);
	size_t n = gpuext_prog__insn_cnt(prog);

	for (size_t i = 0; i < n; i++) {
		int64_t t = -1;

		if (in[i].code == (BPF_JMP | BPF_CALL) && in[i].src_reg == BPF_PSEUDO_CALL)
			t = (int64_t)i + 1 + in[i].imm;
		else if (in[i].code == (BPF_LD | BPF_DW | BPF_IMM) && in[i].src_reg == BPF_PSEUDO_FUNC)
			t = (int64_t)i + 1 + in[i].imm;
		if (t < 0) {
			if (in[i].code == (BPF_LD | BPF_DW | BPF_IMM))
				i++;
			continue;
		}
		bool found = false;

		for (size_t f = 0; f < gpuext_prog__func_cnt(prog); f++)
			found |= gpuext_prog__func_start(prog, f) == t;
		CHECK(found);
	}
}

static void test_calls(struct gpuext_object *obj)
{
	struct gpuext_prog *prog = gpuext_object__find_prog(obj, "calls");
	static const char *const want[] = { "calls", "top", "gtop", "mid", "leaf" };
	long at;

	CHECK(prog != NULL);
	if (!prog)
		return;
	CHECK_EQ_INT(gpuext_prog__func_cnt(prog), 5);
	for (size_t i = 0; i < 5 && i < gpuext_prog__func_cnt(prog); i++)
		CHECK_STR_CONTAINS(gpuext_prog__func_name(prog, i), want[i]);
	CHECK_EQ_INT(gpuext_prog__func_start(prog, 0), 0);
	for (size_t i = 1; i < gpuext_prog__func_cnt(prog); i++)
		CHECK(gpuext_prog__func_start(prog, i) > gpuext_prog__func_start(prog, i - 1));
	check_call_targets(prog);
	CHECK_EQ_INT(run(obj, "calls"), 140);

	/* Another program links its own copy of the shared subprograms. */
	prog = gpuext_object__find_prog(obj, "calls_other");
	CHECK(prog != NULL);
	if (prog) {
		CHECK_EQ_INT(gpuext_prog__func_cnt(prog), 3);
		CHECK_EQ_INT(find_func(prog, "top"), -1);
		CHECK(find_func(prog, "mid") > 0);
		CHECK(find_func(prog, "leaf") > find_func(prog, "mid"));
		CHECK_STR_CONTAINS(gpuext_prog__section(prog), "tc");
		check_call_targets(prog);
	}
	CHECK_EQ_INT(run(obj, "calls_other"), 13);

	/* A function address: ld_imm64 src=4, imm counted from insn+1 as Linux does. */
	prog = gpuext_object__find_prog(obj, "func_addr");
	CHECK(prog != NULL);
	if (!prog)
		return;
	at = find_lddw(prog, BPF_PSEUDO_FUNC, 0);
	CHECK(at >= 0);
	CHECK_EQ_INT(gpuext_prog__func_cnt(prog), 2);
	if (at >= 0) {
		CHECK(find_func(prog, "callback") > 0);
		CHECK_EQ_INT(at + 1 + gpuext_prog__insns(prog)[at].imm, find_func(prog, "callback"));
		CHECK_EQ_INT(gpuext_prog__insns(prog)[at + 1].imm, 0);
	}
	check_call_targets(prog);
}

static void test_kfuncs(struct gpuext_object *obj)
{
	struct gpuext_prog *prog = gpuext_object__find_prog(obj, "kfuncs");
	const struct bpf_insn *in;
	int known = 0, missing = 0;

	CHECK(prog != NULL);
	if (!prog)
		return;
	in = gpuext_prog__insns(prog);
	for (size_t i = 0; i < gpuext_prog__insn_cnt(prog); i++) {
		if (in[i].code != (BPF_JMP | BPF_CALL))
			continue;
		CHECK(in[i].src_reg != BPF_PSEUDO_CALL);
		if (in[i].src_reg != BPF_PSEUDO_KFUNC_CALL)
			continue;
		known += in[i].imm == (int32_t)add_kfunc_id;
		missing += in[i].imm == 0;
	}
	CHECK_EQ_INT(known, 1);
	CHECK_EQ_INT(missing, 1);
	CHECK_EQ_INT(run(obj, "kfuncs"), 42);
}

static void test_kfunc_unknown(void)
{
	struct gpuext_runtime *rt = new_rt(false);
	struct gpuext_object *obj = (void *)1;

	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_object__open_file(rt, OBJ("loader_basic"), NULL, &obj), -ENOENT);
	CHECK(obj == NULL);
	CHECK_EQ_INT(errno, ENOENT);
	CHECK_STR_CONTAINS(logbuf.buf, "prog 'kfuncs'");
	CHECK_STR_CONTAINS(logbuf.buf, "kfunc 'bpf_gpuext_test_add'");
	CHECK_STR_CONTAINS(logbuf.buf, "not registered");
	gpuext_runtime__free(rt);
}

static void test_kconfig(struct gpuext_object *obj)
{
	struct utsname u;
	unsigned a = 0, b = 0, p = 0;

	CHECK_EQ_INT(uname(&u), 0);
	sscanf(u.release, "%u.%u.%u", &a, &b, &p);
	CHECK(a > 0);
	CHECK_EQ_U64(run(obj, "kconfig_version"), (a << 16) + (b << 8) + (p > 255 ? 255 : p));
	CHECK_EQ_INT(run(obj, "kconfig_weak"), 1);
}

static void test_kconfig_required(void)
{
	struct gpuext_runtime *rt = new_rt(false);
	struct gpuext_object *obj = NULL;

	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_object__open_file(rt, OBJ("loader_kconfig_bad"), NULL, &obj), -ENOENT);
	CHECK(obj == NULL);
	CHECK_STR_CONTAINS(logbuf.buf, "loader_kconfig_bad.bpf.o: extern 'CONFIG_GPUEXT_REQUIRED' (.kconfig)");
	CHECK_STR_CONTAINS(logbuf.buf, "__weak");
	gpuext_runtime__free(rt);
}

static void test_core_refused(void)
{
	struct gpuext_runtime *rt = new_rt(false);
	struct gpuext_object *obj = NULL;

	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_object__open_file(rt, OBJ("loader_core"), NULL, &obj), -ENOTSUP);
	CHECK(obj == NULL);
	CHECK_STR_CONTAINS(logbuf.buf, "prog 'core_read'");
	CHECK_STR_CONTAINS(logbuf.buf, "CO-RE");
	gpuext_runtime__free(rt);
}

static const struct gpuext_struct_ops *find_st_ops(const struct gpuext_object *obj,
						    const char *name)
{
	for (size_t i = 0; i < gpuext_object__struct_ops_cnt(obj); i++)
		if (!strcmp(gpuext_object__struct_ops(obj, i)->var_name, name))
			return gpuext_object__struct_ops(obj, i);
	return NULL;
}

static void test_struct_ops(void)
{
	struct gpuext_runtime *rt = new_rt(false);
	struct gpuext_object *obj = open_obj(rt, OBJ("loader_struct_ops"));
	const struct gpuext_struct_ops *so;
	const struct btf *btf;
	int32_t x;

	if (!obj) {
		gpuext_runtime__free(rt);
		return;
	}
	btf = gpuext_object__btf(obj);
	CHECK(btf != NULL);
	CHECK_EQ_INT(gpuext_object__struct_ops_cnt(obj), 2);
	CHECK_EQ_INT(gpuext_object__map_cnt(obj), 0); /* struct_ops are not maps here */
	CHECK_EQ_INT(gpuext_object__prog_cnt(obj), 2);

	so = find_st_ops(obj, "linked_ops");
	CHECK(so != NULL);
	if (so) {
		CHECK(!strcmp(so->type_name, "gpu_test_ops"));
		CHECK(so->link);
		if (btf)
			CHECK_EQ_INT(so->type_id,
				     btf__find_by_name_kind(btf, "gpu_test_ops", BTF_KIND_STRUCT));
		CHECK_EQ_INT(so->data_size, 40);
		CHECK_EQ_INT(so->member_cnt, 2);
		for (size_t i = 0; i < so->member_cnt; i++) {
			const struct gpuext_struct_ops_member *m = &so->members[i];

			if (!strcmp(m->member, "a")) {
				CHECK_EQ_INT(m->offset, 0);
				CHECK(m->prog == gpuext_object__find_prog(obj, "test_a"));
			} else {
				CHECK(!strcmp(m->member, "b"));
				CHECK_EQ_INT(m->offset, 8);
				CHECK(m->prog == gpuext_object__find_prog(obj, "test_b"));
			}
		}
		if (so->data && so->data_size == 40) {
			const uint8_t *d = so->data;
			uint64_t fp;

			memcpy(&x, d + 16, 4);
			CHECK_EQ_INT(x, 42);
			CHECK(!strcmp((const char *)d + 20, "hello"));
			memcpy(&fp, d, 8);
			CHECK_EQ_U64(fp, 0);
		}
	}
	so = find_st_ops(obj, "plain_ops");
	CHECK(so != NULL);
	if (so) {
		CHECK(!so->link);
		CHECK(!strcmp(so->type_name, "gpu_test_ops"));
		CHECK_EQ_INT(so->member_cnt, 1);
		if (so->member_cnt == 1) {
			CHECK(!strcmp(so->members[0].member, "b"));
			CHECK_EQ_INT(so->members[0].offset, 8);
			CHECK(so->members[0].prog == gpuext_object__find_prog(obj, "test_b"));
		}
		if (so->data && so->data_size == 40) {
			memcpy(&x, (const uint8_t *)so->data + 16, 4);
			CHECK_EQ_INT(x, 7);
			CHECK(!strcmp((const char *)so->data + 20, "plain"));
		}
	}
	CHECK_STR_CONTAINS(gpuext_prog__section(gpuext_object__find_prog(obj, "test_a")),
			   "struct_ops/a");
	CHECK_EQ_INT(run(obj, "test_a"), 11);
	CHECK_EQ_INT(run(obj, "test_b"), 22);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

static int custom_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level; (void)fmt; (void)ap;
	return 0;
}

/* open_mem on an unaligned copy; the caller's print hook for libbpf survives. */
static void test_open_mem_and_print_hook(void)
{
	struct gpuext_runtime *rt = new_rt(true);
	struct gpuext_object *obj = NULL;
	GPUEXT_OPTS(gpuext_object_open_opts, oo, .object_name = "unaligned");
	FILE *f = fopen(OBJ("loader_basic"), "rb");
	uint8_t *buf = malloc(1 << 20);
	size_t n = 0;

	CHECK(f && buf);
	if (f && buf)
		n = fread(buf + 1, 1, (1 << 20) - 1, f);
	if (f)
		fclose(f);
	CHECK(n > 64);
	libbpf_set_print(custom_libbpf_print);
	CHECK_EQ_INT(gpuext_object__open_mem(rt, buf + 1, n, &oo, &obj), 0);
	CHECK(libbpf_set_print(NULL) == custom_libbpf_print);
	CHECK(obj != NULL);
	if (obj) {
		CHECK(!strcmp(gpuext_object__name(obj), "unaligned"));
		CHECK_EQ_INT(gpuext_object__prog_cnt(obj), 10);
		CHECK(gpuext_object__prog(obj, 10) == NULL);
		CHECK(gpuext_object__find_prog(obj, "leaf") == NULL); /* a subprogram */
		memset(buf, 0, 1 << 20); /* the object keeps nothing of the buffer */
		CHECK_EQ_INT(run(obj, "calls"), 140);
		CHECK_EQ_INT(run(obj, "globals_sum"), 42);
	}
	gpuext_object__close(obj);
	free(buf);

	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_object__open_file(rt, "/nonexistent/x.bpf.o", NULL, &obj), -ENOENT);
	CHECK_STR_CONTAINS(logbuf.buf, "/nonexistent/x.bpf.o: cannot open");
	CHECK_EQ_INT(gpuext_object__open_mem(rt, NULL, 10, NULL, &obj), -EINVAL);
	CHECK_EQ_INT(gpuext_object__open_mem(NULL, "x", 1, NULL, &obj), -EINVAL);
	gpuext_runtime__free(rt);
}

int main(void)
{
	struct gpuext_runtime *rt = new_rt(true);
	struct gpuext_object *obj = open_obj(rt, OBJ("loader_basic"));

	if (obj) {
		CHECK(!strcmp(gpuext_object__name(obj), "loader_basic.bpf.o"));
		CHECK(gpuext_object__btf(obj) != NULL);
		CHECK_EQ_INT(gpuext_object__struct_ops_cnt(obj), 0);
		test_maps(obj);
		test_globals(obj);
		test_calls(obj);
		test_kfuncs(obj);
		test_kconfig(obj);
		gpuext_object__close(obj);
	}
	gpuext_runtime__free(rt);

	test_kfunc_unknown();
	test_kconfig_required();
	test_core_refused();
	test_struct_ops();
	test_open_mem_and_print_hook();
	return test_done("test_loader");
}
