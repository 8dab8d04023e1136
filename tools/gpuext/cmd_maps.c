/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext maps: list, dump and clean the maps that running gpuext processes
 * publish under /dev/shm. Reading is read-only and lock-free (core/shm.c);
 * this file only parses arguments and formats.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "maps_impl.h"

static void maps_usage(FILE *f)
{
	fprintf(f,
		"usage: gpuext maps [list] [--pid PID]\n"
		"       gpuext maps dump --pid PID (ID|NAME) [--json]\n"
		"       gpuext maps clean [--pid PID]\n"
		"\n"
		"Shows the BPF maps of running gpuext processes. A process publishes its maps\n"
		"when its runtime is created with publish_maps (each map is then the file\n"
		"/dev/shm/gpuext.<pid>.<map id>); gpuext maps only reads them, never changes them.\n"
		"\n"
		"commands:\n"
		"  list    one line per map: PID, ID, NAME, TYPE, KEY and VALUE size, MAX entries,\n"
		"          USED (entries present; bytes waiting for a ring buffer), STATE\n"
		"          ('stale' when the process that made it is gone)\n"
		"  dump    every entry of one map, key and value in hex (per-CPU maps: one value\n"
		"          per CPU slot); for a ring buffer, its positions and unread bytes\n"
		"  clean   delete the files of stale maps (left behind by crashed processes)\n"
		"\n"
		"options:\n"
		"  --pid PID   only this process\n"
		"  --json      dump as one JSON object\n"
		"\n"
		"examples:\n"
		"  gpuext maps                         # all published maps\n"
		"  gpuext maps list --pid 4242\n"
		"  gpuext maps dump --pid 4242 counts  # by name\n"
		"  gpuext maps dump --pid 4242 3 --json | jq '.entries | length'\n"
		"  gpuext maps clean\n");
}

static bool parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!*s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static const char *state_of(const struct gpuext_shm_info *m, char *buf, size_t len)
{
	if (m->err == -EACCES)
		snprintf(buf, len, "%s", m->stale ? "stale,no-access" : "no-access");
	else if (m->err)
		snprintf(buf, len, "%s(%s)", m->stale ? "stale,invalid" : "invalid",
			 strerror(-m->err));
	else
		snprintf(buf, len, "%s", m->stale ? "stale" : "live");
	return buf;
}

static uint64_t used_of(const struct gpuext_shm_info *m)
{
	return m->type == BPF_MAP_TYPE_RINGBUF ? m->prod_pos - m->cons_pos : m->count;
}

static int maps_list(int32_t pid)
{
	struct gpuext_shm_info *v;
	size_t n;
	int err;

	err = gpuext_shm_list(pid, &v, &n);
	if (err) {
		fprintf(stderr, "gpuext maps: cannot read /dev/shm: %s\n", strerror(-err));
		return 1;
	}
	if (!n) {
		if (pid > 0 && gpuext_shm_proc_start(pid) == 0) {
			fprintf(stderr, "gpuext maps: no process %d, and no maps of it in /dev/shm\n", pid);
			return 1;
		}
		if (pid > 0)
			fprintf(stderr,
				"gpuext maps: process %d has no published maps (its runtime must set publish_maps)\n",
				pid);
		else
			fprintf(stderr,
				"gpuext maps: no published maps in /dev/shm (a runtime publishes them when created with publish_maps)\n");
		return pid > 0 ? 1 : 0;
	}
	printf("%-8s %4s  %-24s %-13s %5s %6s %10s %10s  %s\n", "PID", "ID", "NAME", "TYPE",
	       "KEY", "VALUE", "MAX", "USED", "STATE");
	for (size_t i = 0; i < n; i++) {
		const struct gpuext_shm_info *m = &v[i];
		char state[64];

		if (m->err) {
			printf("%-8d %4u  %-24s %-13s %5s %6s %10s %10s  %s\n", m->pid, m->id, "?",
			       "?", "?", "?", "?", "?", state_of(m, state, sizeof(state)));
			continue;
		}
		printf("%-8d %4u  %-24s %-13s %5u %6u %10u %10" PRIu64 "  %s\n", m->pid, m->id,
		       m->name[0] ? m->name : "-", gpuext_map_type_name(m->type), m->key_size,
		       m->value_size, m->max_entries, used_of(m), state_of(m, state, sizeof(state)));
	}
	free(v);
	return 0;
}

/* Finds the id of map @what (an id or a name) of @pid; prints why not. */
static int resolve_map(int32_t pid, const char *what, uint32_t *id)
{
	struct gpuext_shm_info *v;
	size_t n, found = 0;
	int err;

	err = gpuext_shm_list(pid, &v, &n);
	if (err) {
		fprintf(stderr, "gpuext maps: cannot read /dev/shm: %s\n", strerror(-err));
		return -1;
	}
	if (!n) {
		if (gpuext_shm_proc_start(pid) == 0)
			fprintf(stderr, "gpuext maps dump: no process %d, and no maps of it in /dev/shm\n",
				pid);
		else
			fprintf(stderr,
				"gpuext maps dump: process %d has no published maps (its runtime must set publish_maps)\n",
				pid);
		free(v);
		return -1;
	}
	if (parse_u32(what, id)) {
		for (size_t i = 0; i < n; i++)
			found += v[i].id == *id;
	} else {
		for (size_t i = 0; i < n; i++) {
			if (!v[i].err && !strcmp(v[i].name, what)) {
				if (found++)
					break;
				*id = v[i].id;
			}
		}
	}
	if (found != 1) {
		fprintf(stderr, "gpuext maps dump: process %d has %s map %s '%s'; its maps:", pid,
			found ? "more than one" : "no", isdigit((unsigned char)*what) ? "with id" : "named",
			what);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "%s %u (%s)", i ? "," : "", v[i].id,
				v[i].err ? "unreadable" : v[i].name);
		fprintf(stderr, "%s\n", found ? ": dump it by ID" : "");
	}
	free(v);
	return found == 1 ? 0 : -1;
}

static void print_hex(const uint8_t *p, size_t n, bool spaced)
{
	for (size_t i = 0; i < n; i++)
		printf(spaced && i ? " %02x" : "%02x", p[i]);
}

static void print_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

struct dump_ctx {
	const struct gpuext_shm_info *info;
	uint32_t stride;
	bool json;
	uint64_t n;
};

static int dump_entry(void *user, const void *key, const void *value)
{
	struct dump_ctx *d = user;
	const struct gpuext_shm_info *m = d->info;
	const uint8_t *v = value;
	bool percpu = m->type == BPF_MAP_TYPE_PERCPU_ARRAY;

	if (d->json) {
		printf("%s\n    {\"key\": \"", d->n ? "," : "");
		print_hex(key, m->key_size, false);
		if (percpu) {
			printf("\", \"values\": [");
			for (uint32_t s = 0; s < m->nr_slots; s++) {
				printf("%s\"", s ? ", " : "");
				print_hex(v + (uint64_t)s * d->stride, m->value_size, false);
				putchar('"');
			}
			printf("]}");
		} else {
			printf("\", \"value\": \"");
			print_hex(v, m->value_size, false);
			printf("\"}");
		}
	} else {
		printf("key: ");
		print_hex(key, m->key_size, true);
		if (percpu) {
			putchar('\n');
			for (uint32_t s = 0; s < m->nr_slots; s++) {
				printf("  cpu %u: ", s);
				print_hex(v + (uint64_t)s * d->stride, m->value_size, true);
				putchar('\n');
			}
		} else {
			printf("  value: ");
			print_hex(v, m->value_size, true);
			putchar('\n');
		}
	}
	d->n++;
	return 0;
}

static int maps_dump(int32_t pid, const char *what, bool json)
{
	struct gpuext_shm_snapshot snap;
	const struct gpuext_shm_info *m = &snap.info;
	struct dump_ctx d = { .info = m, .json = json };
	uint32_t id;
	int err;

	if (resolve_map(pid, what, &id))
		return 1;
	err = gpuext_shm_snapshot(pid, id, &snap);
	if (err) {
		if (err == -EACCES)
			fprintf(stderr,
				"gpuext maps dump: permission denied reading /dev/shm/gpuext.%d.%u: run as the user of process %d (or root)\n",
				pid, id, pid);
		else if (err == -EBADMSG || err == -EPROTO)
			fprintf(stderr,
				"gpuext maps dump: /dev/shm/gpuext.%d.%u is not a map this gpuext (%s) can read%s\n",
				pid, id, GPUEXT_VERSION,
				err == -EPROTO ? ": it has another layout version" : "");
		else if (err == -EAGAIN)
			fprintf(stderr,
				"gpuext maps dump: map %u of process %d changed during every one of our reads: try again\n",
				id, pid);
		else
			fprintf(stderr, "gpuext maps dump: cannot read map %u of process %d: %s\n", id,
				pid, strerror(-err));
		return 1;
	}
	d.stride = ((const struct gpuext_shm_hdr *)snap.buf)->value_stride;
	if (json) {
		printf("{\"pid\": %d, \"id\": %u, \"name\": ", pid, id);
		print_json_str(m->name);
		printf(", \"type\": \"%s\", \"key_size\": %u, \"value_size\": %u, \"max_entries\": %u, \"map_flags\": %u, \"stale\": %s",
		       gpuext_map_type_name(m->type), m->key_size, m->value_size, m->max_entries,
		       m->map_flags, m->stale ? "true" : "false");
	} else {
		printf("map %u '%s' of process %d%s: %s, key %u bytes, value %u bytes, max_entries %u",
		       id, m->name, pid, m->stale ? " (stale: the process is gone)" : "",
		       gpuext_map_type_name(m->type), m->key_size, m->value_size, m->max_entries);
		if (m->type == BPF_MAP_TYPE_PERCPU_ARRAY)
			printf(", %u CPU slots", m->nr_slots);
		putchar('\n');
	}
	if (m->type == BPF_MAP_TYPE_RINGBUF) {
		if (json)
			printf(", \"ring_size\": %u, \"cons_pos\": %" PRIu64 ", \"prod_pos\": %" PRIu64
			       ", \"avail_data\": %" PRIu64 "}\n",
			       m->max_entries, m->cons_pos, m->prod_pos, m->prod_pos - m->cons_pos);
		else
			printf("ring size: %u bytes\nconsumer position: %" PRIu64
			       "\nproducer position: %" PRIu64 "\navailable: %" PRIu64 " bytes\n",
			       m->max_entries, m->cons_pos, m->prod_pos, m->prod_pos - m->cons_pos);
		gpuext_shm_snapshot_free(&snap);
		return 0;
	}
	if (json)
		printf(", \"entries\": [");
	gpuext_shm_foreach(&snap, dump_entry, &d);
	if (json)
		printf("%s]}\n", d.n ? "\n  " : "");
	else
		printf("%" PRIu64 " %s\n", d.n, d.n == 1 ? "entry" : "entries");
	gpuext_shm_snapshot_free(&snap);
	return 0;
}

static int maps_clean(int32_t pid)
{
	int n = gpuext_shm_clean_stale(pid);

	if (n < 0) {
		fprintf(stderr, "gpuext maps clean: %s%s\n", strerror(-n),
			n == -EACCES || n == -EPERM ?
				": the stale maps belong to another user; run as that user or root" : "");
		return 1;
	}
	printf("removed %d stale %s\n", n, n == 1 ? "map" : "maps");
	return 0;
}

int cmd_maps(int argc, char **argv)
{
	const char *sub = "list", *what = NULL;
	int32_t pid = 0;
	bool json = false;
	int i = 1;

	if (i < argc && argv[i][0] != '-')
		sub = argv[i++];
	for (; i < argc; i++) {
		const char *a = argv[i];
		uint32_t v;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			maps_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--pid")) {
			if (++i >= argc || !parse_u32(argv[i], &v) || v == 0 || v > INT32_MAX) {
				fprintf(stderr, "gpuext maps: --pid needs a process id, e.g. --pid 4242\n");
				return 2;
			}
			pid = (int32_t)v;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "gpuext maps: unknown option '%s' (see gpuext maps --help)\n", a);
			return 2;
		} else if (!what) {
			what = a;
		} else {
			fprintf(stderr, "gpuext maps: unexpected argument '%s' (see gpuext maps --help)\n", a);
			return 2;
		}
	}
	if (!strcmp(sub, "dump")) {
		if (!pid || !what) {
			fprintf(stderr,
				"gpuext maps dump: needs --pid PID and a map ID or NAME, e.g. gpuext maps dump --pid 4242 counts (gpuext maps lists them)\n");
			return 2;
		}
		return maps_dump(pid, what, json);
	}
	if (what || json) {
		fprintf(stderr, "gpuext maps %s: unexpected argument '%s' (see gpuext maps --help)\n",
			sub, what ? what : "--json");
		return 2;
	}
	if (!strcmp(sub, "list"))
		return maps_list(pid);
	if (!strcmp(sub, "clean"))
		return maps_clean(pid);
	fprintf(stderr, "gpuext maps: unknown command '%s': use list, dump or clean (see gpuext maps --help)\n",
		sub);
	return 2;
}
