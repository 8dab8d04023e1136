/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Launches: before every cuLaunchKernel/Ex/Cooperative (and their _ptsz
 * forms) the kernel's map tables are made ready in the current context; a
 * launch the driver accepts queues a struct gx_launch_rec (CLOCK_REALTIME
 * just before the call, kernel id, dims, pid, GPU, sequence), and the mirror
 * thread appends the queue to DIR/launches.bin every interval and at exit,
 * in whole records. No record for a launch the driver refused, nor for one
 * into a stream being captured into a CUDA graph: that call runs nothing
 * (launchlate would pair it with a replay of the graph, whenever that
 * comes). Graph kernel nodes get their tables ready when the node is added
 * or changed, since a graph launch runs them without passing through us.
 * A graph launch (cuGraphLaunch) queues one record per kernel node of the
 * executable graph, all with the time of that call: the kernel nodes are
 * read from the graph when it is instantiated (or updated), child graphs
 * included, and kept per executable graph until it is destroyed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nv_preload.h"
#include "ptx_twin.h"

/* ------------------------------------------------------------------ */
/* Launches                                                             */
/* ------------------------------------------------------------------ */

void nv_flush_launches(void)
{
	size_t n;

	pthread_mutex_lock(&g.llock);
	n = g.lcnt;
	if (!n) {
		pthread_mutex_unlock(&g.llock);
		return;
	}
	/* One write of whole records: readers never see half a record appended. */
	nv_write_all(g.launches_fd, g.lbuf, n * sizeof(*g.lbuf));
	g.lcnt = 0;
	pthread_mutex_unlock(&g.llock);
}

/* Learns a handle we never saw looked up (e.g. from a module loaded before CUDA 12.3's name API). */
static struct nv_handle *learn(const void *f)
{
	const char *name = NULL;
	size_t nl, sl = strlen(GX_FLAT_TWIN_SUFFIX);

	if (!g.cu.FuncGetName || g.cu.FuncGetName(&name, (CUfunction)f) != CUDA_SUCCESS ||
	    !name)
		return nv_handle_add(f, 0, NULL, NULL, false, NULL);
	/* a flat twin's function we never handed out: its kernel's id */
	nl = strlen(name);
	if (nl > sl && !strcmp(name + nl - sl, GX_FLAT_TWIN_SUFFIX))
		nl -= sl;
	return nv_handle_add(f, gx_kernel_id(name, nl), NULL, NULL, false, NULL);
}

/*
 * Whether a launch into @s (0: the legacy stream, or the per-thread one
 * through a _ptsz entry point) is captured into a graph rather than run.
 * Asked only once the app has begun a capture (our cuStreamBeginCapture*).
 */
static bool captured(CUstream s, bool ptsz)
{
	int st = CU_STREAM_CAPTURE_STATUS_NONE;
	PFN_cuStreamIsCapturing q = ptsz && g.cu.StreamIsCapturing_ptsz ?
					    g.cu.StreamIsCapturing_ptsz : g.cu.StreamIsCapturing;

	if (!atomic_load_explicit(&g.captured, memory_order_relaxed) || !q)
		return false;
	if (!s)
		s = ptsz ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
	return q(s, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Whether a cuLaunchKernelEx config asks for a cooperative launch. */
static bool ex_coop(const CUlaunchConfig *c)
{
	const unsigned char *a = c->attrs;

	for (unsigned i = 0; a && i < c->numAttrs; i++, a += CU_LAUNCH_ATTRIBUTE_BYTES) {
		int id, v;

		memcpy(&id, a, sizeof(id));
		memcpy(&v, a + 8, sizeof(v));
		if (id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && v)
			return true;
	}
	return false;
}

/*
 * One of the kernel's resources as the driver reports it (the current
 * context's device for a CUkernel); false if it cannot say.
 */
static bool func_attr(const void *f, bool kern, int attr, int *v)
{
	CUdevice d;

	if (!kern)
		return g.cu.FuncGetAttribute &&
		       g.cu.FuncGetAttribute(v, attr, (CUfunction)f) == CUDA_SUCCESS;
	return g.cu.KernelGetAttribute && g.cu.CtxGetDevice(&d) == CUDA_SUCCESS &&
	       g.cu.KernelGetAttribute(v, attr, (CUkernel)f, d) == CUDA_SUCCESS;
}

/*
 * Whether @h's flat twin may run in its place: it must need no more of the
 * SM than the kernel the app sized its launches for (registers, local and
 * static shared memory; a block as large), or a launch the app's kernel
 * takes could fail with the twin. Compared once, at the first flat launch
 * (for a CUkernel on the current device: GPUs of one kind assumed); what the
 * app sets later (cuFuncSetAttribute & co.) is carried over to the twin, or
 * turns it off (nv_load.c), which the comparison never undoes.
 */
static bool twin_fits(struct nv_handle *h)
{
	static const int attrs[] = { CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
				     CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
				     CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK };
	int ok = atomic_load_explicit(&h->twin_ok, memory_order_relaxed);

	if (ok)
		return ok > 0;
	ok = 1;
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]) && ok > 0; i++) {
		int a = 0, b = 0;

		if (!func_attr(h->h, h->kern, attrs[i], &a) ||
		    !func_attr(h->twin, h->kern, attrs[i], &b))
			ok = -1;
		else if (attrs[i] == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? b < a : b > a)
			ok = -1;
	}
	/* from 0 only: a refusal (-1) stored meanwhile stands; a race compares twice alike */
	{
		int zero = 0;

		if (!atomic_compare_exchange_strong(&h->twin_ok, &zero, ok))
			ok = zero;
	}
	return ok > 0;
}

/*
 * What runs for @f (@h its handle, or NULL) launched with grid and block
 * depths @gz, @bz: its flat twin when the launch is flat in z, not
 * cooperative (the app sized such a grid to what fits the SMs at once) and
 * the twin fits; else the kernel itself. A twin the app was handed back (a
 * graph node's parameters) goes back to its kernel for any other launch.
 */
static const void *flat_pick(struct nv_handle *h, const void *f, unsigned gz, unsigned bz,
			     bool coop)
{
	bool flat = gz == 1 && bz == 1 && !coop;
	struct nv_handle *k;

	if (!h)
		return f;
	if (h->twin)
		return flat && twin_fits(h) ? h->twin : f;
	if (!h->orig)
		return f;
	k = nv_handle_find(h->orig);
	return k && k->twin == f && flat && twin_fits(k) ? f : h->orig;
}

/*
 * Before a launch of *@f into @s: its maps in place, and its launch record
 * filled in @rec (false: none, the launch is being captured). *@f becomes
 * what flat_pick() says runs (a captured launch's graph node gets it too).
 */
static bool on_launch(const void **f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		      unsigned by, unsigned bz, CUstream s, bool ptsz, bool coop,
		      struct gx_launch_rec *rec)
{
	struct nv_handle *h = nv_handle_find(*f);
	struct nv_ctx *x = nv_current_ctx();

	if (!h)
		h = learn(*f);
	if (h && h->img)
		nv_img_ready(h->img, x);
	atomic_store_explicit(&g.maps.dirty, true, memory_order_relaxed);
	/* The runtime's and driver's teardown is registered by now: go ahead of it. */
	if (atomic_load_explicit(&g.seq, memory_order_relaxed) < 2)
		nv_exit_rearm();
	*f = flat_pick(h, *f, gz, bz, coop);
	if (captured(s, ptsz))
		return false;
	if (h && (h->twin || h->orig))
		atomic_fetch_add_explicit(*f != (h->orig ? h->orig : h->h) ? &g.twin_launches :
					  &g.kernel_launches, 1, memory_order_relaxed);
	memset(rec, 0, sizeof(*rec));
	rec->kernel_id = h ? h->id : 0;
	rec->grid[0] = gx;
	rec->grid[1] = gy;
	rec->grid[2] = gz;
	rec->block[0] = bx;
	rec->block[1] = by;
	rec->block[2] = bz;
	rec->pid = g.pid;
	rec->gpu = x && x->gpu >= 0 ? (uint32_t)x->gpu : NV_NO_GPU;
	rec->host_ns = nv_now_ns();	/* last: "just before the launch call" */
	return true;
}

/*
 * After a launch of @asked that ran @ran instead (its flat twin) and failed
 * with @r, an error the kernel itself might not have given (a value out of
 * range, too few resources: state of the kernel's the twin never got): the
 * kernel to launch again in its place; NULL: @r stands.
 */
static const void *twin_failed(const void *asked, const void *ran, CUresult r)
{
	struct nv_handle *h = asked ? nv_handle_find(asked) : NULL;
	const void *k = h && h->orig ? h->orig : asked;

	if ((r != CUDA_ERROR_INVALID_VALUE && r != CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) || ran == k)
		return NULL;
	return k;
}

/*
 * The kernel @k launched where its twin had failed to (twin_failed): when it
 * took the launch, the twin is off for good; when it failed too, the error
 * was the app's and the twin stays.
 */
static CUresult twin_retried(const void *k, CUresult r)
{
	struct nv_handle *h = nv_handle_find(k);

	if (r == CUDA_SUCCESS && h && atomic_exchange(&h->twin_ok, -1) >= 0)
		fprintf(stderr, PFX "a kernel's flat twin could not be launched where the kernel "
			"could: the kernel runs from now on (hal/nvidia/ptx_twin.c)\n");
	return r;
}

/* Queues @n records (seq given here, in order). */
static void push_launches(struct gx_launch_rec *rec, size_t n)
{
	pthread_mutex_lock(&g.llock);
	for (size_t i = 0; i < n; i++) {
		if (g.lcnt == NV_LAUNCH_BUF) {
			nv_write_all(g.launches_fd, g.lbuf, sizeof(g.lbuf));
			g.lcnt = 0;
		}
		rec[i].seq = atomic_fetch_add_explicit(&g.seq, 1, memory_order_relaxed);
		g.lbuf[g.lcnt++] = rec[i];
	}
	pthread_mutex_unlock(&g.llock);
}

/* After the launch call: queue the record if the driver took the launch. */
static CUresult launched(CUresult r, bool have, struct gx_launch_rec *rec)
{
	if (have && r == CUDA_SUCCESS)
		push_launches(rec, 1);
	return r;
}

/* The app is about to capture launches into a graph: from now on, ask before recording. */
EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
	REAL_OR_FAIL(cuStreamBeginCapture);
	atomic_store(&g.captured, true);
	return real.cuStreamBeginCapture(s);
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
	REAL_OR_FAIL(cuStreamBeginCapture_ptsz);
	atomic_store(&g.captured, true);
	return real.cuStreamBeginCapture_ptsz(s);
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	REAL_OR_FAIL(cuStreamBeginCapture_v2);
	atomic_store(&g.captured, true);
	return real.cuStreamBeginCapture_v2(s, mode);
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode)
{
	REAL_OR_FAIL(cuStreamBeginCapture_v2_ptsz);
	atomic_store(&g.captured, true);
	return real.cuStreamBeginCapture_v2_ptsz(s, mode);
}

EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph gr, const CUgraphNode *deps,
					    const void *edges, size_t nd, int mode)
{
	REAL_OR_FAIL(cuStreamBeginCaptureToGraph);
	atomic_store(&g.captured, true);
	return real.cuStreamBeginCaptureToGraph(s, gr, deps, edges, nd, mode);
}

EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph gr, const CUgraphNode *deps,
						 const void *edges, size_t nd, int mode)
{
	REAL_OR_FAIL(cuStreamBeginCaptureToGraph_ptsz);
	atomic_store(&g.captured, true);
	return real.cuStreamBeginCaptureToGraph_ptsz(s, gr, deps, edges, nd, mode);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
			       void **extra)
{
	struct gx_launch_rec rec;
	const void *asked = f;
	bool have = false;
	CUresult r;

	REAL_OR_FAIL(cuLaunchKernel);
	if (nv_active())
		have = on_launch((const void **)&f, gx, gy, gz, bx, by, bz, s, false, false, &rec);
	r = real.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
	if (r != CUDA_SUCCESS) {
		const void *k = twin_failed(asked, f, r);

		if (k) {
			f = (CUfunction)k;
			r = twin_retried(k, real.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s,
						params, extra));
		}
	}
	return launched(r, have, &rec);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned shm,
				    CUstream s, void **params, void **extra)
{
	struct gx_launch_rec rec;
	const void *asked = f;
	bool have = false;
	CUresult r;

	REAL_OR_FAIL(cuLaunchKernel_ptsz);
	if (nv_active())
		have = on_launch((const void **)&f, gx, gy, gz, bx, by, bz, s, true, false, &rec);
	r = real.cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
	if (r != CUDA_SUCCESS) {
		const void *k = twin_failed(asked, f, r);

		if (k) {
			f = (CUfunction)k;
			r = twin_retried(k, real.cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz,
						shm, s, params, extra));
		}
	}
	return launched(r, have, &rec);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
				 void **extra)
{
	struct gx_launch_rec rec;
	const void *asked = f;
	bool have = false;
	CUresult r;

	REAL_OR_FAIL(cuLaunchKernelEx);
	if (nv_active() && c)
		have = on_launch((const void **)&f, c->gridDimX, c->gridDimY, c->gridDimZ,
				 c->blockDimX, c->blockDimY, c->blockDimZ, c->hStream, false,
				 ex_coop(c), &rec);
	r = real.cuLaunchKernelEx(c, f, params, extra);
	if (r != CUDA_SUCCESS) {
		const void *k = twin_failed(asked, f, r);

		if (k) {
			f = (CUfunction)k;
			r = twin_retried(k, real.cuLaunchKernelEx(c, f, params, extra));
		}
	}
	return launched(r, have, &rec);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
				      void **extra)
{
	struct gx_launch_rec rec;
	const void *asked = f;
	bool have = false;
	CUresult r;

	REAL_OR_FAIL(cuLaunchKernelEx_ptsz);
	if (nv_active() && c)
		have = on_launch((const void **)&f, c->gridDimX, c->gridDimY, c->gridDimZ,
				 c->blockDimX, c->blockDimY, c->blockDimZ, c->hStream, true,
				 ex_coop(c), &rec);
	r = real.cuLaunchKernelEx_ptsz(c, f, params, extra);
	if (r != CUDA_SUCCESS) {
		const void *k = twin_failed(asked, f, r);

		if (k) {
			f = (CUfunction)k;
			r = twin_retried(k, real.cuLaunchKernelEx_ptsz(c, f, params, extra));
		}
	}
	return launched(r, have, &rec);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					  unsigned bx, unsigned by, unsigned bz, unsigned shm,
					  CUstream s, void **params)
{
	struct gx_launch_rec rec;
	const void *asked = f;
	bool have = false;
	CUresult r;

	REAL_OR_FAIL(cuLaunchCooperativeKernel);
	if (nv_active())
		have = on_launch((const void **)&f, gx, gy, gz, bx, by, bz, s, false, true, &rec);
	r = real.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shm, s, params);
	if (r != CUDA_SUCCESS) {
		const void *k = twin_failed(asked, f, r);

		if (k) {
			f = (CUfunction)k;
			r = twin_retried(k, real.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by,
						bz, shm, s, params));
		}
	}
	return launched(r, have, &rec);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
					       unsigned gz, unsigned bx, unsigned by, unsigned bz,
					       unsigned shm, CUstream s, void **params)
{
	struct gx_launch_rec rec;
	const void *asked = f;
	bool have = false;
	CUresult r;

	REAL_OR_FAIL(cuLaunchCooperativeKernel_ptsz);
	if (nv_active())
		have = on_launch((const void **)&f, gx, gy, gz, bx, by, bz, s, true, true, &rec);
	r = real.cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shm, s,
							    params);
	if (r != CUDA_SUCCESS) {
		const void *k = twin_failed(asked, f, r);

		if (k) {
			f = (CUfunction)k;
			r = twin_retried(k, real.cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx,
						by, bz, shm, s, params));
		}
	}
	return launched(r, have, &rec);
}

static void exec_node_set(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2 *p,
			  bool v2);
static void exec_node_enable(CUgraphExec exec, CUgraphNode node, bool on);
static void exec_child_set(CUgraphExec exec, CUgraphNode node, CUgraph child);

/*
 * Graph kernel nodes: the function's maps must be in place before the graph
 * runs, in the context the node runs in: the _v2 parameters' ctx when set (a
 * library kernel's node of a multi-GPU graph), else the current one. And the
 * node runs what a launch with its dims would (flat_pick: the kernel's flat
 * twin when the node is flat in z): the parameters given back are @p, or
 * @copy with the function changed (v1 parameters end before kern).
 */
static const CUDA_KERNEL_NODE_PARAMS_v2 *graph_node(const CUDA_KERNEL_NODE_PARAMS_v2 *p, bool v2,
						    CUDA_KERNEL_NODE_PARAMS_v2 *copy)
{
	CUcontext cur = NULL, popped;
	const void *f, *run;
	struct nv_handle *h;

	if (!p || !nv_active())
		return p;
	f = p->func ? (const void *)p->func : v2 ? (const void *)p->kern : NULL;
	h = f ? nv_handle_find(f) : NULL;
	if (!h || !h->img)
		return p;
	if (v2 && p->ctx && g.cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur != p->ctx &&
	    g.cu.CtxPushCurrent(p->ctx) == CUDA_SUCCESS) {
		nv_img_ready(h->img, nv_current_ctx());
		run = flat_pick(h, f, p->gridDimZ, p->blockDimZ, false);
		g.cu.CtxPopCurrent(&popped);
	} else {
		nv_img_ready(h->img, nv_current_ctx());
		run = flat_pick(h, f, p->gridDimZ, p->blockDimZ, false);
	}
	if (run == f)
		return p;
	memset(copy, 0, sizeof(*copy));
	memcpy(copy, p, v2 ? sizeof(*copy) : offsetof(CUDA_KERNEL_NODE_PARAMS_v2, kern));
	if (p->func)
		copy->func = (CUfunction)run;
	else
		copy->kern = (CUkernel)run;
	return copy;
}

/* A node's parameters as the app reads them: its kernel, never our twin. */
static void node_unpick(CUDA_KERNEL_NODE_PARAMS_v2 *p, bool v2)
{
	struct nv_handle *h;

	if (!p || !nv_active())
		return;
	if (p->func && (h = nv_handle_find(p->func)) && h->orig)
		p->func = (CUfunction)h->orig;
	else if (v2 && !p->func && p->kern && (h = nv_handle_find(p->kern)) && h->orig)
		p->kern = (CUkernel)h->orig;
}

EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *n, CUgraph gr, const CUgraphNode *deps,
				     size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;

	REAL_OR_FAIL(cuGraphAddKernelNode);
	return real.cuGraphAddKernelNode(n, gr, deps, nd, graph_node(p, false, &c));
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph gr, const CUgraphNode *deps,
					size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;

	REAL_OR_FAIL(cuGraphAddKernelNode_v2);
	return real.cuGraphAddKernelNode_v2(n, gr, deps, nd, graph_node(p, true, &c));
}

EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;

	REAL_OR_FAIL(cuGraphKernelNodeSetParams);
	return real.cuGraphKernelNodeSetParams(n, graph_node(p, false, &c));
}

EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;

	REAL_OR_FAIL(cuGraphKernelNodeSetParams_v2);
	return real.cuGraphKernelNodeSetParams_v2(n, graph_node(p, true, &c));
}

EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUresult r;

	REAL_OR_FAIL(cuGraphKernelNodeGetParams);
	r = real.cuGraphKernelNodeGetParams(n, p);
	if (r == CUDA_SUCCESS)
		node_unpick(p, false);
	return r;
}

EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUresult r;

	REAL_OR_FAIL(cuGraphKernelNodeGetParams_v2);
	r = real.cuGraphKernelNodeGetParams_v2(n, p);
	if (r == CUDA_SUCCESS)
		node_unpick(p, true);
	return r;
}

EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
					       const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;
	const CUDA_KERNEL_NODE_PARAMS_v2 *q;
	CUresult r;

	REAL_OR_FAIL(cuGraphExecKernelNodeSetParams);
	q = graph_node(p, false, &c);
	r = real.cuGraphExecKernelNodeSetParams(e, n, q);
	if (r == CUDA_SUCCESS && q && nv_active())
		exec_node_set(e, n, q, false);
	return r;
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
						  const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;
	const CUDA_KERNEL_NODE_PARAMS_v2 *q;
	CUresult r;

	REAL_OR_FAIL(cuGraphExecKernelNodeSetParams_v2);
	q = graph_node(p, true, &c);
	r = real.cuGraphExecKernelNodeSetParams_v2(e, n, q);
	if (r == CUDA_SUCCESS && q && nv_active())
		exec_node_set(e, n, q, true);
	return r;
}

/* The generic node calls (CUDA 12.2): what the kernel-node calls above do, for kernel nodes. */
static CUgraphNodeParams *kernel_node(CUgraphNodeParams *p, CUgraphNodeParams *copy)
{
	CUDA_KERNEL_NODE_PARAMS_v2 c;
	const CUDA_KERNEL_NODE_PARAMS_v2 *q;

	if (!p || p->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return p;
	q = graph_node(&p->kernel, true, &c);
	if (q == &p->kernel)
		return p;
	*copy = *p;
	copy->kernel = *q;
	return copy;
}

EXPORT CUresult cuGraphAddNode(CUgraphNode *n, CUgraph gr, const CUgraphNode *deps, size_t nd,
			       CUgraphNodeParams *p)
{
	CUgraphNodeParams c;

	REAL_OR_FAIL(cuGraphAddNode);
	return real.cuGraphAddNode(n, gr, deps, nd, kernel_node(p, &c));
}

EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *n, CUgraph gr, const CUgraphNode *deps,
				  const void *edges, size_t nd, CUgraphNodeParams *p)
{
	CUgraphNodeParams c;

	REAL_OR_FAIL(cuGraphAddNode_v2);
	return real.cuGraphAddNode_v2(n, gr, deps, edges, nd, kernel_node(p, &c));
}

EXPORT CUresult cuGraphNodeSetParams(CUgraphNode n, CUgraphNodeParams *p)
{
	CUgraphNodeParams c;

	REAL_OR_FAIL(cuGraphNodeSetParams);
	return real.cuGraphNodeSetParams(n, kernel_node(p, &c));
}

EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p)
{
	CUgraphNodeParams c, *q;
	CUresult r;

	REAL_OR_FAIL(cuGraphExecNodeSetParams);
	q = kernel_node(p, &c);
	r = real.cuGraphExecNodeSetParams(e, n, q);
	if (r == CUDA_SUCCESS && q && q->type == CU_GRAPH_NODE_TYPE_KERNEL && nv_active())
		exec_node_set(e, n, &q->kernel, true);
	if (r == CUDA_SUCCESS && q && q->type == CU_GRAPH_NODE_TYPE_GRAPH && nv_active())
		exec_child_set(e, n, q->child_graph);
	return r;
}

EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraph child)
{
	CUresult r;

	REAL_OR_FAIL(cuGraphExecChildGraphNodeSetParams);
	r = real.cuGraphExecChildGraphNodeSetParams(e, n, child);
	if (r == CUDA_SUCCESS && nv_active())
		exec_child_set(e, n, child);
	return r;
}

EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode n, unsigned on)
{
	CUresult r;

	REAL_OR_FAIL(cuGraphNodeSetEnabled);
	r = real.cuGraphNodeSetEnabled(e, n, on);
	if (r == CUDA_SUCCESS && nv_active())
		exec_node_enable(e, n, on != 0);
	return r;
}

/* ------------------------------------------------------------------ */
/* Clock calibration                                                    */
/* ------------------------------------------------------------------ */

/*
 * Clock calibration: the offset between a GPU's %globaltimer and the host's
 * CLOCK_REALTIME, measured once per context so that `gpuext trace
 * launchlate` can compare device start times with host launch times (the two
 * clocks disagree by tens of microseconds on real GPUs).
 *
 * A one-thread kernel of ours (PTX text, JIT-compiled by the driver) spins
 * on a round number in mapped pinned host memory. For each round the host
 * stamps CLOCK_REALTIME (tw), publishes the round; the kernel reads
 * %globaltimer (d) as soon as it sees it, writes d back, then acknowledges;
 * the host stamps the acknowledgement (ta). With O = device - host clock:
 *   d >= tw + O   (the device cannot see the round before it was written)
 *   d <= ta + O   (the host cannot see d before it was read)
 * so O lies in [max(d - ta), min(d - tw)] over the rounds. The estimate is
 * the middle of that interval, the uncertainty its half width (about one
 * PCIe visibility latency). No launch latency enters: the kernel is already
 * running when the rounds are timed.
 *
 * Never hangs: the kernel gives up after a clock64 budget per round, and the
 * host after a wall-clock budget, after which it writes an abort word the
 * kernel also watches. Result: DIR/clock-<pid>-<gpu>.txt (nvprobe.h).
 */

#define CLK_ROUNDS 20
#define CLK_ABORT 0x7fffffffu
/* Per round: the device waits at most this many cycles (~0.5 s at 2 GHz). */
#define CLK_DEV_BUDGET 1000000000ull
/* The first round also waits for the kernel to be scheduled behind the app's work. */
#define CLK_HOST_FIRST_NS 2000000000ull
#define CLK_HOST_ROUND_NS 100000000ull

/* Mapped pinned host memory shared with the kernel (offsets fixed in the PTX). */
struct clk_shared {
	volatile uint32_t round;	/* host -> device: round r (1-based) or CLK_ABORT */
	volatile uint32_t ack;		/* device -> host: last round seen */
	volatile uint64_t dev_ns;	/* %globaltimer when round ack was seen */
};

static const char clk_ptx[] =
	".version 6.0\n"
	".target sm_52\n"
	".address_size 64\n"
	"\n"
	".visible .entry gpuext_clock_sync(.param .u64 p_buf, .param .u32 p_n, .param .u64 p_budget)\n"
	"{\n"
	"	.reg .pred %p<5>;\n"
	"	.reg .b32 %r<5>;\n"
	"	.reg .b64 %rd<8>;\n"
	"\n"
	"	ld.param.u64 %rd1, [p_buf];\n"
	"	cvta.to.global.u64 %rd1, %rd1;\n"
	"	ld.param.u32 %r1, [p_n];\n"
	"	ld.param.u64 %rd2, [p_budget];\n"
	"	mov.u32 %r2, 1;\n"
	"NEXT:\n"
	"	setp.gt.u32 %p1, %r2, %r1;\n"
	"	@%p1 bra DONE;\n"
	"	mov.u64 %rd3, %clock64;\n"
	"WAIT:\n"
	"	ld.volatile.global.u32 %r3, [%rd1];\n"
	"	setp.eq.u32 %p2, %r3, %r2;\n"
	"	@%p2 bra SEEN;\n"
	"	setp.eq.u32 %p3, %r3, 2147483647;\n"
	"	@%p3 bra DONE;\n"
	"	mov.u64 %rd4, %clock64;\n"
	"	sub.s64 %rd5, %rd4, %rd3;\n"
	"	setp.gt.u64 %p4, %rd5, %rd2;\n"
	"	@%p4 bra DONE;\n"
	"	bra.uni WAIT;\n"
	"SEEN:\n"
	"	mov.u64 %rd6, %globaltimer;\n"
	"	st.volatile.global.u64 [%rd1+8], %rd6;\n"
	"	membar.sys;\n"
	"	st.volatile.global.u32 [%rd1+4], %r2;\n"
	"	membar.sys;\n"
	"	add.u32 %r2, %r2, 1;\n"
	"	bra.uni NEXT;\n"
	"DONE:\n"
	"	ret;\n"
	"}\n";

/* Waits for the kernel to acknowledge @round; false after @budget_ns. */
static bool clk_wait_ack(struct clk_shared *s, uint32_t round, uint64_t budget_ns, uint64_t *ta)
{
	uint64_t t0 = nv_now_ns(), t;

	for (;;) {
		uint32_t a = __atomic_load_n(&s->ack, __ATOMIC_ACQUIRE);

		t = nv_now_ns();
		if (a == round) {
			*ta = t;
			return true;
		}
		if (t - t0 > budget_ns)
			return false;
	}
}

static void clk_write(const struct nv_ctx *x, const struct nv_clock *c)
{
	char path[PATH_MAX + 48], buf[256];
	int fd, n;

	snprintf(path, sizeof(path), "%s/clock-%u-%d.txt", g.dir, g.pid, x->gpu);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	n = snprintf(buf, sizeof(buf),
		     "# %%globaltimer - CLOCK_REALTIME on this GPU (ns), +- uncertainty\n"
		     "pid %u gpu %d offset_ns %lld uncertainty_ns %llu rounds %u cost_ns %llu\n",
		     g.pid, x->gpu, (long long)c->offset_ns,
		     (unsigned long long)c->uncertainty_ns, c->rounds,
		     (unsigned long long)c->cost_ns);
	nv_write_all(fd, buf, (size_t)n);
	close(fd);
}

/* The measurement in the current context (@x's); 0 or -errno, with @c filled. */
static int clk_measure(struct nv_ctx *x, struct nv_clock *c, char *why, size_t why_len)
{
	const struct nv_api *cu = &g.cu;
	struct clk_shared *s = NULL;
	CUdeviceptr sdev = 0;
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	unsigned int rounds = CLK_ROUNDS;
	unsigned long long budget = CLK_DEV_BUDGET;
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	uint32_t done = 0;
	uint64_t t_start = nv_now_ns();
	void *params[3];
	char nb[32];
	CUresult r;
	int err = -EIO;

	r = cu->ModuleLoadData(&mod, clk_ptx);
	if (r == CUDA_SUCCESS)
		r = cu->ModuleGetFunction(&fn, mod, "gpuext_clock_sync");
	if (r != CUDA_SUCCESS) {
		snprintf(why, why_len, "loading the calibration kernel: %s",
			 nv_cu_name(cu, r, nb, sizeof(nb)));
		goto out;
	}
	r = cu->MemHostAlloc((void **)&s, sizeof(*s), CU_MEMHOSTALLOC_DEVICEMAP |
			     CU_MEMHOSTALLOC_PORTABLE);
	if (r == CUDA_SUCCESS) {
		memset((void *)s, 0, sizeof(*s));
		r = cu->MemHostGetDevicePointer(&sdev, s, 0);
	}
	if (r != CUDA_SUCCESS) {
		snprintf(why, why_len, "mapped host memory: %s", nv_cu_name(cu, r, nb, sizeof(nb)));
		goto out;
	}
	params[0] = &sdev;
	params[1] = &rounds;
	params[2] = &budget;
	r = cu->LaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, x->stream, params, NULL);
	if (r != CUDA_SUCCESS) {
		snprintf(why, why_len, "launching the calibration kernel: %s",
			 nv_cu_name(cu, r, nb, sizeof(nb)));
		goto out;
	}
	for (uint32_t i = 1; i <= rounds; i++) {
		uint64_t tw, ta;
		int64_t d;

		tw = nv_now_ns();
		__atomic_store_n(&s->round, i, __ATOMIC_RELEASE);
		if (!clk_wait_ack(s, i, i == 1 ? CLK_HOST_FIRST_NS : CLK_HOST_ROUND_NS, &ta))
			break;
		d = (int64_t)s->dev_ns;
		lo = d - (int64_t)ta > lo ? d - (int64_t)ta : lo;
		hi = d - (int64_t)tw < hi ? d - (int64_t)tw : hi;
		done = i;
	}
	if (done < rounds)
		__atomic_store_n(&s->round, CLK_ABORT, __ATOMIC_RELEASE);
	r = cu->StreamSynchronize(x->stream);
	if (r != CUDA_SUCCESS) {
		snprintf(why, why_len, "calibration kernel: %s", nv_cu_name(cu, r, nb, sizeof(nb)));
		goto out;
	}
	if (!done) {
		snprintf(why, why_len, "the calibration kernel never answered");
		err = -ETIMEDOUT;
		goto out;
	}
	/*
	 * A coarse %globaltimer (1 us ticks on some GPUs) or a clock step can
	 * leave lo > hi: then the width between them is the uncertainty.
	 */
	c->offset_ns = lo + (hi - lo) / 2;
	c->uncertainty_ns = (uint64_t)(hi >= lo ? hi - lo : lo - hi) / 2;
	c->rounds = done;
	c->cost_ns = nv_now_ns() - t_start;
	err = 0;
out:
	if (s)
		cu->MemFreeHost(s);
	if (mod)
		cu->ModuleUnload(mod);
	return err;
}

void nv_clock_calibrate(struct nv_ctx *x)
{
	struct nv_clock c = { 0 };
	char why[160] = "";
	int expect = 0, mode, err;

	if (!x || x->broken || !g.clock_sync)
		return;
	/* Once per context, by whichever thread gets here first. */
	if (!atomic_compare_exchange_strong(&x->clock_state, &expect, 1))
		return;
	mode = nv_capture_relax(&g.cu);
	err = clk_measure(x, &c, why, sizeof(why));
	nv_capture_restore(&g.cu, mode);
	if (err) {
		fprintf(stderr, PFX "GPU %d: clock calibration failed (%s); launch latencies "
			"of this GPU are not corrected\n", x->gpu, why);
		atomic_store(&x->clock_state, 3);
		return;
	}
	x->clock = c;
	atomic_store(&x->clock_state, 2);
	clk_write(x, &c);
}

/* ------------------------------------------------------------------ */
/* Graph launches                                                      */
/* ------------------------------------------------------------------ */

/* One kernel node of an executable graph: what its launch record says. */
struct gnode {
	const void *node;	/* the instantiated graph's node (cuGraphExecKernelNodeSetParams names it) */
	const void *parent;	/* in a child graph: its node in the instantiated graph; else NULL */
	bool off;		/* disabled (cuGraphNodeSetEnabled): its launches run nothing */
	int gpu;		/* the GPU id of the node's own context; -1: the launching one's */
	uint64_t kernel_id;
	uint32_t grid[3], block[3];
};

struct nv_gexec {
	const void *exec;
	struct gnode *k;
	size_t n;
	struct nv_gexec *next;
};

/* @v2: @p is a CUDA_KERNEL_NODE_PARAMS_v2 (kern, ctx); else the shorter first version. */
static uint64_t node_kernel_id(const CUDA_KERNEL_NODE_PARAMS_v2 *p, bool v2)
{
	struct nv_handle *h = p->func ? nv_handle_find(p->func) : NULL;

	if (!h && v2 && p->kern)
		h = nv_handle_find(p->kern);
	if (!h && p->func)
		h = learn(p->func);
	return h ? h->id : 0;
}

static void gnode_set(struct gnode *k, const void *node, const CUDA_KERNEL_NODE_PARAMS_v2 *p,
		      bool v2)
{
	struct nv_ctx *x = v2 && p->ctx ? nv_maps__ctx(&g.maps, p->ctx) : NULL;

	k->node = node;
	k->parent = NULL;
	k->off = false;
	k->gpu = x ? x->gpu : -1;
	k->kernel_id = node_kernel_id(p, v2);
	k->grid[0] = p->gridDimX;
	k->grid[1] = p->gridDimY;
	k->grid[2] = p->gridDimZ;
	k->block[0] = p->blockDimX;
	k->block[1] = p->blockDimY;
	k->block[2] = p->blockDimZ;
}

/*
 * Appends @gr's kernel nodes (and its child graphs', @depth deep) to @v; 0 or
 * -errno. Those of a child graph get @parent, or their child graph node's
 * handle when @gr is the instantiated graph (@parent NULL).
 */
static int read_graph(CUgraph gr, struct gnode **v, size_t *n, size_t *cap, int depth,
		      const void *parent)
{
	CUgraphNode *nodes;
	size_t cnt = 0;
	int e = 0;

	if (depth > 8 || g.cu.GraphGetNodes(gr, NULL, &cnt) != CUDA_SUCCESS)
		return -EINVAL;
	if (!cnt)
		return 0;
	nodes = calloc(cnt, sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	if (g.cu.GraphGetNodes(gr, nodes, &cnt) != CUDA_SUCCESS) {
		free(nodes);
		return -EINVAL;
	}
	for (size_t i = 0; i < cnt && !e; i++) {
		CUDA_KERNEL_NODE_PARAMS_v2 p;
		CUgraph child;
		int type = -1;

		if (g.cu.GraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS)
			continue;
		if (type == CU_GRAPH_NODE_TYPE_GRAPH && g.cu.GraphChildGraphNodeGetGraph &&
		    g.cu.GraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS) {
			e = read_graph(child, v, n, cap, depth + 1, parent ? parent : nodes[i]);
			continue;
		}
		memset(&p, 0, sizeof(p));
		if (type != CU_GRAPH_NODE_TYPE_KERNEL ||
		    g.cu.GraphKernelNodeGetParams(nodes[i], &p) != CUDA_SUCCESS)
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 8;
			struct gnode *t = realloc(*v, nc * sizeof(*t));

			if (!t) {
				e = -ENOMEM;
				break;
			}
			*v = t;
			*cap = nc;
		}
		gnode_set(&(*v)[*n], nodes[i], &p, true);
		(*v)[(*n)++].parent = parent;
	}
	free(nodes);
	return e;
}

/* Unlinks @exec's entry; the caller frees it. Caller holds gexec_lock. */
static struct nv_gexec *unlink_exec(const void *exec)
{
	for (struct nv_gexec **pp = &g.gexecs; *pp; pp = &(*pp)->next) {
		if ((*pp)->exec == exec) {
			struct nv_gexec *x = *pp;

			*pp = x->next;
			return x;
		}
	}
	return NULL;
}

static void free_exec(struct nv_gexec *x)
{
	if (x)
		free(x->k);
	free(x);
}

static void forget_exec(CUgraphExec exec)
{
	struct nv_gexec *x;

	if (!nv_active())
		return;
	pthread_mutex_lock(&g.gexec_lock);
	x = unlink_exec(exec);
	pthread_mutex_unlock(&g.gexec_lock);
	free_exec(x);
}

/*
 * @exec was instantiated from @gr (@update: updated to it, cuGraphExecUpdate):
 * remember its kernel nodes. After an update, cuGraphExecKernelNodeSetParams
 * still names the nodes of the graph first instantiated, so those keys stay
 * (an update needs a graph of the same shape: its nodes come in the same order).
 */
static void learn_exec(CUgraphExec exec, CUgraph gr, bool update)
{
	static _Atomic bool said_api, said_list;
	struct nv_gexec *x, *old;
	struct gnode *k = NULL;
	size_t n = 0, cap = 0;
	int e;

	if (!nv_active() || !exec)
		return;
	if (!g.cu.GraphGetNodes || !g.cu.GraphNodeGetType || !g.cu.GraphKernelNodeGetParams) {
		if (!atomic_exchange(&said_api, true))
			fprintf(stderr, PFX "this driver cannot list a graph's kernel nodes "
				"(cuGraphKernelNodeGetParams_v2, CUDA 12.0): graph launches get no "
				"launch records\n");
		return;
	}
	e = read_graph(gr, &k, &n, &cap, 0, NULL);
	if (e) {
		if (!atomic_exchange(&said_list, true))
			fprintf(stderr, PFX "cannot list the kernel nodes of a CUDA graph (%s): its "
				"launches get no launch records\n", strerror(-e));
		free(k);
		forget_exec(exec);	/* no stale records either */
		return;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		free(k);
		forget_exec(exec);
		return;
	}
	x->exec = exec;
	x->k = k;
	x->n = n;
	pthread_mutex_lock(&g.gexec_lock);
	old = unlink_exec(exec);
	/* an update keeps the node keys (child graph nodes' too) and which nodes are disabled */
	if (old && update && old->n == n)
		for (size_t i = 0; i < n; i++) {
			x->k[i].node = old->k[i].node;
			x->k[i].off = old->k[i].off;
			if (x->k[i].parent && old->k[i].parent)
				x->k[i].parent = old->k[i].parent;
		}
	x->next = g.gexecs;
	g.gexecs = x;
	pthread_mutex_unlock(&g.gexec_lock);
	free_exec(old);
}

/* cuGraphExecKernelNodeSetParams: the node's new kernel and shape for @exec's records. */
static void exec_node_set(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2 *p,
			  bool v2)
{
	struct gnode k;

	gnode_set(&k, node, p, v2);	/* the driver calls (learn) outside the lock */
	pthread_mutex_lock(&g.gexec_lock);
	for (struct nv_gexec *x = g.gexecs; x; x = x->next) {
		if (x->exec != exec)
			continue;
		for (size_t i = 0; i < x->n; i++)
			if (x->k[i].node == node) {
				k.off = x->k[i].off;
				k.parent = x->k[i].parent;
				x->k[i] = k;
			}
	}
	pthread_mutex_unlock(&g.gexec_lock);
}

/*
 * cuGraphExecChildGraphNodeSetParams (or cuGraphExecNodeSetParams on a
 * child graph node): @exec's kernel nodes inside @node are now @child's.
 */
static void exec_child_set(CUgraphExec exec, CUgraphNode node, CUgraph child)
{
	struct gnode *k = NULL, *merged;
	size_t n = 0, cap = 0;

	if (!child || !g.cu.GraphGetNodes || !g.cu.GraphNodeGetType ||
	    !g.cu.GraphKernelNodeGetParams)
		return;
	if (read_graph(child, &k, &n, &cap, 1, node)) {
		fprintf(stderr, PFX "cannot list the kernel nodes of a child graph given to a "
			"graph: its launch records keep the child graph it had\n");
		free(k);
		return;
	}
	pthread_mutex_lock(&g.gexec_lock);
	for (struct nv_gexec *x = g.gexecs; x; x = x->next) {
		size_t at = x->n, m = 0;

		if (x->exec != exec)
			continue;
		merged = calloc(x->n + n + 1, sizeof(*merged));
		if (!merged)
			break;
		/*
		 * The child's entries are contiguous (read_graph): the new ones go in
		 * their place. The new child has the old one's shape (CUDA requires
		 * it), so by position they keep the old entries' keys and switches.
		 */
		for (size_t i = 0, j = 0; i < x->n; i++) {
			if (x->k[i].parent != node) {
				merged[m++] = x->k[i];
				continue;
			}
			if (j < n) {
				k[j].node = x->k[i].node;
				k[j].off = x->k[i].off;
			}
			j++;
			if (at == x->n)
				at = i;
		}
		if (at != x->n) {	/* put them where the old ones began */
			memmove(merged + at + n, merged + at, (m - at) * sizeof(*merged));
			memcpy(merged + at, k, n * sizeof(*k));
			m += n;
		}
		if (at == x->n) {	/* it held no kernel before */
			memcpy(merged + m, k, n * sizeof(*k));
			m += n;
		}
		free(x->k);
		x->k = merged;
		x->n = m;
		break;
	}
	pthread_mutex_unlock(&g.gexec_lock);
	free(k);
}

/* cuGraphNodeSetEnabled: a disabled kernel node runs nothing, so its launches get no record. */
static void exec_node_enable(CUgraphExec exec, CUgraphNode node, bool on)
{
	pthread_mutex_lock(&g.gexec_lock);
	for (struct nv_gexec *x = g.gexecs; x; x = x->next)
		for (size_t i = 0; x->exec == exec && i < x->n; i++)
			if (x->k[i].node == node)
				x->k[i].off = !on;
	pthread_mutex_unlock(&g.gexec_lock);
}

/* A graph launch the driver took: one record per kernel node, with the call's time. */
static CUresult graph_launched(CUresult r, CUgraphExec exec, uint64_t host_ns, bool have)
{
	struct nv_ctx *c = nv_current_ctx();
	struct gx_launch_rec *rec = NULL;
	size_t n = 0;

	if (r != CUDA_SUCCESS || !have)
		return r;
	pthread_mutex_lock(&g.gexec_lock);
	for (struct nv_gexec *x = g.gexecs; x; x = x->next) {
		if (x->exec != exec || !x->n)
			continue;
		rec = calloc(x->n, sizeof(*rec));
		for (size_t i = 0; rec && i < x->n; i++) {
			if (x->k[i].off)
				continue;
			rec[n].host_ns = host_ns;
			rec[n].kernel_id = x->k[i].kernel_id;
			memcpy(rec[n].grid, x->k[i].grid, sizeof(rec[n].grid));
			memcpy(rec[n].block, x->k[i].block, sizeof(rec[n].block));
			rec[n].pid = g.pid;
			/* a multi-GPU graph's node runs on its own context's GPU */
			rec[n].gpu = x->k[i].gpu >= 0 ? (uint32_t)x->k[i].gpu :
				     c && c->gpu >= 0 ? (uint32_t)c->gpu : NV_NO_GPU;
			n++;
		}
		break;
	}
	pthread_mutex_unlock(&g.gexec_lock);
	if (n)
		push_launches(rec, n);
	free(rec);
	return r;
}

/* Before a graph launch: what a kernel launch does (maps mirrored, exit hooks ahead of the runtime's). */
static bool graph_launch_begin(CUstream s, bool ptsz)
{
	atomic_store_explicit(&g.maps.dirty, true, memory_order_relaxed);
	if (atomic_load_explicit(&g.seq, memory_order_relaxed) < 2)
		nv_exit_rearm();
	return !captured(s, ptsz);	/* a graph launched into a capture runs nothing yet */
}

/* After an instantiation of @gr (updated(): cuGraphExecUpdate to it): the exec's kernel nodes. */
static CUresult instantiated(CUresult r, CUgraphExec *e, CUgraph gr)
{
	if (r == CUDA_SUCCESS && e)
		learn_exec(*e, gr, false);
	return r;
}

static CUresult updated(CUresult r, CUgraphExec e, CUgraph gr)
{
	if (r == CUDA_SUCCESS)
		learn_exec(e, gr, true);
	return r;
}

EXPORT CUresult cuGraphInstantiate(CUgraphExec *e, CUgraph gr, CUgraphNode *errn, char *log,
				   size_t len)
{
	REAL_OR_FAIL(cuGraphInstantiate);
	return instantiated(real.cuGraphInstantiate(e, gr, errn, log, len), e, gr);
}

EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *e, CUgraph gr, CUgraphNode *errn, char *log,
				      size_t len)
{
	REAL_OR_FAIL(cuGraphInstantiate_v2);
	return instantiated(real.cuGraphInstantiate_v2(e, gr, errn, log, len), e, gr);
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph gr, unsigned long long fl)
{
	REAL_OR_FAIL(cuGraphInstantiateWithFlags);
	return instantiated(real.cuGraphInstantiateWithFlags(e, gr, fl), e, gr);
}

EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *e, CUgraph gr, void *params)
{
	REAL_OR_FAIL(cuGraphInstantiateWithParams);
	return instantiated(real.cuGraphInstantiateWithParams(e, gr, params), e, gr);
}

EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *e, CUgraph gr, void *params)
{
	REAL_OR_FAIL(cuGraphInstantiateWithParams_ptsz);
	return instantiated(real.cuGraphInstantiateWithParams_ptsz(e, gr, params), e, gr);
}

EXPORT CUresult cuGraphExecUpdate(CUgraphExec e, CUgraph gr, CUgraphNode *errn, int *res)
{
	REAL_OR_FAIL(cuGraphExecUpdate);
	return updated(real.cuGraphExecUpdate(e, gr, errn, res), e, gr);
}

EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph gr, void *info)
{
	REAL_OR_FAIL(cuGraphExecUpdate_v2);
	return updated(real.cuGraphExecUpdate_v2(e, gr, info), e, gr);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
	REAL_OR_FAIL(cuGraphExecDestroy);
	forget_exec(e);
	return real.cuGraphExecDestroy(e);
}

/* A graph launch through @fn (the plain or the per-thread-stream entry point). */
static CUresult graph_launch(PFN_cuGraphLaunch fn, CUgraphExec e, CUstream s, bool ptsz)
{
	bool have;
	uint64_t t;

	if (!nv_active())
		return fn(e, s);
	have = graph_launch_begin(s, ptsz);
	t = nv_now_ns();
	return graph_launched(fn(e, s), e, t, have);
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
	REAL_OR_FAIL(cuGraphLaunch);
	return graph_launch(real.cuGraphLaunch, e, s, false);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s)
{
	REAL_OR_FAIL(cuGraphLaunch_ptsz);
	return graph_launch(real.cuGraphLaunch_ptsz, e, s, true);
}
