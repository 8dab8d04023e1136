/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PTX splicer: the probes of a pack (codegen/ptx/ptx_probe.c) spliced
 * into an application's PTX module, at kernel entry, before every exit, and
 * after global loads/stores. Lives in the LD_PRELOAD library: libc and
 * gx_kernel_id() (hash.c) only, no LLVM.
 *
 * The parser works on statements, not a grammar (the scanner: ptx_scan.c,
 * the state the files share: ptx_splice_impl.h): PTX is regular enough
 * (nvcc, NVRTC, LLVM and Triton all print it the same way) that a scanner
 * which knows comments, strings, braces, labels and the few directives that
 * end at a newline (.version .target .address_size .file .loc) finds every
 * place we need, and copies everything else through byte for byte. What it
 * writes:
 *
 *   before the first function the pack's PTX: the probes' globals and
 *                             functions (the sites name the globals);
 *   after a body's '{'        .reg declarations (a prefix absent from the
 *                             module: %gxs_*, or %gxs1_* ...);
 *   at every site             the arguments of gpuext_probe_<event> (kernel
 *                             id, args, addr, value, size: ptx_splice.h) in
 *                             those registers, then the function's body
 *                             inlined in a nested block (ptx_inline.c);
 *   before the first code     the entry site, after the body's prologue of
 *   with an effect            parameter loads, moves and arithmetic
 *                             (gx_ptx_entry_may_follow());
 *   before each ret/exit      the exit site; a predicated one (@%p ret) is
 *                             skipped over by a branch on the negated
 *                             predicate, so the probe runs exactly when the
 *                             exit does;
 *   around ld/st.global       address (and store value) taken before the
 *                             instruction into our registers (the load may
 *                             overwrite its own address register), loaded
 *                             value after it; then the load/store site.
 *   generic ld/st (no state   the same, but only when isspacep.global says
 *   space)                    the address is global (LLVM-made PTX often
 *                             leaves global accesses generic).
 *
 * The module's .version and .target are raised to what the probes say they
 * need ("// gpuext-ptx-version", "// gpuext-ptx-target" in the pack's text);
 * raising .target (sm_52 -> sm_75) is what lets probes built for sm_75 land
 * in an old module; code that only PTX for sm_6x accepts (shfl without
 * .sync) would then be refused by the JIT, and said so.
 *
 * The probes themselves do leader election (warp mode), so any site works,
 * even under divergent control flow. The inlined bodies declare their own
 * registers in their nested block, which shadow the application's names;
 * PTX registers are virtual, so nothing of the application's is clobbered.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvprobe.h"
#include "ptx_splice.h"
#include "nv_util.h"
#include "ptx_text.h"
#include "ptx_splice_impl.h"
#include "ptx_twin.h"

/* ------------------------------------------------------------------ */
/* Output buffer                                                       */
/* ------------------------------------------------------------------ */


static void oput(struct obuf *b, const char *s, size_t n)
{
	/* n past half the address space is a caller's negative length: never copy it */
	if (b->oom || n > SIZE_MAX / 2) {
		b->oom = true;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void oprintf(struct obuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void oprintf(struct obuf *b, const char *fmt, ...)
{
	char tmp[512], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n < sizeof(tmp)) {
		oput(b, tmp, (size_t)n);
		return;
	}
	/* a line naming a long symbol (C++ names run to thousands of characters) */
	big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	oput(b, big, (size_t)n);
	free(big);
}

/* ------------------------------------------------------------------ */
/* Copying and inserting                                               */
/* ------------------------------------------------------------------ */

/* Copies the source up to @pos (unchanged) into the output. */
static void copy_to(struct splicer *s, size_t pos)
{
	if (pos > s->copied) {
		oput(&s->out, s->src + s->copied, pos - s->copied);
		s->copied = pos;
	}
}

/* Copies up to the current statement, leaving its indentation for after our lines. */
static void copy_to_stmt(struct splicer *s)
{
	size_t at = s->st.start;

	while (at > s->copied && (s->src[at - 1] == ' ' || s->src[at - 1] == '\t'))
		at--;
	copy_to(s, at);
}

/* ------------------------------------------------------------------ */
/* Registers of the current function                                   */
/* ------------------------------------------------------------------ */

static unsigned type_size(const char *t)
{
	static const struct {
		const char *name;
		unsigned size;
	} types[] = {
		{ "b8", 1 }, { "u8", 1 }, { "s8", 1 }, { "b16", 2 }, { "u16", 2 }, { "s16", 2 },
		{ "f16", 2 }, { "bf16", 2 }, { "b32", 4 }, { "u32", 4 }, { "s32", 4 }, { "f32", 4 },
		{ "f16x2", 4 }, { "bf16x2", 4 }, { "tf32", 4 }, { "b64", 8 }, { "u64", 8 },
		{ "s64", 8 }, { "f64", 8 }, { "b128", 16 }, { "e4m3x2", 2 }, { "e5m2x2", 2 },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i].name))
			return types[i].size;
	return 0;
}

static void add_reg(struct splicer *s, const char *name, size_t len, bool range, unsigned size)
{
	struct regdecl *r;

	if (s->nregs == s->capregs) {
		size_t cap = s->capregs ? s->capregs * 2 : 64;
		struct regdecl *p = realloc(s->regs, cap * sizeof(*p));

		if (!p) {
			s->out.oom = true;
			return;
		}
		s->regs = p;
		s->capregs = cap;
	}
	r = &s->regs[s->nregs++];
	if (len >= sizeof(r->name))
		len = sizeof(r->name) - 1;
	memcpy(r->name, name, len);
	r->name[len] = '\0';
	r->range = range;
	r->size = size;
}

/* ".reg .b32 %r<10>, %x;" -> table entries. */
static void record_regs(struct splicer *s, const char *t)
{
	unsigned size = 0;
	const char *p = t + 4;

	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '.') {
			char ty[16];
			size_t n = 0;

			p++;
			while (gx_sp_is_ident(*p) && n < sizeof(ty) - 1)
				ty[n++] = *p++;
			ty[n] = '\0';
			if (!strcmp(ty, "v2") || !strcmp(ty, "v4") || !strcmp(ty, "align"))
				continue;
			size = type_size(ty);
			continue;
		}
		if (*p == '%' || gx_sp_is_ident(*p)) {
			const char *nm = p;

			while (*p == '%' || gx_sp_is_ident(*p))
				p++;
			add_reg(s, nm, (size_t)(p - nm), *p == '<', size);
			while (*p && *p != ',')
				p++;
			continue;
		}
		if (*p)
			p++;
	}
}

/* Size of register @name (bytes), 0 if unknown. */
static unsigned reg_size(const struct splicer *s, const char *name)
{
	size_t best = 0;
	unsigned size = 0;

	for (size_t i = 0; i < s->nregs; i++) {
		const struct regdecl *r = &s->regs[i];
		size_t n = strlen(r->name);

		if (!r->range) {
			if (!strcmp(r->name, name))
				return r->size;
			continue;
		}
		if (!strncmp(name, r->name, n) && name[n] && n > best) {
			const char *d = name + n;

			while (*d >= '0' && *d <= '9')
				d++;
			if (!*d) {
				best = n;
				size = r->size;
			}
		}
	}
	return size;
}

/* ------------------------------------------------------------------ */
/* Instrumentation code                                                */
/* ------------------------------------------------------------------ */

static const char *const ev_name[GX_PROBE_NR] = { "entry", "exit", "load", "store" };

/* Whether a probe reads any byte of ctx[@off, @off + @size): only those are stored. */
static bool reads(const struct splicer *s, unsigned off, unsigned size)
{
	for (unsigned w = off / 4; w <= (off + size - 1) / 4; w++)
		if (s->ctx_words & (1u << w))
			return true;
	return false;
}

static bool has_event(const struct splicer *s, int ev)
{
	return s->pack->events & (1u << ev);
}

/*
 * One site: the arguments of gpuext_probe_<ev> (kernel id, args, addr,
 * value, size: ptx_splice.h) in our registers, then the function's body
 * inlined (ptx_inline.c says why not a call). @mem: a load/store site, whose
 * address is in %SFX_a and value in %SFX_v when the probes read them.
 * Nothing is stored in local memory: the probe builds its context from
 * special registers itself.
 */
static void emit_site(struct splicer *s, int ev, bool mem, unsigned size)
{
	static const unsigned bits[GX_PROBE_NARGS] = { 64, 64, 64, 64, 32 };
	const char *p = s->pfx;
	char regs[GX_PROBE_NARGS][32], sfx[48];
	const char *args[GX_PROBE_NARGS];
	char *text, *hoisted;
	bool hoist, local, need_sync;

	snprintf(regs[0], sizeof(regs[0]), "%%%s_d", p);
	snprintf(regs[1], sizeof(regs[1]), "%%%s_c", p);
	snprintf(regs[2], sizeof(regs[2]), "%%%s_a", p);
	snprintf(regs[3], sizeof(regs[3]), "%%%s_v", p);
	snprintf(regs[4], sizeof(regs[4]), "%%%s_r0", p);
	for (int i = 0; i < GX_PROBE_NARGS; i++)
		args[i] = regs[i];
	/*
	 * The site guard (sections probe/<event>/warp0|block0|first): threads the
	 * probes do not run for skip the site, before any leader election. Block
	 * first: with /first, every block but one leaves after three reads.
	 */
	/*
	 * Away from the entry the guards are computed once at the function's
	 * start (the hoisted code) and tested here; at the entry, where that
	 * start is anyway, in order, so that a block that fails the first
	 * computes nothing of the second.
	 */
	if (s->guard[ev] & GX_GUARD_BLOCK0) {
		bool early = ev != GX_PROBE_ENTRY;

		if (!early || !(s->guards_hoisted & GX_GUARD_BLOCK0))
			oprintf(early ? &s->hoist : &s->out, "\t%s%%%s_qb;\n"
				"\tmov.u32 %%%s_r0, %%ctaid.x;\n\tmov.u32 %%%s_r1, %%ctaid.y;\n"
				"\tor.b32 %%%s_r0, %%%s_r0, %%%s_r1;\n\tmov.u32 %%%s_r1, %%ctaid.z;\n"
				"\tor.b32 %%%s_r0, %%%s_r0, %%%s_r1;\n\tsetp.ne.u32 %%%s_qb, %%%s_r0, 0;\n",
				"// block (0,0,0): ", p, p, p, p, p, p, p, p, p, p, p, p);
		if (early)
			s->guards_hoisted |= GX_GUARD_BLOCK0;
		oprintf(&s->out, "\t@%%%s_qb bra $%s_G%u;\n", p, p, s->site_seq + 1);
	}
	if (s->guard[ev] & GX_GUARD_WARP0) {
		bool early = ev != GX_PROBE_ENTRY;

		if (!early || !(s->guards_hoisted & GX_GUARD_WARP0))
			oprintf(early ? &s->hoist : &s->out, "\t%s%%%s_qw;\n"
				"\tmov.u32 %%%s_r0, %%tid.z;\n\tmov.u32 %%%s_r1, %%ntid.y;\n"
				"\tmov.u32 %%%s_r2, %%tid.y;\n\tmad.lo.u32 %%%s_r0, %%%s_r0, %%%s_r1, %%%s_r2;\n"
				"\tmov.u32 %%%s_r1, %%ntid.x;\n\tmov.u32 %%%s_r2, %%tid.x;\n"
				"\tmad.lo.u32 %%%s_r0, %%%s_r0, %%%s_r1, %%%s_r2;\n"
				"\tsetp.ge.u32 %%%s_qw, %%%s_r0, 32;\n",
				"// warp 0: ", p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
		if (early)
			s->guards_hoisted |= GX_GUARD_WARP0;
		oprintf(&s->out, "\t@%%%s_qw bra $%s_G%u;\n", p, p, s->site_seq + 1);
	}
	oprintf(&s->out, "\tmov.u64 %%%s_d, %llu;\n", p, s->kid);
	if (reads(s, GX_CTX_ARGS, 8) && s->param0[0] && (s->sm >= 70 || s->need_sm >= 70))
		oprintf(&s->out, "\tmov.u64 %%%s_c, %s;\n\tcvta.param.u64 %%%s_c, %%%s_c;\n",
			p, s->param0, p, p);
	else
		oprintf(&s->out, "\tmov.u64 %%%s_c, 0;\n", p);
	if (!mem || !reads(s, GX_CTX_ADDR, 8))
		oprintf(&s->out, "\tmov.u64 %%%s_a, 0;\n", p);
	if (!mem || !reads(s, GX_CTX_VALUE, 8))
		oprintf(&s->out, "\tmov.u64 %%%s_v, 0;\n", p);
	oprintf(&s->out, "\tmov.u32 %%%s_r0, %u;\n", p, mem ? size : 0);
	snprintf(sfx, sizeof(sfx), "%s_I%u", p, ++s->site_seq);
	/*
	 * A guarded entry, load or store site runs in one warp a block (or one
	 * block): its body stays whole, or every warp would compute at the
	 * function's start what few of them use. What an exit site computes
	 * from the thread's place goes to the site's own start, before the
	 * leader election, not to the function's: with the exits split
	 * (ptx_exits.c) the site shares a block with the
	 * kernel's last work, and ptxas schedules that arithmetic into its load
	 * latency; behind the election's branch it waited for the loads
	 * (hand-edited stencil under threadhist, H100: 1.027x at the site's
	 * start, 1.060x at the function's; the shipped splice with it behind
	 * the election, 1.082x). Guarded exit sites too: their guard comes
	 * first, so the moved code runs in the guarded warps only.
	 */
	local = ev == GX_PROBE_EXIT;
	hoist = local || !s->guard[ev];
	hoisted = NULL;
	if (hoist && !s->plan[ev]) {
		s->plan[ev] = gx_hoist_plan_make(&s->body[ev], local);
		if (!s->plan[ev]) {
			s->out.oom = true;
			return;
		}
	}
	text = gx_probe_body_inline(&s->body[ev], args, bits, sfx, hoist ? s->plan[ev] : NULL,
				    hoist ? &hoisted : NULL);
	if (text) {
		char pred[40], *m;

		snprintf(pred, sizeof(pred), "%%%s_qe", p);
		m = gx_site_merge_guards(text, pred);
		free(text);
		text = m;
	}
	if (!text) {
		free(hoisted);
		s->out.oom = true;
		return;
	}
	if (hoisted)
		oput(local ? &s->out : &s->hoist, hoisted, strlen(hoisted));
	free(hoisted);
	/*
	 * The lanes that enter the site leave it together. A probe branches on
	 * the lane (a leader writes for its warp, a ring group claims for its
	 * lanes); without a reconvergence point the other lanes ran on to the
	 * next site while the leader was still in its CAS loop, and the warp
	 * stayed split, so every later site ran once per piece: ncu on H100
	 * showed memtrace's second site executed twice per warp, its third
	 * three times, with 16 and 10 lanes on average.
	 *
	 * Not at an exit site, which the ret follows, nor at an entry site
	 * whose body has no loop: at the kernel's top every lane of the warp
	 * arrives together, and the probe's branch on the lane is an if that
	 * ptxas closes with its own reconvergence (BSSY/BSYNC). There the
	 * barrier cost the whole kernel: bar.warp.sync on a register mask needs
	 * the mask in a uniform register, and ptxas then moved the kernel's
	 * memory descriptor out of the uniform ones, so every load of the app's
	 * loops paid two R2UR (sm_90 SASS of the decode step's GEMV). An empty
	 * entry probe cost the decode step 1.018x with the barrier and 1.000x
	 * without; smload 1.028x and 1.013x (H100, in-process A/B, 30 quads).
	 * A body with a loop (a ring's CAS) keeps it: without, ptxas left the
	 * warp split after the loop, and the whole kernel ran in pieces (an
	 * entry ring probe: 1.116x with the barrier, 1.200x without).
	 */
	need_sync = ev == GX_PROBE_LOAD || ev == GX_PROBE_STORE ||
		    (ev == GX_PROBE_ENTRY && gx_ptx_has_back_branch(text));
	if (need_sync)
		oprintf(&s->out, "\tactivemask.b32 %%%s_m;\n", p);
	oput(&s->out, text, strlen(text));
	if (need_sync)
		oprintf(&s->out, "\tbar.warp.sync %%%s_m;\n", p);
	free(text);
	if (s->guard[ev])
		oprintf(&s->out, "$%s_G%u:\n", p, s->site_seq);
}

/* The entry site, after the kernel's prologue (gx_ptx_entry_may_follow()). */
static void emit_entry(struct splicer *s)
{
	if (!has_event(s, GX_PROBE_ENTRY))
		return;
	oprintf(&s->out, "\t// gpuext: entry probe (hal/nvidia/ptx_splice.c)\n");
	emit_site(s, GX_PROBE_ENTRY, false, 0);
	s->stats->entry_sites++;
}

/* @G bra over our code when the instruction's guard G is false. */
static void emit_skip(struct splicer *s, const char *guard, bool neg, unsigned label)
{
	oprintf(&s->out, "\t@%s%s bra $%s_L%u;\n", neg ? "" : "!", guard, s->pfx, label);
}

static void exit_site(struct splicer *s, const char *guard, bool neg)
{
	const char *p = s->pfx;
	unsigned label = 0;

	if (!has_event(s, GX_PROBE_EXIT))
		return;
	copy_to_stmt(s);
	if (guard[0]) {
		label = ++s->label_seq;
		emit_skip(s, guard, neg, label);
	}
	emit_site(s, GX_PROBE_EXIT, false, 0);
	if (label)
		oprintf(&s->out, "$%s_L%u:\n", p, label);
	s->stats->exit_sites++;
}

/* %SFX_v = the bits of @op (register or immediate), masked to @size bytes. */
static void emit_value(struct splicer *s, const char *op, unsigned size)
{
	const char *p = s->pfx;
	unsigned long long imm;
	unsigned rs;

	if (op[0] == '%') {
		rs = reg_size(s, op);
		if (rs == 8)
			oprintf(&s->out, "\tmov.b64 %%%s_v, %s;\n", p, op);
		else if (rs == 4)
			oprintf(&s->out, "\tmov.b32 %%%s_r0, %s;\n\tcvt.u64.u32 %%%s_v, %%%s_r0;\n", p,
				op, p, p);
		else if (rs == 2)
			oprintf(&s->out, "\tmov.b16 %%%s_h, %s;\n\tcvt.u64.u16 %%%s_v, %%%s_h;\n", p, op,
				p, p);
		else
			oprintf(&s->out, "\tmov.u64 %%%s_v, 0;\n", p);
		if (rs > size && size < 8 && (rs == 2 || rs == 4 || rs == 8))
			oprintf(&s->out, "\tand.b64 %%%s_v, %%%s_v, %llu;\n", p, p,
				(1ull << (8 * size)) - 1);
		return;
	}
	if (!gx_ptx_parse_imm(op, &imm))
		imm = 0;
	if (size < 8)
		imm &= (1ull << (8 * size)) - 1;
	oprintf(&s->out, "\tmov.u64 %%%s_v, %llu;\n", p, imm);
}

/*
 * %SFX_a = the address in "[...]": reg, reg+imm, sym, sym+imm or imm.
 * false when it has none of these forms (or a symbol in a generic access,
 * whose space we cannot know).
 */
static bool emit_addr(struct splicer *s, const char *op, bool generic)
{
	const char *p = s->pfx;
	char base[128], *plus;
	long long off = 0;
	size_t n;

	if (op[0] != '[')
		return false;
	n = strcspn(op + 1, "]");
	if (op[1 + n] != ']' || n == 0 || n >= sizeof(base))
		return false;
	/* "[ %rd1 + 0 ]" (Triton) reads as "[%rd1+0]" */
	{
		size_t o = 0;

		for (size_t i = 0; i < n; i++)
			if (op[1 + i] != ' ')
				base[o++] = op[1 + i];
		base[o] = '\0';
		if (!o)
			return false;
	}
	plus = strpbrk(base + 1, "+-");
	if (plus) {
		char *end;
		const char *num = plus;

		if (*num == '+')
			num++;
		off = strtoll(num, &end, 0);
		if (*end)
			return false;
		*plus = '\0';
	}
	if (base[0] == '%') {
		if (reg_size(s, base) == 4)
			oprintf(&s->out, "\tcvt.u64.u32 %%%s_a, %s;\n", p, base);
		else
			oprintf(&s->out, "\tmov.b64 %%%s_a, %s;\n", p, base);
	} else if ((base[0] >= '0' && base[0] <= '9') || base[0] == '-') {
		unsigned long long v;

		if (!gx_ptx_parse_imm(base, &v))
			return false;
		oprintf(&s->out, "\tmov.u64 %%%s_a, %llu;\n", p, v);
	} else if (!generic && gx_sp_is_ident(base[0])) {
		oprintf(&s->out, "\tmov.u64 %%%s_a, %s;\n\tcvta.global.u64 %%%s_a, %%%s_a;\n", p, base,
			p, p);
	} else {
		return false;
	}
	if (off)
		oprintf(&s->out, "\tadd.s64 %%%s_a, %%%s_a, %lld;\n", p, p, off);
	return true;
}

/*
 * ld/st: is it one we instrument? Fills size (bytes accessed) and elem
 * (bytes of one element), generic (no state space).
 */
static bool mem_opcode(const char *op, bool *load, bool *generic, unsigned *size, unsigned *elem)
{
	static const char *const other[] = { "shared", "local", "param", "const", "tex", "surf" };
	char buf[128], *save = NULL, *c;
	unsigned vec = 1, ts = 0;
	bool global = false, space = false;

	if (strlen(op) >= sizeof(buf))
		return false;
	strcpy(buf, op);
	c = strtok_r(buf, ".", &save);
	if (!c)
		return false;
	if (!strcmp(c, "ld") || !strcmp(c, "ldu"))
		*load = true;
	else if (!strcmp(c, "st"))
		*load = false;
	else
		return false;
	while ((c = strtok_r(NULL, ".", &save))) {
		if (!strcmp(c, "global")) {
			global = space = true;
			continue;
		}
		for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
			if (!strncmp(c, other[i], strlen(other[i])))
				space = true;
		/* st.async, st.bulk, ld with .mmio... are not plain accesses */
		if (!strcmp(c, "async") || !strcmp(c, "bulk") || !strcmp(c, "mmio"))
			return false;
		if (c[0] == 'v' && (c[1] == '2' || c[1] == '4' || c[1] == '8') && !c[2])
			vec = (unsigned)(c[1] - '0');
		else if (type_size(c))
			ts = type_size(c);
	}
	if ((space && !global) || !ts)
		return false;
	*generic = !space;
	*elem = ts;
	*size = ts * vec;
	return true;
}

static void mem_site(struct splicer *s, const char *guard, bool neg, const char *opcode,
		     char *operands)
{
	const char *p = s->pfx;
	bool load = false, generic = false;
	unsigned size = 0, elem = 0, label = 0;
	char *ops[8], val[64] = "";
	int nops;
	int ev;

	if (!mem_opcode(opcode, &load, &generic, &size, &elem))
		return;
	ev = load ? GX_PROBE_LOAD : GX_PROBE_STORE;
	if (!has_event(s, ev))
		return;
	nops = gx_ptx_split_operands(operands, ops, 8);
	if (nops < 2) {
		gx_sp_fail(s, s->st.line, "%s: expected two operands", opcode);
		return;
	}
	copy_to_stmt(s);
	if (guard[0] || generic) {
		label = ++s->label_seq;
		if (guard[0])
			emit_skip(s, guard, neg, label);
	}
	if (!emit_addr(s, load ? ops[1] : ops[0], generic)) {
		if (generic) {
			/* e.g. ld.u32 [sym]: the space of a symbol is not ours to guess */
			oprintf(&s->out, "$%s_L%u:\n", p, label);
			return;
		}
		gx_sp_fail(s, s->st.line, "%s: cannot read the address operand '%s'", opcode,
		     load ? ops[1] : ops[0]);
		return;
	}
	if (!load) {
		gx_ptx_first_elem(ops[1], val, sizeof(val));
		emit_value(s, val, elem);
	}
	/* the instruction itself, unchanged */
	copy_to(s, s->st.end);
	oput(&s->out, "\n", 1);
	if (generic)
		oprintf(&s->out, "\tisspacep.global %%%s_q, %%%s_a;\n\t@!%%%s_q bra $%s_L%u;\n", p, p,
			p, p, label);
	if (load) {
		gx_ptx_first_elem(ops[0], val, sizeof(val));
		if (val[0] == '%')
			emit_value(s, val, elem);
		else
			oprintf(&s->out, "\tmov.u64 %%%s_v, 0;\n", p);
	}
	emit_site(s, ev, true, size);
	if (label)
		oprintf(&s->out, "$%s_L%u:\n", p, label);
	if (load)
		s->stats->load_sites++;
	else
		s->stats->store_sites++;
}

/*
 * The current statement's guard (into @guard, *@neg) and opcode (into
 * @opcode, @olen bytes); returns what follows the opcode, or NULL when the
 * opcode does not fit.
 */
static const char *stmt_opcode(const struct splicer *s, char guard[64], bool *neg, char *opcode,
			       size_t olen)
{
	const char *rest = gx_ptx_split_guard(s->st.text, guard, 64, neg);
	size_t n = strcspn(rest, " \t");

	if (n >= olen)
		return NULL;
	memcpy(opcode, rest, n);
	opcode[n] = '\0';
	return rest + n;
}

/* One instruction of an instrumented kernel. */
static void instruction(struct splicer *s)
{
	char guard[64], opcode[128], *ops, *copy;
	const char *rest;
	bool neg;

	rest = stmt_opcode(s, guard, &neg, opcode, sizeof(opcode));
	if (!rest)
		return;
	if (!strcmp(opcode, "ret") || !strncmp(opcode, "ret.", 4) || !strcmp(opcode, "exit")) {
		/*
		 * A .func's ret returns to its caller (not an exit); its exit ends the
		 * thread as a kernel's does, so that is an exit site (the function's id).
		 */
		if (!s->in_func || !strcmp(opcode, "exit"))
			exit_site(s, guard, neg);
		return;
	}
	if (strncmp(opcode, "ld", 2) && strncmp(opcode, "st", 2))
		return;
	copy = strdup(rest);
	if (!copy) {
		s->out.oom = true;
		return;
	}
	ops = copy;
	while (*ops == ' ')
		ops++;
	mem_site(s, guard, neg, opcode, ops);
	free(copy);
}

/* ------------------------------------------------------------------ */
/* Functions                                                           */
/* ------------------------------------------------------------------ */

/*
 * Whole names, however long: a kernel id is the hash of the whole mangled
 * name (kernels.txt hashes it so), and nvcc names parameters after it.
 */
struct fn_header {
	bool entry;		/* .entry (else .func) */
	char *name;		/* malloc'd */
	char *param0;		/* malloc'd; first parameter's name, "" if none */
	char *regparams;	/* malloc'd; a .func's ".reg" parameters, ".reg .b32 %a\n..." */
};

static void fn_header_free(struct fn_header *h)
{
	free(h->name);
	free(h->param0);
	free(h->regparams);
	memset(h, 0, sizeof(*h));
}

/* Next identifier at *p (after blanks), malloc'd ("" if none); NULL when out of memory. */
static char *ident_at(const char **p)
{
	const char *start;

	while (**p == ' ')
		(*p)++;
	start = *p;
	while (gx_sp_is_ident(**p) || **p == '%')
		(*p)++;
	return strndup(start, (size_t)(*p - start));
}

/* Skips a parenthesised group at *p (after blanks), if any. */
static void skip_parens(const char **p)
{
	int depth = 0;

	while (**p == ' ')
		(*p)++;
	if (**p != '(')
		return;
	do {
		if (**p == '(')
			depth++;
		else if (**p == ')')
			depth--;
		(*p)++;
	} while (**p && depth > 0);
}

/* 1 a function header (@h filled: fn_header_free()), 0 not one, -ENOMEM. */
static int parse_header(const char *t, struct fn_header *h)
{
	const char *p, *e = strstr(t, ".entry");
	const char *f = strstr(t, ".func");

	memset(h, 0, sizeof(*h));
	if (e && (!f || e < f)) {
		h->entry = true;
		p = e + 6;
	} else if (f) {
		p = f + 5;
		skip_parens(&p); /* return value */
	} else {
		return 0;
	}
	h->name = ident_at(&p);
	h->param0 = strdup("");
	h->regparams = strdup("");
	/*
	 * A .func may take (and return) registers: ".reg .b32 %a" in its
	 * parameter lists. The sites need their sizes like those of the body's
	 * own registers (a stored value's width).
	 */
	for (const char *r = f && !h->entry ? strstr(f, ".reg ") : NULL; r && h->regparams;
	     r = strstr(r + 5, ".reg ")) {
		size_t n = strcspn(r, ",)"), have = strlen(h->regparams);
		char *np = realloc(h->regparams, have + n + 2);

		if (!np) {
			free(h->regparams);
			h->regparams = NULL;
			break;
		}
		memcpy(np + have, r, n);
		np[have + n] = '\n';
		np[have + n + 1] = '\0';
		h->regparams = np;
	}
	if (!h->name || !h->param0 || !h->regparams) {
		fn_header_free(h);
		return -ENOMEM;
	}
	if (!h->name[0]) {
		fn_header_free(h);
		return 0;
	}
	while (*p == ' ')
		p++;
	if (*p == '(') {
		/* the first parameter's name: the last identifier before ',' or ')' (or '[') */
		const char *q = p + 1, *last = NULL;
		size_t lastlen = 0;

		while (*q && *q != ',' && *q != ')') {
			if (*q == '[') {
				while (*q && *q != ']')
					q++;
				continue;
			}
			if (gx_sp_is_ident(*q) && (q[-1] == ' ' || q[-1] == '(')) {
				const char *id = q;

				while (gx_sp_is_ident(*q))
					q++;
				last = id;
				lastlen = (size_t)(q - id);
				continue;
			}
			q++;
		}
		if (last && (*q == ',' || *q == ')')) {
			char *p0 = strndup(last, lastlen);

			if (!p0) {
				fn_header_free(h);
				return -ENOMEM;
			}
			free(h->param0);
			h->param0 = p0;
		}
	}
	return 1;
}

/* Our declarations, right after the kernel body's '{'. */
static void emit_decls(struct splicer *s)
{
	const char *p = s->pfx;

	oprintf(&s->out, "\n\t// gpuext: probe registers and context (hal/nvidia/ptx_splice.c)\n"
		"\t.reg .b64 %%%s_d, %%%s_a, %%%s_v, %%%s_c;\n\t.reg .b32 %%%s_r<3>, %%%s_m;\n"
		"\t.reg .b16 %%%s_h;\n\t.reg .pred %%%s_q, %%%s_qb, %%%s_qw, %%%s_qe;\n", p, p, p, p,
		p, p, p, p, p, p, p);
}

/*
 * A global (or generic) load/store in a .func body left uninstrumented
 * (a kernel filter is set: module()), so the caller can say how many
 * accesses a memory trace of this module misses.
 */
static void count_func_access(struct splicer *s)
{
	char guard[64], opcode[128];
	bool neg, load = false, generic = false;
	unsigned size = 0, elem = 0;

	if (stmt_opcode(s, guard, &neg, opcode, sizeof(opcode)) &&
	    mem_opcode(opcode, &load, &generic, &size, &elem))
		s->stats->func_accesses++;
}

/*
 * What the sites of the function just walked moved to its start (emit_site,
 * ptx_inline.c): into out at hoist_at, right after our declarations, which
 * is before any instruction of the function, so it dominates every site.
 */
static void flush_hoist(struct splicer *s)
{
	static const char head[] = "\t// gpuext: hoisted from the sites (hal/nvidia/ptx_inline.c)\n";
	struct obuf o = { 0 };

	if (s->hoist.oom)
		s->out.oom = true;
	if (!s->hoist.len || s->out.oom) {
		s->hoist.len = 0;
		return;
	}
	oput(&o, s->out.p, s->hoist_at);
	oput(&o, head, sizeof(head) - 1);
	oput(&o, s->hoist.p, s->hoist.len);
	oput(&o, s->out.p + s->hoist_at, s->out.len - s->hoist_at);
	s->hoist.len = 0;
	if (o.oom) {
		free(o.p);
		s->out.oom = true;
		return;
	}
	free(s->out.p);
	s->out = o;
}

/*
 * Whether the function body starting at @p (just after its '{') has an exit
 * instruction, up to the brace that closes it (comments skipped; @lim bounds
 * the text). Only an exit makes a .func worth instrumenting for exit probes
 * (its ret returns to the caller). The PTX in nvcc's fatbins has no
 * indentation, so "exit;" may start a line.
 */
static bool body_has_exit(const char *p, const char *lim)
{
	const char *start = p;
	int depth = 1;

	while (p < lim && depth > 0) {
		if (p + 1 < lim && p[0] == '/' && p[1] == '/') {
			while (p < lim && *p != '\n')
				p++;
			continue;
		}
		if (p + 1 < lim && p[0] == '/' && p[1] == '*') {
			const char *e = memmem(p + 2, (size_t)(lim - p - 2), "*/", 2);

			p = e ? e + 2 : lim;
			continue;
		}
		if (*p == '{') {
			depth++;
		} else if (*p == '}') {
			depth--;
		} else if (*p == 'e' && lim - p > 4 && !memcmp(p, "exit", 4) &&
			   (p == start || strchr(" \t\n;{}", p[-1])) && strchr("; \t\r\n", p[4])) {
			return true;
		}
		p++;
	}
	return false;
}

/* Walks a function body (s->pos just after its '{'), instrumenting it when @h says so. */
static void body(struct splicer *s, const struct fn_header *h, bool instrument, unsigned open_line)
{
	bool entered = false;
	int depth = 1;

	s->nregs = 0;
	s->in_func = !h->entry;
	for (const char *r = h->regparams; r && *r;) {
		const char *nl = strchr(r, '\n');
		char *one = strndup(r, nl ? (size_t)(nl - r) : strlen(r));

		if (!one) {
			s->out.oom = true;
			return;
		}
		record_regs(s, one);
		free(one);
		r = nl ? nl + 1 : r + strlen(r);
	}
	s->hoist.len = 0;
	s->guards_hoisted = 0;
	/*
	 * This function's id and argument buffer from its first statement on:
	 * a statement the entry site may follow (an ld.param) is spliced before
	 * the entry site, and malformed PTX (ld.param.global, the fuzzer's find)
	 * made one of them a load site that read the previous function's
	 * parameter name, freed by then.
	 */
	s->kid = (unsigned long long)gx_kernel_id(h->name, strlen(h->name));
	s->param0 = h->entry ? h->param0 : "";
	if (instrument) {
		copy_to(s, s->pos);
		emit_decls(s);
		s->hoist_at = s->out.len;
	}
	if (instrument && !h->entry) {
		/* a device function: its own id, no argument buffer (above), no entry site */
		entered = true;
	}
	while (!s->rc && !s->out.oom) {
		enum stmt_kind k = gx_sp_next_stmt(s, true);

		if (k == ST_EOF) {
			if (!s->rc)
				gx_sp_fail(s, open_line, "body of %.200s does not end (no matching '}')", h->name);
			return;
		}
		if (instrument && !entered &&
		    (k == ST_LABEL || k == ST_OPEN || (k == ST_CLOSE && depth == 1) ||
		     (k == ST_STMT && !gx_ptx_is_decl(s->st.text) &&
		      !gx_ptx_entry_may_follow(s->st.text)))) {
			copy_to_stmt(s);
			emit_entry(s);
			entered = true;
		}
		switch (k) {
		case ST_OPEN:
			depth++;
			break;
		case ST_CLOSE:
			if (--depth == 0) {
				if (instrument)
					flush_hoist(s);
				return;
			}
			break;
		case ST_HEADER:
			gx_sp_fail(s, s->st.line, "unexpected '{' after \"%.60s\"", s->st.text);
			return;
		case ST_STMT:
			if (!strncmp(s->st.text, ".reg ", 5)) {
				record_regs(s, s->st.text);
				break;
			}
			if (s->st.text[0] == '.')
				break;
			if (instrument)
				instruction(s);
			else if (!h->entry)
				count_func_access(s);
			break;
		default:
			break;
		}
	}
}

/* A .section block (DWARF): copied through unparsed, braces balanced. */
static void skip_section(struct splicer *s, unsigned open_line)
{
	int depth = 1;

	while (s->pos < s->n && depth > 0) {
		char c = s->src[s->pos];

		if (c == '/' && s->pos + 1 < s->n && (s->src[s->pos + 1] == '/' || s->src[s->pos + 1] == '*')) {
			if (!gx_sp_skip_blank(s))
				return;
			continue;
		}
		if (c == '"') {
			s->st.len = 0;
			if (!gx_sp_take_char(s))
				return;
			continue;
		}
		if (c == '\n')
			s->line++;
		depth += c == '{' ? 1 : c == '}' ? -1 : 0;
		s->pos++;
	}
	if (depth > 0)
		gx_sp_fail(s, open_line, "section block does not end (no matching '}')");
}

/* ------------------------------------------------------------------ */
/* The module                                                          */
/* ------------------------------------------------------------------ */

static bool parse_version(const char *t, unsigned *v)
{
	unsigned ma, mi;

	if (sscanf(t, "%u.%u", &ma, &mi) != 2 || mi > 9)
		return false;
	*v = ma * 10 + mi;
	return true;
}

/*
 * The probes (the pack's PTX: their globals and functions), before the
 * module's first function: the sites inline the functions' bodies, which
 * name the globals, and PTX wants a symbol declared before it is used.
 */
static void declare_probes(struct splicer *s)
{
	const struct gx_pack *pk = s->pack;

	if (s->probes_declared)
		return;
	s->probes_declared = true;
	copy_to(s, s->hdr_end);
	oprintf(&s->out, "\n\n// gpuext: device probes spliced in (hal/nvidia/ptx_splice.c), "
		"from gpuext trace's pack\n");
	oput(&s->out, pk->ptx ? pk->ptx : "", pk->ptx ? strnlen(pk->ptx, pk->ptx_len) : 0);
	oprintf(&s->out, "\n// gpuext: end of the probes\n\n");
}

/*
 * After an instrumented kernel (out[@from ..] holds its spliced text from
 * its header on): its flat twin (ptx_twin.c) right after it, when its probes
 * read a z register and the module does not already name the twin.
 */
static void flat_twin(struct splicer *s, size_t from, const char *name)
{
	size_t nl = strlen(name), sl = strlen(GX_FLAT_TWIN_SUFFIX), tl = 0;
	char *tn, *twin = NULL;
	unsigned folded = 0;
	int rc;

	copy_to(s, s->pos);	/* the closing brace */
	if (s->out.oom || from >= s->out.len)
		return;
	tn = malloc(nl + sl + 1);
	if (!tn) {
		s->out.oom = true;
		return;
	}
	memcpy(tn, name, nl);
	memcpy(tn + nl, GX_FLAT_TWIN_SUFFIX, sl + 1);
	/* the module's text is searched once for the suffix, and for the name only where it has it */
	if (!s->twin_scan) {
		s->twin_scan = memmem(s->src, s->n, GX_FLAT_TWIN_SUFFIX, sl) ? 2 : 1;
	}
	if (s->twin_scan == 2 && memmem(s->src, s->n, tn, nl + sl)) {
		free(tn);
		return;
	}
	free(tn);
	rc = gx_ptx_flat_twin(s->out.p + from, s->out.len - from, name, s->pfx, &twin, &tl, &folded);
	if (rc == -ENOMEM) {
		s->out.oom = true;
		return;
	}
	if (!rc && folded) {
		oprintf(&s->out, "\n\n// gpuext: the flat twin of %s (hal/nvidia/ptx_twin.c)\n", name);
		oput(&s->out, twin, tl);
		s->stats->flat_twins++;
	}
	free(twin);
}

static void module(struct splicer *s)
{
	while (!s->rc && !s->out.oom) {
		enum stmt_kind k = gx_sp_next_stmt(s, false);
		const char *t = s->st.text;

		switch (k) {
		case ST_EOF:
			return;
		case ST_LINE:
			/*
			 * The module header comes once, before any function: the rewrite of
			 * .version/.target patches their places in the source (the fuzzer's
			 * .version after a kernel garbled the probes' text).
			 */
			if ((!strncmp(t, ".version", 8) && (s->have_version || s->seen_func)) ||
			    (!strncmp(t, ".target", 7) && (s->have_target || s->seen_func)) ||
			    (!strncmp(t, ".address_size", 13) && (s->have_addr64 || s->seen_func))) {
				gx_sp_fail(s, s->st.line, "%.*s %s", (int)strcspn(t, " \t"), t,
					   s->seen_func ? "after the module's first function" : "given twice");
				break;
			}
			if (!strncmp(t, ".version", 8)) {
				if (!parse_version(t + 9, &s->ver))
					gx_sp_fail(s, s->st.line, "bad .version \"%s\"", t);
				s->have_version = true;
				s->ver_start = s->st.start;
				s->ver_end = s->st.end;
			} else if (!strncmp(t, ".target", 7)) {
				const char *sm = strstr(t, "sm_");

				s->sm = sm ? atoi(sm + 3) : 0;
				s->have_target = true;
				if (sm) {
					/* the token's place in the source: .target lines hold no comments */
					const char *src_sm = memmem(s->src + s->st.start,
								    s->st.end - s->st.start, "sm_", 3);

					if (src_sm) {
						s->sm_start = (size_t)(src_sm - s->src);
						s->sm_end = s->sm_start + 3;
						while (s->sm_end < s->n && gx_sp_is_ident(s->src[s->sm_end]))
							s->sm_end++;
					}
				}
				s->hdr_end = s->st.end;
			} else if (!strncmp(t, ".address_size", 13)) {
				if (strcmp(t + 13, " 64"))
					gx_sp_fail(s, s->st.line, "only 64-bit modules are spliced (%s)", t);
				s->have_addr64 = true;
				s->hdr_end = s->st.end;
			}
			break;
		case ST_STMT:
			if (t[0] && t[0] != '.')
				gx_sp_fail(s, s->st.line, "instruction outside a function: \"%.60s\"", t);
			break;
		case ST_HEADER: {
			struct fn_header h;
			unsigned line = s->st.line, sites;
			size_t twin_from = 0;
			bool inst, func_sites;
			int ph;

			if (!strncmp(t, ".section", 8)) {
				skip_section(s, line);
				break;
			}
			ph = parse_header(t, &h);
			s->seen_func = true;
			if (ph < 0) {
				s->out.oom = true;
				break;
			}
			if (!ph) {
				gx_sp_fail(s, line, "'{' after \"%.60s\", which is not a function header", t);
				break;
			}
			if (!s->have_version || !s->have_target) {
				gx_sp_fail(s, line, "function %.200s before the .version and .target directives",
				     h.name);
				fn_header_free(&h);
				break;
			}
			inst = h.entry && (!s->pack->kernel_filter[0] ||
					   !fnmatch(s->pack->kernel_filter, h.name, 0));
			/*
			 * A device function the compiler did not inline (a .func with a
			 * body) gets load/store sites when the probes trace memory, with
			 * its own name's id as the kernel id: it may be called from any
			 * kernel of the module, which it cannot tell apart. Not with a
			 * kernel filter that leaves out a kernel of the module (its calls
			 * would be traced too): its accesses are counted instead
			 * (count_func_access).
			 */
			func_sites = !h.entry && s->filter_all && s->have_addr64 &&
				     (has_event(s, GX_PROBE_LOAD) || has_event(s, GX_PROBE_STORE) ||
				      (has_event(s, GX_PROBE_EXIT) &&
				       body_has_exit(s->src + s->pos, s->src + s->n)));
			inst = inst || func_sites;
			if (inst && !s->have_addr64) {
				/* without .address_size, PTX addresses are 32-bit: our code is 64-bit */
				gx_sp_fail(s, line, "kernel %.200s: the module has no .address_size 64", h.name);
				fn_header_free(&h);
				break;
			}
			if (h.entry)
				s->stats->kernels++;
			if (inst && h.entry)
				s->stats->instrumented++;
			if (inst)
				declare_probes(s);
			if (inst && h.entry) {
				copy_to(s, s->st.start);
				twin_from = s->out.len;
			}
			sites = s->stats->load_sites + s->stats->store_sites + s->stats->exit_sites;
			body(s, &h, inst, line);
			s->param0 = "";	/* h's, freed below */
			if (inst && h.entry && !s->pack->no_flat_twins && !s->rc && !s->out.oom)
				flat_twin(s, twin_from, h.name);
			/* listed (kernels.txt names it) only if it got a site */
			if (func_sites && s->stats->load_sites + s->stats->store_sites +
					  s->stats->exit_sites > sites) {
				s->stats->funcs_instrumented++;
				oprintf(&s->funcs, GX_SPLICE_FUNC " %s\n", h.name);
			}
			fn_header_free(&h);
			break;
		}
		case ST_LABEL:
			gx_sp_fail(s, s->st.line, "label %s outside a function", t);
			break;
		case ST_OPEN:
		case ST_CLOSE:
			gx_sp_fail(s, s->st.line, "'%c' outside a function", k == ST_OPEN ? '{' : '}');
			break;
		}
	}
}

/* "// gpuext-ptx-version X.Y" in the probe text (ptx_probe.c writes it). */
static unsigned probes_version(const struct gx_pack *pack)
{
	const char *v = pack->ptx ? strstr(pack->ptx, "// gpuext-ptx-version ") : NULL;
	unsigned ver = 0;

	if (v && !parse_version(v + 22, &ver))
		ver = 0;
	return ver;
}

/*
 * "// gpuext-ctx-words 0xMASK" in the probe text: the words of the context
 * the probes read (ptx_probe.c, from the verified programs). Absent (an older
 * pack, hand-written probes): all of them.
 */
static uint32_t probes_ctx_words(const struct gx_pack *pack)
{
	const char *t = pack->ptx ? strstr(pack->ptx, "// gpuext-ctx-words 0x") : NULL;

	return t ? (uint32_t)strtoul(t + 22, NULL, 16) : UINT32_MAX;
}

/* "// gpuext-site-guards E X L S": per event, GX_GUARD_* the site tests (absent: none). */
static void probes_site_guards(const struct gx_pack *pack, uint32_t guards[GX_PROBE_NR])
{
	const char *t = pack->ptx ? strstr(pack->ptx, "// gpuext-site-guards ") : NULL;
	unsigned g[GX_PROBE_NR] = { 0 };

	if (t && sscanf(t + 22, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]) != GX_PROBE_NR)
		memset(g, 0, sizeof(g));
	for (int e = 0; e < GX_PROBE_NR; e++)
		guards[e] = g[e] & (GX_GUARD_WARP0 | GX_GUARD_BLOCK0);
}

/* "// gpuext-ptx-target sm_NN" in the probe text: the lowest target it assembles for. */
static int probes_target(const struct gx_pack *pack)
{
	const char *t = pack->ptx ? strstr(pack->ptx, "// gpuext-ptx-target sm_") : NULL;

	return t ? atoi(t + 24) : 0;
}

/*
 * The output with .version and the .target's sm token replaced: both lie in
 * the module header, which the output holds unchanged (our insertions all
 * come after it), in that order.
 */
static void rewrite_header(struct splicer *s, unsigned ver, int sm)
{
	struct obuf o = { 0 };
	char v[32], t[16];
	size_t at = 0;
	int vl = 0, tl = 0;

	if (ver)
		vl = snprintf(v, sizeof(v), ".version %u.%u", ver / 10, ver % 10);
	if (sm)
		tl = snprintf(t, sizeof(t), "sm_%d", sm);
	if (vl) {
		oput(&o, s->out.p, s->ver_start);
		oput(&o, v, (size_t)vl);
		at = s->ver_end;
	}
	if (tl && s->sm_end > at) {
		oput(&o, s->out.p + at, s->sm_start - at);
		oput(&o, t, (size_t)tl);
		at = s->sm_end;
	}
	oput(&o, s->out.p + at, s->out.len - at);
	free(s->out.p);
	s->out = o;
}

/* A prefix for our names that occurs nowhere in the module. */
static void pick_prefix(struct splicer *s)
{
	for (unsigned i = 0;; i++) {
		if (i)
			snprintf(s->pfx, sizeof(s->pfx), "gxs%u", i);
		else
			snprintf(s->pfx, sizeof(s->pfx), "gxs");
		if (!memmem(s->src, s->n, s->pfx, strlen(s->pfx)))
			return;
	}
}

/* ------------------------------------------------------------------ */
/* The constant bank                                                   */
/* ------------------------------------------------------------------ */

/* A module's .const variables share one bank of this many bytes (ptxas refuses more). */
#define GX_CONST_BANK 65536u

int gx_ptx_splice(const char *ptx, size_t ptx_len, const struct gx_pack *pack, char **out,
		  size_t *out_len, struct gx_splice_stats *st, char *err, size_t err_len)
{
	struct gx_splice_stats local_stats;
	struct gx_pack global_pack = { 0 };
	struct splicer s = { 0 };
	char *split = NULL;
	size_t n, split_len = 0;

	if (err && err_len)
		err[0] = '\0';
	if (!ptx || !pack || !out || !out_len) {
		if (err && err_len)
			snprintf(err, err_len, "gx_ptx_splice: missing argument");
		return -EINVAL;
	}
	*out = NULL;
	*out_len = 0;
	n = strnlen(ptx, ptx_len);
	memset(&local_stats, 0, sizeof(local_stats));
	/*
	 * Exit probes: a ret for every branch to a shared one first
	 * (ptx_exits.c). The splice reads that text; a module nothing matched
	 * is given back as it came.
	 */
	probes_site_guards(pack, s.guard);
	if (pack->events & (1u << GX_PROBE_EXIT)) {
		int se = gx_ptx_split_exits(ptx, n, &split, &split_len, &local_stats.exits_split);

		if (se)
			return se;
	}
	s.src = split ? split : ptx;
	s.n = split ? split_len : n;
	s.line = 1;
	s.pack = pack;
	s.stats = &local_stats;
	s.err = err;
	s.err_len = err_len;
	if (memmem(ptx, n, "gpuext_probe_", 13)) {
		free(split);
		if (err && err_len)
			snprintf(err, err_len, "the module already names gpuext_probe_*: spliced twice?");
		return -EEXIST;
	}
	if (pack->events && (!pack->ptx || !pack->ptx_len)) {
		free(split);
		if (err && err_len)
			snprintf(err, err_len, "the pack has events but no probe PTX");
		return -EINVAL;
	}
	/* The statement text is never NULL, even for an empty statement. */
	s.st.cap = 256;
	s.st.text = calloc(1, s.st.cap);
	if (!s.st.text) {
		free(split);
		return -ENOMEM;
	}
	/*
	 * Our map table and GPU id live in the constant bank, which the
	 * module's own .const data shares: where both would not fit (ptxas
	 * refuses more than 64 KiB), the probes read theirs from global memory
	 * instead, a load more per probe rather than no probes at all.
	 */
	if (pack->ptx && gx_ptx_const_bytes(pack->ptx, strnlen(pack->ptx, pack->ptx_len)) &&
	    gx_ptx_const_bytes(ptx, n) + gx_ptx_const_bytes(pack->ptx, strnlen(pack->ptx,
							    pack->ptx_len)) > GX_CONST_BANK) {
		int ge;

		global_pack = *pack;
		global_pack.ptx = NULL;
		ge = gx_ptx_probes_in_global(pack->ptx, strnlen(pack->ptx, pack->ptx_len),
					     &global_pack.ptx, &global_pack.ptx_len);
		if (ge) {
			free(s.st.text);
			free(split);
			if (ge == -ENOMEM)
				return ge;
			if (err && err_len)
				snprintf(err, err_len, "the module's own constant data leaves no room "
					 "for the probes' (64 KiB a module), and their text could not "
					 "be moved to the global space");
			return -E2BIG;
		}
		pack = &global_pack;
		s.pack = pack;
		local_stats.probes_in_global = true;
	}
	s.filter_all = true;
	if (pack->kernel_filter[0]) {
		char **names = NULL;
		size_t nn = 0;

		if (nv_ptx_entries(ptx, n, &names, &nn)) {
			free(s.st.text);
			free(global_pack.ptx);
			free(split);
			return -ENOMEM;
		}
		for (size_t i = 0; i < nn; i++)
			s.filter_all &= !fnmatch(pack->kernel_filter, names[i], 0);
		nv_free_names(names, nn);
	}
	pick_prefix(&s);
	s.need_ver = probes_version(pack);
	s.need_sm = probes_target(pack);
	s.ctx_words = probes_ctx_words(pack);
	for (int e = 0; e < GX_PROBE_NR && !s.rc; e++) {
		char name[32];
		int pe;

		if (!has_event(&s, e))
			continue;
		snprintf(name, sizeof(name), "gpuext_probe_%s", ev_name[e]);
		pe = gx_probe_body_parse(pack->ptx, strnlen(pack->ptx, pack->ptx_len), name,
					 &s.body[e], err, err_len);
		if (pe)
			s.rc = pe;
	}
	if (!s.rc)
		module(&s);
	if (!s.rc && !s.have_version)
		gx_sp_fail(&s, 1, "no .version directive: not a PTX module");
	if (!s.rc && s.stats->instrumented) {
		unsigned need = s.need_ver;

		/* cvta.param (the kernel argument buffer) needs PTX ISA 7.7. */
		if ((s.sm >= 70 || s.need_sm >= 70) && need < 77)
			need = 77;
		copy_to(&s, s.n);
		/* for whoever reads the spliced text back (the splice cache): what no site covers */
		if (s.stats->func_accesses)
			oprintf(&s.out, "\n" GX_SPLICE_UNTRACED " %u\n", s.stats->func_accesses);
		/* ... and which device functions carry sites, for their names (kernels.txt) */
		if (s.funcs.len) {
			oput(&s.out, "\n", 1);
			oput(&s.out, s.funcs.p, s.funcs.len);
		}
		if (s.funcs.oom)
			s.out.oom = true;
		if (!s.out.oom && (need > s.ver || (s.sm_end && s.sm < s.need_sm)))
			rewrite_header(&s, need > s.ver ? need : 0,
				       s.sm_end && s.sm < s.need_sm ? s.need_sm : 0);
	}
	if (!s.rc && !s.out.oom && !s.stats->instrumented) {
		/* Nothing matched: the module as it was (not split either). */
		local_stats.exits_split = 0;
		free(s.out.p);
		memset(&s.out, 0, sizeof(s.out));
		oput(&s.out, ptx, n);
	}
	free(s.st.text);
	free(s.regs);
	free(s.funcs.p);
	free(s.hoist.p);
	free(global_pack.ptx);
	free(split);
	for (int e = 0; e < GX_PROBE_NR; e++) {
		gx_probe_body_free(&s.body[e]);
		gx_hoist_plan_free(s.plan[e]);
	}
	if (!s.rc && s.out.oom)
		s.rc = -ENOMEM;
	if (s.rc) {
		free(s.out.p);
		return s.rc;
	}
	*out = s.out.p;
	*out_len = s.out.len;
	if (st)
		*st = local_stats;
	return 0;
}
