/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by the ring buffer implementation. */
#include "internal.h"

void *gpuext_ringbuf_reserve(struct gpuext_map *rb, uint64_t size, uint64_t flags) { (void)rb; (void)size; (void)flags; return NULL; }
int gpuext_ringbuf_submit(struct gpuext_map *rb, void *rec, uint64_t flags, bool discard) { (void)rb; (void)rec; (void)flags; (void)discard; return -ENOTSUP; }
int gpuext_ringbuf_output(struct gpuext_map *rb, const void *data, uint64_t size, uint64_t flags) { (void)rb; (void)data; (void)size; (void)flags; return -ENOTSUP; }
uint64_t gpuext_ringbuf_query(struct gpuext_map *rb, uint64_t flags) { (void)rb; (void)flags; return 0; }
struct gpuext_map *gpuext_ringbuf_of_record(struct gpuext_runtime *rt, uint64_t rec) { (void)rt; (void)rec; return NULL; }
int gpuext_ringbuf_consumer__new(struct gpuext_map *ringbuf, gpuext_ringbuf_sample_fn fn, void *user, struct gpuext_ringbuf_consumer **out) { (void)ringbuf; (void)fn; (void)user; (void)out; return -ENOTSUP; }
int gpuext_ringbuf_consumer__fd(const struct gpuext_ringbuf_consumer *c) { (void)c; return -ENOTSUP; }
int gpuext_ringbuf_consumer__consume(struct gpuext_ringbuf_consumer *c) { (void)c; return -ENOTSUP; }
int gpuext_ringbuf_consumer__poll(struct gpuext_ringbuf_consumer *c, int timeout_ms) { (void)c; (void)timeout_ms; return -ENOTSUP; }
void gpuext_ringbuf_consumer__free(struct gpuext_ringbuf_consumer *c) { (void)c; }
