/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Launches: before every cuLaunchKernel/Ex/Cooperative (and their _ptsz
 * forms) the kernel's map tables are made ready in the current context and
 * a struct gx_launch_rec is queued (CLOCK_REALTIME just before the call,
 * kernel id, dims, pid, GPU, sequence); the mirror thread appends the queue
 * to DIR/launches.bin every interval and at exit, in whole records. Graph
 * kernel nodes get their tables ready when the node is added or changed,
 * since a graph launch runs them without passing through us.
 */
#include <stdio.h>
#include <string.h>

#include "nv_preload.h"

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

	if (!g.cu.FuncGetName || g.cu.FuncGetName(&name, (CUfunction)f) != CUDA_SUCCESS ||
	    !name)
		return nv_handle_add(f, 0, NULL);
	return nv_handle_add(f, gx_kernel_id(name, strlen(name)), NULL);
}

/* Before a launch of @f: its maps in place, and its launch record. */
static void on_launch(const void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		      unsigned by, unsigned bz)
{
	struct nv_handle *h = nv_handle_find(f);
	struct nv_ctx *x = nv_current_ctx();
	struct gx_launch_rec *rec;

	if (!h)
		h = learn(f);
	if (h && h->img)
		nv_img_ready(h->img, x);
	atomic_store_explicit(&g.maps.dirty, true, memory_order_relaxed);
	/* The runtime's and driver's teardown is registered by now: go ahead of it. */
	if (atomic_load_explicit(&g.seq, memory_order_relaxed) < 2)
		nv_exit_rearm();
	pthread_mutex_lock(&g.llock);
	if (g.lcnt == NV_LAUNCH_BUF) {
		nv_write_all(g.launches_fd, g.lbuf, sizeof(g.lbuf));
		g.lcnt = 0;
	}
	rec = &g.lbuf[g.lcnt++];
	rec->kernel_id = h ? h->id : 0;
	rec->grid[0] = gx;
	rec->grid[1] = gy;
	rec->grid[2] = gz;
	rec->block[0] = bx;
	rec->block[1] = by;
	rec->block[2] = bz;
	rec->pid = g.pid;
	rec->gpu = x && x->ordinal >= 0 ? (uint32_t)x->ordinal : NV_NO_GPU;
	rec->seq = atomic_fetch_add_explicit(&g.seq, 1, memory_order_relaxed);
	rec->host_ns = nv_now_ns();	/* last: "just before the launch call" */
	pthread_mutex_unlock(&g.llock);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
			       void **extra)
{
	REAL_OR_FAIL(cuLaunchKernel);
	if (nv_active())
		on_launch(f, gx, gy, gz, bx, by, bz);
	return real.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned shm,
				    CUstream s, void **params, void **extra)
{
	REAL_OR_FAIL(cuLaunchKernel_ptsz);
	if (nv_active())
		on_launch(f, gx, gy, gz, bx, by, bz);
	return real.cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
				 void **extra)
{
	REAL_OR_FAIL(cuLaunchKernelEx);
	if (nv_active() && c)
		on_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
			  c->blockDimZ);
	return real.cuLaunchKernelEx(c, f, params, extra);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
				      void **extra)
{
	REAL_OR_FAIL(cuLaunchKernelEx_ptsz);
	if (nv_active() && c)
		on_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
			  c->blockDimZ);
	return real.cuLaunchKernelEx_ptsz(c, f, params, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					  unsigned bx, unsigned by, unsigned bz, unsigned shm,
					  CUstream s, void **params)
{
	REAL_OR_FAIL(cuLaunchCooperativeKernel);
	if (nv_active())
		on_launch(f, gx, gy, gz, bx, by, bz);
	return real.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shm, s, params);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
					       unsigned gz, unsigned bx, unsigned by, unsigned bz,
					       unsigned shm, CUstream s, void **params)
{
	REAL_OR_FAIL(cuLaunchCooperativeKernel_ptsz);
	if (nv_active())
		on_launch(f, gx, gy, gz, bx, by, bz);
	return real.cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shm, s, params);
}

/* Graph kernel nodes: the function's maps must be in place before the graph runs. */
static void graph_node(const CUDA_KERNEL_NODE_PARAMS_v2 *p, bool v2)
{
	const void *f;
	struct nv_handle *h;

	if (!p || !nv_active())
		return;
	f = p->func ? (const void *)p->func : v2 ? (const void *)p->kern : NULL;
	h = f ? nv_handle_find(f) : NULL;
	if (h && h->img)
		nv_img_ready(h->img, nv_current_ctx());
}

EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *n, CUgraph gr, const CUgraphNode *deps,
				     size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL_OR_FAIL(cuGraphAddKernelNode);
	graph_node(p, false);
	return real.cuGraphAddKernelNode(n, gr, deps, nd, p);
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph gr, const CUgraphNode *deps,
					size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL_OR_FAIL(cuGraphAddKernelNode_v2);
	graph_node(p, true);
	return real.cuGraphAddKernelNode_v2(n, gr, deps, nd, p);
}

EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL_OR_FAIL(cuGraphKernelNodeSetParams);
	graph_node(p, false);
	return real.cuGraphKernelNodeSetParams(n, p);
}

EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL_OR_FAIL(cuGraphKernelNodeSetParams_v2);
	graph_node(p, true);
	return real.cuGraphKernelNodeSetParams_v2(n, p);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
					       const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL_OR_FAIL(cuGraphExecKernelNodeSetParams);
	graph_node(p, false);
	return real.cuGraphExecKernelNodeSetParams(e, n, p);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
						  const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	REAL_OR_FAIL(cuGraphExecKernelNodeSetParams_v2);
	graph_node(p, true);
	return real.cuGraphExecKernelNodeSetParams_v2(e, n, p);
}

