/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SPIR-V backend (codegen/spirv/).
 *
 *  - Every case of the ISA corpus that the verifier accepts as a host
 *    program (ctx_size = the input length; error-expecting cases skipped)
 *    lowers to Kernel-flavour SPIR-V that spirv-val accepts (spv1.4), and to
 *    the Vulkan flavour, which spirv-val accepts (vulkan1.3) and which runs
 *    on a Vulkan device (lavapipe here) with the same r0 and memory as the
 *    interpreter. A case that cannot run (a helper without a device
 *    implementation, an LLVM limit) is counted and listed with its reason;
 *    any disagreement or invalid module fails the test.
 *    Maps and variables go to the device's data area and back, and must
 *    match the interpreter's afterwards. In-test cases (spirv_maps) cover
 *    update/delete/out-of-range lookups and per-CPU arrays.
 *  - Every valid encoding of the corpus (gpuext_prog__new succeeds), verified
 *    or not, error-expecting included, lowers to Kernel-flavour SPIR-V that
 *    spirv-val accepts; unverified ones are never run. Cases that are not
 *    valid encodings are listed.
 *  - Every struct_ops program of the shipped policies lowers to Kernel-flavour
 *    SPIR-V that validates.
 *
 * spirv-val must exist (GPUEXT_SPIRV_VAL from CMake, else PATH); a Vulkan
 * device must exist unless GPUEXT_TEST_NO_VULKAN=1 (then the runs are
 * skipped, loudly).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asm.h"
#include "gpuext/verifier.h"
#include "internal.h"
#include "spirv/spirv.h"
#include "testlib.h"

static struct test_log tlog;
static const char *spirv_val;

/*
 * Sanitizer builds: lavapipe leaks a little of its own; tests/lsan-vulkan.supp
 * names the driver's libraries, nothing of ours. The loader unloads the driver
 * when the instance goes, so main() pins it (RTLD_NODELETE) to keep its frames
 * attributable at exit.
 */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "suppressions=" GPUEXT_TEST_DATA_DIR "/lsan-vulkan.supp:print_suppressions=0";
}

struct reason {
	char text[200];
	unsigned cnt;
	char first[96];
};

static struct reason reasons[64];
static size_t reason_cnt;

static void add_reason(const char *text, const char *name)
{
	char t[200];

	snprintf(t, sizeof(t), "%s", text);
	for (size_t i = 0; i < reason_cnt; i++) {
		if (!strcmp(reasons[i].text, t)) {
			reasons[i].cnt++;
			return;
		}
	}
	if (reason_cnt == sizeof(reasons) / sizeof(reasons[0]))
		return;
	snprintf(reasons[reason_cnt].text, sizeof(reasons[0].text), "%s", t);
	snprintf(reasons[reason_cnt].first, sizeof(reasons[0].first), "%s", name);
	reasons[reason_cnt++].cnt = 1;
}

/* Runs spirv-val on @bin; true when it accepts. @out gets its message. */
static bool validate(const void *bin, size_t len, const char *env, char *out, size_t out_len)
{
	char path[] = "/tmp/gpuext-spv-XXXXXX";
	char cmd[512];
	int fd = mkstemp(path), st;
	size_t got = 0;
	FILE *p;

	out[0] = '\0';
	if (fd < 0 || write(fd, bin, len) != (ssize_t)len) {
		snprintf(out, out_len, "cannot write %s", path);
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "'%s' --target-env %s '%s' 2>&1", spirv_val, env, path);
	p = popen(cmd, "r");
	if (!p) {
		unlink(path);
		snprintf(out, out_len, "cannot run %s", spirv_val);
		return false;
	}
	while (got + 1 < out_len) {
		size_t r = fread(out + got, 1, out_len - got - 1, p);

		if (!r)
			break;
		got += r;
	}
	out[got] = '\0';
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	unlink(path);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

struct counts {
	unsigned cases, skip_error, skip_rejected, setup;
	unsigned enc_valid, enc_invalid, all_ok, all_bad;	/* every valid encoding, Kernel flavour */
	unsigned kernel_ok, kernel_bad, kernel_emit_fail;
	unsigned vk_emitted, vk_valid, vk_invalid, vk_cant, vk_ran, vk_agree, vk_differ;
};

struct side {
	struct gpuext_runtime *rt;
	struct isa_case_env env;
	bool env_ok;
	int prog_err;	/* gpuext_prog__new()'s result once the environment is set up */
	struct gpuext_prog *prog;
};

static int side_init(struct side *s, const struct isa_case *tc, char *why, size_t why_len)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &tlog,
		    .prandom_seed = 1);
	int err;

	memset(s, 0, sizeof(*s));
	err = gpuext_runtime__new(&ro, &s->rt);
	if (err)
		return err;
	err = isa_case_env_init(&s->env, s->rt, tc, why, why_len);
	if (err)
		return err;
	s->env_ok = true;
	s->prog_err = gpuext_prog__new(s->rt, tc->name, s->env.insns, s->env.insn_cnt, s->env.maps,
				       s->env.map_cnt, &s->prog);
	if (s->prog_err)
		snprintf(why, why_len, "gpuext_prog__new: %d", s->prog_err);
	return s->prog_err;
}

/* Same keys and values in every array/hash map, same variables, on both sides? */
static bool maps_equal(const struct side *a, const struct side *b, char *why, size_t why_len)
{
	for (size_t m = 0; m < a->env.map_cnt; m++) {
		struct gpuext_map *ma = a->env.maps[m], *mb = b->env.maps[m];
		uint32_t type = gpuext_map__type(ma);
		uint32_t ks = gpuext_map__key_size(ma);
		size_t vs = (size_t)((gpuext_map__value_size(ma) + 7) & ~7u) *
			    gpuext_runtime__nr_cpu_slots(a->rt);
		uint8_t *k = calloc(1, ks), *va = calloc(1, vs), *vb = calloc(1, vs);
		const void *prev = NULL;
		bool ok = true;

		if (type == BPF_MAP_TYPE_RINGBUF || !k || !va || !vb) {
			free(k); free(va); free(vb);
			continue;
		}
		while (ok && gpuext_map__next_key(ma, prev, k) == 0) {
			int ea = gpuext_map__lookup(ma, k, va), eb = gpuext_map__lookup(mb, k, vb);

			if (ea || eb || memcmp(va, vb, vs)) {
				snprintf(why, why_len, "map '%s' differs (lookup %d/%d)",
					 gpuext_map__name(ma), ea, eb);
				ok = false;
			}
			prev = k;
		}
		free(k); free(va); free(vb);
		if (!ok)
			return false;
	}
	for (size_t i = 0; i < a->rt->var_cnt && i < b->rt->var_cnt; i++) {
		const struct gpuext_var *va = &a->rt->vars[i], *vb = &b->rt->vars[i];

		if (va->size != vb->size || (va->size && memcmp(va->addr, vb->addr, va->size))) {
			snprintf(why, why_len, "variable %u differs", va->id);
			return false;
		}
	}
	return true;
}

/* Any valid encoding, verified or not: the Kernel flavour lowers and validates. */
static void lower_any(const struct isa_case *tc, struct side *a, struct counts *c, bool verified)
{
	char why[1024] = "", where[128], name[160], val[2048];
	GPUEXT_OPTS(gpuext_spirv_emit_opts, eo, .err = why, .err_len = sizeof(why));
	void *bin = NULL;
	size_t len = 0;
	int err;

	snprintf(where, sizeof(where), "tests/isa/%s.isa", tc->family);
	snprintf(name, sizeof(name), "%s/%s", tc->family, tc->name);
	c->enc_valid++;
	err = gpuext_spirv_emit_opts(a->prog, &eo, &bin, &len);
	test_checks++;
	if (err) {
		c->all_bad++;
		test_fail(where, tc->line, "%s (%s): Kernel-flavour SPIR-V not emitted (%d): %s",
			  tc->name, verified ? "verified" : "unverified", err, why);
	} else if (!validate(bin, len, "spv1.4", val, sizeof(val))) {
		c->all_bad++;
		test_fail(where, tc->line, "%s (%s): spirv-val rejects the Kernel flavour: %.600s",
			  tc->name, verified ? "verified" : "unverified", val);
	} else {
		c->all_ok++;
	}
	if (err || getenv("GPUEXT_TEST_VERBOSE"))
		printf("  %s %s%s%s\n", err ? "cannot lower" : "lowered", name, err ? ": " : "",
		       err ? why : "");
	free(bin);
}

static void side_fini(struct side *s)
{
	gpuext_prog__free(s->prog);
	if (s->env_ok)
		isa_case_env_fini(&s->env);
	gpuext_runtime__free(s->rt);
}

static void run_case(const struct isa_case *tc, struct gpuext_spirv_vk *vk, struct counts *c)
{
	struct side a, b;
	char why[1024] = "", where[128], name[160], val[2048], inexact[512];
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST);
	GPUEXT_OPTS(gpuext_verify_result, vr);
	void *bin = NULL;
	size_t len = 0;
	int err;

	snprintf(where, sizeof(where), "tests/isa/%s.isa", tc->family);
	snprintf(name, sizeof(name), "%s/%s", tc->family, tc->name);
	c->cases++;
	test_log_clear(&tlog);
	if (tc->error || tc->error_any) {
		/* Only lowered and validated: never run. */
		c->skip_error++;
		err = side_init(&a, tc, why, sizeof(why));
		if (!err) {
			lower_any(tc, &a, c, false);
		} else {
			c->enc_invalid++;
			printf("  not a valid encoding %s: %s\n", name, why);
		}
		side_fini(&a);
		return;
	}
	err = side_init(&a, tc, why, sizeof(why));
	if (!err)
		err = side_init(&b, tc, why, sizeof(why));
	else
		memset(&b, 0, sizeof(b));
	if (err) {
		c->setup++;
		test_fail(where, tc->line, "%s: setup failed (%d): %s", tc->name, err, why);
		goto out;
	}
	vo.ctx_size = (uint32_t)a.env.mem_len;
	if (gpuext_prog__verify(a.prog, &vo, &vr)) {
		c->skip_rejected++;
		lower_any(tc, &a, c, false);
		goto out;
	}
	c->enc_valid++;

	/* Kernel flavour: must emit and validate. */
	{
		GPUEXT_OPTS(gpuext_spirv_emit_opts, eo, .err = why, .err_len = sizeof(why));

		err = gpuext_spirv_emit_opts(a.prog, &eo, &bin, &len);
	}
	test_checks++;
	if (err) {
		c->kernel_emit_fail++;
		c->all_bad++;
		test_fail(where, tc->line, "%s: Kernel-flavour SPIR-V not emitted (%d): %s",
			  tc->name, err, why);
	} else if (!validate(bin, len, "spv1.4", val, sizeof(val))) {
		c->kernel_bad++;
		c->all_bad++;
		test_fail(where, tc->line, "%s: spirv-val rejects the Kernel flavour: %.600s",
			  tc->name, val);
	} else {
		c->kernel_ok++;
		c->all_ok++;
	}
	free(bin);
	bin = NULL;

	/* Vulkan flavour: emit (or say why not), validate, run, compare. */
	{
		GPUEXT_OPTS(gpuext_spirv_emit_opts, eo, .vulkan = true, .err = why,
			    .err_len = sizeof(why), .inexact = inexact,
			    .inexact_len = sizeof(inexact));

		err = gpuext_spirv_emit_opts(a.prog, &eo, &bin, &len);
	}
	if (err) {
		c->vk_cant++;
		add_reason(why, name);
		if (getenv("GPUEXT_TEST_VERBOSE"))
			printf("  can't emit %s: %s\n", name, why);
		goto out;
	}
	c->vk_emitted++;
	test_checks++;
	if (!validate(bin, len, "vulkan1.3", val, sizeof(val))) {
		c->vk_invalid++;
		test_fail(where, tc->line, "%s: spirv-val rejects the Vulkan flavour: %.600s",
			  tc->name, val);
		goto out;
	}
	c->vk_valid++;
	if (inexact[0]) {
		c->vk_cant++;
		add_reason(inexact, name);
		goto out;
	}
	if (!vk)
		goto out;
	{
		GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = a.env.mem, .ctx_len = a.env.mem_len,
			    .ctx_writable = true, .insn_limit = 10000000);
		uint64_t r0_i = 0, r0_v = 0;
		void *data = NULL;
		size_t data_len = 0;
		int ei, ev;

		ei = gpuext_prog__run(a.prog, &ro, &r0_i);
		/* Maps and variables: copied into the buffer's data area and back. */
		ev = gpuext_spirv_vk_data_save(b.prog, &data, &data_len);
		if (ev)
			snprintf(why, sizeof(why), "cannot read the maps and variables (%d)", ev);
		else
			ev = gpuext_spirv_vk__run_spv_data(vk, bin, len, b.env.mem, b.env.mem_len,
							   data, data_len, &r0_v, why, sizeof(why));
		if (!ev) {
			ev = gpuext_spirv_vk_data_load(b.prog, data, data_len);
			if (ev)
				snprintf(why, sizeof(why), "cannot write the maps back (%d)", ev);
		}
		free(data);
		test_checks++;
		if (ev) {
			c->vk_cant++;
			add_reason(why, name);
			goto out;
		}
		c->vk_ran++;
		if (ei) {
			c->vk_differ++;
			test_fail(where, tc->line, "%s: the interpreter fails (%d) but the shader ran",
				  tc->name, ei);
		} else if (tc->has_result && r0_i != tc->result) {
			c->vk_differ++;
			test_fail(where, tc->line, "%s: the interpreter returns 0x%llx, the case says 0x%llx",
				  tc->name, (unsigned long long)r0_i, (unsigned long long)tc->result);
		} else if (r0_i != r0_v) {
			c->vk_differ++;
			test_fail(where, tc->line, "%s: r0: interpreter 0x%llx, Vulkan 0x%llx",
				  tc->name, (unsigned long long)r0_i, (unsigned long long)r0_v);
		} else if (a.env.mem_len != b.env.mem_len ||
			   (a.env.mem_len && memcmp(a.env.mem, b.env.mem, a.env.mem_len))) {
			c->vk_differ++;
			test_fail(where, tc->line, "%s: memory differs after the run", tc->name);
		} else if (!maps_equal(&a, &b, why, sizeof(why))) {
			c->vk_differ++;
			test_fail(where, tc->line, "%s: %s after the run", tc->name, why);
		} else {
			c->vk_agree++;
		}
	}
out:
	free(bin);
	side_fini(&b);
	side_fini(&a);
}

/* Every struct_ops program of every shipped policy: Kernel flavour, valid. */
static void policies(void)
{
	DIR *d = opendir(GPUEXT_POLICY_DIR);
	struct dirent *e;
	unsigned progs = 0, ok = 0;

	CHECK(d != NULL);
	if (!d)
		return;
	while ((e = readdir(d))) {
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &tlog);
		struct gpuext_runtime *rt = NULL;
		struct gpuext_object *obj = NULL;
		char path[1024];
		size_t n = strlen(e->d_name);

		if (n < 6 || strcmp(e->d_name + n - 6, ".bpf.o"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", GPUEXT_POLICY_DIR, e->d_name);
		test_log_clear(&tlog);
		CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
		if (gpuext_object__open_file(rt, path, NULL, &obj)) {
			test_fail(path, 0, "cannot open: %.400s", tlog.buf);
			gpuext_runtime__free(rt);
			continue;
		}
		for (size_t s = 0; s < gpuext_object__struct_ops_cnt(obj); s++) {
			const struct gpuext_struct_ops *so = gpuext_object__struct_ops(obj, s);

			for (size_t m = 0; m < so->member_cnt; m++) {
				struct gpuext_prog *prog = so->members[m].prog;
				char why[512], val[2048];
				GPUEXT_OPTS(gpuext_spirv_emit_opts, eo, .err = why,
					    .err_len = sizeof(why));
				void *bin = NULL;
				size_t len = 0;
				int err;

				progs++;
				test_checks++;
				err = gpuext_spirv_emit_opts(prog, &eo, &bin, &len);
				if (err)
					test_fail(path, 0, "%s: not emitted (%d): %s",
						  gpuext_prog__name(prog), err, why);
				else if (!validate(bin, len, "spv1.4", val, sizeof(val)))
					test_fail(path, 0, "%s: spirv-val: %.600s",
						  gpuext_prog__name(prog), val);
				else
					ok++;
				free(bin);
			}
		}
		gpuext_object__close(obj);
		gpuext_runtime__free(rt);
	}
	closedir(d);
	printf("policies: %u struct_ops programs, %u lower to valid Kernel-flavour SPIR-V\n",
	       progs, ok);
	CHECK(progs > 0);
}

/* A module that is not SPIR-V, and one the device refuses, fail cleanly. */
static void bad_input(struct gpuext_spirv_vk *vk)
{
	uint32_t junk[8] = { 0x07230203, 0x00010600, 0, 5, 0, 0xffff0001, 0, 0 };
	uint64_t r0 = 0;
	char why[256];

	if (!vk)
		return;
	CHECK(gpuext_spirv_vk__run_spv(vk, junk, sizeof(junk), NULL, 0, &r0, why, sizeof(why)) != 0);
	CHECK(why[0] != '\0');
}

/*
 * Device maps beyond what the ISA corpus covers: update (in range, out of
 * range, bad flags, BPF_NOEXIST), delete, lookup out of range, a per-CPU
 * array (one slot), two maps told apart by the helpers, a variable written.
 * Run like corpus cases: same r0, memory, maps and variables as the
 * interpreter.
 */
static const char extra_cases[] =
	"case update_then_read\n"
	"map m array key=4 value=12 entries=3\n"
	"asm\n"
	"\t*(u32 *)(r10 - 0x4) = 0x2\n"
	"\t*(u64 *)(r10 - 0x10) = 0x11223344\n"
	"\t*(u32 *)(r10 - 0x8) = 0x66\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tr3 = r10\n"
	"\tr3 += -0x10\n"
	"\tr4 = 0x0\n"
	"\tcall bpf_map_update_elem\n"
	"\tr6 = r0\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tcall bpf_map_lookup_elem\n"
	"\tif r0 == 0x0 goto fail\n"
	"\tr7 = *(u32 *)(r0 + 0x8)\n"
	"\tr0 = *(u64 *)(r0 + 0x0)\n"
	"\tr0 += r6\n"
	"\tr0 += r7\n"
	"\texit\n"
	"fail:\n"
	"\tr0 = 0x1\n"
	"\texit\n"
	"end\n"
	"result 0x112233aa\n"
	"\n"
	"case update_errors\n"
	"map m array key=4 value=8 entries=2\n"
	"asm\n"
	"\tr6 = 0x0\n"
	"\t*(u32 *)(r10 - 0x4) = 0x2\n"
	"\t*(u64 *)(r10 - 0x10) = 0x7\n"
	"\t*(u32 *)(r10 - 0x4) = 0x2\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tr3 = r10\n"
	"\tr3 += -0x10\n"
	"\tr4 = 0x0\n"
	"\tcall bpf_map_update_elem\n"
	"\tr7 = 0x0\n"
	"\tr7 -= r0\n"
	"\tr6 <<= 0x8\n"
	"\tr6 += r7\n"
	"\t*(u32 *)(r10 - 0x4) = 0x1\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tr3 = r10\n"
	"\tr3 += -0x10\n"
	"\tr4 = 0x1\n"
	"\tcall bpf_map_update_elem\n"
	"\tr7 = 0x0\n"
	"\tr7 -= r0\n"
	"\tr6 <<= 0x8\n"
	"\tr6 += r7\n"
	"\t*(u32 *)(r10 - 0x4) = 0x1\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tr3 = r10\n"
	"\tr3 += -0x10\n"
	"\tr4 = 0x5\n"
	"\tcall bpf_map_update_elem\n"
	"\tr7 = 0x0\n"
	"\tr7 -= r0\n"
	"\tr6 <<= 0x8\n"
	"\tr6 += r7\n"
	"\t*(u32 *)(r10 - 0x4) = 0x1\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tr3 = r10\n"
	"\tr3 += -0x10\n"
	"\tr4 = 0x2\n"
	"\tcall bpf_map_update_elem\n"
	"\tr7 = 0x0\n"
	"\tr7 -= r0\n"
	"\tr6 <<= 0x8\n"
	"\tr6 += r7\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tcall bpf_map_delete_elem\n"
	"\tr7 = 0x0\n"
	"\tr7 -= r0\n"
	"\tr6 <<= 0x8\n"
	"\tr6 += r7\n"
	"\tr0 = r6\n"
	"\texit\n"
	"end\n"
	"result 0x711160016\n"
	"\n"
	"case lookup_out_of_range_second_map\n"
	"map m array key=4 value=8 entries=1\n"
	"map n percpu_array key=4 value=4 entries=4\n"
	"update m 00000000 0100000000000000\n"
	"asm\n"
	"\t*(u32 *)(r10 - 0x4) = 0x3\n"
	"\tr1 = map[n] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tcall bpf_map_lookup_elem\n"
	"\tif r0 == 0x0 goto fail\n"
	"\t*(u32 *)(r0 + 0x0) = 0x55\n"
	"\t*(u32 *)(r10 - 0x4) = 0x4\n"
	"\tr1 = map[n] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tcall bpf_map_lookup_elem\n"
	"\tif r0 != 0x0 goto fail\n"
	"\t*(u32 *)(r10 - 0x4) = 0x1\n"
	"\tr1 = map[m] ll\n"
	"\tr2 = r10\n"
	"\tr2 += -0x4\n"
	"\tcall bpf_map_lookup_elem\n"
	"\tif r0 != 0x0 goto fail\n"
	"\tr0 = 0x1\n"
	"\texit\n"
	"fail:\n"
	"\tr0 = 0x2\n"
	"\texit\n"
	"end\n"
	"result 0x1\n"
	"\n"
	"case var_and_map_written\n"
	"map m array key=4 value=16 entries=1\n"
	"var 7 8 0102030405060708\n"
	"var 9 4\n"
	"asm\n"
	"\tr1 = var[0x9] ll\n"
	"\t*(u32 *)(r1 + 0x0) = 0x77\n"
	"\tr1 = map_value[m]+0x4 ll\n"
	"\t*(u32 *)(r1 + 0x8) = 0x88\n"
	"\tr1 = var[0x7] ll\n"
	"\tr0 = *(u64 *)(r1 + 0x0)\n"
	"\texit\n"
	"end\n"
	"result 0x807060504030201\n";

int main(void)
{
	struct isa_corpus corpus = { 0 };
	struct counts c = { 0 };
	struct gpuext_spirv_vk *vk = NULL;
	char err[512] = "";
	int r;

	spirv_val = GPUEXT_SPIRV_VAL[0] ? GPUEXT_SPIRV_VAL : "spirv-val";
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "'%s' --version >/dev/null 2>&1", spirv_val);
		if (system(cmd) != 0) {
			printf("spirv-val (%s) is missing: install spirv-tools\n", spirv_val);
			CHECK(!"spirv-val present");
			return test_done("codegen_spirv");
		}
	}
	/* Not closed: pinned for LeakSanitizer (see __lsan_default_options). */
	(void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
	{
		GPUEXT_OPTS(gpuext_spirv_vk_opts, vo);

		r = gpuext_spirv_vk__open(&vo, &vk);
		if (r) {
			printf("no Vulkan device (%d)%s\n", r,
			       getenv("GPUEXT_TEST_NO_VULKAN") ? ": runs skipped" : "");
			if (!getenv("GPUEXT_TEST_NO_VULKAN"))
				CHECK(!"a Vulkan device (lavapipe: mesa-vulkan-drivers)");
		} else {
			printf("Vulkan device: %s\n", gpuext_spirv_vk__device_name(vk));
		}
	}

	r = isa_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/isa", err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	for (size_t i = 0; !r && i < corpus.cnt; i++)
		run_case(&corpus.cases[i], vk, &c);
	isa_corpus_free(&corpus);
	{
		struct isa_corpus extra = { 0 };
		struct counts ce = { 0 };

		r = isa_corpus_parse(&extra, extra_cases, "spirv_maps", err, sizeof(err));
		if (r)
			printf("in-test cases do not parse: %s\n", err);
		CHECK_EQ_INT(r, 0);
		for (size_t i = 0; i < extra.cnt; i++)
			run_case(&extra.cases[i], vk, &ce);
		printf("device maps (in-test cases): %u cases, %u rejected by the verifier, %u ran, "
		       "%u agree, %u differ, %u can't run\n", ce.cases, ce.skip_rejected, ce.vk_ran,
		       ce.vk_agree, ce.vk_differ, ce.vk_cant);
		if (ce.skip_rejected)
			printf("%s\n", tlog.buf);
		CHECK(ce.cases == 4 && ce.kernel_ok == ce.cases);
		CHECK(!vk || ce.vk_agree == ce.cases);
		isa_corpus_free(&extra);
	}

	printf("\nISA corpus: %u cases; %u expect an error, %u rejected by the verifier\n", c.cases,
	       c.skip_error, c.skip_rejected);
	printf("  Kernel flavour, verified cases: %u valid, %u rejected by spirv-val, %u not emitted\n",
	       c.kernel_ok, c.kernel_bad, c.kernel_emit_fail);
	printf("  Kernel flavour, every valid encoding (verified or not, error-expecting included): "
	       "%u programs, %u lowered and valid, %u not; %u cases are not valid encodings\n",
	       c.enc_valid, c.all_ok, c.all_bad, c.enc_invalid);
	printf("  Vulkan flavour: %u emitted, %u valid, %u invalid; %u ran, %u agree, %u differ; "
	       "%u can't run\n",
	       c.vk_emitted, c.vk_valid, c.vk_invalid, c.vk_ran, c.vk_agree, c.vk_differ, c.vk_cant);
	for (size_t i = 0; i < reason_cnt; i++)
		printf("    %3u x %s (e.g. %s)\n", reasons[i].cnt, reasons[i].text, reasons[i].first);
	CHECK(c.kernel_ok > 0);
	CHECK(!vk || c.vk_agree > 0);

	policies();
	bad_input(vk);
	gpuext_spirv_vk__close(vk);
	return test_done("codegen_spirv");
}
