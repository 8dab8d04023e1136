/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext backends: which executors this machine has. Vendor runtimes are
 * found with dlopen() at run time, so one binary runs on an NVIDIA, AMD,
 * Intel or GPU-less machine and says plainly what it found and why not.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct probe {
	char status[32];	/* "available", "no devices", "not found", "error" */
	char detail[512];
};

static void *open_first(const char *const *names, struct probe *p)
{
	const char *last = "";

	for (size_t i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);

		if (h)
			return h;
		last = dlerror();
	}
	snprintf(p->status, sizeof(p->status), "not found");
	snprintf(p->detail, sizeof(p->detail), "%s", last ? last : "");
	return NULL;
}

/* CUDA Driver API: cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGetName. */
static void probe_nvidia(struct probe *p)
{
	static const char *const libs[] = { "libcuda.so.1", "libcuda.so", NULL };
	int (*init)(unsigned), (*ver)(int *), (*count)(int *), (*get)(int *, int);
	int (*name)(char *, int, int);
	void *h = open_first(libs, p);
	int v = 0, n = 0, rc;

	if (!h)
		return;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&ver = dlsym(h, "cuDriverGetVersion");
	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	*(void **)&get = dlsym(h, "cuDeviceGet");
	*(void **)&name = dlsym(h, "cuDeviceGetName");
	if (!init || !ver || !count || !get || !name) {
		snprintf(p->status, sizeof(p->status), "error");
		snprintf(p->detail, sizeof(p->detail), "libcuda lacks the Driver API entry points");
		goto out;
	}
	rc = init(0);
	ver(&v);
	if (rc != 0) {
		snprintf(p->status, sizeof(p->status), "no devices");
		snprintf(p->detail, sizeof(p->detail),
			 "libcuda found (driver API %d.%d) but cuInit failed with CUresult %d",
			 v / 1000, (v % 1000) / 10, rc);
		goto out;
	}
	count(&n);
	snprintf(p->status, sizeof(p->status), n ? "available" : "no devices");
	snprintf(p->detail, sizeof(p->detail), "CUDA driver API %d.%d, %d device(s)", v / 1000,
		 (v % 1000) / 10, n);
	for (int i = 0; i < n && i < 8; i++) {
		char nm[128] = "";
		int dev;
		size_t len = strlen(p->detail);

		if (get(&dev, i) == 0 && name(nm, sizeof(nm), dev) == 0)
			snprintf(p->detail + len, sizeof(p->detail) - len, "%s%d: %s",
				 i ? "; " : ": ", i, nm);
	}
out:
	dlclose(h);
}

/* HIP: hipGetDeviceCount, hipRuntimeGetVersion. */
static void probe_amd(struct probe *p)
{
	static const char *const libs[] = { "libamdhip64.so.6", "libamdhip64.so.5",
					    "libamdhip64.so", NULL };
	int (*count)(int *), (*ver)(int *);
	void *h = open_first(libs, p);
	int n = 0, v = 0, rc;

	if (!h)
		return;
	*(void **)&count = dlsym(h, "hipGetDeviceCount");
	*(void **)&ver = dlsym(h, "hipRuntimeGetVersion");
	if (!count) {
		snprintf(p->status, sizeof(p->status), "error");
		snprintf(p->detail, sizeof(p->detail), "libamdhip64 lacks hipGetDeviceCount");
		goto out;
	}
	if (ver)
		ver(&v);
	rc = count(&n);
	snprintf(p->status, sizeof(p->status), rc == 0 && n ? "available" : "no devices");
	snprintf(p->detail, sizeof(p->detail), "HIP runtime %d, %d device(s)%s", v, rc ? 0 : n,
		 rc ? " (hipGetDeviceCount failed: no AMD GPU or driver)" : "");
out:
	dlclose(h);
}

/* Level Zero: zeInit, zeDriverGet. */
static void probe_intel(struct probe *p)
{
	static const char *const libs[] = { "libze_loader.so.1", "libze_loader.so", NULL };
	int (*init)(unsigned), (*drivers)(unsigned *, void **);
	void *h = open_first(libs, p);
	unsigned n = 0;
	int rc;

	if (!h)
		return;
	*(void **)&init = dlsym(h, "zeInit");
	*(void **)&drivers = dlsym(h, "zeDriverGet");
	if (!init || !drivers) {
		snprintf(p->status, sizeof(p->status), "error");
		snprintf(p->detail, sizeof(p->detail), "libze_loader lacks zeInit/zeDriverGet");
		goto out;
	}
	rc = init(0);
	if (rc == 0)
		rc = drivers(&n, NULL);
	snprintf(p->status, sizeof(p->status), rc == 0 && n ? "available" : "no devices");
	snprintf(p->detail, sizeof(p->detail), "Level Zero loader found, %u driver(s)%s", n,
		 rc ? " (zeInit/zeDriverGet failed: no Level Zero GPU driver installed)" : "");
out:
	dlclose(h);
}

int cmd_backends(int argc, char **argv)
{
	struct probe nv = { 0 }, amd = { 0 }, intel = { 0 };

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: gpuext backends\n\n"
		       "Lists the executors this machine offers. The simulator is always built in;\n"
		       "vendor runtimes are looked up with dlopen (libcuda.so.1, libamdhip64.so,\n"
		       "libze_loader.so.1) and asked how many devices they see. Nothing is installed\n"
		       "or changed. Exit status is 0 whatever is found.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "gpuext backends: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	probe_nvidia(&nv);
	probe_amd(&amd);
	probe_intel(&intel);
	printf("%-8s %-12s %s\n", "BACKEND", "STATUS", "DETAIL");
	printf("%-8s %-12s %s\n", "sim", "available",
	       "built in: UVM memory + runlist simulator; reference interpreter and host JIT");
	printf("%-8s %-12s %s\n", "nvidia", nv.status, nv.detail);
	printf("%-8s %-12s %s\n", "amd", amd.status, amd.detail);
	printf("%-8s %-12s %s\n", "intel", intel.status, intel.detail);
	return 0;
}
