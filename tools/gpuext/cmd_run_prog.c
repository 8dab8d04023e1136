/* SPDX-License-Identifier: Apache-2.0 */
/* gpuext run-prog: run one program on a memory buffer and print r0. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuext/verifier.h"
#include "host/jit.h"
#include "ptx/ptx.h"
#include "spirv/spirv.h"
#include "internal.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: gpuext run-prog OBJ.bpf.o [--prog NAME] [options]\n"
		"       gpuext run-prog --hex 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00' [options]\n"
		"       gpuext run-prog --hex-file FILE|- [options]\n"
		"\n"
		"Runs one eBPF program in the reference interpreter and prints r0. r1 points to\n"
		"the input memory and r2 holds its length; r10 is the top of a 512-byte stack.\n"
		"Every memory access is bounds-checked: a bad one stops the program with an\n"
		"error naming the instruction.\n"
		"\n"
		"options:\n"
		"  --prog NAME        program of OBJ to run (default: the only/first one)\n"
		"  --hex TEXT         raw bytecode as hex bytes (the conformance-plugin form)\n"
		"  --hex-file FILE    the same, read from FILE ('-' = stdin)\n"
		"  --mem HEX          input memory as hex bytes (default: none, r1 = 0)\n"
		"  --mem-size N       input memory of N zero bytes instead\n"
		"  --show-mem         print the input memory after the run (hex)\n"
		"  --cpu N            per-CPU map slot / bpf_get_smp_processor_id() value\n"
		"  --limit N          stop after N instructions (default 10000000; 0 = none)\n"
		"  --repeat N         run N times (maps keep their state), print the last r0\n"
		"  --backend NAME     executor: interp (default), spirv-vulkan (SPIR-V on a Vulkan\n"
		"                     device), ptx / ptx-warp (PTX on an NVIDIA GPU, one thread / the\n"
		"                     warp leader; both verified first), or jit (LLVM host JIT: the program\n"
		"                     must pass the verifier as a host program of --mem's size)\n"
		"\n"
		"examples:\n"
		"  gpuext run-prog --hex 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00'\n"
		"      r0 = 0x2a (42)\n"
		"  gpuext run-prog build/tests/bpf/hash_count.bpf.o --repeat 3 --backend ptx\n"
		"      r0 = 0x1f (31)    (a hash map kept across the 3 runs, here on the GPU)\n");
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 4096, n = 0;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap)
			break;
		char *b = realloc(buf, (cap *= 2) + 1);
		if (!b) {
			free(buf);
			buf = NULL;
		}
		buf = b;
	}
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

int cmd_run_prog(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prog", required_argument, NULL, 'p' },
		{ "hex", required_argument, NULL, 'x' },
		{ "hex-file", required_argument, NULL, 'X' },
		{ "mem", required_argument, NULL, 'm' },
		{ "mem-size", required_argument, NULL, 'M' },
		{ "show-mem", no_argument, NULL, 's' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "limit", required_argument, NULL, 'l' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "backend", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog_name = NULL, *hex = NULL, *hex_file = NULL, *mem_hex = NULL;
	const char *backend = "interp";
	char *hex_buf = NULL, why[160];
	unsigned long long mem_size = 0, limit = 10000000, repeat = 1, cpu = 0;
	bool show_mem = false;
	uint8_t *code = NULL, *mem = NULL;
	size_t code_len = 0, mem_len = 0;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	struct gpuext_prog *raw = NULL, *prog = NULL;
	struct gpuext_jit *jit = NULL;
	int c, ret = 1, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': prog_name = optarg; break;
		case 'x': hex = optarg; break;
		case 'X': hex_file = optarg; break;
		case 'm': mem_hex = optarg; break;
		case 'M': mem_size = strtoull(optarg, NULL, 0); break;
		case 's': show_mem = true; break;
		case 'c': cpu = strtoull(optarg, NULL, 0); break;
		case 'l': limit = strtoull(optarg, NULL, 0); break;
		case 'r': repeat = strtoull(optarg, NULL, 0); break;
		case 'b': backend = optarg; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (strcmp(backend, "interp") != 0 && strcmp(backend, "jit") != 0 &&
	    strcmp(backend, "spirv-vulkan") != 0 && strcmp(backend, "ptx") != 0 &&
	    strcmp(backend, "ptx-warp") != 0) {
		fprintf(stderr,
			"gpuext run-prog: backend '%s' is not available in this build; have 'interp' "
			"(the reference interpreter), 'jit' (LLVM host JIT), 'spirv-vulkan' (SPIR-V\n"
			"on a Vulkan device: lavapipe or a GPU), 'ptx' and 'ptx-warp' (an NVIDIA GPU).\n",
			backend);
		return 2;
	}
	if (!!hex + !!hex_file + (optind < argc) != 1) {
		fprintf(stderr, "gpuext run-prog: give exactly one of OBJ, --hex or --hex-file\n\n");
		help(stderr);
		return 2;
	}
	if (mem_hex && mem_size) {
		fprintf(stderr, "gpuext run-prog: --mem and --mem-size are exclusive\n");
		return 2;
	}
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print, .publish_maps = true,
		    .nr_cpu_slots = (uint32_t)(cpu + 1));
	err = gpuext_runtime__new(&ro, &rt);
	if (err) {
		fprintf(stderr, "gpuext run-prog: cannot create runtime: %s\n", strerror(-err));
		return 1;
	}
	if (hex_file) {
		size_t n;

		hex_buf = slurp(hex_file, &n);
		if (!hex_buf) {
			fprintf(stderr, "gpuext run-prog: cannot read '%s': %m\n", hex_file);
			goto out;
		}
		hex = hex_buf;
	}
	if (hex) {
		if (gpuext_parse_hex(hex, &code, &code_len, why, sizeof(why))) {
			fprintf(stderr, "gpuext run-prog: bytecode: %s\n", why);
			goto out;
		}
		if (code_len % 8) {
			fprintf(stderr, "gpuext run-prog: bytecode is %zu bytes, not a multiple of 8\n",
				code_len);
			goto out;
		}
		err = gpuext_prog__new(rt, "hex", (const struct bpf_insn *)code, code_len / 8,
				       NULL, 0, &raw);
		if (err)
			goto out; /* the runtime logged why */
		prog = raw;
	} else {
		err = gpuext_object__open_file(rt, argv[optind], NULL, &obj);
		if (err) {
			fprintf(stderr, "gpuext run-prog: cannot open '%s': %s\n", argv[optind],
				strerror(-err));
			goto out;
		}
		if (prog_name) {
			prog = gpuext_object__find_prog(obj, prog_name);
			if (!prog) {
				fprintf(stderr, "gpuext run-prog: '%s' has no program '%s'; it has:",
					argv[optind], prog_name);
				for (size_t i = 0; i < gpuext_object__prog_cnt(obj); i++)
					fprintf(stderr, " %s",
						gpuext_prog__name(gpuext_object__prog(obj, i)));
				fprintf(stderr, "\n");
				goto out;
			}
		} else if (gpuext_object__prog_cnt(obj) == 0) {
			fprintf(stderr, "gpuext run-prog: '%s' has no programs\n", argv[optind]);
			goto out;
		} else {
			prog = gpuext_object__prog(obj, 0);
		}
	}
	if (mem_hex) {
		if (gpuext_parse_hex(mem_hex, &mem, &mem_len, why, sizeof(why))) {
			fprintf(stderr, "gpuext run-prog: --mem: %s\n", why);
			goto out;
		}
	} else if (mem_size) {
		mem = calloc(1, mem_size);
		mem_len = mem_size;
		if (!mem)
			goto out;
	}
	if (!strcmp(backend, "jit")) {
		GPUEXT_OPTS(gpuext_jit_opts, jo, .ctx_size = (uint32_t)mem_len);

		err = gpuext_jit__new(prog, &jo, &jit);
		if (err) {
			if (err == -EACCES)
				fprintf(stderr, "gpuext run-prog: '%s' does not pass the verifier as a host "
					"program with a %zu-byte context, and JIT code runs unchecked: not "
					"run (--backend interp runs it with every access checked)\n",
					gpuext_prog__name(prog), mem_len);
			else
				fprintf(stderr, "gpuext run-prog: cannot JIT-compile '%s': %s\n",
					gpuext_prog__name(prog), strerror(-err));
			goto out;
		}
	}
	if (!strcmp(backend, "spirv-vulkan") || !strncmp(backend, "ptx", 3)) {
		/* device code runs unchecked: only what the verifier accepts */
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST, .ctx_size = (uint32_t)mem_len);
		uint64_t r0 = 0;

		err = gpuext_prog__verify(prog, &vo, NULL);
		if (err) {
			fprintf(stderr, "gpuext run-prog: '%s' does not pass the verifier as a host program "
					"with a %zu-byte context, and device code runs unchecked: not run\n",
				gpuext_prog__name(prog), mem_len);
			goto out;
		}
		/* --repeat as on the host: each run starts from the maps the one before left */
		for (unsigned long long i = 0; i < (repeat ? repeat : 1); i++) {
			if (!strcmp(backend, "spirv-vulkan"))
				err = gpuext_spirv_vk_run(prog, mem, mem_len, &r0);
			else
				err = gpuext_ptx_run(prog, mem, mem_len,
						     strcmp(backend, "ptx-warp") != 0, &r0);
			if (err) {
				fprintf(stderr, "gpuext run-prog: '%s' did not run on the %s backend "
						"(run %llu of %llu): %s (the log above says why)\n",
					gpuext_prog__name(prog), backend, i + 1, repeat ? repeat : 1,
					strerror(-err));
				goto out;
			}
		}
		printf("r0 = 0x%llx (%lld)\n", (unsigned long long)r0, (long long)r0);
		goto shown;
	}
	for (unsigned long long i = 0; i < (repeat ? repeat : 1); i++) {
		GPUEXT_OPTS(gpuext_run_opts, run, .ctx = mem, .ctx_len = mem_len, .ctx_writable = true,
			    .cpu = (uint32_t)cpu, .insn_limit = limit);
		uint64_t r0 = 0;

		err = jit ? gpuext_jit__run(jit, &run, &r0) : gpuext_prog__run(prog, &run, &r0);
		if (err) {
			fprintf(stderr, "gpuext run-prog: '%s' failed after %llu instructions: %s\n",
				gpuext_prog__name(prog), (unsigned long long)run.insn_executed,
				strerror(-err));
			goto out;
		}
		if (i + 1 == (repeat ? repeat : 1)) {
			printf("r0 = 0x%llx (%lld)\n", (unsigned long long)r0, (long long)r0);
			if (cli_verbosity)
				printf("instructions executed: %llu\n",
				       (unsigned long long)run.insn_executed);
		}
	}
shown:
	if (show_mem) {
		printf("mem =");
		for (size_t i = 0; i < mem_len; i++)
			printf(" %02x", mem[i]);
		printf("\n");
	}
	ret = 0;
out:
	gpuext_jit__free(jit);
	gpuext_prog__free(raw);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	free(hex_buf);
	free(code);
	free(mem);
	return ret;
}
