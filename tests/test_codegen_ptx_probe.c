/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device probes as PTX functions (codegen/ptx/ptx_probe.c): the probes of an
 * object (tests/bpf/probe_all.bpf.c: all four events, array, per-GPU array,
 * hash and ring-buffer maps) are emitted for sm_75/sm_80/sm_90 in warp and
 * per-thread mode and assembled with ptxas inside a module that calls them,
 * as the splicer's output will. Checks the text's contract (no module
 * header, gpuext_-only module-scope names, one map table, the version
 * comment), refusals (a probe the verifier rejects: -EPERM; an unknown
 * probe section: -EINVAL; no probes: -ENOENT), and the host side of the
 * device hash-map layout.
 *
 * Exits 77 (skipped) when ptxas is absent: only the assembling needs it,
 * and without it this test would prove nothing about the PTX.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asm.h"
#include "gpuext/probe.h"
#include "gpuext/verifier.h"
#include "ptx/ptx.h"
#include "testlib.h"

static struct test_log logbuf;
static char ptxas[1024];
static char tmpdir[64];

_Static_assert(offsetof(struct gpuext_probe_ctx, args) == 104 &&
	       sizeof(struct gpuext_probe_ctx) == 112, "probe ctx layout the splicer writes");

static struct gpuext_runtime *new_rt(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &logbuf);
	struct gpuext_runtime *rt = NULL;

	test_log_clear(&logbuf);
	if (gpuext_runtime__new(&ro, &rt))
		return NULL;
	return rt;
}

static struct gpuext_object *open_obj(struct gpuext_runtime *rt, const char *name)
{
	struct gpuext_object *obj = NULL;
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/%s", GPUEXT_TEST_BPF_DIR, name);
	err = gpuext_object__open_file(rt, path, NULL, &obj);
	if (err)
		test_fail(__FILE__, __LINE__, "open %s: %d: %s", path, err, logbuf.buf);
	return obj;
}

/* Assembles @text; prints ptxas' complaint on failure. */
static bool assemble(const char *text, const char *sm, const char *what)
{
	char path[128], cmd[1400], out[4096];
	size_t n;
	FILE *f, *p;
	int st;

	snprintf(path, sizeof(path), "%s/probe.ptx", tmpdir);
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' -arch=%s -o /dev/null '%s' 2>&1", ptxas, sm, path);
	p = popen(cmd, "r");
	if (!p)
		return false;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s: ptxas -arch=%s failed:\n%s\n", what, sm, out);
		if (getenv("GPUEXT_TEST_VERBOSE"))
			fprintf(stderr, "%s\n", text);
		return false;
	}
	return true;
}

/*
 * The probe text inside a module for @sm with a kernel that builds a
 * context in local memory and calls every probe @events names: what a
 * spliced application module looks like to ptxas.
 */
static char *wrap(const char *probes, const char *version, const char *sm, uint32_t events)
{
	static const char *const ev[4] = { "entry", "exit", "load", "store" };
	size_t cap = strlen(probes) + 4096, len;
	char *m = malloc(cap);

	if (!m)
		return NULL;
	len = (size_t)snprintf(m, cap, ".version %s\n.target %s\n.address_size 64\n\n%s\n"
			       ".visible .entry gx_test_caller(.param .u64 gx_test_caller_p)\n{\n"
			       "\t.reg .b64 %%rd<3>;\n\t.reg .b32 %%r<2>;\n"
			       "\tmov.u64 %%rd1, 42;\n\tmov.u32 %%r1, 4;\n",
			       version, sm, probes);
	/* (kernel id, args, addr, value, size): hal/nvidia/ptx_splice.h */
	for (int e = 0; e < 4; e++)
		if (events & (1u << e))
			len += (size_t)snprintf(m + len, cap - len, "\t{\n\t.param .b64 a;\n"
						"\t.param .b64 b;\n\t.param .b64 c;\n"
						"\t.param .b64 d;\n\t.param .b32 e;\n"
						"\tst.param.b64 [a], %%rd1;\n\tst.param.b64 [b], 0;\n"
						"\tst.param.b64 [c], %%rd1;\n\tst.param.b64 [d], 7;\n"
						"\tst.param.b32 [e], %%r1;\n"
						"\tcall gpuext_probe_%s, (a, b, c, d, e);\n\t}\n", ev[e]);
	snprintf(m + len, cap - len, "\tret;\n}\n");
	return m;
}

/* The text of PTX function @name's definition (malloc'd), or NULL. */
static char *func_text(const char *t, const char *name)
{
	char head[128];
	const char *a, *b;

	snprintf(head, sizeof(head), ".func %s(\n", name);
	a = strstr(t, head);
	b = a ? strstr(a, "\n}\n") : NULL;
	return b ? strndup(a, (size_t)(b - a) + 3) : NULL;
}

/*
 * Every name declared at module scope (outside any { }) must start with
 * gpuext_: the text is appended to application modules. Returns the count
 * of offending declarations (printed).
 */
static unsigned foreign_names(const char *t)
{
	static const char *const kinds[] = { ".func", ".entry", ".global", ".const", ".shared" };
	unsigned bad = 0;
	int depth = 0;

	for (const char *l = t; *l;) {
		const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
		char line[512];
		size_t n = (size_t)(end - l) < sizeof(line) - 1 ? (size_t)(end - l) : sizeof(line) - 1;

		memcpy(line, l, n);
		line[n] = '\0';
		if (depth == 0 && strncmp(line, "//", 2)) {
			for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
				char *p = strstr(line, kinds[k]), *name;

				if (!p)
					continue;
				p += strlen(kinds[k]);
				/* the name: the last identifier before '(' or '[' or ';' or end */
				name = NULL;
				for (char *q = p; *q && *q != '(' && *q != '[' && *q != ';'; q++)
					if ((q == p || q[-1] == ' ' || q[-1] == '\t') && *q != ' ' &&
					    *q != '\t' && *q != '.')
						name = q;
				if (name && strncmp(name, "gpuext_", 7)) {
					fprintf(stderr, "module-scope name without gpuext_: %s\n", line);
					bad++;
				}
				break;
			}
		}
		for (const char *c = l; c < end; c++)
			depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
		l = nl ? nl + 1 : end;
	}
	return bad;
}

static unsigned count_str(const char *t, const char *s)
{
	unsigned n = 0;

	for (const char *p = strstr(t, s); p; p = strstr(p + 1, s))
		n++;
	return n;
}

static void test_probe_all(void)
{
	static const char *const sms[] = { "sm_75", "sm_80", "sm_90" };
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj = rt ? open_obj(rt, "probe_all.bpf.o") : NULL;
	char *first[2] = { NULL, NULL };

	if (!obj) {
		CHECK(obj);
		gpuext_runtime__free(rt);
		return;
	}
	/* The precondition of object-wide map indexes: every probe sees the object's list. */
	{
		struct gpuext_prog *en = gpuext_object__find_prog(obj, "probe_entry");
		struct gpuext_prog *ex = gpuext_object__find_prog(obj, "probe_exit");
		struct gpuext_map *calls = gpuext_object__find_map(obj, "calls");

		CHECK(en && ex && calls);
		if (en && ex && calls) {
			size_t ie = SIZE_MAX, ix = SIZE_MAX;

			for (size_t i = 0; i < gpuext_prog__map_cnt(en); i++)
				if (gpuext_prog__map(en, i) == calls)
					ie = i;
			for (size_t i = 0; i < gpuext_prog__map_cnt(ex); i++)
				if (gpuext_prog__map(ex, i) == calls)
					ix = i;
			CHECK(ie != SIZE_MAX);
			CHECK_EQ_U64(ie, ix);
		}
	}
	for (size_t s = 0; s < sizeof(sms) / sizeof(sms[0]); s++) {
		for (int m = 0; m < 2; m++) {
			bool per_thread = m == 1;
			char *text = NULL, *again = NULL, *mod, version[16] = "";
			const char *vp;
			size_t len = 0, len2 = 0;
			uint32_t events = 0, ev2 = 0;
			char what[64];
			int err;

			snprintf(what, sizeof(what), "probe_all [%s, %s]", sms[s],
				 per_thread ? "per-thread" : "warp");
			test_log_clear(&logbuf);
			err = gpuext_ptx_probe_emit(obj, sms[s], per_thread, &events, &text, &len);
			CHECK_EQ_INT(err, 0);
			if (err) {
				fprintf(stderr, "%s: %s\n", what, logbuf.buf);
				continue;
			}
			CHECK_EQ_U64(events, 0xf);
			CHECK_EQ_U64(len, strlen(text));
			/* The calling convention the splicer relies on. */
			CHECK_STR_CONTAINS(text, ".func gpuext_probe_entry(\n"
					   "\t.param .b64 gpuext_probe_entry_param_0,\n"
					   "\t.param .b64 gpuext_probe_entry_param_1,\n"
					   "\t.param .b64 gpuext_probe_entry_param_2,\n"
					   "\t.param .b64 gpuext_probe_entry_param_3,\n"
					   "\t.param .b32 gpuext_probe_entry_param_4\n)");
			/*
			 * The map shapes are compiled in: the entry probe uses arrays
			 * only, so no hash code (FNV-1a's prime) and no local memory
			 * (the context and the key slots live in registers); the
			 * load probe hashes its key.
			 */
			{
				char *fe = func_text(text, "gpuext_probe_entry");
				char *fl = func_text(text, "gpuext_probe_load");

				CHECK(fe && fl);
				if (fe && fl) {
					CHECK(!strstr(fe, "16777619") && !strstr(fe, ".local"));
					CHECK(strstr(fl, "16777619") != NULL);
				}
				free(fe);
				free(fl);
			}
			CHECK_STR_CONTAINS(text, ".func gpuext_probe_exit(");
			CHECK_STR_CONTAINS(text, ".func gpuext_probe_load(");
			CHECK_STR_CONTAINS(text, ".func gpuext_probe_store(");
			/*
			 * One table for the object's 4 maps (4 x 40 bytes), filled by the
			 * host, in the constant space (every probe reads it: a constant
			 * bank operand, no load from device memory), and so is the GPU
			 * id. Nothing reaches the table through a generic address.
			 */
			CHECK_EQ_INT(count_str(text, ".visible .const .align 8 .b8 gpuext_rt_maps[160]"), 1);
			CHECK_EQ_INT(count_str(text, ".visible .const .align 4 .u32 gpuext_rt_gpu_id;"), 1);
			CHECK(strstr(text, "ld.const.b64") != NULL);
			CHECK(!strstr(text, "cvta.const") && !strstr(text, "cvta.to.const"));
			CHECK(!strstr(text, "\n.version") && !strstr(text, "\n.target") &&
			      !strstr(text, ".address_size"));
			CHECK(!strstr(text, ".extern"));
			CHECK_EQ_INT(foreign_names(text), 0);
			/*
			 * Every atomic (the probes' map updates, the ring's CAS, the hash
			 * map's claims) names the global space: a generic one makes
			 * ptxas wait on a space test at run time (gpuext_ptx_global_atomics).
			 */
			{
				unsigned all = 0, generic = 0;

				for (const char *l = text; (l = strchr(l, '\n')); l++) {
					const char *e = strchr(l + 1, '\n');
					size_t n = e ? (size_t)(e - l) : strlen(l);
					char line[160];

					if (strncmp(l, "\n\tatom.", 7) && strncmp(l, "\n\tred.", 6))
						continue;
					snprintf(line, sizeof(line), "%.*s", (int)n, l);
					all++;
					/* atom[.sem][.scope].global.op: the space after the qualifiers */
					generic += !strstr(line, ".global.");
				}
				CHECK(all >= 3);
				CHECK_EQ_INT(generic, 0);
			}
			/* The hash map claims buckets (EMPTY -> BUSY) and deletes (FULL -> DELETED) by CAS. */
			CHECK(strstr(text, ".cas.b32") && strstr(text, ", 0, 1;"));
			CHECK(strstr(text, ", 2, 3;"));
			if (per_thread) {
				/* No leader election; the exit probe's ring reserve groups the
				 * lanes of a warp (one CAS per group, rank by lanemask_lt). Its
				 * size is a constant, so the group is the active mask: no
				 * match.any (ptx_runtime.c, rt_rb_thread). */
				CHECK(!strstr(text, "bar.warp.sync"));
				CHECK(strstr(text, "%lanemask_lt") && strstr(text, "shfl.sync.idx.b32"));
				CHECK(!strstr(text, "match.any.sync"));
			} else {
				/* Leader election once per event, and the wait of the other
				 * lanes at loads and stores only (not at the exit, where the
				 * ret follows, nor at the entry: ptx_probe.c says why); the
				 * leader reserves ring records alone. */
				CHECK_EQ_INT(count_str(text, "activemask.b32"), 4);
				CHECK_EQ_INT(count_str(text, "bar.warp.sync"), 2);
				/*
				 * The exit's runner is lane 0, not the lowest active lane,
				 * and with no warp guard at the site it is told from the
				 * linear thread index mod 32, not by an S2R of %laneid
				 * (ptx_probe.c, wrapper_ir).
				 */
				CHECK_EQ_INT(count_str(text, "%lanemask_lt"), 3);
				{
					char *fx = func_text(text, "gpuext_probe_exit");

					CHECK(fx && !strstr(fx, "%laneid") && strstr(fx, "%tid.x") &&
					      strstr(fx, ", 31;"));
					free(fx);
				}
				CHECK(!strstr(text, "match.any.sync"));
			}
			vp = strstr(text, "// gpuext-ptx-version ");
			CHECK(vp);
			if (vp)
				sscanf(vp + 22, "%15[0-9.]", version);
			CHECK(version[0] != '\0');
			{
				char tgt[48];

				snprintf(tgt, sizeof(tgt), "\n// gpuext-ptx-target %s\n", sms[s]);
				CHECK_STR_CONTAINS(text, tgt);
			}
			/* Deterministic. */
			CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, sms[s], per_thread, &ev2, &again, &len2), 0);
			CHECK(again && len2 == len && !memcmp(again, text, len));
			free(again);
			/* Warp and per-thread text differ. */
			if (s == 1)
				first[m] = strdup(text);
			mod = wrap(text, version, sms[s], events);
			test_checks++;
			if (!mod || !assemble(mod, sms[s], what))
				test_fail(__FILE__, __LINE__, "%s: the probes do not assemble", what);
			/* Text for one sm assembles inside a module for a later one. */
			if (s == 0) {
				free(mod);
				mod = wrap(text, version, "sm_90", events);
				test_checks++;
				if (!mod || !assemble(mod, "sm_90", what))
					test_fail(__FILE__, __LINE__, "%s in an sm_90 module", what);
			}
			free(mod);
			free(text);
		}
	}
	CHECK(first[0] && first[1] && strcmp(first[0], first[1]));
	free(first[0]);
	free(first[1]);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

/*
 * The shipped probe tools (the tools/probes objects, when the build has made
 * them): each must emit in both modes and assemble for sm_90. Missing
 * objects are said, not failed: they are another target's output.
 */
static void test_tools(void)
{
	static const char *const tools[] = { "kernelretsnoop", "threadhist", "launchlate",
					      "memtrace", "smload", "kerneldur" };
	unsigned done = 0;

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		struct gpuext_runtime *rt;
		struct gpuext_object *obj = NULL;
		char path[512];

		snprintf(path, sizeof(path), "%s/../../tools/probes/%s.bpf.o", GPUEXT_TEST_BPF_DIR,
			 tools[i]);
		if (access(path, R_OK)) {
			printf("test_codegen_ptx_probe: %s not built: not checked\n", path);
			continue;
		}
		rt = new_rt();
		if (!rt || gpuext_object__open_file(rt, path, NULL, &obj)) {
			test_fail(__FILE__, __LINE__, "open %s: %s", path, logbuf.buf);
			gpuext_runtime__free(rt);
			continue;
		}
		for (int m = 0; m < 2; m++) {
			char *text = NULL, *mod, what[96], version[16] = "8.0";
			const char *vp;
			uint32_t ev = 0;
			size_t len = 0;
			int err;

			snprintf(what, sizeof(what), "%s [%s]", tools[i], m ? "per-thread" : "warp");
			test_log_clear(&logbuf);
			err = gpuext_ptx_probe_emit(obj, "sm_90", m == 1, &ev, &text, &len);
			test_checks++;
			if (err) {
				test_fail(__FILE__, __LINE__, "%s: emit = %d: %s", what, err, logbuf.buf);
				continue;
			}
			CHECK(ev != 0);
			/* No field of theirs is narrower than 4 bytes: every access is proven aligned. */
			if (count_str(text, "st.u8") + count_str(text, "st.b8") +
			    count_str(text, "ld.u8") + count_str(text, "ld.b8"))
				test_fail(__FILE__, __LINE__, "%s: byte-wise loads or stores in the "
					  "probe code (an access not proven aligned)", what);
			/* kerneldur raises its end times with a global atomic max (gpuext_atomic_max) */
			if (!strcmp(tools[i], "kerneldur"))
				CHECK_STR_CONTAINS(text, "atom.global.max.u64");
			/*
			 * The ring tools reserve through a block-scope (L1-cacheable)
			 * look at the shard header's full_mark (+24) first: a mark under
			 * GPUEXT_PTX_RB_FULL_TICKS ticks old for no more bytes is a drop at
			 * once; else at prod and cons (+0, +8). "Full" seen so is trusted
			 * only while the mark is recent, else prod and cons are read again
			 * at device scope, relaxed (an acquire would invalidate the whole
			 * L1), and a writer that sees it full so stamps the mark at device
			 * scope. Drops are counted on the line after the headers (rounded
			 * up to 128 bytes), not in the header the first look reads.
			 */
			/*
			 * launchlate's slot ring (probes.h): one relaxed returning add on
			 * its GPU's counter and plain stores; no CAS, no fence, no release.
			 */
			if (!strcmp(tools[i], "launchlate")) {
				CHECK_EQ_INT(count_str(text, "atom.global.add.u64"), 1);
				CHECK_EQ_INT(count_str(text, "cas"), 0);
				CHECK_EQ_INT(count_str(text, "fence") + count_str(text, "membar") +
						     count_str(text, ".release") + count_str(text, ".acquire"),
					     0);
				CHECK(count_str(text, "st.b64") + count_str(text, "st.v2.b64") >= 2);
			}
			/*
			 * The ring's shard: from %smid, %warpid and %ctaid.x; kernelretsnoop
			 * runs in warp 0 only (probe/exit/warp0), so without %warpid.
			 */
			if (!strcmp(tools[i], "kernelretsnoop")) {
				const char *st = strstr(text, "st.relaxed.gpu.b64 \t[");
				char reg[16] = "", orl[48];

				CHECK_EQ_INT(count_str(text, "%warpid"), 0);
				/* its record takes 48 bytes: the mark it stores is (ticks << 32) | 48 */
				CHECK(st && sscanf(st, "st.relaxed.gpu.b64 \t[%*[^]]], %15[^;];", reg) == 1);
				snprintf(orl, sizeof(orl), "or.b64 \t%s, ", reg);
				CHECK(reg[0] && strstr(text, orl) &&
				      strstr(strstr(text, orl), ", 48;") &&
				      strchr(strstr(text, orl), '\n') > strstr(strstr(text, orl), ", 48;"));
			}
			if (!strcmp(tools[i], "memtrace"))
				CHECK(count_str(text, "%warpid") >= 1);
			if (!strcmp(tools[i], "kernelretsnoop") || !strcmp(tools[i], "memtrace")) {
				char window[32];
				const char *mark, *look;

				CHECK(count_str(text, "%smid") >= 1 && count_str(text, "%ctaid.x") >= 1);
				snprintf(window, sizeof(window), ", %d;", GPUEXT_PTX_RB_FULL_TICKS);
				CHECK(strstr(text, window) != NULL);
				snprintf(window, sizeof(window), ", %d;", GPUEXT_PTX_RB_MARK_SHIFT);
				CHECK(strstr(text, window) != NULL);
				CHECK(count_str(text, "ld.relaxed.cta.b64") >= 3);
				CHECK(strstr(text, "+8];") && count_str(text, "+24];") >= 1);
				/* the mark is the first look: before prod and cons */
				mark = strstr(text, "ld.relaxed.cta.b64");
				look = mark ? strstr(mark + 1, "ld.relaxed.cta.b64") : NULL;
				CHECK(mark && strchr(mark, '\n') && strstr(mark, "+24];") &&
				      strstr(mark, "+24];") < strchr(mark, '\n'));
				CHECK(look && strstr(mark, "globaltimer") &&
				      strstr(mark, "globaltimer") < look);
				CHECK_EQ_INT(count_str(text, "ld.acquire.gpu"), 0);
				CHECK(count_str(text, "ld.relaxed.gpu.b64") >= 2);
				CHECK(strstr(text, ", 127;") != NULL);
				CHECK(count_str(text, "st.relaxed.gpu.b64") >= 1);
				CHECK(strstr(text, "atom.acquire.gpu.global.cas.b64") != NULL);
				/* the stamp goes to +24 and only there */
				CHECK(strstr(text, "st.relaxed.gpu.b64 \t[") &&
				      strstr(strstr(text, "st.relaxed.gpu.b64 \t["), "+24], %rd"));
			}
			vp = strstr(text, "// gpuext-ptx-version ");
			if (vp)
				sscanf(vp + 22, "%15[0-9.]", version);
			mod = wrap(text, version, "sm_90", ev);
			test_checks++;
			if (!mod || !assemble(mod, "sm_90", what))
				test_fail(__FILE__, __LINE__, "%s: the probes do not assemble", what);
			else
				done++;
			free(mod);
			free(text);
		}
		gpuext_object__close(obj);
		gpuext_runtime__free(rt);
	}
	printf("test_codegen_ptx_probe: %u probe-tool emissions assembled\n", done);
}

static void test_refusals(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj;
	uint32_t events = 123;
	char *text = NULL;
	size_t len = 7;

	if (!rt) {
		CHECK(rt);
		return;
	}
	obj = open_obj(rt, "probe_bad.bpf.o");
	if (obj) {
		test_log_clear(&logbuf);
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", false, &events, &text, &len), -EPERM);
		CHECK(!text && len == 0 && events == 0);
		CHECK_STR_CONTAINS(logbuf.buf, "probe probe_writes_ctx (SEC(\"probe/exit\")) is not "
				   "verified as a device_probe");
		gpuext_object__close(obj);
	}
	obj = open_obj(rt, "probe_badsec.bpf.o");
	if (obj) {
		test_log_clear(&logbuf);
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", false, &events, &text, &len), -EINVAL);
		CHECK_STR_CONTAINS(logbuf.buf, "unknown probe section 'probe/retire'");
		gpuext_object__close(obj);
	}
	obj = open_obj(rt, "loader_tiny.bpf.o");
	if (obj) {
		test_log_clear(&logbuf);
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", false, &events, &text, &len), -ENOENT);
		CHECK_STR_CONTAINS(logbuf.buf, "has no SEC(\"probe/...\") program");
		gpuext_object__close(obj);
	}
	obj = open_obj(rt, "probe_all.bpf.o");
	if (obj) {
		test_log_clear(&logbuf);
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_52", false, &events, &text, &len), -EINVAL);
		CHECK_STR_CONTAINS(logbuf.buf, "unsupported target 'sm_52'");
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", false, &events, NULL, &len), -EINVAL);
		gpuext_object__close(obj);
	}
	gpuext_runtime__free(rt);
}

/*
 * Per-thread ring groups: a reservation of a constant size (bpf_ringbuf_reserve)
 * groups the active lanes without match.any; bpf_ringbuf_output of a size the
 * verifier knows only by its bounds (probe_bigrec: 17 + sm_id % 32 bytes) still
 * matches lanes by size, since lanes of one call may ask for different sizes.
 */
static void test_ring_groups(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj;
	uint32_t events = 0;
	char *text = NULL, *mod;
	size_t len = 0;

	if (!rt) {
		CHECK(rt);
		return;
	}
	obj = open_obj(rt, "probe_bigrec.bpf.o");
	if (obj) {
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", true, &events, &text, &len), 0);
		if (text) {
			CHECK_EQ_INT(count_str(text, "match.any.sync.b64"), 1);
			CHECK(strstr(text, "%lanemask_lt") && strstr(text, "shfl.sync.idx.b32"));
			mod = wrap(text, "8.0", "sm_80", events);
			CHECK(mod && (!ptxas[0] || assemble(mod, "sm_80", "probe_bigrec per-thread")));
			free(mod);
		}
		free(text);
		text = NULL;
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", false, &events, &text, &len), 0);
		CHECK(text && !strstr(text, "match.any.sync"));	/* warp mode: the leader alone */
		free(text);
		gpuext_object__close(obj);
	}
	gpuext_runtime__free(rt);
}

/*
 * tests/bpf/probe_ballot.bpf.c: a ballot of true where every lane runs, its
 * result stored by lane 0 alone. The runtime's one mask read for the
 * collectives (ptx_runtime.c, gx.warp_mask) must stay where the ballot is,
 * ahead of the branch on the lane: sunk into lane 0's branch, it counts lane
 * 0 alone (a review found LLVM moving it there while it was not convergent).
 */
static void test_ballot_place(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj = rt ? open_obj(rt, "probe_ballot.bpf.o") : NULL;
	uint32_t events = 0;
	char *text = NULL, *f = NULL;
	size_t len = 0;

	CHECK(obj != NULL);
	if (obj) {
		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", true, &events, &text, &len), 0);
		f = text ? func_text(text, "gpuext_probe_load") : NULL;
		CHECK(f != NULL);
		if (f) {
			const char *am = strstr(f, "activemask.b32"), *br = strstr(f, " bra");

			CHECK_EQ_INT(count_str(f, "activemask.b32"), 1);
			CHECK(!strstr(f, "vote.sync"));	/* a constant ballot is the mask */
			CHECK(am && br && am < br);
		}
		free(f);
		free(text);
		gpuext_object__close(obj);
	}
	gpuext_runtime__free(rt);
}

/*
 * Site guards from the sections (probe/entry/block0, probe/exit/warp0,
 * probe/exit/first): the text says what each event's sites test, and a
 * program that asks for more than its site tests the rest in the wrapper.
 */
static void test_guards(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj = rt ? open_obj(rt, "probe_guards.bpf.o") : NULL;

	for (int m = 0; obj && m < 2; m++) {
		char *text = NULL, *fx;
		size_t len = 0;
		uint32_t events = 0;

		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_80", m == 1, &events, &text, &len), 0);
		if (!text)
			continue;
		CHECK_EQ_U64(events, 0x3);
		/* entry: block (0,0,0) = 2; exit: warp 0 = 1, what both exit programs ask. */
		CHECK_STR_CONTAINS(text, "// gpuext-site-guards 2 1 0 0\n");
		/* guard_exit_first checks block (0,0,0) in the wrapper: the ctaid reads are there. */
		fx = func_text(text, "gpuext_probe_exit");
		CHECK(fx && strstr(fx, "%ctaid.x") && strstr(fx, "%ctaid.z"));
		/*
		 * What a site's guard tested is a constant in its programs' context:
		 * guard_exit_warp0's warp_id test folds away with its %tid reads,
		 * guard_entry's block_id test with its %ctaid reads.
		 */
		CHECK(fx && !strstr(fx, "%tid."));
		/* under a warp 0 guard the exit's lane 0 is told by %laneid (nothing else needs %tid) */
		CHECK(fx && (m == 1 || strstr(fx, "%laneid")));
		/* the entry runs in all warps of block 0: the exit's ring keeps %warpid in its shard */
		CHECK(fx && strstr(fx, "%warpid") && strstr(fx, "%smid"));
		free(fx);
		fx = func_text(text, "gpuext_probe_entry");
		CHECK(fx && !strstr(fx, "%ctaid."));
		/* no barrier in an entry wrapper (ptx_probe.c, wrapper_ir) */
		CHECK(fx && !strstr(fx, "bar.warp.sync"));
		free(fx);
		free(text);
	}
	if (obj)
		gpuext_object__close(obj);
	else
		CHECK(obj);
	gpuext_runtime__free(rt);
}

/* The host side of the device hash layout (ptx.h): geometry, image, lookup. */
static void test_hash_layout(void)
{
	struct gpuext_runtime *rt = new_rt();
	GPUEXT_OPTS(gpuext_map_def, hd, .name = "h", .type = BPF_MAP_TYPE_HASH, .key_size = 12,
		    .value_size = 20, .max_entries = 100);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "a", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 2);
	struct gpuext_map *h = NULL, *a = NULL;
	struct gpuext_ptx_map_desc d;
	uint32_t nb = 0, bs = 0;
	uint8_t *img = NULL;
	size_t bytes = 0;

	if (!rt) {
		CHECK(rt);
		return;
	}
	/* 100 entries -> 256 buckets (>= 2x, power of 2); 8 + 16 (key) + 24 (value). */
	CHECK_EQ_INT(gpuext_ptx_hash_layout(12, 20, 100, &nb, &bs, &bytes), 0);
	CHECK_EQ_U64(nb, 256);
	CHECK_EQ_U64(bs, 48);
	CHECK_EQ_U64(bytes, 16 + 256 * 48);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(4, 8, 64, &nb, &bs, &bytes), 0);
	CHECK_EQ_U64(nb, 128);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(0, 8, 4, &nb, &bs, &bytes), -EINVAL);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(8, 8, 1u << 24, &nb, &bs, &bytes), -E2BIG);
	/* FNV-1a 32: the published test vectors ("" and "a"). */
	CHECK_EQ_U64(gpuext_ptx_hash_key("", 0), 0x811c9dc5u);
	CHECK_EQ_U64(gpuext_ptx_hash_key("a", 1), 0xe40c292cu);

	CHECK_EQ_INT(gpuext_map__create(rt, &hd, &h), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &a), 0);
	if (h && a) {
		uint8_t key[12], val[20];

		for (uint32_t i = 0; i < 60; i++) {
			memset(key, 0, sizeof(key));
			memcpy(key, &i, 4);
			key[11] = (uint8_t)(i * 7);
			memset(val, (int)(i + 1), sizeof(val));
			CHECK_EQ_INT(gpuext_map__update(h, key, val, BPF_ANY), 0);
		}
		CHECK_EQ_INT(gpuext_ptx_hash_image(h, &d, &img, &bytes), 0);
		CHECK_EQ_U64(d.type, BPF_MAP_TYPE_HASH);
		CHECK_EQ_U64(d.key_size, 12);
		CHECK_EQ_U64(d.stride, 24);
		CHECK_EQ_U64(d.base, 0);
		CHECK_EQ_U64(bytes, 16 + 256 * 48);
		if (img) {
			struct gpuext_ptx_hash_hdr *hh = (void *)img;
			unsigned full = 0;

			CHECK_EQ_U64(hh->nr_buckets, 256);
			CHECK_EQ_U64(hh->bucket_size, 48);
			CHECK_EQ_U64(hh->count, 60);
			CHECK_EQ_U64(hh->max_entries, 100);
			for (uint32_t b = 0; b < 256; b++) {
				uint32_t st;

				memcpy(&st, img + 16 + b * 48, 4);
				full += st == GPUEXT_PTX_HASH_FULL;
				CHECK(st == GPUEXT_PTX_HASH_FULL || st == GPUEXT_PTX_HASH_EMPTY);
			}
			CHECK_EQ_INT(full, 60);
			for (uint32_t i = 0; i < 60; i++) {
				uint8_t *v;

				memset(key, 0, sizeof(key));
				memcpy(key, &i, 4);
				key[11] = (uint8_t)(i * 7);
				v = gpuext_ptx_hash_lookup(img, 12, key);
				CHECK(v);
				if (v) {
					CHECK_EQ_U64(v[0], i + 1);
					CHECK_EQ_U64(v[19], i + 1);
					/* the value sits after state, hash and the rounded key */
					CHECK_EQ_U64((size_t)(v - img - 16) % 48, 8 + 16);
				}
			}
			memset(key, 0xee, sizeof(key));
			CHECK(!gpuext_ptx_hash_lookup(img, 12, key));
			/* Overwrite in place; a full table refuses a new key. */
			memset(val, 0x55, sizeof(val));
			memset(key, 0, sizeof(key));
			CHECK_EQ_INT(gpuext_ptx_hash_insert(img, 12, 20, key, val), 0);
			CHECK_EQ_U64(hh->count, 60);
			CHECK_EQ_U64(((uint8_t *)gpuext_ptx_hash_lookup(img, 12, key))[3], 0x55);
			hh->count = hh->max_entries;
			memset(key, 0xee, sizeof(key));
			CHECK_EQ_INT(gpuext_ptx_hash_insert(img, 12, 20, key, val), -E2BIG);
		}
		free(img);
		img = NULL;
		CHECK_EQ_INT(gpuext_ptx_hash_image(a, &d, &img, &bytes), -EINVAL);
		CHECK(!img);
	}
	gpuext_map__destroy(h);
	gpuext_map__destroy(a);
	gpuext_runtime__free(rt);
}

/*
 * gpuext_verify_result.mem_align: the alignment proven for each access
 * (what lets the PTX lifter emit one st.u64 for a u64 field instead of eight
 * st.u8). A raw program first, every value checked; then every load and
 * store of the kerneldur tool, which must all be proven naturally aligned.
 */
static void test_mem_align(void)
{
	static const char src[] =
		"r2 = r10\n"
		"r2 += -16\n"
		"r3 = 0x1\n"
		"*(u64 *)(r2 + 0x0) = r3\n"	/* 3: fp-16: 8 */
		"*(u32 *)(r2 + 0xc) = w3\n"	/* 4: fp-4: 4 */
		"*(u16 *)(r2 + 0xa) = w3\n"	/* 5: fp-6: 2 */
		"*(u8 *)(r2 + 0x9) = w3\n"	/* 6: fp-7: 1 */
		"r0 = *(u64 *)(r1 + 0x8)\n"	/* 7: the context, 8-aligned: 8 */
		"if r0 > 0x3 goto +1\n"
		"r2 += 4\n"			/* paths meet with fp-16 and fp-12 */
		"r0 = *(u32 *)(r2 + 0x0)\n"	/* 10: 4 on one path, 8 on the other: 4 */
		"r0 = 0x0\n"
		"exit\n";
	static const uint8_t want[] = { 0, 0, 0, 8, 4, 2, 1, 8, 0, 0, 4, 0, 0 };
	GPUEXT_OPTS(gpuext_asm_opts, ao);
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST, .ctx_size = 16);
	struct gpuext_verify_result res = { .sz = sizeof(res) };
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj = NULL;
	struct gpuext_prog *prog = NULL;
	struct bpf_insn *code = NULL;
	uint8_t got[sizeof(want)];
	size_t cnt = 0;
	char err[256], path[512];
	unsigned checked = 0;

	ao.rt = rt;
	CHECK(rt != NULL);
	if (!rt)
		return;
	CHECK_EQ_INT(gpuext_asm(src, &ao, &code, &cnt, err, sizeof(err)), 0);
	CHECK_EQ_INT(cnt, sizeof(want));
	if (cnt == sizeof(want) && !gpuext_prog__new(rt, "align", code, cnt, NULL, 0, &prog)) {
		memset(got, 0xee, sizeof(got));
		res.mem_align = got;
		CHECK_EQ_INT(gpuext_prog__verify(prog, &vo, &res), 0);
		CHECK(res.accepted);
		CHECK(res.mem_align == got);
		for (size_t i = 0; i < cnt; i++)
			if (got[i] != want[i])
				test_fail(__FILE__, __LINE__, "insn %zu: alignment %u, want %u", i,
					  got[i], want[i]);
		gpuext_prog__free(prog);
	}
	free(code);
	snprintf(path, sizeof(path), "%s/../../tools/probes/kerneldur.bpf.o", GPUEXT_TEST_BPF_DIR);
	if (access(path, R_OK)) {
		printf("test_codegen_ptx_probe: %s not built: alignment of its fields not checked\n",
		       path);
		gpuext_runtime__free(rt);
		return;
	}
	CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
	for (size_t i = 0; obj && i < gpuext_object__prog_cnt(obj); i++) {
		GPUEXT_OPTS(gpuext_verify_opts, dv, .type = GPUEXT_PROG_DEVICE_PROBE);
		struct gpuext_prog *p = gpuext_object__prog(obj, i);
		const struct bpf_insn *in = gpuext_prog__insns(p);
		size_t n = gpuext_prog__insn_cnt(p);
		uint8_t *a = calloc(n, 1);

		res = (struct gpuext_verify_result){ .sz = sizeof(res), .mem_align = a };
		CHECK(a != NULL);
		if (!a)
			break;
		CHECK_EQ_INT(gpuext_prog__verify(p, &dv, &res), 0);
		for (size_t k = 0; k < n; k++) {
			unsigned cls = BPF_CLASS(in[k].code), size;

			if (cls != BPF_LDX && cls != BPF_ST && cls != BPF_STX)
				continue;
			if (in[k].dst_reg == BPF_REG_10 || in[k].src_reg == BPF_REG_10)
				continue;	/* the frame: the lifter knows */
			size = BPF_SIZE(in[k].code) == BPF_DW ? 8 : BPF_SIZE(in[k].code) == BPF_W ? 4 :
			       BPF_SIZE(in[k].code) == BPF_H ? 2 : 1;
			checked += a[k] != 0;
			if (a[k] && a[k] < size)
				test_fail(__FILE__, __LINE__, "%s insn %zu: %u-byte access proven "
					  "%u-aligned only", gpuext_prog__name(p), k, size, a[k]);
		}
		free(a);
	}
	CHECK(checked >= 4);
	printf("test_codegen_ptx_probe: %u kerneldur accesses proven naturally aligned\n", checked);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

int main(void)
{
	const char *p = getenv("GPUEXT_PTXAS");

	if (!p || !*p)
		p = GPUEXT_PTXAS;
	test_hash_layout();
	test_guards();
	test_ballot_place();
	test_mem_align();
	test_ring_groups();
	if (!*p || strstr(p, "NOTFOUND") || access(p, X_OK)) {
		printf("test_codegen_ptx_probe: SKIP: ptxas not found (GPUEXT_PTXAS='%s'); install "
		       "the CUDA toolkit (ptxas in /usr/local/cuda/bin) and re-run cmake\n", p);
		return test_failures ? test_done("test_codegen_ptx_probe") : 77;
	}
	snprintf(ptxas, sizeof(ptxas), "%s", p);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gpuext-probe-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_probe_all();
	test_refusals();
	test_tools();
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/probe.ptx", tmpdir);
		unlink(path);
		rmdir(tmpdir);
	}
	return test_done("test_codegen_ptx_probe");
}
