/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext disasm: print the programs of a BPF object the way llvm-objdump -d
 * does, but after gpuext's loader has linked them: subprograms appended,
 * calls resolved, and map references naming the map.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: gpuext disasm OBJ.bpf.o [--prog NAME] [--raw]\n"
		"\n"
		"Opens a BPF ELF object with gpuext's loader (maps created, relocations\n"
		"resolved, subprograms linked in) and prints each program in llvm-objdump's\n"
		"BPF syntax: a header with the program's name, ELF section and instruction\n"
		"count, a <function>: label where each function starts, then one line per\n"
		"instruction: its index, optionally its raw bytes, and its text. Jumps and\n"
		"local calls show their target as <function+byte offset>; ld_imm64 map\n"
		"references name the map (map[NAME] is the program's map NAME, map_value[NAME]+OFF\n"
		"an address inside its value; map_fd[NAME]/map_value_fd[NAME] the same by\n"
		"runtime map id); helper calls carry the helper's name as a '; comment'.\n"
		"\n"
		"The text is what the gpuext assembler (core/asm.c) reads, so a listing can be\n"
		"edited and assembled back.\n"
		"\n"
		"options:\n"
		"  --prog NAME   only this program (default: all of them)\n"
		"  --raw         also print each instruction's 8 bytes in hex\n"
		"  -h, --help    this text\n"
		"\n"
		"example:\n"
		"  $ gpuext disasm build/tests/bpf/disasm_mem.bpf.o --prog mem_c\n"
		"  Program mem_c (section socket, 33 instructions):\n"
		"\n"
		"  <mem_c>:\n"
		"           0:\tr6 = r1\n"
		"           1:\tw1 = *(u8 *)(r6 + 0x0)\n"
		"  ...\n"
		"          15:\tr1 = map[counters] ll\n"
		"          17:\tcall 0x1 ; bpf_map_lookup_elem\n"
		"          18:\tif r0 == 0x0 goto +0x4 <mem_c+0xb8>\n"
		"  ...\n");
}

/* Index of the function containing instruction @idx (funcs sorted by start). */
static size_t func_of(const struct gpuext_prog *prog, size_t idx)
{
	size_t f = 0;

	for (size_t k = 0; k < gpuext_prog__func_cnt(prog); k++)
		if (gpuext_prog__func_start(prog, k) <= idx)
			f = k;
	return f;
}

/* llvm-objdump's " <func+0x18>" for a jump or local call target. */
static void print_target(const struct gpuext_prog *prog, const struct bpf_insn *in, size_t idx)
{
	int64_t t = isa_jump_target(in, idx);
	size_t f;
	uint32_t start;

	if (t < 0 || (uint64_t)t >= gpuext_prog__insn_cnt(prog) || !gpuext_prog__func_cnt(prog))
		return;
	f = func_of(prog, (size_t)t);
	start = gpuext_prog__func_start(prog, f);
	if ((uint64_t)t == start)
		printf(" <%s>", gpuext_prog__func_name(prog, f));
	else
		printf(" <%s+0x%" PRIx64 ">", gpuext_prog__func_name(prog, f),
		       (uint64_t)(t - start) * 8);
}

static void print_raw(const struct bpf_insn *in)
{
	const uint8_t *b = (const uint8_t *)in;

	for (int k = 0; k < 8; k++)
		printf("%02x ", b[k]);
	printf("\t");
}

static void disasm_prog(const struct gpuext_prog *prog, bool raw)
{
	const struct bpf_insn *insns = gpuext_prog__insns(prog);
	size_t cnt = gpuext_prog__insn_cnt(prog), next_func = 0;
	const char *sec = gpuext_prog__section(prog);

	printf("Program %s (section %s, %zu instruction%s):\n", gpuext_prog__name(prog),
	       sec && *sec ? sec : "-", cnt, cnt == 1 ? "" : "s");
	for (size_t idx = 0; idx < cnt;) {
		char text[256];
		int n;

		while (next_func < gpuext_prog__func_cnt(prog) &&
		       gpuext_prog__func_start(prog, next_func) <= idx) {
			if (gpuext_prog__func_start(prog, next_func) == idx)
				printf("\n<%s>:\n", gpuext_prog__func_name(prog, next_func));
			next_func++;
		}
		n = gpuext_disasm_insn(prog, insns, cnt, idx, text, sizeof(text));
		printf("%10zu:\t", idx);
		if (raw)
			print_raw(&insns[idx]);
		printf("%s", text);
		if (n > 0) {
			uint8_t cls = isa_class(insns[idx].code), op = isa_op(insns[idx].code);
			bool jump = (cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_EXIT &&
				    op != BPF_CALL;
			bool local_call = cls == BPF_JMP && op == BPF_CALL && !isa_src_bit(insns[idx].code) &&
					  insns[idx].src_reg == BPF_PSEUDO_CALL;

			if (jump || (local_call && !strstr(text, " ; ")))
				print_target(prog, &insns[idx], idx);
		}
		printf("\n");
		if (n == 2 && raw) {
			printf("%10zu:\t", idx + 1);
			print_raw(&insns[idx + 1]);
			printf("\n");
		}
		idx += n > 0 ? (size_t)n : 1;
	}
}

int cmd_disasm(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "prog", required_argument, NULL, 'p' },
		{ "raw", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	const char *path, *only = NULL;
	bool raw = false;
	int c, err, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:rh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			only = optarg;
			break;
		case 'r':
			raw = true;
			break;
		case 'h':
			help(stdout);
			return 0;
		default:
			help(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "gpuext disasm: %s\n\n",
			optind >= argc ? "which object? give the path of a .bpf.o file"
				       : "give exactly one object file");
		help(stderr);
		return 2;
	}
	path = argv[optind];
	err = gpuext_runtime__new(&ro, &rt);
	if (err) {
		fprintf(stderr, "gpuext disasm: cannot create a runtime: %s\n", strerror(-err));
		return 1;
	}
	err = gpuext_object__open_file(rt, path, NULL, &obj);
	if (err) {
		fprintf(stderr, "gpuext disasm: could not load '%s' (%s); the message above says why\n",
			path, strerror(-err));
		goto out;
	}
	if (only) {
		struct gpuext_prog *p = gpuext_object__find_prog(obj, only);

		if (!p) {
			fprintf(stderr, "gpuext disasm: '%s' has no program named '%s'; it has:", path,
				only);
			for (size_t i = 0; i < gpuext_object__prog_cnt(obj); i++)
				fprintf(stderr, " %s", gpuext_prog__name(gpuext_object__prog(obj, i)));
			fprintf(stderr, "\n");
			goto out;
		}
		disasm_prog(p, raw);
	} else {
		for (size_t i = 0; i < gpuext_object__prog_cnt(obj); i++) {
			if (i)
				printf("\n");
			disasm_prog(gpuext_object__prog(obj, i), raw);
		}
	}
	ret = 0;
out:
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	return ret;
}
