/* SPDX-License-Identifier: Apache-2.0 */
/* gpuext: the command-line front end. Each subcommand lives in cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "cli.h"

int cli_verbosity;

void cli_print(enum gpuext_log_level level, const char *msg, void *user)
{
	(void)user;
	if ((int)level > cli_verbosity)
		return;
	fprintf(stderr, "gpuext: %s\n", msg);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
} cmds[] = {
	{ "sim", cmd_sim, "policies vs the stock driver on the built-in simulator (the main job)" },
	{ "disasm", cmd_disasm, "print the programs of a BPF object like llvm-objdump -d" },
	{ "verify", cmd_verify, "verify programs: accept/reject with the rule, the log and statistics" },
	{ "run-prog", cmd_run_prog, "run one program in the reference interpreter, print r0" },
	{ "codegen", cmd_codegen, "compile one program to PTX, SPIR-V or host LLVM IR" },
	{ "trace", cmd_trace, "run a CUDA app with eBPF probes in its kernels, show what they see" },
	{ "maps", cmd_maps, "list or dump the maps of running gpuext processes" },
	{ "backends", cmd_backends, "what this machine has: simulator, NVIDIA, AMD, Intel" },
	{ "version", cmd_version, "print versions of gpuext and its libraries" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuext [-v] COMMAND [ARGS...]\n"
		"\n"
		"gpuext runs verified eBPF programs as GPU driver policies and GPU kernel probes,\n"
		"on NVIDIA, AMD, Intel and a built-in simulator.\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f,
		"\n"
		"Run 'gpuext COMMAND --help' for a command's options and examples.\n"
		"  -v, --verbose   more messages (repeat for debug output)\n");
}

int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: gpuext version\n\nPrints the gpuext version and the libbpf it was built with.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "gpuext version: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	printf("gpuext %s\n", GPUEXT_VERSION);
	printf("libbpf %u.%u (ELF/BTF parsing)\n", LIBBPF_MAJOR_VERSION, LIBBPF_MINOR_VERSION);
	printf("ISA: RFC 9669 base32 base64 atomic32 atomic64 divmul32 divmul64 + callx\n");
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			cli_verbosity++;
		} else if (!strcmp(argv[i], "-vv")) {
			cli_verbosity += 2;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			return cmd_version(1, argv);
		} else {
			fprintf(stderr, "gpuext: unknown option '%s'\n\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		if (!strcmp(argv[i], cmds[c].name))
			return cmds[c].fn(argc - i, argv + i);
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "gpuext: unknown command '%s'\n\n", argv[i]);
	usage(stderr);
	return 2;
}
