/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Malformed, truncated and foreign inputs to gpuext_object__open_mem(),
 * each made in memory by mutating a valid object (loader_tiny.bpf.o).
 * Every case checks the exact errno, the message (section and offset at
 * fault), that no object came back and that no map stayed behind; the
 * ASan/LSan build checks that nothing leaked.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>

#include <linux/btf.h>

#include "internal.h"
#include "testlib.h"

static struct test_log logbuf;
static uint8_t *orig;
static size_t orig_len;
static unsigned cases;

static void load_orig(void)
{
	FILE *f = fopen(GPUEXT_TEST_BPF_DIR "/loader_tiny.bpf.o", "rb");

	CHECK(f != NULL);
	if (!f)
		exit(1);
	orig = malloc(1 << 20);
	orig_len = fread(orig, 1, 1 << 20, f);
	fclose(f);
	CHECK(orig_len > 1024);
}

static Elf64_Ehdr ehdr(const uint8_t *b)
{
	Elf64_Ehdr e;

	memcpy(&e, b, sizeof(e));
	return e;
}

/* Section header @idx, read or written in place. */
static Elf64_Shdr *shdr(uint8_t *b, size_t idx)
{
	return (Elf64_Shdr *)(b + ehdr(b).e_shoff + idx * sizeof(Elf64_Shdr));
}

static const char *sec_name(uint8_t *b, size_t idx)
{
	return (const char *)b + shdr(b, ehdr(b).e_shstrndx)->sh_offset + shdr(b, idx)->sh_name;
}

static size_t sec_idx(uint8_t *b, const char *name)
{
	for (size_t i = 1; i < ehdr(b).e_shnum; i++)
		if (!strcmp(sec_name(b, i), name))
			return i;
	fprintf(stderr, "no section %s\n", name);
	exit(1);
}

static Elf64_Rel *rel(uint8_t *b, const char *relsec, size_t k)
{
	return (Elf64_Rel *)(b + shdr(b, sec_idx(b, relsec))->sh_offset) + k;
}

static Elf64_Sym *sym_by_name(uint8_t *b, const char *name, size_t *idx)
{
	Elf64_Shdr *st = shdr(b, sec_idx(b, ".symtab"));
	const char *str = (const char *)b + shdr(b, st->sh_link)->sh_offset;
	Elf64_Sym *syms = (Elf64_Sym *)(b + st->sh_offset);

	for (size_t i = 1; i < st->sh_size / sizeof(*syms); i++) {
		if (!strcmp(str + syms[i].st_name, name)) {
			*idx = i;
			return &syms[i];
		}
	}
	fprintf(stderr, "no symbol %s\n", name);
	exit(1);
}

static uint8_t *copy(void)
{
	uint8_t *b = malloc(orig_len);

	memcpy(b, orig, orig_len);
	return b;
}

/* Opens @b/@len and checks the error, the message parts and the clean-up. */
static void expect(const char *what, struct gpuext_runtime *rt, const void *b, size_t len,
		   int err, const char *msg1, const char *msg2)
{
	GPUEXT_OPTS(gpuext_object_open_opts, oo, .object_name = "tiny.bpf.o");
	struct gpuext_object *obj = (void *)1;
	unsigned before = test_failures;
	int got;

	cases++;
	test_log_clear(&logbuf);
	errno = 0;
	got = gpuext_object__open_mem(rt, b, len, &oo, &obj);
	CHECK_EQ_INT(got, err);
	CHECK_EQ_INT(errno, -err);
	CHECK(obj == NULL);
	CHECK_STR_CONTAINS(logbuf.buf, "tiny.bpf.o: ");
	CHECK_STR_CONTAINS(logbuf.buf, msg1);
	if (msg2)
		CHECK_STR_CONTAINS(logbuf.buf, msg2);
	/* A failed open leaves no map in the runtime. */
	for (uint32_t id = 1; id < 64; id++)
		CHECK(gpuext_runtime__map_by_id(rt, id) == NULL);
	if (test_failures != before)
		fprintf(stderr, "  in case: %s\n", what);
}

static void test_header_cases(struct gpuext_runtime *rt)
{
	char m[256];
	uint8_t *b;

	expect("empty", rt, orig, 0, -ENOEXEC, "file is empty (0 bytes)", NULL);
	expect("20 bytes", rt, orig, 20, -ENOEXEC,
	       "file is 20 bytes, too small for an ELF header (64 bytes)", NULL);
	expect("3 bytes", rt, orig, 3, -ENOEXEC, "file is 3 bytes", NULL);

	snprintf(m, sizeof(m), "ends at 0x%" PRIx64 ", past the end of the file (size 0x40)",
		 (uint64_t)(ehdr(orig).e_shoff + ehdr(orig).e_shnum * 64ull));
	expect("header only", rt, orig, 64, -EINVAL, "section header table at offset", m);
	snprintf(m, sizeof(m), "past the end of the file (size 0x%zx)", orig_len / 2);
	expect("half", rt, orig, orig_len / 2, -EINVAL, "section header table", m);
	snprintf(m, sizeof(m), "past the end of the file (size 0x%zx)", orig_len - 1);
	expect("last byte cut", rt, orig, orig_len - 1, -EINVAL, "section header table", m);

	b = copy();
	b[1] = 'X';
	expect("bad magic", rt, b, orig_len, -ENOEXEC, "not an ELF file: bad magic 7f 58 4c 46 at offset 0x0",
	       NULL);
	memcpy(b, orig, orig_len);
	b[EI_CLASS] = ELFCLASS32;
	expect("ELFCLASS32", rt, b, orig_len, -ENOEXEC, "32-bit (ELFCLASS32) ELF file",
	       "BPF objects are ELFCLASS64");
	memcpy(b, orig, orig_len);
	b[EI_DATA] = ELFDATA2MSB;
	expect("big-endian", rt, b, orig_len, -ENOEXEC, "big-endian ELF file (ELFDATA2MSB at offset 0x5)",
	       "big-endian BPF objects are not supported");
	memcpy(b, orig, orig_len);
	b[18] = EM_X86_64;
	b[19] = 0;
	expect("x86-64", rt, b, orig_len, -ENOEXEC, "x86-64 object, not BPF (e_machine 62 at offset 0x12",
	       NULL);
	memcpy(b, orig, orig_len);
	b[16] = ET_EXEC;
	expect("ET_EXEC", rt, b, orig_len, -ENOEXEC, "e_type at offset 0x10 is ET_EXEC (executable)",
	       "must be ET_REL");
	memcpy(b, orig, orig_len);
	b[62] = 200; /* e_shstrndx */
	b[63] = 0;
	snprintf(m, sizeof(m), "the file has %u sections", ehdr(orig).e_shnum);
	expect("shstrndx", rt, b, orig_len, -EINVAL, "e_shstrndx 200 (at offset 0x3e) is out of range",
	       m);
	free(b);

	expect("text file", rt, "hello, this is not an object\n", 29, -ENOEXEC,
	       "not an ELF file: bad magic 68 65 6c 6c", NULL);
}

static void test_section_cases(struct gpuext_runtime *rt)
{
	uint8_t *b = copy();
	size_t xdp = sec_idx(b, "xdp"), relxdp = sec_idx(b, ".relxdp"), btf = sec_idx(b, ".BTF");
	size_t symidx, shstr = ehdr(b).e_shstrndx;
	uint64_t xdp_size = shdr(b, xdp)->sh_size;
	char m[256];

	/* Section data past the end of the file. */
	shdr(b, xdp)->sh_offset = orig_len - 8;
	snprintf(m, sizeof(m), "section %zu (xdp): data at offset 0x%zx size 0x%" PRIx64 " runs past the end of the file (size 0x%zx)",
		 xdp, orig_len - 8, xdp_size, orig_len);
	expect("section past EOF", rt, b, orig_len, -EINVAL, m, NULL);

	/* A section name running off the end of the string table. */
	memcpy(b, orig, orig_len);
	shdr(b, xdp)->sh_name = (uint32_t)shdr(b, shstr)->sh_size - 1;
	b[shdr(b, shstr)->sh_offset + shdr(b, shstr)->sh_size - 1] = 'X';
	snprintf(m, sizeof(m), "section %zu: name at offset 0x%" PRIx64 " of the section name table", xdp,
		 shdr(b, shstr)->sh_size - 1);
	expect("unterminated name", rt, b, orig_len, -EINVAL, m, "is not NUL-terminated");

	/* A symbol in a section that does not exist. */
	memcpy(b, orig, orig_len);
	sym_by_name(b, "tiny", &symidx)->st_shndx = 999;
	snprintf(m, sizeof(m), "(.symtab): symbol %zu (tiny) at offset 0x%" PRIx64 ": section index 999 is out of range",
		 symidx, shdr(b, sec_idx(b, ".symtab"))->sh_offset + symidx * sizeof(Elf64_Sym));
	expect("bad st_shndx", rt, b, orig_len, -EINVAL, m, NULL);

	/* A symbol name outside the string table. */
	memcpy(b, orig, orig_len);
	sym_by_name(b, "total", &symidx)->st_name = 0x7fffffff;
	snprintf(m, sizeof(m), "symbol %zu at offset", symidx);
	expect("bad st_name", rt, b, orig_len, -EINVAL, m, "name offset 0x7fffffff is outside the string table");

	/* Relocations: past the end, misaligned, bad symbol, unknown type. */
	memcpy(b, orig, orig_len);
	rel(b, ".relxdp", 1)->r_offset = xdp_size + 8;
	snprintf(m, sizeof(m), "section %zu (.relxdp): relocation 1 at offset 0x%" PRIx64 " points past the end of section 'xdp' (size 0x%" PRIx64 ")",
		 relxdp, xdp_size + 8, xdp_size);
	expect("reloc past end", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	rel(b, ".relxdp", 0)->r_offset += 4;
	snprintf(m, sizeof(m), "section %zu (.relxdp): relocation 0 at offset 0x%" PRIx64 " in section 'xdp' is not 8-byte aligned",
		 relxdp, rel(b, ".relxdp", 0)->r_offset);
	expect("misaligned reloc", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	rel(b, ".relxdp", 0)->r_info = ELF64_R_INFO(9999, ELF64_R_TYPE(rel(b, ".relxdp", 0)->r_info));
	snprintf(m, sizeof(m), "section %zu (.relxdp): relocation 0 at offset 0x%" PRIx64 " refers to symbol 9999",
		 relxdp, rel(b, ".relxdp", 0)->r_offset);
	expect("r_sym out of range", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	rel(b, ".relxdp", 1)->r_info = ELF64_R_INFO(ELF64_R_SYM(rel(b, ".relxdp", 1)->r_info), 77);
	snprintf(m, sizeof(m), "section %zu (.relxdp): relocation 1 at offset 0x%" PRIx64 " has unknown type 77",
		 relxdp, rel(b, ".relxdp", 1)->r_offset);
	expect("unknown reloc type", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	shdr(b, relxdp)->sh_info = 500;
	snprintf(m, sizeof(m), "section %zu (.relxdp): sh_info 500 does not name a section", relxdp);
	expect("reloc sh_info", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	shdr(b, sec_idx(b, ".symtab"))->sh_entsize = 16;
	expect("symtab entsize", rt, b, orig_len, -EINVAL, "(.symtab): entry size 16", NULL);

	/* Code: size not a multiple of 8, ld_imm64 cut at the end. */
	memcpy(b, orig, orig_len);
	shdr(b, xdp)->sh_size -= 4;
	snprintf(m, sizeof(m), "section %zu (xdp): size 0x%" PRIx64 " is not a multiple of 8", xdp,
		 xdp_size - 4);
	expect("code size", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	b[shdr(b, xdp)->sh_offset + xdp_size - 8] = BPF_LD | BPF_DW | BPF_IMM; /* was exit */
	snprintf(m, sizeof(m), "section %zu (xdp): ld_imm64 at offset 0x%" PRIx64 " (insn %" PRIu64 ") is cut by the end of the section",
		 xdp, xdp_size - 8, xdp_size / 8 - 1);
	expect("lddw cut", rt, b, orig_len, -EINVAL, m, NULL);

	/* A relocation on an instruction that cannot take one (the exit). */
	memcpy(b, orig, orig_len);
	rel(b, ".relxdp", 1)->r_offset = xdp_size - 8;
	snprintf(m, sizeof(m), "section %zu (.relxdp): relocation 1 at offset 0x%" PRIx64 " has type 1 for an instruction with opcode 0x95 in 'xdp'",
		 relxdp, xdp_size - 8);
	expect("reloc on exit", rt, b, orig_len, -EINVAL, m, "expected R_BPF_64_64 on an ld_imm64");

	/* BTF: bad magic, type data out of bounds, a type libbpf rejects. */
	memcpy(b, orig, orig_len);
	b[shdr(b, btf)->sh_offset] = 0;
	snprintf(m, sizeof(m), "section %zu (.BTF): bad BTF magic 0xeb00 at offset 0x0, expected 0xeb9f",
		 btf);
	expect("BTF magic", rt, b, orig_len, -EINVAL, m, NULL);

	memcpy(b, orig, orig_len);
	{
		struct btf_header h;

		memcpy(&h, b + shdr(b, btf)->sh_offset, sizeof(h));
		h.type_len = 0x10000;
		memcpy(b + shdr(b, btf)->sh_offset, &h, sizeof(h));
		snprintf(m, sizeof(m), "section %zu (.BTF): BTF type data (offset 0x0, length 0x10000)", btf);
		expect("BTF type_len", rt, b, orig_len, -EINVAL, m, "lie outside the section");

		memcpy(b, orig, orig_len);
		memcpy(&h, b + shdr(b, btf)->sh_offset, sizeof(h));
		/* First type's info word: kind 31 does not exist. */
		uint32_t info = 31u << 24;

		memcpy(b + shdr(b, btf)->sh_offset + h.hdr_len + h.type_off + 4, &info, 4);
		snprintf(m, sizeof(m), "section %zu (.BTF): libbpf rejects the BTF data", btf);
		expect("BTF kind", rt, b, orig_len, -EINVAL, m, NULL);
	}

	/*
	 * Found by fuzz_loader: a datasec variable whose struct claims ~4 GiB
	 * made libbpf allocate that much before checking it against the
	 * section. The .maps struct of loader_tiny (4 pointer members, 32
	 * bytes) gets the forged size.
	 */
	memcpy(b, orig, orig_len);
	{
		const uint32_t want[2] = { (BTF_KIND_STRUCT << 24) | 4, 32 };
		uint8_t *p = b + shdr(b, btf)->sh_offset;
		size_t n = shdr(b, btf)->sh_size, k;

		for (k = 24; k + 8 <= n; k += 4)
			if (!memcmp(p + k, want, 8))
				break;
		CHECK(k + 8 <= n);
		if (k + 8 <= n) {
			uint32_t huge = 0xfc000000u;

			memcpy(p + k + 4, &huge, 4);
			snprintf(m, sizeof(m), "section %zu (.BTF): variable 0 of datasec '.maps' has a type larger than its section",
				 btf);
			expect("BTF huge struct", rt, b, orig_len, -EINVAL, m, NULL);
		}
	}

	memcpy(b, orig, orig_len);
	b[shdr(b, sec_idx(b, ".BTF.ext"))->sh_offset + 1] = 0x12;
	snprintf(m, sizeof(m), "section %zu (.BTF.ext): bad BTF.ext magic 0x129f", sec_idx(b, ".BTF.ext"));
	expect("BTF.ext magic", rt, b, orig_len, -EINVAL, m, NULL);
	free(b);
}

/*
 * Found by fuzz_loader: an extern whose int type claims 0xfd000004 bytes.
 * libbpf 1.4 truncates the size to an int, returns it as an error code that
 * is not in the -4095..-1 range, and hands back a bogus object pointer.
 */
static void test_huge_extern(struct gpuext_runtime *rt)
{
	FILE *f = fopen(GPUEXT_TEST_BPF_DIR "/loader_kconfig_bad.bpf.o", "rb");
	uint8_t *b = malloc(1 << 20);
	const uint32_t want[3] = { BTF_KIND_INT << 24, 4, 0x01000020 }; /* int: 32 bits, signed */
	size_t n = 0, k, sec, off;

	CHECK(f && b);
	if (!f || !b) {
		if (f)
			fclose(f);
		free(b);
		return;
	}
	n = fread(b, 1, 1 << 20, f);
	fclose(f);
	sec = sec_idx(b, ".BTF");
	off = shdr(b, sec)->sh_offset;
	for (k = 24; k + 12 <= shdr(b, sec)->sh_size; k += 4)
		if (!memcmp(b + off + k, want, 12))
			break;
	CHECK(k + 12 <= shdr(b, sec)->sh_size);
	if (k + 12 <= shdr(b, sec)->sh_size) {
		char m[160];

		b[off + k + 7] = 0xfd;
		snprintf(m, sizeof(m), "section %zu (.BTF): extern variable 0 of datasec '.kconfig' has an oversized type",
			 sec);
		expect("huge extern", rt, b, n, -EINVAL, m, NULL);
	}
	free(b);
}

int main(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	load_orig();

	/* The unmutated object opens: the mutations are what breaks it. */
	CHECK_EQ_INT(gpuext_object__open_mem(rt, orig, orig_len, NULL, &obj), 0);
	CHECK(obj != NULL);
	CHECK(!strcmp(gpuext_object__name(obj), "mem"));
	gpuext_object__close(obj);
	for (uint32_t id = 1; id < 64; id++)
		CHECK(gpuext_runtime__map_by_id(rt, id) == NULL);

	test_header_cases(rt);
	test_section_cases(rt);
	test_huge_extern(rt);
	printf("malformed cases: %u\n", cases);
	CHECK(cases >= 15);
	free(orig);
	gpuext_runtime__free(rt);
	return test_done("test_loader_malformed");
}
