// SPDX-License-Identifier: GPL-2.0-only
/*
 * The harness's self-test, run in the guest of every track: checks what
 * every real VM test relies on, so a failure here points at the harness,
 * not at gpuext's modules.
 *  1. the harness loaded gxvm_hello.ko and its debugfs file answers live;
 *  2. bpf() works: a program loads and runs (BPF_PROG_TEST_RUN) with the
 *     expected result;
 *  3. module BTF works: libbpf finds gxvm_hello's BTF among the kernel's
 *     BTF objects, split on vmlinux BTF, with the exact struct layout;
 *  4. the initramfs carries the policies, and libbpf can open each one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#define HELLO_MAGIC 0x67786d76u

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("FAIL %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		failures++;						\
	}								\
} while (0)

static int read_state(unsigned int *magic, unsigned int *opens)
{
	FILE *f = fopen("/sys/kernel/debug/gxvm_hello/state", "r");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "magic=%x opens=%u", magic, opens);
	fclose(f);
	return n == 2 ? 0 : -EINVAL;
}

static void test_module(void)
{
	unsigned int magic = 0, opens1 = 0, opens2 = 0;
	int err;

	CHECK(access("/sys/module/gxvm_hello", F_OK) == 0,
	      "gxvm_hello is not loaded: the harness did not insmod it");
	err = read_state(&magic, &opens1);
	CHECK(err == 0, "reading debugfs gxvm_hello/state: %s", strerror(-err));
	err = read_state(&magic, &opens2);
	CHECK(err == 0, "reading debugfs gxvm_hello/state again: %s", strerror(-err));
	CHECK(magic == HELLO_MAGIC, "magic %#x, want %#x", magic, HELLO_MAGIC);
	CHECK(opens2 == opens1 + 1, "opens went %u -> %u, want +1", opens1, opens2);
	printf("module: magic=%#x opens %u -> %u\n", magic, opens1, opens2);
}

static void test_bpf_run(void)
{
	/* r0 = *(u32 *)(r1 + 0); r0 *= 3; exit */
	struct bpf_insn insns[] = {
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = 0, .src_reg = 1 },
		{ .code = BPF_ALU64 | BPF_MUL | BPF_K, .dst_reg = 0, .imm = 3 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, lopts, .prog_flags = BPF_F_SLEEPABLE);
	unsigned int in = 14;
	LIBBPF_OPTS(bpf_test_run_opts, ropts, .ctx_in = &in, .ctx_size_in = sizeof(in));
	int fd, err;

	fd = bpf_prog_load(BPF_PROG_TYPE_SYSCALL, "gxvm_mul3", "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), &lopts);
	CHECK(fd >= 0, "bpf_prog_load: %s", strerror(errno));
	if (fd < 0)
		return;
	err = bpf_prog_test_run_opts(fd, &ropts);
	CHECK(err == 0, "bpf_prog_test_run_opts: %s", strerror(errno));
	CHECK(ropts.retval == 42, "program returned %u, want 42", ropts.retval);
	printf("bpf: 14 * 3 = %u\n", ropts.retval);
	close(fd);
}

/* The kernel's BTF object named @name (a module), or 0. */
static __u32 find_btf_id(const char *name)
{
	__u32 id = 0;

	while (bpf_btf_get_next_id(id, &id) == 0) {
		char buf[64] = "";
		struct bpf_btf_info info = { .name = (__u64)(unsigned long)buf,
					     .name_len = sizeof(buf) };
		__u32 len = sizeof(info);
		int fd = bpf_btf_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (bpf_btf_get_info_by_fd(fd, &info, &len) == 0 && !strcmp(buf, name)) {
			close(fd);
			return id;
		}
		close(fd);
	}
	return 0;
}

static void test_module_btf(void)
{
	struct btf *vmlinux, *mod = NULL;
	const struct btf_member *m;
	const struct btf_type *t;
	__u32 id;
	int tid;

	vmlinux = btf__load_vmlinux_btf();
	CHECK(vmlinux, "no vmlinux BTF: %s", strerror(errno));
	if (!vmlinux)
		return;
	CHECK(btf__find_by_name_kind(vmlinux, "bpf_struct_ops", BTF_KIND_STRUCT) > 0,
	      "vmlinux BTF lacks struct bpf_struct_ops (no struct_ops support?)");
	id = find_btf_id("gxvm_hello");
	CHECK(id, "no BTF object named gxvm_hello: the module was built without BTF");
	if (id)
		mod = btf__load_from_kernel_by_id_split(id, vmlinux);
	CHECK(!id || mod, "loading gxvm_hello BTF (id %u): %s", id, strerror(errno));
	if (!mod)
		goto out;
	tid = btf__find_by_name_kind(mod, "gxvm_hello_state", BTF_KIND_STRUCT);
	CHECK(tid > 0, "gxvm_hello BTF lacks struct gxvm_hello_state");
	if (tid <= 0)
		goto out;
	t = btf__type_by_id(mod, tid);
	m = btf_members(t);
	CHECK(t->size == 16 && btf_vlen(t) == 3, "struct size %u with %u members, want 16 and 3",
	      t->size, btf_vlen(t));
	CHECK(btf_vlen(t) == 3 && !strcmp(btf__name_by_offset(mod, m[2].name_off), "loaded_jiffies") &&
	      btf_member_bit_offset(t, 2) == 64, "third member is not loaded_jiffies at bit 64");
	printf("module btf: id %u, %u types, struct gxvm_hello_state size %u\n",
	       id, btf__type_cnt(mod) - btf__type_cnt(vmlinux), t->size);
out:
	btf__free(mod);
	btf__free(vmlinux);
}

static void test_policies(void)
{
	const char *dir = getenv("GXVM_POLICIES");
	int n = 0, bad = 0;
	struct dirent *e;
	DIR *d;

	CHECK(dir && getenv("GXVM_TRACK"), "GXVM_POLICIES/GXVM_TRACK not set by the harness");
	if (!dir || !(d = opendir(dir))) {
		CHECK(0, "cannot open the policies dir %s", dir ? dir : "(unset)");
		return;
	}
	while ((e = readdir(d))) {
		char path[512];
		struct bpf_object *obj;
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 6, ".bpf.o"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		obj = bpf_object__open_file(path, NULL);
		if (!obj) {
			printf("cannot open %s: %s\n", path, strerror(errno));
			bad++;
		}
		bpf_object__close(obj);
		n++;
	}
	closedir(d);
	CHECK(bad == 0, "%d of %d policy objects do not open", bad, n);
	printf("policies: %d objects open with libbpf in %s\n", n, dir);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_module();
	test_bpf_run();
	test_module_btf();
	test_policies();
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
