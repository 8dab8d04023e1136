/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by the ELF loader. */
#include "internal.h"

int gpuext_object__open_file(struct gpuext_runtime *rt, const char *path, const struct gpuext_object_open_opts *opts, struct gpuext_object **out) { (void)rt; (void)path; (void)opts; (void)out; return -ENOTSUP; }
int gpuext_object__open_mem(struct gpuext_runtime *rt, const void *buf, size_t len, const struct gpuext_object_open_opts *opts, struct gpuext_object **out) { (void)rt; (void)buf; (void)len; (void)opts; (void)out; return -ENOTSUP; }
void gpuext_object__close(struct gpuext_object *obj) { (void)obj; }
const char *gpuext_object__name(const struct gpuext_object *obj) { (void)obj; return ""; }
size_t gpuext_object__prog_cnt(const struct gpuext_object *obj) { (void)obj; return 0; }
struct gpuext_prog *gpuext_object__prog(const struct gpuext_object *obj, size_t idx) { (void)obj; (void)idx; return NULL; }
struct gpuext_prog *gpuext_object__find_prog(const struct gpuext_object *obj, const char *name) { (void)obj; (void)name; return NULL; }
size_t gpuext_object__map_cnt(const struct gpuext_object *obj) { (void)obj; return 0; }
struct gpuext_map *gpuext_object__map(const struct gpuext_object *obj, size_t idx) { (void)obj; (void)idx; return NULL; }
struct gpuext_map *gpuext_object__find_map(const struct gpuext_object *obj, const char *name) { (void)obj; (void)name; return NULL; }
const struct btf *gpuext_object__btf(const struct gpuext_object *obj) { (void)obj; return NULL; }
size_t gpuext_object__struct_ops_cnt(const struct gpuext_object *obj) { (void)obj; return 0; }
const struct gpuext_struct_ops *gpuext_object__struct_ops(const struct gpuext_object *obj, size_t idx) { (void)obj; (void)idx; return NULL; }
