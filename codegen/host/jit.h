/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host JIT: a verified program lifted (codegen/lift.c), optimised at O2
 * and compiled in process by LLVM's ORC LLJIT. Runs give the interpreter's
 * results (tests/test_codegen_jit.c checks every ISA corpus case) at machine
 * speed; memory accesses are not checked at run time, which is why a
 * program is verified before it is compiled.
 *
 * Internal to libgpuext (tools and tests include it); the CLI exposes it as
 * `gpuext run-prog --backend jit`.
 */
#ifndef GPUEXT_CODEGEN_HOST_JIT_H
#define GPUEXT_CODEGEN_HOST_JIT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuext/gpuext.h"

struct gpuext_jit;

struct gpuext_jit_opts {
	size_t sz;
	/*
	 * The program is verified as GPUEXT_PROG_HOST with this context size
	 * (r1 = a ctx_size-byte buffer, r2 = ctx_size; 0: no context) unless
	 * @verified says the caller already verified it (for its own type).
	 */
	uint32_t ctx_size;
	bool verified;
};

/* Where compile time went, in nanoseconds (bench/bench_codegen.c). */
struct gpuext_jit_stats {
	uint64_t verify_ns;
	uint64_t setup_ns;	/* the LLJIT and a host TargetMachine */
	uint64_t lift_ns;	/* lift + the runtime glue */
	uint64_t opt_ns;	/* O2 */
	uint64_t compile_ns;	/* machine code (LLJIT materialisation on lookup) */
	size_t ir_insns;	/* LLVM instructions after O2 */
};

/*
 * Verifies (see opts), lifts, optimises and compiles @prog. -EACCES when the
 * verifier rejects it (a JIT program runs unchecked, so it must pass); other
 * negative errnos from codegen, the reason logged through the program's
 * runtime. @prog must outlive the JIT.
 */
int gpuext_jit__new(struct gpuext_prog *prog, const struct gpuext_jit_opts *opts,
		    struct gpuext_jit **out);
/*
 * Runs the compiled program: the interpreter's contract (gpuext_prog__run)
 * except that opts->insn_limit is not enforced and opts->insn_executed is
 * set to 0. A helper that fails (gpuext_exec__fail) ends the run with its
 * error. Thread-safe: runs may overlap.
 */
int gpuext_jit__run(struct gpuext_jit *jit, struct gpuext_run_opts *opts, uint64_t *r0);
const struct gpuext_jit_stats *gpuext_jit__stats(const struct gpuext_jit *jit);
void gpuext_jit__free(struct gpuext_jit *jit);

#endif
