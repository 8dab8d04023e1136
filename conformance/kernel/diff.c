// SPDX-License-Identifier: Apache-2.0
/*
 * gpuext-scn-diff: compares the decisions a kernel backend logged while it
 * replayed lowered scenarios (conformance/kernel/vmtests/kscn.c) with the
 * simulator's (gpuext-scn-lower).
 *
 *   gpuext-scn-diff [--known FILE] SIM.lowered KERNEL.out...
 *
 * Both files hold `variant SCN VARIANT` ... `end` blocks of command lines
 * ("LINE WORDS...") and event lines ("ev ..."). Events are compared per
 * command (the segment after each command line): evictions in order, every
 * other decision as a multiset (a driver may call hooks of one fault in
 * another order: the decisions are what must agree). A difference listed in
 * --known (lines "SCN VARIANT LINE: reason") is reported as known, not as a
 * failure. Exit 0 when every difference is known, 1 otherwise, 2 on errors.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EV 64
#define EV_LEN 96

struct seg {
	unsigned line;			/* .scn line of the command */
	char cmd[160];
	char ev[MAX_EV][EV_LEN];
	unsigned n;
	bool overflow;
};

struct variant {
	char name[160];			/* "SCN VARIANT" */
	struct seg *segs;
	size_t n, cap;
	bool ended;
	char skipped[200];		/* the kernel could not run it here: why */
};

/* Task attributes as the events left them (a kernel logs changes, the simulator every set). */
#define MAX_TASKS 64
struct attrs {
	struct {
		unsigned long long id;
		long timeslice, level;
	} t[MAX_TASKS];
	unsigned n;
};

struct run {
	struct variant *v;
	size_t n, cap;
};

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	p = realloc(p, *cap * elem);
	if (!p) {
		fprintf(stderr, "gpuext-scn-diff: out of memory\n");
		exit(2);
	}
	return p;
}

static int read_run(const char *path, struct run *r)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	struct variant *cur = NULL;

	if (!f) {
		fprintf(stderr, "gpuext-scn-diff: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		unsigned line;
		int off = 0;

		buf[strcspn(buf, "\r\n")] = '\0';
		if (!strncmp(buf, "variant ", 8)) {
			r->v = grow(r->v, &r->cap, r->n, sizeof(*r->v));
			cur = &r->v[r->n++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->name, sizeof(cur->name), "%.159s", buf + 8);
		} else if (!cur) {
			continue;	/* kernel log noise before the first variant */
		} else if (!strncmp(buf, "skipped ", 8)) {
			snprintf(cur->skipped, sizeof(cur->skipped), "%.199s", buf + 8);
		} else if (!strcmp(buf, "end")) {
			cur->ended = true;
			cur = NULL;
		} else if (!strncmp(buf, "ev ", 3)) {
			struct seg *s;

			if (!cur->n) {
				cur->segs = grow(cur->segs, &cur->cap, cur->n, sizeof(*s));
				memset(&cur->segs[cur->n++], 0, sizeof(*s));
			}
			s = &cur->segs[cur->n - 1];
			if (s->n == MAX_EV)
				s->overflow = true;
			else
				snprintf(s->ev[s->n++], EV_LEN, "%.95s", buf + 3);
		} else if (sscanf(buf, "%u %n", &line, &off) == 1 && off > 0) {
			struct seg *s;

			cur->segs = grow(cur->segs, &cur->cap, cur->n, sizeof(*s));
			s = &cur->segs[cur->n++];
			memset(s, 0, sizeof(*s));
			s->line = line;
			snprintf(s->cmd, sizeof(s->cmd), "%.159s", buf + off);
		}
	}
	fclose(f);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static long level_value(const char *v)
{
	if (!strncmp(v, "low", 3))
		return 0;
	if (!strncmp(v, "medium", 6))
		return 1;
	if (!strncmp(v, "high", 4))
		return 2;
	return strtol(v, NULL, 10);
}

/* Applies one "attr task=T k=v..." event; false if it is not one. */
static bool apply_attr(struct attrs *st, const char *ev)
{
	unsigned long long id;
	const char *p;
	unsigned i;

	if (sscanf(ev, "attr task=%llu", &id) != 1)
		return false;
	for (i = 0; i < st->n && st->t[i].id != id; i++)
		;
	if (i == st->n) {
		if (st->n == MAX_TASKS)
			return true;
		st->t[st->n++] = (typeof(st->t[0])){ .id = id, .timeslice = 1024, .level = 1 };
	}
	if ((p = strstr(ev, "timeslice_us=")))
		st->t[i].timeslice = strtol(p + 13, NULL, 10);
	if ((p = strstr(ev, "level=")))
		st->t[i].level = level_value(p + 6);
	return true;
}

/*
 * Evictions in order, then the rest sorted, then the attributes that changed
 * in this segment: two segments agree iff these agree.
 */
static void canon(const struct seg *s, struct attrs *st, char *out, size_t len)
{
	char rest[MAX_EV][EV_LEN];
	struct attrs before = *st;
	unsigned nr = 0;
	size_t o = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < s->n; i++) {
		if (!strncmp(s->ev[i], "evict ", 6))
			o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s; ", s->ev[i]);
		else if (!apply_attr(st, s->ev[i]))
			memcpy(rest[nr++], s->ev[i], EV_LEN);
	}
	qsort(rest, nr, EV_LEN, cmp_str);
	for (unsigned i = 0; i < nr; i++) {
		/*
		 * "default HOOK id=B" says the default ran at HOOK for B during
		 * this command; how often is the driver's business (the
		 * simulator asks once per block, an HMM driver once per page).
		 */
		if (i && !strncmp(rest[i], "default ", 8) && !strcmp(rest[i], rest[i - 1]))
			continue;
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s; ", rest[i]);
	}
	for (unsigned i = 0; i < st->n; i++) {
		/* a task first seen here started at the defaults (1024 us, MEDIUM) */
		long ts0 = i < before.n ? before.t[i].timeslice : 1024;
		long lv0 = i < before.n ? before.t[i].level : 1;
		bool changed = ts0 != st->t[i].timeslice || lv0 != st->t[i].level;

		if (changed)
			o += (size_t)snprintf(out + o, o < len ? len - o : 0,
					      "attr task=%llu timeslice_us=%ld level=%ld; ",
					      st->t[i].id, st->t[i].timeslice, st->t[i].level);
	}
	if (s->overflow)
		snprintf(out + o, o < len ? len - o : 0, "(more than %d events)", MAX_EV);
}

static bool is_known(FILE *known, const char *variant, unsigned line, char *why, size_t len)
{
	char buf[512], key[200];

	if (!known)
		return false;
	snprintf(key, sizeof(key), "%s %u:", variant, line);
	rewind(known);
	while (fgets(buf, sizeof(buf), known)) {
		if (buf[0] == '#' || strncmp(buf, key, strlen(key)))
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(why, len, "%.255s", buf + strlen(key));
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct run sim = { 0 }, kern = { 0 };
	FILE *known = NULL;
	unsigned agree = 0, differ = 0, known_cnt = 0, ran = 0, skipped = 0;
	int a = 1;

	if (argc > 2 && !strcmp(argv[1], "--known")) {
		known = fopen(argv[2], "r");
		if (!known) {
			fprintf(stderr, "gpuext-scn-diff: %s: %s\n", argv[2], strerror(errno));
			return 2;
		}
		a = 3;
	}
	if (argc - a < 2) {
		fprintf(stderr, "usage: gpuext-scn-diff [--known FILE] SIM.lowered KERNEL.out...\n"
			"  KERNEL.out: kscn's output on one or more kernels (tracks); each variant is\n"
			"  compared where it ran (a track without the device it needs skips it)\n");
		return 2;
	}
	if (read_run(argv[a], &sim))
		return 2;
	for (int i = a + 1; i < argc; i++)
		if (read_run(argv[i], &kern))
			return 2;
	for (size_t i = 0; i < sim.n; i++) {
		struct variant *sv = &sim.v[i], *kv = NULL, *skip = NULL;
		struct attrs st_sim = { 0 }, st_kern = { 0 };

		for (size_t j = 0; j < kern.n && !kv; j++) {
			if (strcmp(kern.v[j].name, sv->name))
				continue;
			if (kern.v[j].skipped[0])
				skip = &kern.v[j];
			else
				kv = &kern.v[j];
		}
		if (!kv && skip) {
			printf("SKIP  %s: %s\n", sv->name, skip->skipped);
			skipped++;
			continue;
		}
		if (!kv || !kv->ended) {
			printf("DIFF  %s: the kernel run %s\n", sv->name,
			       kv ? "stopped before the end" : "is missing");
			differ++;
			continue;
		}
		ran++;
		for (size_t k = 0; k < sv->n; k++) {
			static char cs[MAX_EV * EV_LEN], ck[MAX_EV * EV_LEN];
			const struct seg *ss = &sv->segs[k];
			const struct seg *ks = k < kv->n ? &kv->segs[k] : NULL;
			char why[256];

			if (!ks || ks->line != ss->line) {
				printf("DIFF  %s line %u: the kernel run's commands diverge here\n",
				       sv->name, ss->line);
				differ++;
				break;
			}
			canon(ss, &st_sim, cs, sizeof(cs));
			canon(ks, &st_kern, ck, sizeof(ck));
			if (!strcmp(cs, ck)) {
				agree++;
			} else if (is_known(known, sv->name, ss->line, why, sizeof(why))) {
				printf("KNOWN %s line %u (%s):%s\n      sim:    %s\n      kernel: %s\n",
				       sv->name, ss->line, ss->cmd, why, cs, ck);
				known_cnt++;
			} else {
				printf("DIFF  %s line %u (%s)\n      sim:    %s\n      kernel: %s\n",
				       sv->name, ss->line, ss->cmd, cs, ck);
				differ++;
			}
		}
	}
	printf("scenario differential: %zu variant(s): %u ran on a kernel, %u skipped; "
	       "%u command(s) agree, %u known difference(s), %u unexplained\n",
	       sim.n, ran, skipped, agree, known_cnt, differ);
	if (known)
		fclose(known);
	for (size_t i = 0; i < sim.n; i++)
		free(sim.v[i].segs);
	for (size_t i = 0; i < kern.n; i++)
		free(kern.v[i].segs);
	free(sim.v);
	free(kern.v);
	return differ ? 1 : 0;
}
