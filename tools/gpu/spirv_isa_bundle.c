/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spirv_isa_bundle: writes the ISA corpus as Vulkan-flavour SPIR-V, with the
 * reference interpreter's results, for tools/gpu/spirv_bundle_run.c on a
 * machine that cannot build gpuext (no LLVM 22, libbpf, clang-22) but has a
 * Vulkan driver.
 *
 * Selection is test_codegen_spirv's: every case of tests/isa/\*.isa that
 * expects success and that the verifier accepts as a host program
 * (ctx_size = the input length). Each is emitted in the Vulkan flavour
 * (codegen/spirv/spirv.h); a case that cannot be emitted exactly (maps
 * other than arrays, helpers without a device meaning) is listed as "skip"
 * with the reason. When spirv-val is on PATH (or $GPUEXT_SPIRV_VAL) every
 * module is validated for vulkan1.3 first; an invalid one fails the bundle.
 *
 *   spirv_isa_bundle OUT_DIR [--isa-dir DIR] [--case SUBSTR]
 *
 * OUT_DIR/manifest.txt (text, one record per case):
 *
 *   gpuext-spirv-bundle 1
 *   abi entry=main local=1,1,1 push=mem,mem_len,stack,r0_out header=64 mem_align=64
 *       stack=65536 stack_align=16 data=after_stack       (one line)
 *   case FAMILY NAME
 *   spv spv/FAMILY.NAME.spv BYTES
 *   input LEN HEX|-
 *   expect_r0 HEX
 *   expect_mem HEX                                       (when LEN > 0)
 *   data DLEN HEX                                        (when DLEN > 0)
 *   expect_data HEX                                      (when DLEN > 0)
 *   end
 *   skip FAMILY NAME KIND REASON...                      (KIND: error | verifier | emit | inexact | interp)
 *
 * The abi line is the dispatch ABI of codegen/spirv/spirv_vk.c: one
 * host-visible buffer [r0 slot | header padding | memory rounded up to
 * mem_align | stack bytes | data area], its device addresses in a push-constant
 * block of u64 fields in the listed order (mem = 0 when LEN = 0), one
 * workgroup of one invocation of the entry point. The data area (device maps
 * and variables, spirv.h: gpuext_spirv_vk_data_layout) starts right after the
 * stacks; "data" is its content before the run, "expect_data" what the
 * interpreter left in the maps and variables.
 *
 * Exit status: 0 written, 1 some module failed to emit or validate, 3 bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asm.h"
#include "gpuext/gpuext.h"
#include "gpuext/verifier.h"
#include "spirv/spirv.h"

#ifndef GPUEXT_ISA_DIR
#define GPUEXT_ISA_DIR "tests/isa"
#endif

/* Must match codegen/spirv/spirv_vk.c (HDR_BYTES, the 64-byte rounding). */
#define VK_HEADER 64u
#define VK_MEM_ALIGN 64u

struct family {
	char name[64];
	unsigned cases, skipped, cant, written, failed;
};

static struct family fams[64];
static size_t fam_cnt;
static const char *spirv_val;
static char logbuf[4096];

static struct family *family(const char *name)
{
	for (size_t i = 0; i < fam_cnt; i++)
		if (!strcmp(fams[i].name, name))
			return &fams[i];
	if (fam_cnt == sizeof(fams) / sizeof(fams[0]))
		return &fams[fam_cnt - 1];
	snprintf(fams[fam_cnt].name, sizeof(fams[0].name), "%s", name);
	return &fams[fam_cnt++];
}

static void log_print(enum gpuext_log_level level, const char *msg, void *user)
{
	size_t n = strlen(logbuf);

	(void)level;
	(void)user;
	snprintf(logbuf + n, sizeof(logbuf) - n, "%s%s", n ? " | " : "", msg);
}

static void hex_out(FILE *f, const uint8_t *b, size_t n)
{
	if (!n) {
		fputc('-', f);
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
}

/* One line, no newlines (the reason goes into the manifest). */
static void flatten(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r' || *s == '\t')
			*s = ' ';
}

/* spirv-val --target-env vulkan1.3 @path; true when it accepts (or is absent). */
static bool validate(const char *path, char *out, size_t out_len)
{
	char cmd[4200];
	size_t got = 0;
	FILE *p;
	int st;

	out[0] = '\0';
	if (!spirv_val)
		return true;
	snprintf(cmd, sizeof(cmd), "'%s' --target-env vulkan1.3 '%s' 2>&1", spirv_val, path);
	p = popen(cmd, "r");
	if (!p) {
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
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static struct gpuext_runtime *new_rt(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = log_print, .prandom_seed = 1);
	struct gpuext_runtime *rt = NULL;

	logbuf[0] = '\0';
	return gpuext_runtime__new(&ro, &rt) ? NULL : rt;
}

/* Returns false when the case should have been written but was not. */
static bool one_case(FILE *man, const char *dir, const struct isa_case *tc)
{
	struct family *f = family(tc->family);
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_prog *prog = NULL;
	struct isa_case_env env;
	bool env_ok = false, ok = true;
	char why[1024] = "", inexact[512] = "", rel[512], path[2048], val[2048];
	uint8_t *input = NULL;
	void *bin = NULL, *data = NULL, *want_data = NULL;
	size_t len = 0, data_len = 0, want_data_len = 0;
	uint64_t r0 = 0;
	int e;

	f->cases++;
	if (tc->error || tc->error_any) {
		f->skipped++;
		fprintf(man, "skip %s %s error the case expects an error\n", tc->family, tc->name);
		goto out;
	}
	if (!rt || isa_case_env_init(&env, rt, tc, why, sizeof(why))) {
		fprintf(stderr, "%s/%s: cannot set up: %s\n", tc->family, tc->name, why);
		f->failed++;
		ok = false;
		goto out;
	}
	env_ok = true;
	if (gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps, env.map_cnt, &prog)) {
		fprintf(stderr, "%s/%s: gpuext_prog__new failed: %s\n", tc->family, tc->name, logbuf);
		f->failed++;
		ok = false;
		goto out;
	}
	{
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST,
			    .ctx_size = (uint32_t)env.mem_len);
		GPUEXT_OPTS(gpuext_verify_result, vr);

		if (gpuext_prog__verify(prog, &vo, &vr)) {
			f->skipped++;
			fprintf(man, "skip %s %s verifier rejected as a host program\n", tc->family,
				tc->name);
			goto out;
		}
	}
	{
		GPUEXT_OPTS(gpuext_spirv_emit_opts, eo, .vulkan = true, .err = why,
			    .err_len = sizeof(why), .inexact = inexact,
			    .inexact_len = sizeof(inexact));

		e = gpuext_spirv_emit_opts(prog, &eo, &bin, &len);
	}
	if (e || inexact[0]) {
		f->cant++;
		flatten(e ? why : inexact);
		fprintf(man, "skip %s %s %s %s\n", tc->family, tc->name, e ? "emit" : "inexact",
			e ? why : inexact);
		goto out;
	}
	/* The interpreter, on a copy: the input stays for the manifest. */
	input = malloc(env.mem_len ? env.mem_len : 1);
	if (!input) {
		ok = false;
		goto out;
	}
	memcpy(input, env.mem, env.mem_len);
	/* Maps and variables before the run (the data area the runner fills in). */
	e = gpuext_spirv_vk_data_save(prog, &data, &data_len);
	if (e) {
		f->cant++;
		fprintf(man, "skip %s %s interp cannot read the maps and variables (%d)\n",
			tc->family, tc->name, e);
		goto out;
	}
	{
		GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = env.mem_len ? env.mem : NULL,
			    .ctx_len = env.mem_len, .ctx_writable = true, .insn_limit = 10000000);

		e = gpuext_prog__run(prog, &ro, &r0);
	}
	if (e) {
		f->cant++;
		fprintf(man, "skip %s %s interp the interpreter fails (%d)\n", tc->family, tc->name,
			e);
		goto out;
	}
	e = gpuext_spirv_vk_data_save(prog, &want_data, &want_data_len);
	if (e || want_data_len != data_len) {
		f->cant++;
		fprintf(man, "skip %s %s interp cannot read the maps and variables (%d)\n",
			tc->family, tc->name, e);
		goto out;
	}
	snprintf(rel, sizeof(rel), "spv/%s.%s.spv", tc->family, tc->name);
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	{
		FILE *o = fopen(path, "wb");

		if (!o || fwrite(bin, 1, len, o) != len || fclose(o)) {
			fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
			f->failed++;
			ok = false;
			goto out;
		}
	}
	if (!validate(path, val, sizeof(val))) {
		fprintf(stderr, "%s/%s: spirv-val rejects %s: %.600s\n", tc->family, tc->name, path,
			val);
		f->failed++;
		ok = false;
		goto out;
	}
	fprintf(man, "case %s %s\nspv %s %zu\ninput %zu ", tc->family, tc->name, rel, len,
		env.mem_len);
	hex_out(man, input, env.mem_len);
	fprintf(man, "\nexpect_r0 %" PRIx64 "\n", r0);
	if (env.mem_len) {
		fputs("expect_mem ", man);
		hex_out(man, env.mem, env.mem_len);
		fputc('\n', man);
	}
	if (data_len) {
		fprintf(man, "data %zu ", data_len);
		hex_out(man, data, data_len);
		fputs("\nexpect_data ", man);
		hex_out(man, want_data, want_data_len);
		fputc('\n', man);
	}
	fputs("end\n", man);
	f->written++;
out:
	free(input);
	free(data);
	free(want_data);
	free(bin);
	gpuext_prog__free(prog);
	if (env_ok)
		isa_case_env_fini(&env);
	gpuext_runtime__free(rt);
	return ok;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *isa_dir = GPUEXT_ISA_DIR, *filter = NULL;
	struct isa_corpus corpus = { 0 };
	unsigned tot[5] = { 0 }, bad = 0;
	char path[2048], err[1024];
	FILE *man;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--isa-dir") && i + 1 < argc)
			isa_dir = argv[++i];
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			filter = argv[++i];
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else
			dir = NULL, i = argc;
	}
	if (!dir) {
		fprintf(stderr, "usage: %s OUT_DIR [--isa-dir DIR] [--case SUBSTR]\n"
			"writes Vulkan-flavour SPIR-V of the ISA corpus + the interpreter's results\n"
			"for tools/gpu/spirv_bundle_run (docs/spirv.md)\n", argv[0]);
		return 3;
	}
	spirv_val = getenv("GPUEXT_SPIRV_VAL");
	if (!spirv_val || !*spirv_val)
		spirv_val = system("spirv-val --version >/dev/null 2>&1") == 0 ? "spirv-val" : NULL;
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/spv", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	man = fopen(path, "w");
	if (!man) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		return 3;
	}
	if (isa_corpus_load_dir(&corpus, isa_dir, err, sizeof(err))) {
		fprintf(stderr, "cannot load the ISA corpus from %s: %s\n", isa_dir, err);
		fclose(man);
		return 3;
	}
	fprintf(man, "gpuext-spirv-bundle 1\n# written by spirv_isa_bundle; run with "
		"tools/gpu/spirv_bundle_run (docs/spirv.md)\n");
	fprintf(man, "abi entry=%s local=1,1,1 push=mem,mem_len,stack,r0_out header=%u "
		"mem_align=%u stack=%u stack_align=16 data=after_stack\n", GPUEXT_SPIRV_VK_ENTRY_NAME, VK_HEADER,
		VK_MEM_ALIGN, GPUEXT_SPIRV_VK_STACK_MAX);
	_Static_assert(sizeof(struct gpuext_spirv_vk_args) == 32, "push block is 4 u64");
	printf("corpus: %zu cases from %s; spirv-val: %s\n", corpus.cnt, isa_dir,
	       spirv_val ? spirv_val : "not found (modules not validated)");
	for (size_t i = 0; i < corpus.cnt; i++) {
		const struct isa_case *tc = &corpus.cases[i];

		if (filter && !strstr(tc->name, filter))
			continue;
		bad += !one_case(man, dir, tc);
	}
	printf("\n%-10s %6s %8s %9s %8s %7s\n", "family", "cases", "skipped", "can't-run", "written",
	       "failed");
	for (size_t i = 0; i < fam_cnt; i++) {
		const struct family *f = &fams[i];

		printf("%-10s %6u %8u %9u %8u %7u\n", f->name, f->cases, f->skipped, f->cant,
		       f->written, f->failed);
		tot[0] += f->cases;
		tot[1] += f->skipped;
		tot[2] += f->cant;
		tot[3] += f->written;
		tot[4] += f->failed;
	}
	printf("%-10s %6u %8u %9u %8u %7u\n", "total", tot[0], tot[1], tot[2], tot[3], tot[4]);
	printf("skipped = expects an error, or the verifier rejects it (host type, ctx = input);\n"
	       "can't-run = no exact Vulkan module (non-array maps, helpers): \"skip\" lines say why\n");
	if (fclose(man)) {
		fprintf(stderr, "writing the manifest failed\n");
		bad++;
	}
	isa_corpus_free(&corpus);
	printf("bundle: %s (%u modules%s)\n", bad ? "INCOMPLETE" : "written", tot[3],
	       spirv_val ? ", each accepted by spirv-val --target-env vulkan1.3" : "");
	return bad ? 1 : 0;
}
