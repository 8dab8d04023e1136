/* SPDX-License-Identifier: Apache-2.0 */
/* gpuext codegen: one program -> PTX text, a SPIR-V binary, or host LLVM IR. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h> /* codegen.h uses LLVMTargetMachineRef */

#include "cli.h"
#include "codegen.h"
#include "internal.h"
#include "ptx/ptx.h"
#include "spirv/spirv.h"
#include "target.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: gpuext codegen OBJ.bpf.o [--prog NAME] --target TARGET [options] [-o FILE]\n"
		"       gpuext codegen --hex 'b7 00 00 00 2a 00 00 00 95 00 ...' --target TARGET ...\n"
		"\n"
		"Lifts one eBPF program to LLVM IR, optimises it at O2 and emits code for TARGET:\n"
		"  ptx           PTX text (NVPTX; the test kernel gpuext_isa_entry around it)\n"
		"  spirv         SPIR-V binary, Kernel flavour (OpenCL / Level Zero)\n"
		"  spirv-vulkan  SPIR-V binary, Vulkan compute (buffer device address)\n"
		"  host          the optimised LLVM IR the host JIT compiles (text)\n"
		"Nothing is run, so nothing is verified here; `gpuext verify` checks the program\n"
		"and run-prog --backend jit runs it.\n"
		"\n"
		"options:\n"
		"  --prog NAME     program of OBJ (default: the first one)\n"
		"  --hex TEXT      raw bytecode as hex bytes\n"
		"  --sm SM         ptx: the GPU architecture (default sm_80)\n"
		"  --warp          ptx: warp mode (one lane per warp runs the program)\n"
		"  -o FILE         output ('-' = stdout, the default for text targets)\n"
		"\n"
		"examples:\n"
		"  gpuext codegen --hex 'b7 00 00 00 2a 00 00 00 95 00 00 00 00 00 00 00' --target host\n"
		"  gpuext codegen build/policies/lfu_stride.bpf.o --target ptx --sm sm_90 -o lfu.ptx\n");
}

static int write_out(const char *path, const void *buf, size_t len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
	int err = 0;

	if (!f) {
		fprintf(stderr, "gpuext codegen: cannot create '%s': %m\n", path);
		return -1;
	}
	if (fwrite(buf, 1, len, f) != len)
		err = -1;
	if (f != stdout ? fclose(f) : fflush(f))
		err = -1;
	if (err)
		fprintf(stderr, "gpuext codegen: writing '%s' failed: %m\n", path);
	return err;
}

/* Host: the lifted module after O2, as the JIT would compile it (minus its runtime glue). */
static int host_ir(struct gpuext_prog *prog, char **text, size_t *len)
{
	GPUEXT_OPTS(gpuext_cg_lift_opts, lo, .target = GPUEXT_CG_HOST);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMTargetMachineRef tm = NULL;
	LLVMModuleRef mod = NULL;
	char why[256], *s;
	int err;

	err = gpuext_cg_lift(prog, ctx, &lo, &mod);
	if (!err)
		err = gpuext_cg_target_machine(GPUEXT_CG_HOST, NULL, &tm, why, sizeof(why));
	if (err && mod)
		fprintf(stderr, "gpuext codegen: %s\n", why);
	if (!err)
		err = gpuext_cg_optimize(mod, tm);
	if (!err) {
		s = LLVMPrintModuleToString(mod);
		*len = strlen(s);
		*text = malloc(*len + 1);
		if (*text)
			memcpy(*text, s, *len + 1);
		else
			err = -ENOMEM;
		LLVMDisposeMessage(s);
	}
	if (tm)
		LLVMDisposeTargetMachine(tm);
	if (mod)
		LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	return err;
}

int cmd_codegen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prog", required_argument, NULL, 'p' },
		{ "hex", required_argument, NULL, 'x' },
		{ "target", required_argument, NULL, 't' },
		{ "sm", required_argument, NULL, 's' },
		{ "warp", no_argument, NULL, 'w' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog_name = NULL, *hex = NULL, *target_name = NULL, *sm = NULL, *out = NULL;
	bool warp = false;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	struct gpuext_prog *raw = NULL, *prog = NULL;
	uint8_t *code = NULL;
	size_t code_len = 0, len = 0;
	void *buf = NULL;
	char why[160];
	int c, ret = 1, err, target;

	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'p': prog_name = optarg; break;
		case 'x': hex = optarg; break;
		case 't': target_name = optarg; break;
		case 's': sm = optarg; break;
		case 'w': warp = true; break;
		case 'o': out = optarg; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	target = gpuext_cg_target_by_name(target_name);
	if (target < 0) {
		fprintf(stderr, "gpuext codegen: %s '%s'; targets: ptx, spirv, spirv-vulkan, host\n",
			target_name ? "unknown target" : "--target is required", target_name ? target_name : "");
		return 2;
	}
	if (!!hex + (optind < argc) != 1) {
		fprintf(stderr, "gpuext codegen: give exactly one of OBJ or --hex\n\n");
		help(stderr);
		return 2;
	}
	if (!out) {
		if (target == GPUEXT_CG_SPIRV || target == GPUEXT_CG_SPIRV_VULKAN) {
			fprintf(stderr, "gpuext codegen: SPIR-V is binary: name the output with -o FILE\n");
			return 2;
		}
		out = "-";
	}
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print);
	err = gpuext_runtime__new(&ro, &rt);
	if (err) {
		fprintf(stderr, "gpuext codegen: cannot create runtime: %s\n", strerror(-err));
		return 1;
	}
	if (hex) {
		if (gpuext_parse_hex(hex, &code, &code_len, why, sizeof(why))) {
			fprintf(stderr, "gpuext codegen: bytecode: %s\n", why);
			goto out;
		}
		if (code_len == 0 || code_len % 8) {
			fprintf(stderr, "gpuext codegen: bytecode is %zu bytes, not a non-zero multiple of 8\n",
				code_len);
			goto out;
		}
		if (gpuext_prog__new(rt, "hex", (const struct bpf_insn *)code, code_len / 8, NULL, 0,
				     &raw))
			goto out; /* the runtime logged why */
		prog = raw;
	} else {
		err = gpuext_object__open_file(rt, argv[optind], NULL, &obj);
		if (err) {
			fprintf(stderr, "gpuext codegen: cannot open '%s': %s\n", argv[optind],
				strerror(-err));
			goto out;
		}
		prog = prog_name ? gpuext_object__find_prog(obj, prog_name)
				 : gpuext_object__prog(obj, 0);
		if (!prog) {
			fprintf(stderr, "gpuext codegen: '%s' has no program%s%s\n", argv[optind],
				prog_name ? " " : "s", prog_name ? prog_name : "");
			goto out;
		}
	}
	switch (target) {
	case GPUEXT_CG_PTX: {
		char *text = NULL;

		err = gpuext_ptx_emit(prog, sm, !warp, &text, &len);
		buf = text;
		break;
	}
	case GPUEXT_CG_SPIRV:
	case GPUEXT_CG_SPIRV_VULKAN:
		err = gpuext_spirv_emit(prog, target == GPUEXT_CG_SPIRV_VULKAN, &buf, &len);
		break;
	default: {
		char *text = NULL;

		err = host_ir(prog, &text, &len);
		buf = text;
		break;
	}
	}
	if (err) {
		fprintf(stderr, "gpuext codegen: '%s' for %s failed: %s\n", gpuext_prog__name(prog),
			gpuext_cg_target_name(target), strerror(-err));
		goto out;
	}
	if (write_out(out, buf, len))
		goto out;
	ret = 0;
out:
	free(buf);
	gpuext_prog__free(raw);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	free(code);
	return ret;
}
