/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier's driver: static checks (encodings, reachability, falling
 * off the end, register liveness, post-dominators for SIMT), then a
 * depth-first walk of every path with state pruning, the instruction
 * budget, and a kernel-style log. The per-instruction rules live in
 * verifier_insn.c, conditional jumps (and the SIMT divergence they cause)
 * in verifier_branch.c.
 *
 * Pruning: at prune points (jump targets, branch fall-throughs, calls) the
 * state is stored. A new state covered by a stored state whose paths are
 * all explored ("complete") is safe and the path stops there. A new state
 * exactly equal to a stored state still in progress (an ancestor on this
 * path) means the loop makes no progress: an infinite loop. Everything else
 * is bounded by the processed-instruction budget.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verifier_impl.h"

#define DEFAULT_BUDGET 1000000ULL
#define MAX_STORED_STATES 200000

/* ---- log ---- */

void v_log(struct verifier *v, const char *fmt, ...)
{
	va_list ap;
	char line[1024];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (v->log_len + (size_t)n + 1 > v->log_cap) {
		size_t cap = v->log_cap ? v->log_cap * 2 : 4096;

		while (cap < v->log_len + (size_t)n + 1)
			cap *= 2;
		if (cap > (64u << 20)) { /* keep the log bounded */
			v->log_truncated = true;
			return;
		}
		char *l = realloc(v->log, cap);
		if (!l) {
			v->log_truncated = true;
			return;
		}
		v->log = l;
		v->log_cap = cap;
	}
	memcpy(v->log + v->log_len, line, (size_t)n);
	v->log_len += (size_t)n;
	v->log[v->log_len] = '\0';
}

void v_format_reg(const struct vreg *r, char *buf, size_t len)
{
	char s[160] = "";
	const char *null = r->maybe_null ? "_or_null" : "";
	int n = 0;

	if (r->type != VT_SCALAR && r->type != VT_NOT_INIT && !scalar_is_const(&r->s))
		scalar_format(&r->s, s, sizeof(s));
	switch (r->type) {
	case VT_NOT_INIT: n = snprintf(buf, len, "?"); break;
	case VT_SCALAR: n = scalar_format(&r->s, buf, len); break;
	case VT_CTX: n = snprintf(buf, len, "ctx(off=%d)", r->off); break;
	case VT_STACK:
		n = snprintf(buf, len, "fp%d", r->off);
		if (r->frameno)
			n += snprintf(buf + n, len - (size_t)n, "(frame%u)", r->frameno);
		break;
	case VT_MAP_PTR:
		n = snprintf(buf, len, "map_ptr(%s)", r->map ? gpuext_map__name(r->map) : "?");
		break;
	case VT_MAP_VALUE:
		n = snprintf(buf, len, "map_value%s(map=%s,vs=%u,off=%d)", null,
			     r->map ? gpuext_map__name(r->map) : "?",
			     r->map ? gpuext_map__value_size(r->map) : 0, r->off);
		break;
	case VT_MEM:
		n = snprintf(buf, len, "mem%s(sz=%u,off=%d%s%s)", null, r->mem_size, r->off,
			     r->ref_id ? ",ref" : "", r->rdonly ? ",rdonly" : "");
		break;
	case VT_HANDLE: n = snprintf(buf, len, "handle%s", null); break;
	case VT_CODE: n = snprintf(buf, len, "func(insn %d)", r->off); break;
	}
	if (s[0] && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "+%s", s);
	if (r->divergent && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "[div]");
}

static void log_state(struct verifier *v, const struct vstate *st)
{
	const struct vframe *f = v_cur(st);
	char buf[256];

	for (int r = 0; r <= 10; r++) {
		if (f->regs[r].type == VT_NOT_INIT)
			continue;
		v_format_reg(&f->regs[r], buf, sizeof(buf));
		v_log(v, " R%d=%s", r, buf);
	}
	for (int i = 0; i < VSLOTS; i++) {
		const struct vslot *s = &f->stack[i];
		char kinds[9];
		bool any = false;

		for (int b = 0; b < 8; b++) {
			kinds[b] = "?mzs"[s->bytes[b]];
			any |= s->bytes[b] != VB_INVALID;
		}
		kinds[8] = '\0';
		if (!any)
			continue;
		if (s->bytes[0] == VB_SPILL && s->spill_size == 8) {
			v_format_reg(&s->spill, buf, sizeof(buf));
			v_log(v, " fp-%d=%s", GPUEXT_STACK_SIZE - i * 8, buf);
		} else if (memchr(s->bytes, VB_SPILL, 8)) {
			v_format_reg(&s->spill, buf, sizeof(buf));
			v_log(v, " fp-%d=%s(%s@%u)", GPUEXT_STACK_SIZE - i * 8, kinds, buf,
			      s->spill_off);
		} else {
			v_log(v, " fp-%d=%s", GPUEXT_STACK_SIZE - i * 8, kinds);
		}
	}
	if (st->curframe)
		v_log(v, " (frame %d, called from insn %u)", st->curframe, f->callsite);
	v_log(v, "\n");
}

static void log_insn(struct verifier *v, uint32_t pc)
{
	char text[160] = "";

	gpuext_disasm_insn(v->prog, v->insns, v->cnt, pc, text, sizeof(text));
	v_log(v, "%u: (%02x) %s\n", pc, v->insns[pc].code, text);
}

int v_reject(struct verifier *v, const struct vstate *st, enum gpuext_rule rule, const char *hint,
	     const char *fmt, ...)
{
	va_list ap;

	if (v->rule)
		return -EACCES;
	v->rule = rule;
	v->fail_pc = st ? st->pc : 0;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
	snprintf(v->hint, sizeof(v->hint), "%s", hint ? hint : "");
	if (st && st->pc < v->cnt) {
		log_insn(v, st->pc);
		if (st->frames[0]) /* static checks have no register state */
			log_state(v, st);
	}
	v_log(v, "%s\n", v->msg);
	v_log(v, "rule: %s (%s)\n", gpuext_rule_name(rule), gpuext_rule_desc(rule));
	if (v->hint[0])
		v_log(v, "hint: %s\n", v->hint);
	return -EACCES;
}

/* ---- states ---- */

int v_state_copy(struct vstate *dst, const struct vstate *src)
{
	*dst = *src;
	for (int i = 0; i <= src->curframe; i++) {
		dst->frames[i] = malloc(sizeof(struct vframe));
		if (!dst->frames[i]) {
			for (int j = 0; j < i; j++)
				free(dst->frames[j]);
			return -ENOMEM;
		}
		memcpy(dst->frames[i], src->frames[i], sizeof(struct vframe));
	}
	for (int i = src->curframe + 1; i < GPUEXT_MAX_CALL_FRAMES; i++)
		dst->frames[i] = NULL;
	dst->hist = NULL;
	dst->caphist = dst->nhist = 0;
	if (src->nhist) {
		dst->hist = malloc(src->nhist * sizeof(*dst->hist));
		if (!dst->hist) {
			for (int j = 0; j <= src->curframe; j++)
				free(dst->frames[j]);
			return -ENOMEM;
		}
		memcpy(dst->hist, src->hist, src->nhist * sizeof(*dst->hist));
		dst->nhist = dst->caphist = src->nhist;
	}
	return 0;
}

void v_state_free(struct vstate *st)
{
	for (int i = 0; i < GPUEXT_MAX_CALL_FRAMES; i++) {
		free(st->frames[i]);
		st->frames[i] = NULL;
	}
	free(st->hist);
	st->hist = NULL;
	st->nhist = st->caphist = 0;
}

struct vstate *v_push_branch(struct verifier *v, const struct vstate *st, uint32_t pc)
{
	struct vpending *p;

	if (v->nstack == v->capstack) {
		size_t cap = v->capstack ? v->capstack * 2 : 64;
		struct vpending *s = realloc(v->stack, cap * sizeof(*s));

		if (!s)
			return NULL;
		v->stack = s;
		v->capstack = cap;
	}
	if (v->nstack >= 8192) {
		v_reject(v, st, GPUEXT_RULE_LOOP_BOUND, "simplify the branching; split the program",
			 "the program has more than 8192 pending branches");
		return NULL;
	}
	p = &v->stack[v->nstack];
	if (v_state_copy(&p->st, st))
		return NULL;
	p->st.pc = pc;
	if (p->st.parent)
		p->st.parent->branches++;
	v->nstack++;
	return &p->st;
}

/* ---- static analysis ---- */

static void succs(struct verifier *v, uint32_t i, int64_t out[3], int *n)
{
	const struct bpf_insn *in = &v->insns[i];
	const struct isa_decoded *d = &v->dec[i];

	*n = 0;
	switch (d->kind) {
	case ISA_EXIT:
		return;
	case ISA_JA:
		out[(*n)++] = isa_jump_target(in, i);
		return;
	case ISA_JCOND:
		out[(*n)++] = i + 1;
		out[(*n)++] = isa_jump_target(in, i);
		return;
	default:
		out[(*n)++] = i + d->slots;
	}
}

/* Registers read (use) and written (def) by insn @i, for liveness. */
static void use_def(struct verifier *v, uint32_t i, uint16_t *use, uint16_t *def)
{
	const struct bpf_insn *in = &v->insns[i];
	const struct isa_decoded *d = &v->dec[i];
	uint16_t u = 0, df = 0;
	const uint16_t args = 0x3e; /* r1-r5 */

	switch (d->kind) {
	case ISA_ALU:
		if (isa_op(in->code) != BPF_MOV && isa_op(in->code) != BPF_NEG)
			u |= 1u << in->dst_reg;
		if (isa_op(in->code) == BPF_NEG)
			u |= 1u << in->dst_reg;
		if (!d->use_imm)
			u |= 1u << in->src_reg;
		df |= 1u << in->dst_reg;
		break;
	case ISA_BSWAP:
		u |= 1u << in->dst_reg;
		df |= 1u << in->dst_reg;
		break;
	case ISA_LDDW:
		df |= 1u << in->dst_reg;
		break;
	case ISA_LDX:
		u |= 1u << in->src_reg;
		df |= 1u << in->dst_reg;
		break;
	case ISA_ST:
		u |= 1u << in->dst_reg;
		break;
	case ISA_STX:
		u |= 1u << in->dst_reg | 1u << in->src_reg;
		break;
	case ISA_ATOMIC:
		u |= 1u << in->dst_reg | 1u << in->src_reg;
		if (in->imm == BPF_CMPXCHG) {
			u |= 1;
			df |= 1;
		} else if (in->imm & BPF_FETCH) {
			df |= 1u << in->src_reg;
		}
		break;
	case ISA_JCOND:
		u |= 1u << in->dst_reg;
		if (!d->use_imm)
			u |= 1u << in->src_reg;
		break;
	case ISA_CALLX:
		u |= 1u << in->dst_reg;
		/* fallthrough */
	case ISA_CALL:
		u |= args;
		df |= 0x3f;
		break;
	case ISA_EXIT:
		u |= 1;
		break;
	case ISA_JA:
		break;
	}
	*use = u & 0x3ff;
	*def = df & 0x3ff;
}

int v_static_checks(struct verifier *v, uint16_t **live_out);

static int func_of(const struct verifier *v, size_t insn)
{
	int f = 0;

	for (size_t i = 0; i < v->prog->func_cnt; i++)
		if (v->prog->funcs[i].start <= insn)
			f = (int)i;
	return f;
}

/* Depth-first over the call graph; a back edge is recursion. */
static int check_recursion(struct verifier *v)
{
	size_t nf = v->prog->func_cnt;
	uint8_t *color = calloc(nf ? nf : 1, 1);	/* 0 new, 1 on the DFS stack, 2 done */
	int *stack = malloc((nf + 1) * sizeof(int)), *next = calloc(nf ? nf : 1, sizeof(int));
	int sp = 0, err = 0;

	if (!color || !stack || !next) {
		err = -ENOMEM;
		goto out;
	}
	stack[sp++] = 0;
	color[0] = 1;
	while (sp) {
		int f = stack[sp - 1];
		size_t end = (size_t)f + 1 < nf ? v->prog->funcs[f + 1].start : v->cnt;
		size_t i = v->prog->funcs[f].start + (size_t)next[f];
		int64_t target = -1;

		for (; i < end; i += v->dec[i].slots ? v->dec[i].slots : 1) {
			const struct bpf_insn *in = &v->insns[i];

			if (v->dec[i].kind == ISA_CALL && in->src_reg == BPF_PSEUDO_CALL)
				target = isa_jump_target(in, i);
			else if (v->dec[i].kind == ISA_LDDW && in->src_reg == BPF_PSEUDO_FUNC)
				target = isa_func_addr_target(in, i);
			if (target >= 0) {
				i += v->dec[i].slots ? v->dec[i].slots : 1;
				break;
			}
		}
		next[f] = (int)(i - v->prog->funcs[f].start);
		if (target < 0) {
			color[f] = 2;
			sp--;
			continue;
		}
		int g = func_of(v, (size_t)target);

		if (color[g] == 1) {
			struct vstate at = { .pc = (uint32_t)(i - 1) };

			err = v_reject(v, &at, GPUEXT_RULE_CALL_DEPTH,
				       "rewrite the recursion as a bounded loop",
				       "recursive call: %s calls %s, which is on the call chain",
				       v->prog->funcs[f].name, v->prog->funcs[g].name);
			goto out;
		}
		if (color[g] == 0) {
			color[g] = 1;
			stack[sp++] = g;
		}
	}
out:
	free(color);
	free(stack);
	free(next);
	return err;
}

int v_static_checks(struct verifier *v, uint16_t **live_out)
{
	size_t cnt = v->cnt;
	uint8_t *seen = calloc(cnt, 1);
	uint32_t *work = malloc(cnt * sizeof(*work));
	uint16_t *use = malloc(cnt * sizeof(*use)), *def = malloc(cnt * sizeof(*def));
	uint16_t *lin = calloc(cnt, sizeof(*lin)), *lout = calloc(cnt, sizeof(*lout));
	size_t nw = 0;
	int err = 0;
	struct vstate dummy = { 0 };

	if (!seen || !work || !use || !def || !lin || !lout) {
		err = -ENOMEM;
		goto out;
	}
	/* reachability from the entry; calls and function addresses add their targets */
	work[nw++] = 0;
	seen[0] = 1;
	while (nw) {
		uint32_t i = work[--nw];
		int64_t s[3] = { 0, 0, 0 };	/* succs() fills n of them; gcc -O3 cannot tell */
		int n;

		succs(v, i, s, &n);
		if (v->dec[i].kind == ISA_CALL && v->insns[i].src_reg == BPF_PSEUDO_CALL)
			s[n++] = isa_jump_target(&v->insns[i], i);
		if (v->dec[i].kind == ISA_LDDW && v->insns[i].src_reg == BPF_PSEUDO_FUNC)
			s[n++] = isa_func_addr_target(&v->insns[i], i);
		for (int k = 0; k < n; k++) {
			if (s[k] >= (int64_t)cnt) {
				dummy.pc = i;
				err = v_reject(v, &dummy, GPUEXT_RULE_FALL_OFF_END,
					       "end every path with exit (or a jump back)",
					       "execution can run past the last instruction after insn %u", i);
				goto out;
			}
			if (!seen[s[k]]) {
				seen[s[k]] = 1;
				work[nw++] = (uint32_t)s[k];
			}
		}
		/* successors that are jump targets or follow a branch are prune points */
		if (v->dec[i].kind == ISA_JCOND || v->dec[i].kind == ISA_JA) {
			for (int k = 0; k < n; k++)
				v->prune_point[s[k]] = 1;
		}
		if (v->dec[i].kind == ISA_CALL || v->dec[i].kind == ISA_CALLX)
			v->prune_point[i] = 1;
	}
	for (size_t i = 0; i < cnt; i += v->dec[i].slots) {
		if (!seen[i]) {
			dummy.pc = (uint32_t)i;
			err = v_reject(v, &dummy, GPUEXT_RULE_UNREACHABLE,
				       "remove dead code (or make a path reach it)",
				       "unreachable insn %zu", i);
			goto out;
		}
	}
	/* no recursion (as Linux): the call graph between functions must be acyclic */
	err = check_recursion(v);
	if (err)
		goto out;
	/* register liveness (backward, to a fixed point); calls fall through */
	for (size_t i = 0; i < cnt; i++)
		if (v->dec[i].slots)
			use_def(v, (uint32_t)i, &use[i], &def[i]);
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t j = cnt; j-- > 0;) {
			int64_t s[3] = { 0, 0, 0 };	/* succs() fills n of them; gcc -O3 cannot tell */
			int n;
			uint16_t o = 0, in;

			if (!v->dec[j].slots || !seen[j])
				continue;
			succs(v, (uint32_t)j, s, &n);
			for (int k = 0; k < n; k++)
				o |= lin[s[k]];
			in = use[j] | (o & ~def[j]);
			if (in != lin[j] || o != lout[j]) {
				lin[j] = in;
				lout[j] = o;
				changed = true;
			}
		}
	}
	*live_out = lin; /* live-in of each insn is what a state at it can depend on */
	lin = NULL;
out:
	free(seen);
	free(work);
	free(use);
	free(def);
	free(lin);
	free(lout);
	return err;
}

/* Immediate post-dominators (Cooper-Harvey-Kennedy on the reverse CFG), for SIMT. */
static int post_dominators(struct verifier *v)
{
	size_t n = v->cnt, exitn = n;
	int32_t *order = malloc((n + 1) * sizeof(*order)), *rpo_num = malloc((n + 1) * sizeof(*rpo_num));
	int32_t *idom = malloc((n + 1) * sizeof(*idom));
	uint32_t *stack = malloc((n + 1) * 2 * sizeof(*stack));
	uint8_t *state = calloc(n + 1, 1);
	size_t no = 0, sp = 0;
	int err = 0;

	if (!order || !rpo_num || !idom || !stack || !state) {
		err = -ENOMEM;
		goto out;
	}
	/* Reverse graph: exit -> each exit insn; j -> i for each original edge i -> j.
	 * Post-order DFS of the reverse graph from the virtual exit. */
	for (size_t i = 0; i <= n; i++)
		rpo_num[i] = -1;
	/* build reverse adjacency (predecessors in the original graph) */
	uint32_t *pred_cnt = calloc(n + 2, sizeof(uint32_t)), *preds = NULL;
	if (!pred_cnt) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t s[3] = { 0, 0, 0 };	/* succs() fills n of them; gcc -O3 cannot tell */
		int k;

		if (!v->dec[i].slots)
			continue;
		succs(v, (uint32_t)i, s, &k);
		if (v->dec[i].kind == ISA_EXIT)
			pred_cnt[exitn]++;
		for (int j = 0; j < k; j++)
			if (s[j] < (int64_t)n)
				pred_cnt[s[j]]++;
	}
	uint32_t *start = calloc(n + 2, sizeof(uint32_t));
	if (!start) {
		free(pred_cnt);
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i <= n; i++)
		start[i + 1] = start[i] + pred_cnt[i];
	preds = malloc((start[n + 1] + 1) * sizeof(uint32_t));
	memset(pred_cnt, 0, (n + 2) * sizeof(uint32_t));
	if (!preds) {
		free(pred_cnt);
		free(start);
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t s[3] = { 0, 0, 0 };	/* succs() fills n of them; gcc -O3 cannot tell */
		int k;

		if (!v->dec[i].slots)
			continue;
		succs(v, (uint32_t)i, s, &k);
		if (v->dec[i].kind == ISA_EXIT)
			preds[start[exitn] + pred_cnt[exitn]++] = (uint32_t)i;
		for (int j = 0; j < k; j++)
			if (s[j] < (int64_t)n)
				preds[start[s[j]] + pred_cnt[s[j]]++] = (uint32_t)i;
	}
	/* iterative DFS over the reverse graph (edges node -> its original predecessors) */
	stack[sp++] = (uint32_t)exitn;
	stack[sp++] = 0;
	state[exitn] = 1;
	while (sp) {
		uint32_t node = stack[sp - 2], idx = stack[sp - 1];

		if (idx < pred_cnt[node]) {
			uint32_t p = preds[start[node] + idx];

			stack[sp - 1]++;
			if (!state[p]) {
				state[p] = 1;
				stack[sp++] = p;
				stack[sp++] = 0;
			}
		} else {
			rpo_num[node] = (int32_t)no;
			order[no++] = (int32_t)node;
			sp -= 2;
		}
	}
	for (size_t i = 0; i <= n; i++)
		idom[i] = -1;
	idom[exitn] = (int32_t)exitn;
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t k = no; k-- > 0;) {
			int32_t b = order[k], nid = -1;
			int64_t s[3] = { 0, 0, 0 };	/* succs() fills n of them; gcc -O3 cannot tell */
			int m;

			if ((size_t)b == exitn)
				continue;
			/* "predecessors" in the reverse graph = successors in the original */
			succs(v, (uint32_t)b, s, &m);
			if (v->dec[b].kind == ISA_EXIT) {
				s[0] = (int64_t)exitn;
				m = 1;
			}
			for (int j = 0; j < m; j++) {
				int32_t p = (int32_t)s[j];

				if (p < 0 || (size_t)p > n || idom[p] < 0)
					continue;
				if (nid < 0) {
					nid = p;
					continue;
				}
				int32_t a = p, c = nid;
				while (a != c) {
					while (rpo_num[a] < rpo_num[c])
						a = idom[a];
					while (rpo_num[c] < rpo_num[a])
						c = idom[c];
				}
				nid = a;
			}
			if (nid >= 0 && idom[b] != nid) {
				idom[b] = nid;
				changed = true;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		v->ipdom[i] = (idom[i] < 0 || (size_t)idom[i] == exitn) ? -1 : idom[i];
	free(pred_cnt);
	free(start);
	free(preds);
out:
	free(order);
	free(rpo_num);
	free(idom);
	free(stack);
	free(state);
	return err;
}

/* ---- pruning ---- */

struct idmap {
	uint32_t old[64], cur[64];
	int n;
	uint32_t fresh;	/* stand-in ids for unlinked scalars of the current state */
};

static bool id_match(struct idmap *m, uint32_t old, uint32_t cur)
{
	if (!old && !cur)
		return true;
	if (!old || !cur)
		return false;
	for (int i = 0; i < m->n; i++) {
		if (m->old[i] == old)
			return m->cur[i] == cur;
		if (m->cur[i] == cur)
			return false;
	}
	if (m->n == 64)
		return false;
	m->old[m->n] = old;
	m->cur[m->n++] = cur;
	return true;
}

static bool scalar_equal(const struct scalar *a, const struct scalar *b)
{
	return a->var.value == b->var.value && a->var.mask == b->var.mask && a->umin == b->umin &&
	       a->umax == b->umax && a->smin == b->smin && a->smax == b->smax &&
	       a->u32min == b->u32min && a->u32max == b->u32max && a->s32min == b->s32min &&
	       a->s32max == b->s32max;
}

static bool reg_equal(const struct vreg *a, const struct vreg *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == VT_NOT_INIT)
		return true;
	return a->maybe_null == b->maybe_null && a->rdonly == b->rdonly &&
	       a->divergent == b->divergent && a->id == b->id && a->ref_id == b->ref_id &&
	       a->off == b->off && a->frameno == b->frameno && a->mem_size == b->mem_size &&
	       a->map == b->map && scalar_equal(&a->s, &b->s);
}

static bool reg_covers(const struct vreg *o, const struct vreg *c, struct idmap *m, bool exact)
{
	if (exact)
		return reg_equal(o, c);
	if (o->type == VT_NOT_INIT)
		return true; /* the old path never needed it */
	if (o->type != c->type || o->divergent < c->divergent)
		return false;
	if (o->type == VT_SCALAR && !o->precise)
		return c->type == VT_SCALAR; /* no decision below depended on its value */
	if (o->type == VT_SCALAR) {
		/* a link the old state relied on must exist here too */
		if (o->id && !id_match(m, o->id, c->id ? c->id : m->fresh++))
			return false;
		return scalar_covers(&o->s, &c->s);
	}
	if (o->off != c->off || o->map != c->map || o->frameno != c->frameno ||
	    o->mem_size != c->mem_size || o->rdonly != c->rdonly)
		return false;
	if (c->maybe_null && !o->maybe_null)
		return false;
	if ((o->maybe_null || c->maybe_null) && !id_match(m, o->id, c->id))
		return false;
	if (!id_match(m, o->ref_id + 0x80000000u * !!o->ref_id, c->ref_id + 0x80000000u * !!c->ref_id))
		return false;
	return scalar_covers(&o->s, &c->s);
}

static bool states_cover(struct verifier *v, const struct vstate *o, const struct vstate *c,
			 const uint16_t *live, bool exact)
{
	struct idmap m;

	m.n = 0;
	m.fresh = 0xc0000000u;

	if (o->curframe != c->curframe || o->nrefs != c->nrefs || o->ndiverge != c->ndiverge)
		return false;
	if (memcmp(o->diverge, c->diverge, sizeof(o->diverge[0]) * (size_t)o->ndiverge))
		return false;
	for (int f = 0; f <= o->curframe; f++) {
		const struct vframe *of = o->frames[f], *cf = c->frames[f];
		uint16_t lv;

		if (f == o->curframe) {
			lv = live[c->pc];
		} else {
			/* a caller frame: its r6-r9 that are read after the call returns */
			uint32_t ret = c->frames[f + 1]->callsite + 1;

			lv = (ret < v->cnt ? live[ret] : 0x3ff) & 0x3c0;
		}
		if (of->callsite != cf->callsite)
			return false;
		for (int r = 0; r < 10; r++) {
			if (!exact && !(lv & (1u << r)))
				continue;
			if (!reg_covers(&of->regs[r], &cf->regs[r], &m, exact))
				return false;
		}
		for (int s = 0; s < VSLOTS; s++) {
			const struct vslot *os = &of->stack[s], *cs = &cf->stack[s];

			for (int b = 0; b < 8; b++) {
				if (exact) {
					if (os->bytes[b] != cs->bytes[b])
						return false;
					continue;
				}
				if (os->bytes[b] == VB_INVALID)
					continue;
				if (os->bytes[b] == VB_MISC &&
				    (cs->bytes[b] == VB_MISC || cs->bytes[b] == VB_ZERO ||
				     (cs->bytes[b] == VB_SPILL && cs->spill.type == VT_SCALAR)))
					continue;
				if (os->bytes[b] != cs->bytes[b])
					return false;
			}
			if (memchr(os->bytes, VB_SPILL, 8) && memchr(cs->bytes, VB_SPILL, 8) &&
			    (os->spill_off != cs->spill_off || os->spill_size != cs->spill_size ||
			     !reg_covers(&os->spill, &cs->spill, &m, exact)))
				return false;
		}
	}
	for (int i = 0; i < o->nrefs; i++)
		if (!id_match(&m, o->refs[i] + 0x80000000u, c->refs[i] + 0x80000000u) ||
		    o->refdiv[i] != c->refdiv[i])
			return false;
	return true;
}

static uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static uint64_t hash_reg(uint64_t h, const struct vreg *r)
{
	h = mix(h, r->type);
	if (r->type == VT_NOT_INIT)
		return h;
	h = mix(h, (uint64_t)r->maybe_null | (uint64_t)r->rdonly << 1 | (uint64_t)r->divergent << 2);
	h = mix(h, (uint64_t)r->id << 32 | r->ref_id);
	h = mix(h, (uint64_t)(uint32_t)r->off << 32 | r->frameno);
	h = mix(h, (uint64_t)r->mem_size ^ (uint64_t)(uintptr_t)r->map);
	h = mix(h, r->s.var.value);
	h = mix(h, r->s.var.mask);
	h = mix(h, r->s.umin);
	h = mix(h, r->s.umax);
	h = mix(h, (uint64_t)r->s.smin);
	h = mix(h, (uint64_t)r->s.smax);
	return h;
}

/* Equal states (exact) have equal hashes. */
static uint64_t state_hash(const struct vstate *st)
{
	uint64_t h = mix((uint64_t)st->curframe, (uint64_t)st->nrefs << 8 | (uint64_t)st->ndiverge);

	for (int f = 0; f <= st->curframe; f++) {
		const struct vframe *fr = st->frames[f];

		h = mix(h, fr->callsite);
		for (int r = 0; r < 10; r++)
			h = hash_reg(h, &fr->regs[r]);
		for (int k = 0; k < VSLOTS; k++) {
			const struct vslot *sl = &fr->stack[k];
			uint64_t b;

			memcpy(&b, sl->bytes, 8);
			if (!b)
				continue;
			h = mix(h, (uint64_t)k << 56 ^ b);
			if (memchr(sl->bytes, VB_SPILL, 8))
				h = hash_reg(mix(h, (uint64_t)sl->spill_off << 8 | sl->spill_size),
					     &sl->spill);
		}
	}
	return h;
}

/*
 * A path ended after @len instructions: record its end in the checkpoint it
 * descends from, and close checkpoints whose paths are all explored, each
 * passing its furthest end up to its parent.
 */
static void path_done(struct vcheckpoint *cp, uint64_t len)
{
	while (cp) {
		if (len > cp->max_end)
			cp->max_end = len;
		if (--cp->branches)
			return;
		len = cp->max_end;
		cp = cp->parent;
	}
}

/* Returns 1 if the path can stop here (pruned), 0 to go on, <0 on rejection. */
static int check_prune(struct verifier *v, struct vstate *st, const uint16_t *live)
{
	struct vcheckpoint *cp, **link;
	uint64_t hash = state_hash(st);

	for (link = &v->cps[st->pc]; (cp = *link);) {
		bool hit = false;

		if (cp->branches == 0) {
			if (states_cover(v, &cp->st, st, live, false)) {
				uint64_t end = st->path_len + (cp->max_end - cp->path_pos);

				cp->hit++;
				v->res->pruned++;
				v_propagate_precision(v, st, &cp->st);
				path_done(st->parent, end);
				if (end > v->res->max_work)
					v->res->max_work = end;
				return 1;
			}
		} else if (cp->hash == hash && states_cover(v, &cp->st, st, live, true)) {
			return v_reject(v, st, GPUEXT_RULE_LOOP_BOUND,
					"make the loop change its state each iteration and bound it, e.g. "
					"for (i = 0; i < N; i++)",
					"infinite loop detected at insn %u: this state repeats an earlier one "
					"on the same path",
					st->pc);
		}
		/* A state that keeps missing (a loop head with a counter, say) only costs
		 * time: take it off the search list. One still in progress stays alive for
		 * the paths below it (they point to it as their parent). */
		if (!hit && ++cp->miss > cp->hit * 3 + 3) {
			*link = cp->next;
			if (cp->branches == 0) {
				v_state_free(&cp->st);
				free(cp->seg);
				free(cp);
				v->cur_states--;
			} else {
				cp->next = v->retired;
				v->retired = cp;
			}
			continue;
		}
		link = &cp->next;
	}
	if (v->cur_states >= MAX_STORED_STATES)
		return 0;
	/* Store sparsely (as Linux does): not before 2 jumps and 8 instructions since the
	 * last checkpoint on this path, so a tight loop does not keep a copy per iteration. */
	if (st->parent && (st->cp_jmps < 2 || st->path_len - st->cp_len < 8) &&
	    st->path_len - st->cp_len < 64)
		return 0;
	cp = calloc(1, sizeof(*cp));
	if (!cp || v_state_copy(&cp->st, st)) {
		free(cp);
		return -ENOMEM;
	}
	free(cp->st.hist);		/* the copy's history: the checkpoint keeps the original */
	cp->st.hist = NULL;
	cp->st.nhist = cp->st.caphist = 0;
	cp->seg = st->hist;
	cp->nseg = st->nhist;
	st->hist = NULL;
	st->nhist = st->caphist = 0;
	v_mark_all_imprecise(st);	/* marks below this checkpoint are found afresh */
	cp->parent = st->parent;
	cp->hash = hash;
	cp->branches = 1;
	cp->path_pos = st->path_len;
	cp->next = v->cps[st->pc];
	v->cps[st->pc] = cp;
	st->parent = cp;
	st->cp_len = st->path_len;
	st->cp_jmps = 0;
	v->cur_states++;
	v->res->states++;
	if (v->cur_states > v->peak_states)
		v->peak_states = v->cur_states;
	return 0;
}

static int explore(struct verifier *v, struct vstate *init, const uint16_t *live)
{
	struct vstate st = *init;
	int err = 0;

	for (;;) {
		/* jump targets, and every 64 instructions of straight-line code (so that
		 * precision backtracking stops at a recent state, not the start) */
		if (v->prune_point[st.pc] || st.path_len - st.cp_len >= 64) {
			err = check_prune(v, &st, live);
			if (err < 0)
				break;
			if (err == 1)
				goto next_path;
		}
		if (++v->res->insns_processed > v->budget) {
			err = v_reject(v, &st, GPUEXT_RULE_LOOP_BOUND,
				       "bound the loop with a small constant, or split the work",
				       "the program is too complex: more than %llu instructions processed "
				       "(a loop the verifier cannot prove bounded?)",
				       (unsigned long long)v->budget);
			break;
		}
		if (v->opts->log_level >= 1) {
			log_insn(v, st.pc);
			if (v->opts->log_level >= 2)
				log_state(v, &st);
		}
		st.path_len++;
		if (v->dec[st.pc].kind == ISA_JCOND || v->dec[st.pc].kind == ISA_JA)
			st.cp_jmps++;
		if (v_hist_push(&st, st.pc)) {
			err = -ENOMEM;
			break;
		}
		err = v_step(v, &st);
		if (err < 0)
			break;
		if (err == V_EXIT_PATH) {
			if (st.path_len > v->res->max_work)
				v->res->max_work = st.path_len;
			path_done(st.parent, st.path_len);
			goto next_path;
		}
		continue;
next_path:
		v_state_free(&st);
		if (!v->nstack) {
			err = 0;
			break;
		}
		st = v->stack[--v->nstack].st;
		if (v->opts->log_level >= 1)
			v_log(v, "from branch: continuing at insn %u\n", st.pc);
	}
	v_state_free(&st);
	return err;
}

static void free_all(struct verifier *v)
{
	for (size_t i = 0; i < v->nstack; i++)
		v_state_free(&v->stack[i].st);
	free(v->stack);
	if (v->cps) {
		for (size_t i = 0; i < v->cnt; i++) {
			struct vcheckpoint *cp = v->cps[i], *nx;

			for (; cp; cp = nx) {
				nx = cp->next;
				v_state_free(&cp->st);
				free(cp->seg);
				free(cp);
			}
		}
	}
	for (struct vcheckpoint *cp = v->retired, *nx; cp; cp = nx) {
		nx = cp->next;
		v_state_free(&cp->st);
		free(cp->seg);
		free(cp);
	}
	free(v->cps);
	free(v->dec);
	free(v->prune_point);
	free(v->ipdom);
}

static void emit_log(struct verifier *v)
{
	const struct gpuext_verify_opts *o = v->opts;

	if (!v->log)
		return;
	if (o->log_buf && o->log_size) {
		size_t n = v->log_len < o->log_size - 1 ? v->log_len : o->log_size - 1;

		memcpy(o->log_buf, v->log, n);
		o->log_buf[n] = '\0';
		return;
	}
	/* through the runtime's callback, one line per message */
	char *line = v->log, *nl;

	while (line && *line) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		gpuext_log(v->rt, v->rule ? GPUEXT_LOG_WARN : GPUEXT_LOG_INFO, "verifier: %s", line);
		line = nl ? nl + 1 : NULL;
	}
}

int gpuext_prog__verify(struct gpuext_prog *prog, const struct gpuext_verify_opts *opts,
			struct gpuext_verify_result *res)
{
	struct gpuext_verify_opts o = { .sz = sizeof(o) };
	struct gpuext_verify_result r = { .sz = sizeof(r) };
	struct verifier v = { 0 };
	struct vstate init = { 0 };
	struct gpuext_prog_type_desc host;
	uint16_t *live = NULL;
	struct timespec t0, t1;
	size_t bad_idx = 0;
	char why[160];
	int err;

	if (!prog)
		return GPUEXT_ERR(EINVAL);
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return GPUEXT_ERR(EINVAL);
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	v.type = o.type_desc ? o.type_desc : gpuext_prog_type_desc(o.type);
	if (v.type && !o.type_desc && o.type == GPUEXT_PROG_HOST) {
		/* host programs: the caller says how big the buffer in r1 is */
		host = *v.type;
		host.ctx_size = o.ctx_size;
		v.type = &host;
	}
	if (!v.type) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "verifier: unknown program type %d", (int)o.type);
		return GPUEXT_ERR(EINVAL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	v.prog = prog;
	v.rt = prog->rt;
	v.opts = &o;
	v.res = &r;
	v.insns = prog->insns;
	v.cnt = prog->insn_cnt;
	v.budget = o.insn_budget ? o.insn_budget : DEFAULT_BUDGET;
	v.next_id = 1;
	v.dec = calloc(v.cnt ? v.cnt : 1, sizeof(*v.dec));
	v.prune_point = calloc(v.cnt ? v.cnt : 1, 1);
	v.ipdom = calloc(v.cnt ? v.cnt : 1, sizeof(*v.ipdom));
	v.cps = calloc(v.cnt ? v.cnt : 1, sizeof(*v.cps));
	if (!v.dec || !v.prune_point || !v.ipdom || !v.cps) {
		err = -ENOMEM;
		goto out;
	}
	if (res && res->sz >= offsetof(struct gpuext_verify_result, mem_align) + sizeof(res->mem_align) &&
	    res->mem_align) {
		r.mem_align = v.mem_align = res->mem_align;
		memset(v.mem_align, 0, v.cnt);
	}
	err = isa_check_program(v.insns, v.cnt, &bad_idx, why, sizeof(why));
	if (err) {
		struct vstate at = { .pc = (uint32_t)bad_idx };

		err = v_reject(&v, v.cnt ? &at : NULL, GPUEXT_RULE_INVALID_INSN,
			       "recompile with clang -target bpf; hand-written code must follow RFC 9669",
			       "invalid instruction %zu: %s", bad_idx, why);
		goto out;
	}
	for (size_t i = 0; i < v.cnt; i++)
		if (isa_decode(v.insns, v.cnt, i, &v.dec[i], NULL, 0))
			v.dec[i].slots = 0;
	err = v_static_checks(&v, &live);
	if (err)
		goto out;
	if (v.type->simt) {
		err = post_dominators(&v);
		if (err)
			goto out;
	}
	/* the entry state */
	init.frames[0] = calloc(1, sizeof(struct vframe));
	if (!init.frames[0]) {
		err = -ENOMEM;
		goto out;
	}
	init.frames[0]->callsite = UINT32_MAX;
	{
		struct vframe *f = init.frames[0];

		if (v.type->ctx_size) {
			f->regs[1].type = VT_CTX;
			scalar_const(&f->regs[1].s, 0);
		}
		if (v.type->r2_is_ctx_size) {
			f->regs[2].type = VT_SCALAR;
			scalar_const(&f->regs[2].s, v.type->ctx_size);
		}
		f->regs[10].type = VT_STACK;
		scalar_const(&f->regs[10].s, 0);
	}
	err = explore(&v, &init, live);
	if (!err && v.type->max_work && r.max_work > v.type->max_work) {
		struct vstate at = { .pc = 0 };

		err = v_reject(&v, &at, GPUEXT_RULE_WORK_BOUND,
			       "bound loops with small constants; move heavy work to the host",
			       "a path of %llu instructions exceeds the %s work bound of %llu per invocation",
			       (unsigned long long)r.max_work, v.type->name,
			       (unsigned long long)v.type->max_work);
	}
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.time_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ULL +
		    (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	r.peak_states = v.peak_states;
	r.accepted = err == 0 && !v.rule;
	r.rule = v.rule;
	r.insn_idx = v.fail_pc;
	if (v.rule && err == 0)
		err = -EACCES;
	if (err == -EACCES || err == 0) {
		v_log(&v, "%s: processed %llu insns (limit %llu) total_states %u peak_states %u "
			  "pruned %u max_path %llu\n",
		      r.accepted ? "accepted" : "rejected", (unsigned long long)r.insns_processed,
		      (unsigned long long)v.budget, r.states, r.peak_states, r.pruned,
		      (unsigned long long)r.max_work);
	}
	emit_log(&v);
	free(v.log);
	free(live);
	free_all(&v);
	if (res) {
		size_t n = res->sz && res->sz < sizeof(r) ? res->sz : sizeof(r);

		memcpy(res, &r, n);
		res->sz = n;
	}
	return err ? GPUEXT_ERR(-err) : 0;
}
