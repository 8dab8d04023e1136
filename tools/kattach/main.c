// SPDX-License-Identifier: Apache-2.0
/*
 * gpuext-kattach: attach a policy object to gpuext.ko with libbpf.
 *
 *   gpuext-kattach POLICY.bpf.o [--wait | --for SECONDS] [-v]
 *
 * Loads the object (the kernel verifier checks every program), attaches
 * each struct_ops map, prints "attached NAME (TYPE)" per map and holds the
 * links: until stdin reaches EOF (default, and --wait), for SECONDS seconds
 * (--for), or until killed. Closing the links detaches the policy; the
 * kernel does the same if this process dies. Exit 0, 1 on a load or attach
 * failure (with libbpf's log and the verifier's), 2 on usage errors.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gx_kattach.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuext-kattach POLICY.bpf.o [--wait | --for SECONDS] [-v]\n"
		   "  --wait         hold the policy until stdin reaches EOF (default)\n"
		   "  --for SECONDS  hold it for SECONDS seconds (0: attach, then detach)\n"
		   "  -v             print libbpf's warnings as they come\n");
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	struct gx_kattach *k;
	long secs = -1;
	int err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait")) {
			secs = -1;
		} else if (!strcmp(argv[i], "--for") && i + 1 < argc) {
			char *end;

			secs = strtol(argv[++i], &end, 10);
			if (*end || secs < 0) {
				fprintf(stderr, "gpuext-kattach: --for wants seconds >= 0, not '%s'\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "-v")) {
			gx_kattach_verbose = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' || path) {
			usage(stderr);
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	err = gx_kattach__open(path, &k);
	if (err) {
		if (!gx_kattach_verbose)
			fputs(gx_kattach_log, stderr);
		fprintf(stderr, "gpuext-kattach: %s not attached: %s\n", path, strerror(-err));
		return 1;
	}
	for (int i = 0; i < k->n; i++)
		printf("attached %s (%s)\n", k->policies[i], k->types[i]);
	fflush(stdout);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (secs >= 0) {
		while (secs-- > 0 && !stop)
			sleep(1);
	} else {
		char buf[256];

		while (!stop && read(0, buf, sizeof(buf)) > 0)
			;
	}
	gx_kattach__destroy(k);
	printf("detached %s\n", path);
	return 0;
}
