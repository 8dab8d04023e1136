/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload generators (see workload.h). Each generator is a small state
 * machine over counters (pass, layer, row, ...) that writes accesses into
 * the caller's buffer and can stop at any point and resume, so millions of
 * accesses cost no allocation. A mix runs two generators and interleaves
 * their streams in fixed chunks, as two processes time-sharing the GPU do.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

#define ERR(e) (errno = (e), -(e))
#define PAGE SIM_PAGE_SIZE
#define MOE_MAX_LAYERS 128
#define MOE_MAX_EXPERTS 256
#define MOE_MAX_TOPK 16

/* ---- deterministic random numbers: splitmix64 seeds xoshiro256** ---- */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return res;
}

/* Uniform in [0, n) by multiply-shift; the bias (< n / 2^64) is immaterial here. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

static inline double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- the registry ---- */

enum wl_id { WL_SEQ, WL_RANDOM, WL_STRIDE, WL_MOE, WL_EPOCHS, WL_GNN, WL_MIX_LC_BE, WL_MIX_BE_BE };

/*
 * Rationale for each pattern and default; "seed" names the document in
 * /work/shared/seeds that measured or described it.
 */
static const struct sim_workload_desc registry[] = {
	[WL_SEQ] = {
		/* Faiss IVF index build: k-means iterations each stream the whole vector
		 * set once, in address order (seed: LPC 2025 slides, "Faiss Build:
		 * Sequential"). Default LRU/FIFO thrashes on a cyclic scan larger than
		 * memory; MRU or a sequential prefetch is the policy that wins. */
		"seq-scan", "sequential passes over one large array (vector-DB index build)",
		"Faiss IVF build: k-means passes over the vectors", 1.5, 1, 1,
		{ { "passes", 3, 1, 1000, 1, "full passes over the array (one kernel each)" } } },
	[WL_RANDOM] = {
		/* Faiss IVF query: each query probes nprobe inverted lists chosen
		 * uniformly at random; a list is a short contiguous run (seed: LPC 2025
		 * slides, "Faiss Query: Random"). No reuse to exploit: the baseline every
		 * policy should at least match. */
		"random", "uniformly random short runs (vector-DB query)",
		"Faiss IVF query: nprobe random inverted lists per query", 1.3, 1, 4,
		{ { "list_pages", 8, 1, 512, 1, "pages per inverted list (a run read in order)" },
		  { "nprobe", 4, 1, 256, 1, "lists probed per query" },
		  { "batch", 64, 1, 1e6, 1, "queries per kernel" },
		  { "queries", 0, 0, 1e9, 1, "queries in all (0: two touches per page on average)" } } },
	[WL_STRIDE] = {
		/* LLM prefill: a GEMM walks each layer's weight matrix tile column by
		 * tile column, so consecutive faults are one row pitch apart; layers
		 * follow one another and the prompt chunks repeat the walk (seed: LPC
		 * 2025 slides "LLM Prefill: Stride"; talk outline p.13, GPT-OSS-120B
		 * prefill = stride pattern, stride prefetch wins). */
		"stride", "strided walk over each layer's weights (LLM prefill)",
		"LLM prefill GEMMs over layer weights, chunk after chunk", 1.5, 1, 3,
		{ { "layers", 32, 1, 1024, 1, "layers (one kernel each per pass)" },
		  { "stride_pages", 16, 1, 512, 1, "row pitch in pages (delta between accesses)" },
		  { "passes", 2, 1, 1000, 1, "prompt chunks (passes over all layers)" } } },
	[WL_MOE] = {
		/* MoE decode: every token reads each layer's dense weights and top_k of
		 * its experts; expert popularity is Zipf-like (a few hot experts, a long
		 * cold tail) and differs per layer. Default 1.84x is the seed's setup:
		 * GPT-OSS-120B, 59 GiB, on a 32 GB RTX 5090 (talk outline p.13; LFU +
		 * prefetch gave 4.8x decode). */
		"moe-decode", "dense weights + Zipf-hot experts per layer (MoE decode)",
		"GPT-OSS-120B decode with expert offload", 1.84, 1, 6,
		{ { "layers", 16, 1, MOE_MAX_LAYERS, 1, "layers" },
		  { "experts", 32, 2, MOE_MAX_EXPERTS, 1, "experts per layer" },
		  { "top_k", 2, 1, MOE_MAX_TOPK, 1, "experts read per layer per token" },
		  { "zipf_s", 1.2, 0, 4, 0, "Zipf exponent of expert popularity (0 = uniform)" },
		  { "dense_frac", 0.1, 0, 0.9, 0, "share of the footprint in dense (always-read) weights" },
		  { "tokens", 16, 1, 1e6, 1, "decode steps (one kernel each)" } } },
	[WL_EPOCHS] = {
		/* DNN training: each iteration is a forward pass (read weights, write
		 * activations, layer 0..L-1) then a backward pass in reverse (read
		 * activations, update weights); the same sequence repeats every
		 * iteration (seed: LPC 2025 slides "PyTorch DNN: Periodic"; talk outline
		 * p.3, training datasets exceed VRAM). */
		"train-epochs", "forward/backward passes repeated every iteration (DNN training)",
		"PyTorch training step over a model larger than the GPU", 1.5, 1, 3,
		{ { "layers", 16, 1, 1024, 1, "layers" },
		  { "act_frac", 0.4, 0.05, 0.9, 0, "share of the footprint in activations" },
		  { "iterations", 3, 1, 1000, 1, "training iterations (2 x layers kernels each)" } } },
	[WL_GNN] = {
		/* GNN mini-batch training: neighbourhood sampling reads a seed node's
		 * features and its sampled neighbours; after graph reordering most
		 * neighbours sit near the seed (p_local within +-window nodes), the rest
		 * anywhere (seed: LPC 2025 slides "Also tested with GNN"; talk outline
		 * p.3, GNN embeddings reach TB scale). */
		"gnn-sample", "random seed nodes + mostly-local neighbours (GNN sampling)",
		"GraphSAGE-style neighbour sampling over node features", 1.5, 1, 6,
		{ { "feat_bytes", 1024, 64, 65536, 1, "bytes of features per node" },
		  { "fanout", 10, 1, 100, 1, "neighbours sampled per seed node" },
		  { "p_local", 0.8, 0, 1, 0, "probability a neighbour is within the window" },
		  { "window", 1024, 1, 1e9, 1, "locality window, in nodes either side" },
		  { "batch", 256, 1, 1e6, 1, "seed nodes per kernel" },
		  { "samples", 0, 0, 1e9, 1, "seed nodes in all (0: two touches per page on average)" } } },
	[WL_MIX_LC_BE] = {
		/* Two tenants: an LC inference process (MoE decode over a hot set that
		 * would fit alone) and a BE training process streaming a set larger
		 * than what is left. Default LRU lets the trainer evict the server's
		 * hot experts; a per-process priority protects them (seed: LPC 2025
		 * slides "Memory Priority: HP more prefetch and eviction protection,
		 * 55-92% time down"). */
		"mix-infer-train", "LC MoE inference + BE training sharing the GPU (memory priority)",
		"an LLM server and a trainer co-located on one GPU", 1.5, 2, 3,
		{ { "lc_frac", 0.4, 0.05, 0.9, 0, "LC footprint, as a share of GPU memory" },
		  { "lc_share", 0.3, 0.01, 0.99, 0, "share of the accesses made by the LC tenant" },
		  { "chunk", 256, 1, 65536, 1, "accesses per turn of the interleave" } } },
	[WL_MIX_BE_BE] = {
		/* Two equal trainers competing for memory (seed: talk outline p.14,
		 * "two processes compete for GPU memory, UVM oversubscribed"). */
		"mix-train-train", "two training processes competing for GPU memory",
		"two co-located training jobs", 1.5, 2, 2,
		{ { "share", 0.5, 0.01, 0.99, 0, "share of the accesses made by the first trainer" },
		  { "chunk", 256, 1, 65536, 1, "accesses per turn of the interleave" } } },
};

#define WL_CNT (sizeof(registry) / sizeof(registry[0]))

const struct sim_workload_desc *sim_workload_list(size_t *count)
{
	*count = WL_CNT;
	return registry;
}

const struct sim_workload_desc *sim_workload_find(const char *name)
{
	size_t n = strcspn(name, ":");

	for (size_t i = 0; i < WL_CNT; i++)
		if (strlen(registry[i].name) == n && !strncmp(registry[i].name, name, n))
			return &registry[i];
	return NULL;
}

void sim_workload_print_help(FILE *f)
{
	for (size_t i = 0; i < WL_CNT; i++) {
		const struct sim_workload_desc *d = &registry[i];

		fprintf(f, "  %-16s %s [default %.2fx GPU memory]\n", d->name, d->summary,
			d->default_oversub);
		for (unsigned k = 0; k < d->knob_cnt; k++)
			fprintf(f, "      %-12s %s (default %g, %g..%g)\n", d->knobs[k].name,
				d->knobs[k].help, d->knobs[k].def, d->knobs[k].min, d->knobs[k].max);
	}
}

/* ---- generators ---- */

enum gen_kind { G_SEQ, G_RANDOM, G_STRIDE, G_MOE, G_EPOCHS, G_GNN };

struct gen {
	enum gen_kind kind;
	uint32_t tgid;
	uint64_t seed;
	struct rng rng;
	uint64_t base[2];	/* va of the generator's ranges */
	uint64_t total;		/* accesses it yields in all */
	union {
		struct {
			uint64_t pages, passes;
			uint64_t pass, page;
		} seq;
		struct {
			uint64_t lists, list_pages, nprobe, batch, queries;
			uint64_t q, probe, idx, list;
		} rnd;
		struct {
			uint64_t layers, stride, passes, layer_pages, rows;
			uint64_t pass, layer, col, row;
		} str;
		struct {
			uint64_t layers, experts, top_k, tokens, dense_pages, expert_pages;
			double weight[MOE_MAX_EXPERTS], mass;
			uint8_t perm[MOE_MAX_LAYERS][MOE_MAX_EXPERTS];	/* rank -> expert */
			uint64_t token, layer, part, idx;	/* part 0 = dense, 1..k = experts */
			uint32_t chosen[MOE_MAX_TOPK];
		} moe;
		struct {
			uint64_t layers, iters, w_pages, a_pages;
			uint64_t iter, step, sub, idx;
		} ep;
		struct {
			uint64_t nodes, feat, fanout, window, batch, samples;
			double p_local;
			uint64_t s, j, node;
		} gnn;
	} u;
};

static double knob(const double *k, const struct sim_workload_desc *d, const char *name)
{
	for (unsigned i = 0; i < d->knob_cnt; i++)
		if (!strcmp(d->knobs[i].name, name))
			return k[i];
	return 0;
}

/* Picks top_k distinct experts of a layer by popularity rank, without replacement. */
static void moe_choose(struct gen *g)
{
	double left = g->u.moe.mass;
	uint64_t used[MOE_MAX_EXPERTS / 64] = { 0 };

	for (uint64_t k = 0; k < g->u.moe.top_k; k++) {
		double x = rng_unit(&g->rng) * left;
		uint64_t r, last = 0;

		for (r = 0; r < g->u.moe.experts; r++) {
			if (used[r / 64] >> (r % 64) & 1)
				continue;
			last = r;
			x -= g->u.moe.weight[r];
			if (x < 0)
				break;
		}
		if (r == g->u.moe.experts)
			r = last;	/* rounding left a sliver past the end */
		used[r / 64] |= 1ULL << (r % 64);
		left -= g->u.moe.weight[r];
		g->u.moe.chosen[k] = g->u.moe.perm[g->u.moe.layer][r];
	}
}

static void gen_reset(struct gen *g)
{
	rng_seed(&g->rng, g->seed);
	switch (g->kind) {
	case G_SEQ:
		g->u.seq.pass = g->u.seq.page = 0;
		break;
	case G_RANDOM:
		g->u.rnd.q = g->u.rnd.probe = g->u.rnd.idx = 0;
		g->u.rnd.list = rng_below(&g->rng, g->u.rnd.lists);
		break;
	case G_STRIDE:
		g->u.str.pass = g->u.str.layer = g->u.str.col = g->u.str.row = 0;
		break;
	case G_MOE:
		/* each layer's hot experts are a different random subset */
		for (uint64_t l = 0; l < g->u.moe.layers; l++) {
			for (uint64_t e = 0; e < g->u.moe.experts; e++)
				g->u.moe.perm[l][e] = (uint8_t)e;
			for (uint64_t e = g->u.moe.experts - 1; e > 0; e--) {
				uint64_t j = rng_below(&g->rng, e + 1);
				uint8_t t = g->u.moe.perm[l][e];

				g->u.moe.perm[l][e] = g->u.moe.perm[l][j];
				g->u.moe.perm[l][j] = t;
			}
		}
		g->u.moe.token = g->u.moe.layer = g->u.moe.part = g->u.moe.idx = 0;
		moe_choose(g);
		break;
	case G_EPOCHS:
		g->u.ep.iter = g->u.ep.step = g->u.ep.sub = g->u.ep.idx = 0;
		break;
	case G_GNN:
		g->u.gnn.s = g->u.gnn.j = 0;
		g->u.gnn.node = rng_below(&g->rng, g->u.gnn.nodes);
		break;
	}
}

#define EMIT(va_, w_, k_)                                                          \
	do {                                                                       \
		out[n].va = (va_);                                                 \
		out[n].tgid = g->tgid;                                             \
		out[n].kernel = (uint16_t)(k_);                                    \
		out[n].is_write = (w_);                                            \
		out[n].pad = 0;                                                    \
		n++;                                                               \
	} while (0)

static size_t fill_seq(struct gen *g, struct sim_access *out, size_t max)
{
	size_t n = 0;

	while (n < max && g->u.seq.pass < g->u.seq.passes) {
		EMIT(g->base[0] + g->u.seq.page * PAGE, 0, g->u.seq.pass);
		if (++g->u.seq.page == g->u.seq.pages) {
			g->u.seq.page = 0;
			g->u.seq.pass++;
		}
	}
	return n;
}

static size_t fill_random(struct gen *g, struct sim_access *out, size_t max)
{
	size_t n = 0;

	while (n < max && g->u.rnd.q < g->u.rnd.queries) {
		EMIT(g->base[0] + (g->u.rnd.list * g->u.rnd.list_pages + g->u.rnd.idx) * PAGE, 0,
		     g->u.rnd.q / g->u.rnd.batch);
		if (++g->u.rnd.idx < g->u.rnd.list_pages)
			continue;
		g->u.rnd.idx = 0;
		if (++g->u.rnd.probe == g->u.rnd.nprobe) {
			g->u.rnd.probe = 0;
			g->u.rnd.q++;
		}
		g->u.rnd.list = rng_below(&g->rng, g->u.rnd.lists);
	}
	return n;
}

static size_t fill_stride(struct gen *g, struct sim_access *out, size_t max)
{
	size_t n = 0;

	while (n < max && g->u.str.pass < g->u.str.passes) {
		uint64_t page = g->u.str.layer * g->u.str.layer_pages +
				g->u.str.row * g->u.str.stride + g->u.str.col;

		EMIT(g->base[0] + page * PAGE, 0, g->u.str.pass * g->u.str.layers + g->u.str.layer);
		if (++g->u.str.row < g->u.str.rows)
			continue;
		g->u.str.row = 0;
		if (++g->u.str.col < g->u.str.stride)
			continue;
		g->u.str.col = 0;
		if (++g->u.str.layer < g->u.str.layers)
			continue;
		g->u.str.layer = 0;
		g->u.str.pass++;
	}
	return n;
}

static size_t fill_moe(struct gen *g, struct sim_access *out, size_t max)
{
	size_t n = 0;

	while (n < max && g->u.moe.token < g->u.moe.tokens) {
		uint64_t l = g->u.moe.layer, part = g->u.moe.part, lim;

		if (part == 0) {
			lim = g->u.moe.dense_pages;
			if (lim)
				EMIT(g->base[0] + (l * lim + g->u.moe.idx) * PAGE, 0, g->u.moe.token);
		} else {
			uint64_t e = g->u.moe.chosen[part - 1];

			lim = g->u.moe.expert_pages;
			EMIT(g->base[1] + ((l * g->u.moe.experts + e) * lim + g->u.moe.idx) * PAGE, 0,
			     g->u.moe.token);
		}
		if (++g->u.moe.idx < lim)
			continue;
		g->u.moe.idx = 0;
		if (++g->u.moe.part <= g->u.moe.top_k)
			continue;
		g->u.moe.part = 0;
		if (++g->u.moe.layer == g->u.moe.layers) {
			g->u.moe.layer = 0;
			g->u.moe.token++;
		}
		moe_choose(g);
	}
	return n;
}

/*
 * Step s of an iteration: s < L is forward layer s (read W[s], then write
 * A[s]); s >= L is backward layer 2L-1-s (read A[l], then write W[l]).
 */
static size_t fill_epochs(struct gen *g, struct sim_access *out, size_t max)
{
	uint64_t L = g->u.ep.layers;
	size_t n = 0;

	while (n < max && g->u.ep.iter < g->u.ep.iters) {
		uint64_t s = g->u.ep.step, fwd = s < L, l = fwd ? s : 2 * L - 1 - s;
		/* sub 0 touches the input of the step, sub 1 its output */
		uint64_t weights = fwd ? g->u.ep.sub == 0 : g->u.ep.sub == 1;
		uint64_t per = weights ? g->u.ep.w_pages : g->u.ep.a_pages;
		uint64_t va = weights ? g->base[0] + (l * per + g->u.ep.idx) * PAGE
				      : g->base[1] + (l * per + g->u.ep.idx) * PAGE;

		EMIT(va, g->u.ep.sub == 1, g->u.ep.iter * 2 * L + s);
		if (++g->u.ep.idx < per)
			continue;
		g->u.ep.idx = 0;
		if (++g->u.ep.sub < 2)
			continue;
		g->u.ep.sub = 0;
		if (++g->u.ep.step < 2 * L)
			continue;
		g->u.ep.step = 0;
		g->u.ep.iter++;
	}
	return n;
}

static size_t fill_gnn(struct gen *g, struct sim_access *out, size_t max)
{
	size_t n = 0;

	while (n < max && g->u.gnn.s < g->u.gnn.samples) {
		uint64_t node = g->u.gnn.node, nodes = g->u.gnn.nodes;

		if (g->u.gnn.j > 0) {
			if (rng_unit(&g->rng) < g->u.gnn.p_local) {
				uint64_t w = g->u.gnn.window, off = rng_below(&g->rng, 2 * w + 1);

				/* node - w + off, wrapped into [0, nodes) */
				node = (node + nodes - (w % nodes) + off % nodes) % nodes;
			} else {
				node = rng_below(&g->rng, nodes);
			}
		}
		EMIT(g->base[0] + node * g->u.gnn.feat, 0, g->u.gnn.s / g->u.gnn.batch);
		if (++g->u.gnn.j <= g->u.gnn.fanout)
			continue;
		g->u.gnn.j = 0;
		g->u.gnn.s++;
		g->u.gnn.node = rng_below(&g->rng, nodes);
	}
	return n;
}

static size_t gen_fill(struct gen *g, struct sim_access *out, size_t max)
{
	switch (g->kind) {
	case G_SEQ: return fill_seq(g, out, max);
	case G_RANDOM: return fill_random(g, out, max);
	case G_STRIDE: return fill_stride(g, out, max);
	case G_MOE: return fill_moe(g, out, max);
	case G_EPOCHS: return fill_epochs(g, out, max);
	case G_GNN: return fill_gnn(g, out, max);
	}
	return 0;
}

/* ---- instances ---- */

#define MAX_GENS 2
#define MAX_RANGES 4

struct sim_workload {
	const struct sim_workload_desc *desc;
	double knobs[SIM_WORKLOAD_MAX_KNOBS];
	uint64_t gpu_mem, footprint, total, emitted, max_accesses;
	size_t nranges;
	struct sim_range ranges[MAX_RANGES];
	unsigned ngen;
	struct gen gens[MAX_GENS];
	/* interleave of a mix: turn lengths per generator, whose turn, left in it */
	uint64_t turn[MAX_GENS], cur, left;
	bool done[MAX_GENS];
};

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static void add_range(struct sim_workload *w, struct gen *g, unsigned idx, uint64_t va,
		      uint64_t bytes)
{
	struct sim_range *r = &w->ranges[w->nranges++];

	r->va = va;
	r->size = round_up(bytes ? bytes : 1, SIM_BLOCK_SIZE);
	r->tgid = g->tgid;
	g->base[idx] = va;
	w->footprint += r->size;
}

/*
 * Lays out generator @g of kind @kind with the knobs @k of @d over @pages
 * pages of footprint, for tenant number @tenant. Returns 0 or -EINVAL with
 * a message when the footprint is too small for the knobs.
 */
static int gen_init(struct sim_workload *w, struct gen *g, enum gen_kind kind,
		    const struct sim_workload_desc *d, const double *k, uint64_t pages,
		    unsigned tenant, uint32_t tgid, uint64_t seed,
		    const struct gpuext_runtime *rt)
{
	uint64_t va = SIM_VA_BASE + tenant * SIM_TENANT_VA_STRIDE;

	memset(g, 0, sizeof(*g));
	g->kind = kind;
	g->tgid = tgid;
	g->seed = seed;
	switch (kind) {
	case G_SEQ:
		g->u.seq.pages = pages;
		g->u.seq.passes = (uint64_t)knob(k, d, "passes");
		g->total = pages * g->u.seq.passes;
		add_range(w, g, 0, va, pages * PAGE);
		break;
	case G_RANDOM: {
		uint64_t lp = (uint64_t)knob(k, d, "list_pages"), q = (uint64_t)knob(k, d, "queries");

		g->u.rnd.list_pages = lp;
		g->u.rnd.lists = pages / lp;
		g->u.rnd.nprobe = (uint64_t)knob(k, d, "nprobe");
		g->u.rnd.batch = (uint64_t)knob(k, d, "batch");
		if (!g->u.rnd.lists)
			goto too_small;
		if (!q)
			q = (2 * pages + lp * g->u.rnd.nprobe - 1) / (lp * g->u.rnd.nprobe);
		g->u.rnd.queries = q;
		g->total = q * g->u.rnd.nprobe * lp;
		add_range(w, g, 0, va, g->u.rnd.lists * lp * PAGE);
		break;
	}
	case G_STRIDE: {
		uint64_t L = (uint64_t)knob(k, d, "layers"), s = (uint64_t)knob(k, d, "stride_pages");

		g->u.str.layers = L;
		g->u.str.stride = s;
		g->u.str.passes = (uint64_t)knob(k, d, "passes");
		g->u.str.rows = pages / L / s;
		g->u.str.layer_pages = g->u.str.rows * s;
		if (!g->u.str.rows)
			goto too_small;
		g->total = g->u.str.passes * L * g->u.str.layer_pages;
		add_range(w, g, 0, va, L * g->u.str.layer_pages * PAGE);
		break;
	}
	case G_MOE: {
		uint64_t L = (uint64_t)knob(k, d, "layers"), E = (uint64_t)knob(k, d, "experts");
		double s = knob(k, d, "zipf_s");
		uint64_t dense;

		g->u.moe.layers = L;
		g->u.moe.experts = E;
		g->u.moe.top_k = (uint64_t)knob(k, d, "top_k");
		g->u.moe.tokens = (uint64_t)knob(k, d, "tokens");
		if (g->u.moe.top_k >= E) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "workload %s: top_k (%llu) must be below experts (%llu)", d->name,
				   (unsigned long long)g->u.moe.top_k, (unsigned long long)E);
			return ERR(EINVAL);
		}
		g->u.moe.dense_pages = (uint64_t)(pages * knob(k, d, "dense_frac")) / L;
		dense = g->u.moe.dense_pages * L;
		g->u.moe.expert_pages = (pages - dense) / (L * E);
		if (!g->u.moe.expert_pages)
			goto too_small;
		g->u.moe.mass = 0;
		for (uint64_t r = 0; r < E; r++) {
			g->u.moe.weight[r] = 1.0 / pow((double)(r + 1), s);
			g->u.moe.mass += g->u.moe.weight[r];
		}
		g->total = g->u.moe.tokens * L *
			   (g->u.moe.dense_pages + g->u.moe.top_k * g->u.moe.expert_pages);
		/* the dense range exists even when empty, so expert addresses stay put */
		add_range(w, g, 0, va, dense * PAGE);
		add_range(w, g, 1, va + w->ranges[w->nranges - 1].size,
			  L * E * g->u.moe.expert_pages * PAGE);
		break;
	}
	case G_EPOCHS: {
		uint64_t L = (uint64_t)knob(k, d, "layers");
		double af = knob(k, d, "act_frac");

		g->u.ep.layers = L;
		g->u.ep.iters = (uint64_t)knob(k, d, "iterations");
		g->u.ep.a_pages = (uint64_t)(pages * af) / L;
		g->u.ep.w_pages = (pages - g->u.ep.a_pages * L) / L;
		if (!g->u.ep.a_pages || !g->u.ep.w_pages)
			goto too_small;
		g->total = g->u.ep.iters * 2 * L * (g->u.ep.w_pages + g->u.ep.a_pages);
		add_range(w, g, 0, va, L * g->u.ep.w_pages * PAGE);
		add_range(w, g, 1, va + w->ranges[w->nranges - 1].size, L * g->u.ep.a_pages * PAGE);
		break;
	}
	case G_GNN: {
		uint64_t feat = (uint64_t)knob(k, d, "feat_bytes"), sm = (uint64_t)knob(k, d, "samples");

		g->u.gnn.feat = feat;
		g->u.gnn.nodes = pages * PAGE / feat;
		g->u.gnn.fanout = (uint64_t)knob(k, d, "fanout");
		g->u.gnn.p_local = knob(k, d, "p_local");
		g->u.gnn.window = (uint64_t)knob(k, d, "window");
		g->u.gnn.batch = (uint64_t)knob(k, d, "batch");
		if (!g->u.gnn.nodes)
			goto too_small;
		if (!sm)
			sm = (2 * pages + g->u.gnn.fanout) / (g->u.gnn.fanout + 1);
		g->u.gnn.samples = sm;
		g->total = sm * (g->u.gnn.fanout + 1);
		add_range(w, g, 0, va, g->u.gnn.nodes * feat);
		break;
	}
	}
	gen_reset(g);
	return 0;
too_small:
	gpuext_log(rt, GPUEXT_LOG_WARN,
		   "workload %s: a footprint of %llu pages is too small for these knobs; "
		   "raise gpu_mem_bytes or oversub", d->name, (unsigned long long)pages);
	return ERR(EINVAL);
}

/* Parses "k=v,k=v" into @vals (pre-filled with defaults). */
static int parse_knobs(const struct sim_workload_desc *d, const char *s, double *vals,
		       const struct gpuext_runtime *rt)
{
	while (s && *s) {
		size_t len = strcspn(s, ","), klen = strcspn(s, "=");
		char buf[64], *end;
		unsigned i;
		double v;

		if (klen >= len || len >= sizeof(buf)) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "workload %s: knob '%.*s' is not name=value", d->name, (int)len, s);
			return ERR(EINVAL);
		}
		for (i = 0; i < d->knob_cnt; i++)
			if (strlen(d->knobs[i].name) == klen && !strncmp(d->knobs[i].name, s, klen))
				break;
		if (i == d->knob_cnt) {
			char names[256] = "";

			for (unsigned j = 0; j < d->knob_cnt; j++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 j ? ", " : "", d->knobs[j].name);
			gpuext_log(rt, GPUEXT_LOG_WARN, "workload %s: no knob '%.*s' (knobs: %s)",
				   d->name, (int)klen, s, names);
			return ERR(EINVAL);
		}
		memcpy(buf, s + klen + 1, len - klen - 1);
		buf[len - klen - 1] = '\0';
		errno = 0;
		v = strtod(buf, &end);
		if (end == buf || *end || errno || !(v >= d->knobs[i].min && v <= d->knobs[i].max) ||
		    (d->knobs[i].integer && v != floor(v))) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "workload %s: knob %s=%s is invalid (want %s in %g..%g)", d->name,
				   d->knobs[i].name, buf, d->knobs[i].integer ? "an integer" : "a number",
				   d->knobs[i].min, d->knobs[i].max);
			return ERR(EINVAL);
		}
		vals[i] = v;
		s += len + (s[len] == ',');
	}
	return 0;
}

static const enum gen_kind single_kind[] = {
	[WL_SEQ] = G_SEQ, [WL_RANDOM] = G_RANDOM, [WL_STRIDE] = G_STRIDE,
	[WL_MOE] = G_MOE, [WL_EPOCHS] = G_EPOCHS, [WL_GNN] = G_GNN,
};

int sim_workload__new(const char *spec, const struct sim_workload_opts *opts,
		      struct sim_workload **out)
{
	struct sim_workload_opts o = { .sz = sizeof(o) };
	const struct sim_workload_desc *d;
	struct sim_workload *w;
	uint64_t gpu_pages, pages, seed;
	uint32_t tgid;
	double over;
	int err;

	if (!spec || !out)
		return ERR(EINVAL);
	*out = NULL;
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return ERR(EINVAL);
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	d = sim_workload_find(spec);
	if (!d) {
		gpuext_log(o.rt, GPUEXT_LOG_WARN, "no workload '%.*s' (`gpuext sim --list` shows them)",
			   (int)strcspn(spec, ":"), spec);
		return ERR(ENOENT);
	}
	if (!o.gpu_mem_bytes)
		o.gpu_mem_bytes = 1ULL << 30;
	over = o.oversub ? o.oversub : d->default_oversub;
	gpu_pages = o.gpu_mem_bytes / SIM_BLOCK_SIZE * (SIM_BLOCK_SIZE / PAGE);
	if (!gpu_pages || !(over > 0 && over <= 16)) {
		gpuext_log(o.rt, GPUEXT_LOG_WARN,
			   "workload %s: need at least 2 MiB of GPU memory and 0 < oversub <= 16 "
			   "(got %llu bytes, %g)", d->name, (unsigned long long)o.gpu_mem_bytes, over);
		return ERR(EINVAL);
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return ERR(ENOMEM);
	w->desc = d;
	w->gpu_mem = gpu_pages * PAGE;
	w->max_accesses = o.max_accesses;
	for (unsigned i = 0; i < d->knob_cnt; i++)
		w->knobs[i] = d->knobs[i].def;
	err = parse_knobs(d, strchr(spec, ':') ? strchr(spec, ':') + 1 : NULL, w->knobs, o.rt);
	if (err)
		goto fail;
	pages = (uint64_t)(gpu_pages * over);
	tgid = o.tgid_base ? o.tgid_base : SIM_TGID_BASE;
	seed = o.seed;
	switch ((enum wl_id)(d - registry)) {
	case WL_MIX_LC_BE: {
		const struct sim_workload_desc *md = &registry[WL_MOE], *ed = &registry[WL_EPOCHS];
		double mk[SIM_WORKLOAD_MAX_KNOBS], ek[SIM_WORKLOAD_MAX_KNOBS];
		double share = knob(w->knobs, d, "lc_share");
		uint64_t lc_pages = (uint64_t)(gpu_pages * knob(w->knobs, d, "lc_frac"));
		uint64_t per_token;

		if (lc_pages >= pages) {
			gpuext_log(o.rt, GPUEXT_LOG_WARN,
				   "workload %s: lc_frac must be below oversub", d->name);
			err = ERR(EINVAL);
			goto fail;
		}
		for (unsigned i = 0; i < SIM_WORKLOAD_MAX_KNOBS; i++) {
			mk[i] = md->knobs[i].def;
			ek[i] = ed->knobs[i].def;
		}
		err = gen_init(w, &w->gens[1], G_EPOCHS, ed, ek, pages - lc_pages, 1, tgid + 1,
			       seed ^ 0xbe, o.rt);
		if (err)
			goto fail;
		err = gen_init(w, &w->gens[0], G_MOE, md, mk, lc_pages, 0, tgid, seed ^ 0x1c, o.rt);
		if (err)
			goto fail;
		/* the server decodes for as long as the trainer trains */
		per_token = w->gens[0].total / w->gens[0].u.moe.tokens;
		w->gens[0].u.moe.tokens =
			(uint64_t)ceil(w->gens[1].total * share / (1 - share) / per_token) + 1;
		w->gens[0].total = w->gens[0].u.moe.tokens * per_token;
		/* the ranges went in BE first: keep them sorted by va */
		{
			struct sim_range t[MAX_RANGES];

			memcpy(t, w->ranges, sizeof(t));
			memcpy(w->ranges, t + 2, 2 * sizeof(t[0]));
			memcpy(w->ranges + 2, t, 2 * sizeof(t[0]));
		}
		w->ngen = 2;
		w->turn[0] = (uint64_t)fmax(1, round(knob(w->knobs, d, "chunk") * share / (1 - share)));
		w->turn[1] = (uint64_t)knob(w->knobs, d, "chunk");
		break;
	}
	case WL_MIX_BE_BE: {
		const struct sim_workload_desc *ed = &registry[WL_EPOCHS];
		double ek[SIM_WORKLOAD_MAX_KNOBS], share = knob(w->knobs, d, "share");
		uint64_t chunk = (uint64_t)knob(w->knobs, d, "chunk");

		for (unsigned i = 0; i < SIM_WORKLOAD_MAX_KNOBS; i++)
			ek[i] = ed->knobs[i].def;
		for (unsigned t = 0; t < 2; t++) {
			err = gen_init(w, &w->gens[t], G_EPOCHS, ed, ek, pages / 2, t, tgid + t,
				       seed ^ (0xbe0 + t), o.rt);
			if (err)
				goto fail;
		}
		w->ngen = 2;
		w->turn[0] = (uint64_t)fmax(1, round(chunk * share / (1 - share)));
		w->turn[1] = chunk;
		break;
	}
	default:
		err = gen_init(w, &w->gens[0], single_kind[d - registry], d, w->knobs, pages, 0, tgid,
			       seed, o.rt);
		if (err)
			goto fail;
		w->ngen = 1;
		break;
	}
	for (unsigned i = 0; i < w->ngen; i++)
		w->total += w->gens[i].total;
	if (w->max_accesses && w->max_accesses < w->total)
		w->total = w->max_accesses;
	sim_workload__rewind(w);
	*out = w;
	return 0;
fail:
	free(w);
	return err;
}

void sim_workload__free(struct sim_workload *w)
{
	free(w);
}

void sim_workload__rewind(struct sim_workload *w)
{
	for (unsigned i = 0; i < w->ngen; i++) {
		gen_reset(&w->gens[i]);
		w->done[i] = false;
	}
	w->emitted = 0;
	w->cur = 0;
	w->left = w->turn[0];
}

const struct sim_workload_desc *sim_workload__desc(const struct sim_workload *w)
{
	return w->desc;
}

size_t sim_workload__ranges(const struct sim_workload *w, const struct sim_range **out)
{
	*out = w->ranges;
	return w->nranges;
}

uint64_t sim_workload__total(const struct sim_workload *w) { return w->total; }
uint64_t sim_workload__gpu_mem_bytes(const struct sim_workload *w) { return w->gpu_mem; }

double sim_workload__oversub(const struct sim_workload *w)
{
	return (double)w->footprint / (double)w->gpu_mem;
}

double sim_workload__knob(const struct sim_workload *w, const char *name)
{
	for (unsigned i = 0; i < w->desc->knob_cnt; i++)
		if (!strcmp(w->desc->knobs[i].name, name))
			return w->knobs[i];
	return NAN;
}

size_t sim_workload__next(struct sim_workload *w, struct sim_access *buf, size_t max)
{
	size_t n = 0;

	if (max > w->total - w->emitted)
		max = (size_t)(w->total - w->emitted);
	if (w->ngen == 1) {
		n = gen_fill(&w->gens[0], buf, max);
	} else {
		/* turns of turn[i] accesses each; a finished generator gives its turns away */
		while (n < max && !(w->done[0] && w->done[1])) {
			size_t want = max - n, got;

			if (w->done[w->cur] || !w->left) {
				w->cur ^= 1;
				w->left = w->turn[w->cur];
				continue;
			}
			if (want > w->left)
				want = (size_t)w->left;
			got = gen_fill(&w->gens[w->cur], buf + n, want);
			n += got;
			w->left -= got;
			if (got < want)
				w->done[w->cur] = true;
		}
	}
	w->emitted += n;
	return n;
}
