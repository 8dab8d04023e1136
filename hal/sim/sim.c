/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by the simulator backend. */
#include <errno.h>
#include <stdio.h>

#include "hal.h"

static int sim_probe(char *detail, size_t len) { snprintf(detail, len, "built in"); return 0; }
static int sim_open(struct gpuext_runtime *rt, const char *config, struct gpuext_hal_device **out) { (void)rt; (void)config; (void)out; return -ENOTSUP; }
static void sim_close(struct gpuext_hal_device *dev) { (void)dev; }
static int sim_attach(struct gpuext_hal_device *dev, struct gpuext_policy *p) { (void)dev; (void)p; return -ENOTSUP; }
static int sim_detach(struct gpuext_hal_device *dev, enum gpuext_policy_kind kind) { (void)dev; (void)kind; return -ENOTSUP; }
static void sim_sink(struct gpuext_hal_device *dev, gpuext_hal_event_fn fn, void *user) { (void)dev; (void)fn; (void)user; }

const struct gpuext_hal_ops gpuext_hal_sim = {
	.name = "sim", .probe = sim_probe, .open = sim_open, .close = sim_close,
	.attach = sim_attach, .detach = sim_detach, .set_event_sink = sim_sink,
};
