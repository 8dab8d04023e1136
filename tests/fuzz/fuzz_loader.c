/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the BPF ELF loader: any byte string given to
 * gpuext_object__open_mem() must either open (and close cleanly) or fail
 * with a message, never crash or leak. Seed it with tests/bpf objects:
 *
 *   fuzz_loader -max_total_time=60 -rss_limit_mb=2048 corpus/ build/tests/bpf/
 */
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpuext.h"

static void drop(enum gpuext_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)msg;
	(void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = drop);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;

	if (gpuext_runtime__new(&opts, &rt))
		return 0;
	if (gpuext_object__open_mem(rt, data, size, NULL, &obj) == 0)
		gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	return 0;
}
