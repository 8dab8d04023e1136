// SPDX-License-Identifier: Apache-2.0
/*
 * run-prog input with a hash map: each run counts key 7 up by one (inserting
 * it at 1 the first time) and deletes key 9, which the run before inserted,
 * then inserts it again; r0 = key 7's count. `gpuext run-prog --repeat 3`
 * prints 3 on every backend that keeps a hash map's state across runs:
 * tests/cli.sh on the interpreter, tools/gpu/probes.sh on the PTX backend.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("xdp") int count7(void *ctx)
{
	__u32 k = 7, nine = 9;
	__u64 one = 1, *v;
	long gone;

	v = bpf_map_lookup_elem(&counts, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&counts, &k, &one, BPF_NOEXIST))
		return -1;
	/* key 9 is there from the second run on; deleting and re-adding it must not grow the map */
	gone = bpf_map_delete_elem(&counts, &nine);
	if (bpf_map_update_elem(&counts, &nine, &one, BPF_NOEXIST))
		return -2;
	v = bpf_map_lookup_elem(&counts, &k);
	if (!v)
		return -3;
	return (int)*v * 10 + (gone ? 0 : 1);
}

char LICENSE[] SEC("license") = "GPL";
