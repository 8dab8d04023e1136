/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_kattach: load a policy object into the running kernel with libbpf and
 * attach its struct_ops maps (gpu_mem_ops / gpu_sched_ops of gpuext.ko).
 * Header-only so the static VM test programs can include it without a
 * library: gpuext-kattach (main.c) is a thin CLI over it.
 *
 *   struct gx_kattach *k;
 *   int err = gx_kattach__open(path, &k);        // open + load + attach
 *   ... k->policies[i] (.name), k->names[i] (variable), k->types[i] ...
 *   gx_kattach__destroy(k);                      // links gone: policy detached
 *
 * Errors are negative errno; the text of what went wrong (libbpf's messages,
 * including the kernel verifier's log on a rejected program) is kept in
 * gx_kattach_log, so a test can check *why* a load failed.
 *
 * Lifetime: a gx_kattach owns its bpf_object and links; the kernel keeps a
 * policy attached exactly as long as the links are open, so a process that
 * dies (even by SIGKILL) detaches its policies.
 */
#ifndef GX_KATTACH_H
#define GX_KATTACH_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define GX_KATTACH_MAX 8
#define GX_KATTACH_LOG 65536

struct gx_kattach {
	struct bpf_object *obj;
	struct bpf_link *links[GX_KATTACH_MAX];
	char names[GX_KATTACH_MAX][64];		/* struct_ops variable names */
	char policies[GX_KATTACH_MAX][16];	/* their .name: what the kernel logs */
	char types[GX_KATTACH_MAX][64];		/* their types: gpu_mem_ops, ... */
	int n;
};

/* Everything libbpf said since the last gx_kattach_log_reset(). */
static char gx_kattach_log[GX_KATTACH_LOG];
static size_t gx_kattach_log_len;
static int gx_kattach_verbose;	/* also copy libbpf's warnings to stderr */

static inline void gx_kattach_log_reset(void)
{
	gx_kattach_log_len = 0;
	gx_kattach_log[0] = '\0';
}

static inline void gx_kattach_logf(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (gx_kattach_log_len >= sizeof(gx_kattach_log) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(gx_kattach_log + gx_kattach_log_len,
		      sizeof(gx_kattach_log) - gx_kattach_log_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		gx_kattach_log_len += (size_t)n;
	if (gx_kattach_log_len >= sizeof(gx_kattach_log))
		gx_kattach_log_len = sizeof(gx_kattach_log) - 1;
}

static inline int gx_kattach_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	va_list copy;
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (gx_kattach_verbose) {
		va_copy(copy, ap);
		vfprintf(stderr, fmt, copy);
		va_end(copy);
	}
	if (gx_kattach_log_len >= sizeof(gx_kattach_log) - 1)
		return 0;
	n = vsnprintf(gx_kattach_log + gx_kattach_log_len,
		      sizeof(gx_kattach_log) - gx_kattach_log_len, fmt, ap);
	if (n > 0)
		gx_kattach_log_len += (size_t)n;
	if (gx_kattach_log_len >= sizeof(gx_kattach_log))
		gx_kattach_log_len = sizeof(gx_kattach_log) - 1;
	return n;
}

/* The .name member of struct_ops map @map (type @t), or "" if it has none. */
static inline void gx_kattach_policy_name(const struct btf *btf, const struct btf_type *t,
					  struct bpf_map *map, char out[16])
{
	const struct btf_member *m = btf_members(t);
	size_t size = 0;
	const char *data = bpf_map__initial_value(map, &size);

	out[0] = '\0';
	for (int i = 0; data && i < btf_vlen(t); i++, m++) {
		size_t off = btf_member_bit_offset(t, i) / 8;

		if (!strcmp(btf__name_by_offset(btf, m->name_off), "name") && off + 16 <= size) {
			memcpy(out, data + off, 15);
			out[15] = '\0';
		}
	}
}

static inline void gx_kattach__destroy(struct gx_kattach *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->n; i++)
		bpf_link__destroy(k->links[i]);
	bpf_object__close(k->obj);
	free(k);
}

/*
 * Opens @path, loads every program (the kernel verifier checks each one)
 * and attaches every struct_ops map. On failure nothing stays loaded or
 * attached and gx_kattach_log says why.
 */
static inline int gx_kattach__open(const char *path, struct gx_kattach **out)
{
	struct gx_kattach *k;
	struct bpf_map *map;
	int err;

	*out = NULL;
	gx_kattach_log_reset();
	libbpf_set_print(gx_kattach_print);
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->obj = bpf_object__open_file(path, NULL);
	if (!k->obj) {
		err = -errno;
		gx_kattach_logf("%s: cannot open: %s\n", path, strerror(-err));
		k->obj = NULL;
		goto fail;
	}
	err = bpf_object__load(k->obj);
	if (err) {
		gx_kattach_logf("%s: load failed: %s (libbpf's messages above, with the kernel "
				"verifier's log if a program was refused)%s\n", path, strerror(-err),
				strstr(gx_kattach_log, "not found in kernel") ||
				strstr(gx_kattach_log, "is not found in kernel BTF")
				? "; is gpuext.ko loaded?" : "");
		goto fail;
	}
	bpf_object__for_each_map(map, k->obj) {
		const struct btf *btf = bpf_object__btf(k->obj);
		const struct btf_type *t;

		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		if (k->n == GX_KATTACH_MAX) {
			err = -E2BIG;
			gx_kattach_logf("%s: more than %d struct_ops maps\n", path, GX_KATTACH_MAX);
			goto fail;
		}
		t = btf ? btf__type_by_id(btf, bpf_map__btf_value_type_id(map)) : NULL;
		snprintf(k->names[k->n], sizeof(k->names[0]), "%s", bpf_map__name(map));
		snprintf(k->types[k->n], sizeof(k->types[0]), "%s",
			 t ? btf__name_by_offset(btf, t->name_off) : "?");
		if (t && btf_is_struct(t))
			gx_kattach_policy_name(btf, t, map, k->policies[k->n]);
		if (!k->policies[k->n][0]) {
			memcpy(k->policies[k->n], k->names[k->n], 15);
			k->policies[k->n][15] = '\0';
		}
		k->links[k->n] = bpf_map__attach_struct_ops(map);
		if (!k->links[k->n]) {
			err = -errno;
			gx_kattach_logf("%s: attaching %s (%s) failed: %s%s\n", path,
					k->names[k->n], k->types[k->n], strerror(-err),
					err == -EBUSY ? " (a policy of this kind is attached already)"
						      : "");
			goto fail;
		}
		k->n++;
	}
	if (!k->n) {
		err = -ENOENT;
		gx_kattach_logf("%s: no struct_ops map (SEC(\".struct_ops.link\")) to attach\n", path);
		goto fail;
	}
	*out = k;
	return 0;
fail:
	gx_kattach__destroy(k);
	return err;
}

#endif /* GX_KATTACH_H */
