/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext-splice: what the preload library would JIT for one PTX module.
 *
 *   gpuext trace TOOL --pack-only --dir D        writes the pack
 *   gpuext-splice D kernel.ptx [out.ptx]         splices it into kernel.ptx
 *   ptxas -arch=sm_90 out.ptx && cuobjdump -sass  the code the GPU would run
 *
 * For people writing probes or working on the splicer: it shows, without a
 * GPU, what a probe adds to a kernel (sites, registers, stack, SASS).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvprobe.h"
#include "ptx_text.h"

static int read_all(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *b = NULL;

	if (!f)
		return -errno;
	for (;;) {
		char *nb = realloc(b, cap + 1);

		if (!nb) {
			free(b);
			fclose(f);
			return -ENOMEM;
		}
		b = nb;
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
	}
	if (ferror(f)) {
		free(b);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuext-splice [--l2-policy HEX] PACK_DIR IN.ptx [OUT.ptx]\n"
		"\n"
		"Splices the probes of a pack (gpuext trace TOOL --pack-only --dir PACK_DIR)\n"
		"into a PTX module, as libgpuext-nvprobe.so does in an application, and\n"
		"writes the result to OUT.ptx (default: standard output). Prints the sites\n"
		"per kind on standard error. Assemble the result with ptxas to see what a\n"
		"probe costs a kernel.\n"
		"\n"
		"  --l2-policy HEX  put this L2 policy on the probes' map atomics first, as\n"
		"                   the library does on sm_80 and up (the value is the GPU's\n"
		"                   createpolicy evict_last: nvprobe-PID.txt prints it, e.g.\n"
		"                   0x14f0000000000000 on an H100/H200); without it the splice\n"
		"                   is what a GPU before sm_80 (or GPUEXT_NV_L2_KEEP=0) gets.\n");
}

int main(int argc, char **argv)
{
	struct gx_splice_stats st = { 0 };
	unsigned long long pol = 0;
	struct gx_pack pack;
	char err[512] = "", *ptx = NULL, *out = NULL;
	size_t len = 0, olen = 0;
	FILE *f = stdout;
	int e;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "--l2-policy")) {
		char *end;

		errno = 0;
		pol = strtoull(argv[2], &end, 16);	/* takes a sign and blanks: refused below */
		if (errno || end == argv[2] || *end || !pol || argv[2][0] == '-' || argv[2][0] == '+' ||
		    argv[2][0] == ' ' || argv[2][0] == '\t') {
			fprintf(stderr, "gpuext-splice: --l2-policy wants a nonzero hex value "
				"(nvprobe-PID.txt prints the GPU's), not \"%s\"\n", argv[2]);
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc < 3 || argc > 4) {
		usage(stderr);
		return 2;
	}
	e = gx_pack_read(argv[1], &pack, err, sizeof(err));
	if (e) {
		fprintf(stderr, "gpuext-splice: %s: %s\n", argv[1], err[0] ? err : strerror(-e));
		return 1;
	}
	if (pol) {
		char *t = NULL;
		size_t tl = 0;
		unsigned n = 0;

		e = gx_ptx_probes_l2keep(pack.ptx, pack.ptx_len, pol, &t, &tl, &n);
		if (e) {
			fprintf(stderr, "gpuext-splice: the L2 policy: %s\n", strerror(-e));
			gx_pack_free(&pack);
			return 1;
		}
		free(pack.ptx);
		pack.ptx = t;
		pack.ptx_len = tl;
		fprintf(stderr, "gpuext-splice: L2 policy 0x%016llx on %u map atomics of the probes\n",
			(unsigned long long)pol, n);
	}
	e = read_all(argv[2], &ptx, &len);
	if (e) {
		fprintf(stderr, "gpuext-splice: %s: %s\n", argv[2], strerror(-e));
		gx_pack_free(&pack);
		return 1;
	}
	e = gx_ptx_splice(ptx, len, &pack, &out, &olen, &st, err, sizeof(err));
	if (e) {
		fprintf(stderr, "gpuext-splice: %s: %s\n", argv[2], err[0] ? err : strerror(-e));
		goto out;
	}
	if (argc == 4 && !(f = fopen(argv[3], "wb"))) {
		e = -errno;
		fprintf(stderr, "gpuext-splice: %s: %s\n", argv[3], strerror(errno));
		goto out;
	}
	if (fwrite(out, 1, olen, f) != olen || (f != stdout ? fclose(f) : fflush(f))) {
		e = -EIO;
		fprintf(stderr, "gpuext-splice: writing the result failed\n");
		goto out;
	}
	if (st.probes_in_global)
		fprintf(stderr, "gpuext-splice: the module's own constant data leaves no room in the "
			"64 KiB constant bank: the probes' table is in the global space\n");
	if (st.funcs_instrumented)
		fprintf(stderr, "gpuext-splice: %u device functions (.func) given sites of their own (loads, stores, exit)\n",
			st.funcs_instrumented);
	fprintf(stderr, "gpuext-splice: %u kernels, %u instrumented: %u entry, %u exit, %u load, "
		"%u store sites\n", st.kernels, st.instrumented, st.entry_sites, st.exit_sites,
		st.load_sites, st.store_sites);
	if (st.exits_split)
		fprintf(stderr, "gpuext-splice: %u branches to a kernel's shared ret given a ret (and an "
			"exit site) of their own (hal/nvidia/ptx_exits.c)\n", st.exits_split);
	if (st.func_accesses && (pack.events & (1u << GX_PROBE_LOAD | 1u << GX_PROBE_STORE)))
		fprintf(stderr, "gpuext-splice: %u global loads/stores in device functions (.func) are "
			"not sites: the kernel filter leaves out some of the module's kernels, which share "
			"them\n", st.func_accesses);
out:
	free(out);
	free(ptx);
	gx_pack_free(&pack);
	return e ? 1 : 0;
}
