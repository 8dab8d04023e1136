/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hardware abstraction: what a backend provides and what it receives.
 *
 * A backend is one folder under hal/ (sim/, nvidia/, amd/, intel/) exporting
 * one `const struct gpuext_hal_ops`. It probes the machine, opens a device,
 * attaches policies (struct gpuext_policy, see include/gpuext/policy.h) at its
 * hook points, implements the kfuncs of include/gpuext/gpu_ops.h for its own
 * structures, and reports hook events to a sink (tracing, conformance).
 *
 * Attach semantics are the same everywhere and live in hal.c: one memory and
 * one scheduling policy per device (a second attach fails with -EBUSY and a
 * message naming the attached one); detach restores the default at once; a
 * policy that errors or exceeds its per-call budget is ejected by
 * gpuext_policy__call() and the backend carries on with its default.
 */
#ifndef GPUEXT_HAL_H
#define GPUEXT_HAL_H

#include "gpuext/policy.h"

struct gpuext_hal_device;

/* One event at a hook point: what was asked and what was decided. */
enum gpuext_hal_event_kind {
	GPUEXT_EV_HOOK = 0,	/* a policy hook was called; ret = its return value */
	GPUEXT_EV_DEFAULT,	/* the default ran (no policy, hook absent, or ejected) */
	GPUEXT_EV_KFUNC,	/* a kfunc was called; ret = its result */
	GPUEXT_EV_EVICT,	/* a block was evicted (id) */
	GPUEXT_EV_PREFETCH,	/* pages [a, b] of block id were prefetched */
	GPUEXT_EV_EJECT,	/* the policy was ejected; detail = why */
	GPUEXT_EV_REJECT_BIND,	/* a task bind was refused */
	GPUEXT_EV_ATTR,		/* a task attribute was set: a = attr, b = value */
};

struct gpuext_hal_event {
	enum gpuext_hal_event_kind kind;
	unsigned hook;		/* GPUEXT_HOOK_* of the policy kind */
	enum gpuext_policy_kind policy_kind;
	uint64_t id;		/* block id or task id */
	uint64_t a, b;
	int64_t ret;
	uint64_t time_ns;	/* driver (modelled) time */
	const char *detail;
};

typedef void (*gpuext_hal_event_fn)(const struct gpuext_hal_event *ev, void *user);

struct gpuext_hal_ops {
	const char *name;	/* "sim", "nvidia", "amd", "intel" */
	/* 0 if usable here; else a negative errno. @detail says what was found or why not. */
	int (*probe)(char *detail, size_t len);
	/* Opens one device. @config is backend-specific text (NULL = defaults). */
	int (*open)(struct gpuext_runtime *rt, const char *config, struct gpuext_hal_device **out);
	void (*close)(struct gpuext_hal_device *dev);
	int (*attach)(struct gpuext_hal_device *dev, struct gpuext_policy *p);
	int (*detach)(struct gpuext_hal_device *dev, enum gpuext_policy_kind kind);
	void (*set_event_sink)(struct gpuext_hal_device *dev, gpuext_hal_event_fn fn, void *user);
};

/* Every backend compiled in; the simulator is always first. */
const struct gpuext_hal_ops *const *gpuext_hal_backends(size_t *count);
const struct gpuext_hal_ops *gpuext_hal_find(const char *name);

/* The attach slots a device keeps (embed one in the device struct). */
struct gpuext_hal_slots {
	struct gpuext_policy *mem;
	struct gpuext_policy *sched;
};

/* -EBUSY (with a message naming what is attached) if that kind's slot is taken. */
int gpuext_hal_slots_attach(struct gpuext_runtime *rt, const char *device,
			    struct gpuext_hal_slots *s, struct gpuext_policy *p);
/* -ENOENT if nothing of that kind is attached. */
int gpuext_hal_slots_detach(struct gpuext_runtime *rt, const char *device,
			    struct gpuext_hal_slots *s, enum gpuext_policy_kind kind);

#endif
