/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Verifier benchmark: how long verification takes
 *   (a) for every program of the compiled policy objects (target: < 1 ms
 *       each) — or, when none are built, of the test objects that load;
 *   (b) for synthetic straight-line and branchy programs of 1k, 10k and
 *       100k instructions built in memory, with the growth factor between
 *       sizes (10x the instructions should cost ~10x the time).
 * Times are the verifier's own (gpuext_verify_result.time_ns), best of N
 * repetitions; processed instructions and stored states come from the same
 * result. Nothing is asserted: it prints what it measured. Each object
 * program is verified in a child process that gets 10 s; one that takes
 * longer is reported as TIMEOUT instead of hanging the run.
 *
 *   bench_verifier [--reps N] [DIR ...]
 *
 * DIRs hold *.bpf.o files; the default is <dir of this binary>/policies and
 * <dir of this binary>/tests/bpf (the build tree's layout).
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuext/gpuext.h"
#include "gpuext/verifier.h"
#include "isa.h"

#if __has_include("gpuext/policy.h")
#include "gpuext/policy.h"
#define HAVE_HOOK_DESC 1
#endif

#define I isa_make

static void quiet(enum gpuext_log_level level, const char *msg, void *user)
{
	(void)level; (void)msg; (void)user;
}

/* ---- the machine ---- */

static void print_machine(int reps)
{
	struct utsname u;
	char line[256], model[256] = "unknown CPU";
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
				snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	uname(&u);
	printf("gpuext verifier benchmark\n");
	printf("machine:  %s %s %s, %s, %ld online CPUs\n", u.sysname, u.release, u.machine, model,
	       sysconf(_SC_NPROCESSORS_ONLN));
#if defined(__SANITIZE_ADDRESS__)
	const char *san = "AddressSanitizer (times are inflated)";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	const char *san = "AddressSanitizer (times are inflated)";
#else
	const char *san = "none";
#endif
#else
	const char *san = "none";
#endif
	printf("build:    %s, optimisation %s, sanitizers: %s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       "on",
#else
	       "off",
#endif
	       san);
	printf("method:   best of %d verifications per program, time = gpuext_verify_result.time_ns "
	       "(whole gpuext_prog__verify: static checks + path walk); default insn budget\n\n",
	       reps);
}

/* ---- one measurement ---- */

struct meas {
	int err;
	struct gpuext_verify_result res;	/* of the fastest run */
};

static struct meas measure(struct gpuext_prog *prog, const struct gpuext_verify_opts *base, int reps)
{
	struct meas m = { .err = 0 };
	static char log[4096];

	for (int r = 0; r < reps; r++) {
		struct gpuext_verify_opts o = *base;
		GPUEXT_OPTS(gpuext_verify_result, res);
		int err;

		o.log_buf = log;
		o.log_size = sizeof(log);
		err = gpuext_prog__verify(prog, &o, &res);
		if (r == 0 || res.time_ns < m.res.time_ns) {
			m.res = res;
			m.err = err;
		}
	}
	return m;
}

#define CHILD_TIMEOUT_S 10

/*
 * The same, in a child process with a time limit: a pathological object
 * program must not hang the benchmark. Returns false on a timeout (or if
 * the child died), with *why saying which.
 */
static bool measure_limited(struct gpuext_prog *prog, const struct gpuext_verify_opts *base,
			    int reps, struct meas *out, const char **why)
{
	int fds[2], status;
	pid_t pid;
	struct pollfd pfd;
	ssize_t got = 0;

	fflush(stdout);
	if (pipe(fds))
		return *why = "pipe failed", false;
	pid = fork();
	if (pid < 0)
		return *why = "fork failed", false;
	if (pid == 0) {
		struct meas m;

		close(fds[0]);
		m = measure(prog, base, reps);
		if (write(fds[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	if (poll(&pfd, 1, CHILD_TIMEOUT_S * 1000) == 1)
		got = read(fds[0], out, sizeof(*out));
	close(fds[0]);
	if (got != (ssize_t)sizeof(*out)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		*why = WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL ? "CRASHED" : "TIMEOUT";
		return false;
	}
	waitpid(pid, &status, 0);
	return true;
}

static const char *verdict(const struct meas *m)
{
	static char buf[64];

	if (m->res.accepted)
		return "accept";
	if (m->err == -EACCES)
		snprintf(buf, sizeof(buf), "reject:%s", gpuext_rule_name(m->res.rule));
	else
		snprintf(buf, sizeof(buf), "error %d", m->err);
	return buf;
}

/* ---- (a) compiled objects ---- */

static int type_for_section(const char *sec)
{
	if (!strncmp(sec, "struct_ops", 10))
		return GPUEXT_PROG_MEM_OPS;
	if (!strncmp(sec, "socket", 6))
		return GPUEXT_PROG_SOCKET_FILTER;
	if (!strncmp(sec, "probe", 5))
		return GPUEXT_PROG_DEVICE_PROBE;
	return GPUEXT_PROG_HOST;
}

/* Verifies a struct_ops member as its hook when the ABI knows it (as `gpuext verify` does). */
static const struct gpuext_prog_type_desc *hook_of(const struct gpuext_object *obj,
						   const struct gpuext_prog *prog)
{
#ifdef HAVE_HOOK_DESC
	for (size_t i = 0; i < gpuext_object__struct_ops_cnt(obj); i++) {
		const struct gpuext_struct_ops *so = gpuext_object__struct_ops(obj, i);

		for (size_t m = 0; m < so->member_cnt; m++)
			if (so->members[m].prog == prog)
				return gpuext_hook_desc(so->type_name, so->members[m].member);
	}
#else
	(void)obj; (void)prog;
#endif
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct obj_totals {
	unsigned objects, opened, progs, accepted, under_1ms, timeouts;
	uint64_t worst_ns;
	char worst[160];
};

/* Returns the number of .bpf.o files found in @dir. */
static unsigned bench_dir(const char *dir, int reps, struct obj_totals *t)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (!d) {
		printf("  %s: cannot open (%s)\n", dir, strerror(errno));
		return 0;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len < 7 || strcmp(e->d_name + len - 6, ".bpf.o"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				exit(1);
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	if (!n) {
		printf("  %s: no .bpf.o files\n", dir);
		free(names);
		return 0;
	}
	printf("  %s: %zu objects\n", dir, n);
	for (size_t i = 0; i < n; i++) {
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = quiet);
		struct gpuext_runtime *rt = NULL;
		struct gpuext_object *obj = NULL;
		char path[4096];
		int err;

		t->objects++;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (gpuext_runtime__new(&ro, &rt))
			exit(1);
		err = gpuext_object__open_file(rt, path, NULL, &obj);
		if (err) {
			printf("  %-26s %-24s does not open (%s): skipped\n", names[i], "-", strerror(-err));
			gpuext_runtime__free(rt);
			free(names[i]);
			continue;
		}
		t->opened++;
		for (size_t p = 0; p < gpuext_object__prog_cnt(obj); p++) {
			struct gpuext_prog *prog = gpuext_object__prog(obj, p);
			const struct gpuext_prog_type_desc *hook = hook_of(obj, prog);
			int type = type_for_section(gpuext_prog__section(prog));
			GPUEXT_OPTS(gpuext_verify_opts, vo, .type = (enum gpuext_prog_type)type,
				    .type_desc = hook);
			struct meas m;
			const char *why = NULL;
			double us;

			t->progs++;
			if (!measure_limited(prog, &vo, reps, &m, &why)) {
				t->timeouts++;
				printf("  %-26s %-24s %-30s %-24s %7zu %9s %7s %6s %10s NO (did not finish in %d s)\n",
				       names[i], gpuext_prog__name(prog),
				       hook ? hook->name : gpuext_prog_type_name((enum gpuext_prog_type)type),
				       why, gpuext_prog__insn_cnt(prog), "?", "?", "?", "?", CHILD_TIMEOUT_S);
				continue;
			}
			us = m.res.time_ns / 1e3;
			t->accepted += m.res.accepted;
			t->under_1ms += m.res.time_ns < 1000000;
			if (m.res.time_ns > t->worst_ns) {
				t->worst_ns = m.res.time_ns;
				snprintf(t->worst, sizeof(t->worst), "%s:%s", names[i], gpuext_prog__name(prog));
			}
			printf("  %-26s %-24s %-30s %-24s %7zu %9llu %7u %6u %10.1f %s\n", names[i],
			       gpuext_prog__name(prog),
			       hook ? hook->name : gpuext_prog_type_name((enum gpuext_prog_type)type),
			       verdict(&m), gpuext_prog__insn_cnt(prog),
			       (unsigned long long)m.res.insns_processed, m.res.states, m.res.peak_states,
			       us, m.res.time_ns < 1000000 ? "yes" : "NO");
		}
		gpuext_object__close(obj);
		gpuext_runtime__free(rt);
		free(names[i]);
	}
	free(names);
	return (unsigned)n;
}

/* ---- (b) synthetic programs ---- */

struct pbuf {
	struct bpf_insn *p;
	size_t n, cap;
};

static void put(struct pbuf *b, struct bpf_insn in)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 1024;
		b->p = realloc(b->p, b->cap * sizeof(*b->p));
		if (!b->p)
			exit(1);
	}
	b->p[b->n++] = in;
}

/*
 * Prologue shared by both shapes: r6 = a value of map 0 (64 bytes; NULL ->
 * return 0), r7 = an unknown scalar from it, r8/r9 = constants.
 */
static void prologue(struct pbuf *b)
{
	put(b, I(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0));
	put(b, I(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_IDX, 0, 0));
	put(b, I(0, 0, 0, 0, 0));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0));
	put(b, I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4));
	put(b, I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem));
	put(b, I(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 2, 0));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0));
	put(b, I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_X, 6, 0, 0, 0));
	put(b, I(BPF_LDX | BPF_MEM | BPF_DW, 7, 6, 0, 0));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_K, 8, 0, 0, 1));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_K, 9, 0, 0, 3));
}

static void epilogue(struct pbuf *b)
{
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_X, 0, 8, 0, 0));
	put(b, I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
}

/* 12 insns: ALU on r7-r9 and a bounds-checked (masked) access to the map value. */
static void straight_block(struct pbuf *b, unsigned k)
{
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 7, 0, 0));
	put(b, I(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, 0x38));	/* 0..56, 8-aligned */
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 6, 0, 0));
	put(b, I(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0));
	put(b, I(BPF_LDX | BPF_MEM | BPF_DW, 3, 2, 0, 0));
	put(b, I(BPF_ALU64 | BPF_ADD | BPF_X, 7, 3, 0, 0));
	put(b, I(BPF_ALU64 | BPF_XOR | BPF_K, 8, 0, 0, (int32_t)(k * 2654435761u)));
	put(b, I(BPF_ALU64 | BPF_MUL | BPF_K, 9, 0, 0, 5));
	put(b, I(BPF_ALU | BPF_ADD | BPF_X, 9, 8, 0, 0));
	put(b, I(BPF_ALU64 | BPF_RSH | BPF_K, 9, 0, 0, 1));
	put(b, I(BPF_STX | BPF_MEM | BPF_DW, 6, 9, (int16_t)(8 * (k % 8)), 0));
	put(b, I(BPF_STX | BPF_MEM | BPF_DW, 2, 8, 0, 0));
}

/*
 * 16 insns: a diamond on an unknown value (both arms reachable) choosing an
 * offset, the access with it, and masked arithmetic. One conditional branch
 * per block keeps a 100k-insn program under the 8192 pending-branch limit
 * (Linux's BPF_COMPLEXITY_LIMIT_JMP_SEQ); the arm registers are dead after
 * the block, so the second arm is pruned at the next join and the walk stays
 * linear.
 */
static void branchy_block(struct pbuf *b, unsigned k)
{
	put(b, I(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, (int16_t)(8 * (k % 8)), 0));
	put(b, I(BPF_JMP | BPF_JSET | BPF_K, 3, 0, 2, 1 << (k % 16)));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, 8));
	put(b, I(BPF_JMP | BPF_JA, 0, 0, 1, 0));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, 16));
	put(b, I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 6, 0, 0));
	put(b, I(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0));
	put(b, I(BPF_LDX | BPF_MEM | BPF_DW, 4, 2, 0, 0));
	put(b, I(BPF_ALU64 | BPF_AND | BPF_K, 4, 0, 0, 0x3ff));
	put(b, I(BPF_ALU64 | BPF_ADD | BPF_X, 8, 4, 0, 0));
	put(b, I(BPF_ALU64 | BPF_AND | BPF_K, 8, 0, 0, 0xffff));
	put(b, I(BPF_STX | BPF_MEM | BPF_DW, 6, 8, 24, 0));
	put(b, I(BPF_ALU64 | BPF_XOR | BPF_K, 9, 0, 0, (int32_t)k));
	put(b, I(BPF_ALU64 | BPF_MUL | BPF_K, 9, 0, 0, 3));
	put(b, I(BPF_ALU64 | BPF_ADD | BPF_X, 7, 9, 0, 0));
	put(b, I(BPF_ALU64 | BPF_AND | BPF_K, 7, 0, 0, 0x38));
}

struct synth {
	const char *shape;
	size_t target;
	size_t insns;
	struct meas m;
};

static void synth_one(struct gpuext_runtime *rt, struct gpuext_map *map, struct synth *s, int reps)
{
	struct pbuf b = { 0 };
	struct gpuext_prog *prog = NULL;
	bool branchy = !strcmp(s->shape, "branchy");
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST);
	int err;

	prologue(&b);
	for (unsigned k = 0; b.n + (branchy ? 16 : 12) + 2 <= s->target; k++)
		(branchy ? branchy_block : straight_block)(&b, k);
	epilogue(&b);
	s->insns = b.n;
	err = gpuext_prog__new(rt, s->shape, b.p, b.n, &map, 1, &prog);
	free(b.p);
	if (err) {
		s->m.err = err;
		return;
	}
	s->m = measure(prog, &vo, reps);
	gpuext_prog__free(prog);
}

static void bench_synthetic(int reps)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = quiet);
	GPUEXT_OPTS(gpuext_map_def, def, .name = "vals", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 64, .max_entries = 1);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *map = NULL;
	static const char *shapes[] = { "straight", "branchy" };
	static const size_t sizes[] = { 1000, 10000, 100000 };
	struct synth s[6];

	if (gpuext_runtime__new(&ro, &rt) || gpuext_map__create(rt, &def, &map)) {
		printf("  cannot create the runtime/map\n");
		exit(1);
	}
	printf("%-9s %7s %-24s %10s %7s %6s %10s %11s %14s\n", "shape", "insns", "verdict",
	       "processed", "states", "peak", "time(ms)", "us/1k insn", "growth t (n)");
	for (int sh = 0; sh < 2; sh++) {
		for (int z = 0; z < 3; z++) {
			struct synth *c = &s[sh * 3 + z];

			*c = (struct synth){ .shape = shapes[sh], .target = sizes[z] };
			synth_one(rt, map, c, reps);
			if (c->m.err && !c->m.res.sz) {
				printf("%-9s %7zu does not build (%s)\n", c->shape, c->insns,
				       strerror(-c->m.err));
				continue;
			}
			double ms = c->m.res.time_ns / 1e6;
			char growth[32] = "-";

			if (z > 0 && s[sh * 3 + z - 1].m.res.time_ns)
				snprintf(growth, sizeof(growth), "x%.1f (x%.1f)",
					 (double)c->m.res.time_ns / s[sh * 3 + z - 1].m.res.time_ns,
					 (double)c->insns / s[sh * 3 + z - 1].insns);
			printf("%-9s %7zu %-24s %10llu %7u %6u %10.3f %11.1f %14s\n", c->shape, c->insns,
			       verdict(&c->m), (unsigned long long)c->m.res.insns_processed,
			       c->m.res.states, c->m.res.peak_states, ms,
			       c->insns ? c->m.res.time_ns / 1e3 / (c->insns / 1000.0) : 0.0, growth);
		}
	}
	printf("(growth t (n): time ratio to the next smaller size (instruction ratio); linear = equal)\n");
	gpuext_map__destroy(map);
	gpuext_runtime__free(rt);
}

int main(int argc, char **argv)
{
	int reps = 5;
	const char *dirs[16];
	int ndirs = 0;
	char defdir[2][4096];
	struct obj_totals t = { 0 };
	unsigned found = 0, policy_objs = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
			if (reps < 1)
				reps = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [--reps N] [DIR ...]\n", argv[0]);
			return 0;
		} else if (ndirs < 16) {
			dirs[ndirs++] = argv[i];
		}
	}
	if (!ndirs) {
		char self[4096];

		snprintf(self, sizeof(self), "%s", argv[0]);
		snprintf(defdir[0], sizeof(defdir[0]), "%s/policies", dirname(self));
		snprintf(self, sizeof(self), "%s", argv[0]);
		snprintf(defdir[1], sizeof(defdir[1]), "%s/tests/bpf", dirname(self));
		dirs[ndirs++] = defdir[0];
		dirs[ndirs++] = defdir[1];
	}
	print_machine(reps);

	printf("(a) programs of compiled objects (target: < 1 ms each)\n");
	printf("  %-26s %-24s %-30s %-24s %7s %9s %7s %6s %10s %s\n", "object", "program", "type",
	       "verdict", "insns", "processed", "states", "peak", "time(us)", "<1ms");
	for (int i = 0; i < ndirs; i++) {
		unsigned n = bench_dir(dirs[i], reps, &t);

		found += n;
		if (strstr(dirs[i], "policies"))
			policy_objs += n;
	}
	if (!policy_objs)
		printf("  note: no compiled policy objects found (build the 'policies' target); "
		       "the rows above are test objects only\n");
	if (!found)
		printf("  no objects found at all: pass the directories holding *.bpf.o\n");
	else
		printf("  summary: %u objects (%u opened), %u programs, %u accepted, %u under 1 ms, "
		       "%u did not finish in %d s; slowest finished: %.1f us (%s)\n",
		       t.objects, t.opened, t.progs, t.accepted, t.under_1ms, t.timeouts,
		       CHILD_TIMEOUT_S, t.worst_ns / 1e3, t.worst[0] ? t.worst : "-");

	printf("\n(b) synthetic programs (host type, one 64-byte array map; straight = 12-insn "
	       "blocks of ALU + masked map-value access; branchy = 16-insn blocks with a diamond "
	       "choosing the access offset)\n");
	bench_synthetic(reps);
	return 0;
}
