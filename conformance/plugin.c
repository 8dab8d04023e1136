/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext-conformance-plugin: the common eBPF conformance-plugin protocol, so
 * independent ISA suites can drive any gpuext executor.
 *
 *   gpuext-conformance-plugin [MEM-HEX] [--backend NAME] [--debug]
 *
 * The program arrives on stdin as one line of hex bytes. r1 points to a copy
 * of MEM-HEX (r2 = its length), r10 is the top of a 512-byte stack. On
 * success r0 is printed in hex on stdout and the exit status is 0; on any
 * failure the reason goes to stderr and the exit status is 1 (2 for usage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/verifier.h"
#include "host/jit.h"
#include "ptx/ptx.h"
#include "spirv/spirv.h"
#include "internal.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuext-conformance-plugin [MEM-HEX] [--backend interp|jit|spirv-vulkan|ptx|ptx-warp] [--debug]\n"
		"\n"
		"Reads one line of hex-encoded eBPF bytecode from stdin and runs it. MEM-HEX is\n"
		"the input memory (r1 = pointer to a copy, r2 = length). Prints r0 in hex.\n"
		"Backends: interp (reference interpreter), jit (LLVM host JIT; the program must\n"
		"pass the verifier as a host program with a MEM-HEX-sized context).\n"
		"example: echo 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00' | gpuext-conformance-plugin\n");
}

static bool debug;

static void print_cb(enum gpuext_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level == GPUEXT_LOG_WARN || debug)
		fprintf(stderr, "%s\n", msg);
}

static char *read_line(FILE *f)
{
	size_t cap = 0;
	char *line = NULL;
	ssize_t n = getline(&line, &cap, f);

	if (n < 0) {
		free(line);
		return NULL;
	}
	return line;
}

int main(int argc, char **argv)
{
	const char *mem_hex = NULL, *backend = "interp";
	struct gpuext_runtime *rt = NULL;
	struct gpuext_prog *prog = NULL;
	struct gpuext_jit *jit = NULL;
	uint8_t *code = NULL, *mem = NULL;
	size_t code_len = 0, mem_len = 0;
	char *line = NULL, why[160];
	uint64_t r0 = 0;
	int ret = 1, err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
			backend = argv[++i];
		} else if (!strncmp(argv[i], "--backend=", 10)) {
			backend = argv[i] + 10;
		} else if (!strcmp(argv[i], "--debug")) {
			debug = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			fprintf(stderr, "unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!mem_hex) {
			mem_hex = argv[i];
		} else {
			fprintf(stderr, "unexpected argument '%s' (memory was already given)\n", argv[i]);
			return 2;
		}
	}
	if (strcmp(backend, "interp") != 0 && strcmp(backend, "jit") != 0 &&
	    strcmp(backend, "spirv-vulkan") != 0 && strcmp(backend, "ptx") != 0 &&
	    strcmp(backend, "ptx-warp") != 0) {
		fprintf(stderr, "backend '%s' is not available in this build (have: interp, jit, "
				"spirv-vulkan, ptx, ptx-warp)\n", backend);
		return 1;
	}
	line = read_line(stdin);
	if (!line) {
		fprintf(stderr, "no program on stdin (expected one line of hex bytes)\n");
		goto out;
	}
	if (gpuext_parse_hex(line, &code, &code_len, why, sizeof(why))) {
		fprintf(stderr, "program: %s\n", why);
		goto out;
	}
	if (code_len == 0 || code_len % 8) {
		fprintf(stderr, "program is %zu bytes: must be a non-zero multiple of 8\n", code_len);
		goto out;
	}
	if (mem_hex && gpuext_parse_hex(mem_hex, &mem, &mem_len, why, sizeof(why))) {
		fprintf(stderr, "memory: %s\n", why);
		goto out;
	}
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = print_cb);
	err = gpuext_runtime__new(&ro, &rt);
	if (err) {
		fprintf(stderr, "cannot create runtime: %s\n", strerror(-err));
		goto out;
	}
	err = gpuext_prog__new(rt, "conformance", (const struct bpf_insn *)code, code_len / 8, NULL,
			       0, &prog);
	if (err)
		goto out; /* reason already printed */
	GPUEXT_OPTS(gpuext_run_opts, run, .ctx = mem_len ? mem : NULL, .ctx_len = mem_len,
		    .ctx_writable = true, .insn_limit = 100000000);
	if (!strcmp(backend, "jit")) {
		GPUEXT_OPTS(gpuext_jit_opts, jo, .ctx_size = (uint32_t)mem_len);

		err = gpuext_jit__new(prog, &jo, &jit);
		if (err)
			goto out; /* the log says why (a verifier rejection: which rule, where) */
	}
	if (!strcmp(backend, "spirv-vulkan") || !strncmp(backend, "ptx", 3)) {
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST, .ctx_size = (uint32_t)mem_len);

		err = gpuext_prog__verify(prog, &vo, NULL);
		if (!err && !strcmp(backend, "spirv-vulkan"))
			err = gpuext_spirv_vk_run(prog, mem_len ? mem : NULL, mem_len, &r0);
		else if (!err)
			err = gpuext_ptx_run(prog, mem_len ? mem : NULL, mem_len,
					     strcmp(backend, "ptx-warp") != 0, &r0);
	} else {
		err = jit ? gpuext_jit__run(jit, &run, &r0) : gpuext_prog__run(prog, &run, &r0);
	}
	if (err)
		goto out;
	printf("%llx\n", (unsigned long long)r0);
	ret = 0;
out:
	gpuext_jit__free(jit);
	gpuext_prog__free(prog);
	gpuext_runtime__free(rt);
	free(line);
	free(code);
	free(mem);
	return ret;
}
