/* SPDX-License-Identifier: Apache-2.0 */
/* Attach semantics shared by every backend, and the backend table. */
#include <string.h>

#include "hal.h"
#include "internal.h"

extern const struct gpuext_hal_ops gpuext_hal_sim;

static const struct gpuext_hal_ops *const backends[] = {
	&gpuext_hal_sim,
};

const struct gpuext_hal_ops *const *gpuext_hal_backends(size_t *count)
{
	*count = sizeof(backends) / sizeof(backends[0]);
	return backends;
}

const struct gpuext_hal_ops *gpuext_hal_find(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

int gpuext_hal_slots_attach(struct gpuext_runtime *rt, const char *device,
			    struct gpuext_hal_slots *s, struct gpuext_policy *p)
{
	struct gpuext_policy **slot;

	if (!p)
		return GPUEXT_ERR(EINVAL);
	slot = gpuext_policy__kind(p) == GPUEXT_POLICY_MEM ? &s->mem : &s->sched;
	if (*slot) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "%s: a %s policy ('%s') is already attached; detach it before attaching '%s'",
			   device, gpuext_policy__kind(p) == GPUEXT_POLICY_MEM ? "memory" : "scheduling",
			   gpuext_policy__name(*slot), gpuext_policy__name(p));
		return GPUEXT_ERR(EBUSY);
	}
	*slot = p;
	gpuext_log(rt, GPUEXT_LOG_INFO, "%s: attached %s policy '%s'", device,
		   gpuext_policy__kind(p) == GPUEXT_POLICY_MEM ? "memory" : "scheduling",
		   gpuext_policy__name(p));
	return 0;
}

int gpuext_hal_slots_detach(struct gpuext_runtime *rt, const char *device,
			    struct gpuext_hal_slots *s, enum gpuext_policy_kind kind)
{
	struct gpuext_policy **slot = kind == GPUEXT_POLICY_MEM ? &s->mem : &s->sched;

	if (!*slot) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "%s: no %s policy is attached", device,
			   kind == GPUEXT_POLICY_MEM ? "memory" : "scheduling");
		return GPUEXT_ERR(ENOENT);
	}
	gpuext_log(rt, GPUEXT_LOG_INFO, "%s: detached '%s'; the default resumes", device,
		   gpuext_policy__name(*slot));
	*slot = NULL;
	return 0;
}
