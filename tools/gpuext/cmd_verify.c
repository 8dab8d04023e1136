/* SPDX-License-Identifier: Apache-2.0 */
/* gpuext verify: run the verifier on every program of an object (or raw bytecode). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuext/policy.h"
#include "gpuext/verifier.h"
#include "internal.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: gpuext verify OBJ.bpf.o [--prog NAME] [--type TYPE] [--log=0|1|2]\n"
		"       gpuext verify --hex 'b7 00 00 00 00 00 00 00 95 00 ...' [--type TYPE]\n"
		"\n"
		"Verifies each program as the Linux verifier would (register types, scalar ranges,\n"
		"stack, null checks, bounds, helper signatures, references, bounded loops, call\n"
		"depth, return range) plus SIMT rules for device probes, and prints accept/reject\n"
		"with statistics. A rejection names the rule, the instruction and its register\n"
		"state, and gives a hint. Exit status: 0 if all accepted, 1 if any was rejected.\n"
		"\n"
		"options:\n"
		"  --prog NAME     only this program\n"
		"  --type TYPE     host (default for raw bytecode), socket_filter, mem_ops,\n"
		"                  sched_ops, device_probe; for objects the default comes from the\n"
		"                  section: a gpu_mem_ops/gpu_sched_ops member -> that hook,\n"
		"                  socket* -> socket_filter,\n"
		"                  probe/* -> device_probe, anything else -> host\n"
		"  --ctx-size N    host programs: bytes of the buffer in r1 (default 0)\n"
		"  --log=N         0: the rejection only; 1: + every instruction walked;\n"
		"                  2: + the register state at each\n"
		"  --budget N      processed-instruction budget (default 1000000)\n"
		"\n"
		"example:\n"
		"  gpuext verify build/tests/bpf/verifier_ok.bpf.o\n"
		"  gpuext verify --hex '79 10 00 00 00 00 00 00 95 00 00 00 00 00 00 00' --log=1\n");
}

static int type_for_section(const char *sec)
{
	if (!strncmp(sec, "struct_ops", 10))
		return GPUEXT_PROG_MEM_OPS;
	if (!strncmp(sec, "socket", 6))
		return GPUEXT_PROG_SOCKET_FILTER;
	if (!strncmp(sec, "probe", 5))
		return GPUEXT_PROG_DEVICE_PROBE;
	return GPUEXT_PROG_HOST;
}

/* A program filling a gpu_mem_ops/gpu_sched_ops member is verified as that hook. */
static const struct gpuext_prog_type_desc *hook_of(const struct gpuext_object *obj,
						   const struct gpuext_prog *prog)
{
	for (size_t i = 0; i < gpuext_object__struct_ops_cnt(obj); i++) {
		const struct gpuext_struct_ops *so = gpuext_object__struct_ops(obj, i);

		for (size_t m = 0; m < so->member_cnt; m++)
			if (so->members[m].prog == prog)
				return gpuext_hook_desc(so->type_name, so->members[m].member);
	}
	return NULL;
}

static int verify_one(struct gpuext_prog *prog, int type, const struct gpuext_prog_type_desc *desc,
		      int log_level, uint32_t ctx_size, uint64_t budget)
{
	size_t log_size = 1 << 22;
	char *log = malloc(log_size);
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = (enum gpuext_prog_type)type,
		    .log_level = (uint32_t)log_level, .log_buf = log, .log_size = log_size,
		    .ctx_size = ctx_size, .insn_budget = budget, .type_desc = desc);
	struct gpuext_verify_result res = { .sz = sizeof(res) };
	int err;

	if (!log)
		return -ENOMEM;
	log[0] = '\0';
	err = gpuext_prog__verify(prog, &vo, &res);
	if (err && err != -EACCES) {
		fprintf(stderr, "gpuext verify: '%s': internal error: %s\n", gpuext_prog__name(prog),
			strerror(-err));
		free(log);
		return err;
	}
	if (log_level || !res.accepted)
		fputs(log, stdout);
	printf("%-24s %-14s %-9s insns=%zu processed=%llu states=%u peak=%u pruned=%u "
	       "stack=%u time=%.1fus",
	       gpuext_prog__name(prog), desc ? desc->name : gpuext_prog_type_name((enum gpuext_prog_type)type),
	       res.accepted ? "ACCEPT" : "REJECT", gpuext_prog__insn_cnt(prog),
	       (unsigned long long)res.insns_processed, res.states, res.peak_states, res.pruned,
	       res.stack_depth, res.time_ns / 1e3);
	if (!res.accepted)
		printf(" rule=%s insn=%u", gpuext_rule_name(res.rule), res.insn_idx);
	printf("\n");
	free(log);
	return res.accepted ? 0 : 1;
}

int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prog", required_argument, NULL, 'p' },
		{ "type", required_argument, NULL, 't' },
		{ "log", required_argument, NULL, 'l' },
		{ "hex", required_argument, NULL, 'x' },
		{ "ctx-size", required_argument, NULL, 'c' },
		{ "budget", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog_name = NULL, *hex = NULL;
	int type = -1, log_level = 0, c, ret = 0, err;
	unsigned long long ctx_size = 0, budget = 0;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	struct gpuext_prog *raw = NULL;
	uint8_t *code = NULL;
	size_t code_len;
	char why[160];

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': prog_name = optarg; break;
		case 't':
			type = gpuext_prog_type_by_name(optarg);
			if (type < 0) {
				fprintf(stderr, "gpuext verify: unknown --type '%s' (host, socket_filter, "
						"mem_ops, sched_ops, device_probe)\n", optarg);
				return 2;
			}
			break;
		case 'l': log_level = atoi(optarg); break;
		case 'x': hex = optarg; break;
		case 'c': ctx_size = strtoull(optarg, NULL, 0); break;
		case 'b': budget = strtoull(optarg, NULL, 0); break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (!!hex + (optind < argc) != 1) {
		fprintf(stderr, "gpuext verify: give an object file or --hex\n\n");
		help(stderr);
		return 2;
	}
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print);
	if ((err = gpuext_runtime__new(&ro, &rt))) {
		fprintf(stderr, "gpuext verify: cannot create runtime: %s\n", strerror(-err));
		return 1;
	}
	if (hex) {
		if (gpuext_parse_hex(hex, &code, &code_len, why, sizeof(why)) || code_len % 8) {
			fprintf(stderr, "gpuext verify: bytecode: %s\n",
				code_len % 8 ? "not a multiple of 8 bytes" : why);
			ret = 1;
			goto out;
		}
		if (gpuext_prog__new(rt, "hex", (struct bpf_insn *)code, code_len / 8, NULL, 0, &raw)) {
			ret = 1;
			goto out;
		}
		ret = verify_one(raw, type < 0 ? GPUEXT_PROG_HOST : type, NULL, log_level,
				 (uint32_t)ctx_size, budget) ? 1 : 0;
		goto out;
	}
	if ((err = gpuext_object__open_file(rt, argv[optind], NULL, &obj))) {
		fprintf(stderr, "gpuext verify: cannot open '%s': %s\n", argv[optind], strerror(-err));
		ret = 1;
		goto out;
	}
	bool any = false;

	for (size_t i = 0; i < gpuext_object__prog_cnt(obj); i++) {
		struct gpuext_prog *p = gpuext_object__prog(obj, i);

		if (prog_name && strcmp(prog_name, gpuext_prog__name(p)))
			continue;
		any = true;
		if (verify_one(p, type < 0 ? type_for_section(gpuext_prog__section(p)) : type,
			       type < 0 ? hook_of(obj, p) : NULL, log_level, (uint32_t)ctx_size, budget))
			ret = 1;
	}
	if (!any) {
		fprintf(stderr, "gpuext verify: no program%s%s in '%s'\n", prog_name ? " named " : "",
			prog_name ? prog_name : "", argv[optind]);
		ret = 1;
	}
out:
	gpuext_prog__free(raw);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	free(code);
	return ret;
}
