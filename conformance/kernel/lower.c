// SPDX-License-Identifier: Apache-2.0
/*
 * gpuext-scn-lower: runs conformance scenarios on the simulator and writes
 * each one's *lowered* form (scenario.h, scn_run_opts.lower): the driver
 * commands a kernel backend replays in a VM (conformance/kernel/vmtests/
 * kscn.c) and the decisions the simulator took, which the kernel's must
 * equal (conformance/kernel/diff.c compares them).
 *
 *   gpuext-scn-lower --out DIR [--policy-dir DIR]... FILE.scn...
 *
 * Writes DIR/NAME.lowered per scenario (NAME = file name without .scn).
 * Exit 0; 1 if a scenario fails on the simulator itself (then lowering it
 * would compare against a wrong reference); 2 on usage or I/O errors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../scenario.h"

#define MAX_DIRS 8

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuext-scn-lower --out DIR [--policy-dir DIR]... FILE.scn...\n"
		"\n"
		"Runs each scenario on the simulator and writes DIR/NAME.lowered: per variant\n"
		"the driver commands (\"LINE WORDS...\", expectations turned into `sync`) and\n"
		"the simulator's decisions (\"ev ...\" lines). A kernel backend replays the\n"
		"commands in a VM and must log the same decisions.\n"
		"  --out DIR          where the .lowered files go (created)\n"
		"  --policy-dir DIR   where `policy NAME` finds NAME.bpf.o (repeatable)\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "policy-dir", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *dirs[MAX_DIRS + 1] = { 0 };
	const char *out = NULL;
	int ndirs = 0, c, status = 0;

	while ((c = getopt_long(argc, argv, "o:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			if (ndirs == MAX_DIRS) {
				fprintf(stderr, "gpuext-scn-lower: at most %d --policy-dir\n", MAX_DIRS);
				return 2;
			}
			dirs[ndirs++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!out || optind == argc) {
		usage(stderr);
		return 2;
	}
	{
		char cmd[4096];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", out);
		if (system(cmd)) {
			fprintf(stderr, "gpuext-scn-lower: cannot create %s\n", out);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i], *base = strrchr(path, '/');
		struct scn_scenario *s = NULL;
		struct scn_report rep;
		char err[512], name[256], file[4096];
		size_t len;
		FILE *f;
		int ret;

		base = base ? base + 1 : path;
		len = strlen(base);
		if (len > 4 && !strcmp(base + len - 4, ".scn"))
			len -= 4;
		snprintf(name, sizeof(name), "%.*s", (int)len, base);
		ret = scn_parse_file(path, &s, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "gpuext-scn-lower: %s\n", err);
			return 2;
		}
		snprintf(file, sizeof(file), "%s/%s.lowered", out, name);
		f = fopen(file, "w");
		if (!f) {
			fprintf(stderr, "gpuext-scn-lower: %s: %s\n", file, strerror(errno));
			scn_free(s);
			return 2;
		}
		{
			struct scn_run_opts o = { .sz = sizeof(o), .backend = "sim", .policy_dirs = dirs,
						  .only_variant = -1, .lower = f };

			ret = scn_run(s, &o, &rep);
		}
		if (fclose(f) || ret) {
			fprintf(stderr, "gpuext-scn-lower: %s: %s\n", name,
				ret ? strerror(-ret) : "write error");
			scn_free(s);
			return 2;
		}
		if (rep.failure_cnt) {
			fprintf(stderr, "gpuext-scn-lower: %s fails on the simulator itself:\n", name);
			scn_report_print(s, &rep, stderr);
			status = 1;
		} else {
			printf("lowered %-22s %zu variant(s) -> %s\n", name, scn_variant_cnt(s), file);
		}
		scn_free(s);
	}
	return status;
}
