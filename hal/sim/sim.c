/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The built-in simulator backend (gpuext_hal_sim): a device is one simulated
 * GPU whose memory is the UVM model of sim_mem.c. Config text, e.g.
 * "gpu_mem=1G,h2d_gbps=25,batch=256", is parsed by sim_mem_config__parse().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hal.h"
#include "internal.h"
#include "sim_mem.h"
#include "sim_sched.h"

/* One simulated GPU; created by sim_open(), freed by sim_close(). */
struct gpuext_hal_device {
	struct gpuext_runtime *rt;
	struct sim_mem *mem;
	struct sim_sched_dev *sched;	/* the runlist, driven event by event */
};

static int bad(char *err, size_t len, const char *fmt, const char *key, const char *val)
{
	if (err && len)
		snprintf(err, len, fmt, key, val);
	return GPUEXT_ERR(EINVAL);
}

static bool parse_u64(const char *s, uint64_t *out, bool suffix)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	if (suffix && *end) {
		unsigned shift = 0;

		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return false;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (v > (UINT64_MAX >> shift))
			return false;
		v <<= shift;
	}
	if (*end)
		return false;
	*out = v;
	return true;
}

static bool parse_double(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e6)
		return false;
	*out = v;
	return true;
}

int sim_mem_config__parse(const char *text, struct sim_mem_config *cfg, char *err,
			  size_t err_len)
{
	char *copy, *save = NULL, *tok;
	int ret = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->sz = sizeof(*cfg);
	if (err && err_len)
		err[0] = '\0';
	if (!text || !*text)
		return 0;
	copy = strdup(text);
	if (!copy)
		return GPUEXT_ERR(ENOMEM);
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *key = tok, *val;
		uint64_t u = 0;

		while (*key == ' ')
			key++;
		if (!eq) {
			ret = bad(err, err_len, "sim config: '%s' is not key=value%s", key, "");
			break;
		}
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(key, "gpu_mem")) {
			if (!parse_u64(val, &u, true) || u < GPU_BLOCK_SIZE)
				ret = bad(err, err_len, "sim config: %s=%s: want a size of at least 2M (e.g. 8G)", key, val);
			cfg->capacity_blocks = u >> GPU_BLOCK_SHIFT;
		} else if (!strcmp(key, "blocks")) {
			if (!parse_u64(val, &u, false) || !u)
				ret = bad(err, err_len, "sim config: %s=%s: want a block count > 0", key, val);
			cfg->capacity_blocks = u;
		} else if (!strcmp(key, "h2d_gbps")) {
			if (!parse_double(val, &cfg->h2d_gbps))
				ret = bad(err, err_len, "sim config: %s=%s: want GB/s > 0", key, val);
		} else if (!strcmp(key, "d2h_gbps")) {
			if (!parse_double(val, &cfg->d2h_gbps))
				ret = bad(err, err_len, "sim config: %s=%s: want GB/s > 0", key, val);
		} else if (!strcmp(key, "batch")) {
			if (!parse_u64(val, &u, false) || !u || u > (1u << 20))
				ret = bad(err, err_len, "sim config: %s=%s: want 1..1048576 fault entries", key, val);
			cfg->batch_size = (uint32_t)u;
		} else if (!strcmp(key, "batch_overhead_us")) {
			double us = 0;

			if (!parse_double(val, &us))
				ret = bad(err, err_len, "sim config: %s=%s: want microseconds > 0", key, val);
			cfg->batch_overhead_ns = (uint64_t)(us * 1000 + 0.5);
		} else if (!strcmp(key, "compute_ns")) {
			if (!parse_u64(val, &u, false) || !u)
				ret = bad(err, err_len, "sim config: %s=%s: want nanoseconds > 0", key, val);
			cfg->compute_ns = u;
		} else if (!strcmp(key, "prefetch")) {
			if (!strcasecmp(val, "on") || !strcmp(val, "1"))
				cfg->prefetch_disable = false;
			else if (!strcasecmp(val, "off") || !strcmp(val, "0"))
				cfg->prefetch_disable = true;
			else
				ret = bad(err, err_len, "sim config: %s=%s: want on or off", key, val);
		} else if (!strcmp(key, "prefetch_threshold")) {
			if (!parse_u64(val, &u, false) || !u || u > 100)
				ret = bad(err, err_len, "sim config: %s=%s: want a percentage 1..100", key, val);
			cfg->prefetch_threshold = (uint32_t)u;
		} else if (!strcmp(key, "big_page_kb")) {
			if (!parse_u64(val, &u, false) || (u && (u % 4 || u > 256 || ((u / 4) & (u / 4 - 1)))))
				ret = bad(err, err_len, "sim config: %s=%s: want 0 (off) or 4..256, a power of 2", key, val);
			else if (u <= 4)
				cfg->big_page_disable = true;
			else
				cfg->big_page_pages = (uint32_t)(u / 4);
		} else if (!strcmp(key, "gpu_id")) {
			if (!parse_u64(val, &u, false) || u > UINT32_MAX)
				ret = bad(err, err_len, "sim config: %s=%s: want a number", key, val);
			cfg->gpu_id = (uint32_t)u;
		} else {
			ret = bad(err, err_len,
				  "sim config: unknown key '%s'%s; known: gpu_mem, blocks, h2d_gbps, d2h_gbps, "
				  "batch, batch_overhead_us, compute_ns, prefetch, prefetch_threshold, "
				  "big_page_kb, gpu_id", key, "");
		}
	}
	free(copy);
	return ret;
}

static int sim_probe(char *detail, size_t len)
{
	snprintf(detail, len, "built in");
	return 0;
}

static int sim_open(struct gpuext_runtime *rt, const char *config, struct gpuext_hal_device **out)
{
	struct sim_mem_config cfg;
	struct gpuext_hal_device *dev;
	char why[256];
	int err;

	*out = NULL;
	err = sim_mem_config__parse(config, &cfg, why, sizeof(why));
	if (err) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "%s", why);
		return err;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return GPUEXT_ERR(ENOMEM);
	dev->rt = rt;
	err = sim_mem__new(rt, &cfg, &dev->mem);
	if (!err)
		err = sim_sched_dev__new(rt, &dev->sched);
	if (err) {
		sim_mem__free(dev->mem);
		free(dev);
		return err;
	}
	*out = dev;
	return 0;
}

static void sim_close(struct gpuext_hal_device *dev)
{
	if (!dev)
		return;
	sim_mem__free(dev->mem);
	sim_sched_dev__free(dev->sched);
	free(dev);
}

static int sim_attach(struct gpuext_hal_device *dev, struct gpuext_policy *p)
{
	int err = sim_mem__attach(dev->mem, p);	/* the shared slots: EBUSY, messages */

	if (err || gpuext_policy__kind(p) != GPUEXT_POLICY_SCHED)
		return err;
	err = sim_sched_dev__attach(dev->sched, p);
	if (err)
		sim_mem__detach(dev->mem, GPUEXT_POLICY_SCHED);
	return err;
}

static int sim_detach(struct gpuext_hal_device *dev, enum gpuext_policy_kind kind)
{
	int err = sim_mem__detach(dev->mem, kind);

	if (!err && kind == GPUEXT_POLICY_SCHED)
		sim_sched_dev__detach(dev->sched);
	return err;
}

static void sim_sink(struct gpuext_hal_device *dev, gpuext_hal_event_fn fn, void *user)
{
	sim_mem__set_event_sink(dev->mem, fn, user);
	sim_sched_dev__set_event_sink(dev->sched, fn, user);
}

struct sim_sched_dev *gpuext_hal_sim__sched(struct gpuext_hal_device *dev)
{
	return dev ? dev->sched : NULL;
}

struct sim_mem *gpuext_hal_sim__mem(struct gpuext_hal_device *dev)
{
	return dev ? dev->mem : NULL;
}

const struct gpuext_hal_ops gpuext_hal_sim = {
	.name = "sim",
	.probe = sim_probe,
	.open = sim_open,
	.close = sim_close,
	.attach = sim_attach,
	.detach = sim_detach,
	.set_event_sink = sim_sink,
};
