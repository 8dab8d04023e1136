/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Disassembler and assembler tests.
 *
 *  1. Our text equals llvm-objdump-22's, line by line, for every instruction
 *     of tests/bpf/disasm_*.bpf.o (relocated ld_imm64s aside: their bytes are
 *     placeholders), and our assembler reads llvm's lines back to the bytes.
 *     Without llvm-objdump-22 this test fails: it is the reference.
 *  2. Exact texts for the forms llvm does not print (pseudo ld_imm64, kfunc
 *     and local calls, names from a program) and for invalid encodings.
 *  3. Property: for thousands of random valid encodings of every class,
 *     asm(disasm(x)) == x byte for byte; every one of the 256 opcodes either
 *     disassembles or is reported invalid with a reason.
 *  4. Assembler: labels, and errors that give line, column and what was
 *     expected.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asm.h"
#include "internal.h"
#include "testlib.h"

#define LLVM_OBJDUMP "llvm-objdump-22"

/* ------------------------------------------------------------------ */
/* 1. Against llvm-objdump-22                                          */
/* ------------------------------------------------------------------ */

struct llvm_line {
	char *section;
	size_t idx;
	char *text;
};

struct llvm_dump {
	struct llvm_line *lines;
	size_t cnt, cap;
};

static void dump_free(struct llvm_dump *d)
{
	for (size_t i = 0; i < d->cnt; i++) {
		free(d->lines[i].section);
		free(d->lines[i].text);
	}
	free(d->lines);
	memset(d, 0, sizeof(*d));
}

/* Runs llvm-objdump on @path; returns the number of instruction lines, or -1. */
static int llvm_disasm(const char *path, struct llvm_dump *d)
{
	char cmd[1200], line[1024], section[256] = "";
	FILE *f;
	int status;

	snprintf(cmd, sizeof(cmd), "%s -d --no-show-raw-insn '%s' 2>&1", LLVM_OBJDUMP, path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *text, *e;
		size_t idx;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "Disassembly of section %255[^:]:", section) == 1)
			continue;
		while (*p == ' ')
			p++;
		idx = strtoul(p, &e, 10);
		if (e == p || e[0] != ':' || e[1] != '\t')
			continue;
		text = e + 2;
		/* drop llvm's " <sym+0x10>" jump annotation */
		e = text + strlen(text);
		if (e > text && e[-1] == '>' && (e = strrchr(text, '<')) && e > text && e[-1] == ' ')
			e[-1] = '\0';
		if (d->cnt == d->cap) {
			d->cap = d->cap ? d->cap * 2 : 256;
			d->lines = realloc(d->lines, d->cap * sizeof(*d->lines));
		}
		d->lines[d->cnt++] = (struct llvm_line){ strdup(section), idx, strdup(text) };
	}
	status = pclose(f);
	if (status != 0)
		return -1;
	return (int)d->cnt;
}

static const char *llvm_text(const struct llvm_dump *d, const char *sec, size_t idx)
{
	for (size_t i = 0; i < d->cnt; i++)
		if (d->lines[i].idx == idx && !strcmp(d->lines[i].section, sec))
			return d->lines[i].text;
	return NULL;
}

static unsigned compared, asm_checked;

/* Compares one executable section of an object with llvm's dump of it. */
static void compare_section(const char *obj, const char *sec, const struct bpf_insn *insns,
			    size_t cnt, const uint8_t *relocated, const struct llvm_dump *d)
{
	for (size_t idx = 0; idx < cnt;) {
		char ours[256], err[256];
		const char *theirs = llvm_text(d, sec, idx);
		int n = gpuext_disasm_insn(NULL, insns, cnt, idx, ours, sizeof(ours));
		struct bpf_insn *back = NULL;
		size_t back_cnt = 0;

		if (n < 0) {
			test_fail(__FILE__, __LINE__, "%s %s+%zu: we call it %s; llvm says \"%s\"", obj,
				  sec, idx, ours, theirs ? theirs : "(nothing)");
			idx++;
			continue;
		}
		if (relocated[idx]) {
			idx += (size_t)n;
			continue;
		}
		test_checks++;
		compared++;
		if (!theirs || strcmp(ours, theirs)) {
			test_fail(__FILE__, __LINE__, "%s %s+%zu: ours \"%s\", llvm-objdump \"%s\"", obj,
				  sec, idx, ours, theirs ? theirs : "(no line)");
		} else if (gpuext_asm(theirs, NULL, &back, &back_cnt, err, sizeof(err)) ||
			   back_cnt != (size_t)n ||
			   memcmp(back, &insns[idx], (size_t)n * sizeof(*back))) {
			test_fail(__FILE__, __LINE__, "%s %s+%zu: assembling llvm's \"%s\" %s", obj, sec,
				  idx, theirs, err[0] ? err : "gives other bytes");
		} else {
			asm_checked++;
		}
		free(back);
		idx += (size_t)n;
	}
}

static void compare_object(const char *path)
{
	struct llvm_dump dump = { 0 };
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx, sections = 0;
	int fd, lines;

	lines = llvm_disasm(path, &dump);
	test_checks++;
	if (lines <= 0) {
		test_fail(__FILE__, __LINE__,
			  "could not run %s on %s: it is the reference for this test; install "
			  "llvm-22 (tools/deps.sh)", LLVM_OBJDUMP, path);
		dump_free(&dump);
		return;
	}
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf != NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx)) {
		close(fd);
		dump_free(&dump);
		return;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		uint8_t *relocated;
		const char *name;
		size_t cnt;
		Elf_Scn *r = NULL;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		data = elf_getdata(scn, NULL);
		if (!name || !data)
			continue;
		cnt = data->d_size / sizeof(struct bpf_insn);
		relocated = calloc(cnt ? cnt : 1, 1);
		/* Instructions patched by a relocation (map refs) hold placeholders. */
		while ((r = elf_nextscn(elf, r))) {
			GElf_Shdr rsh;
			Elf_Data *rd;

			if (!gelf_getshdr(r, &rsh) || rsh.sh_type != SHT_REL ||
			    rsh.sh_info != elf_ndxscn(scn) || !(rd = elf_getdata(r, NULL)))
				continue;
			for (size_t k = 0; k < rsh.sh_size / rsh.sh_entsize; k++) {
				GElf_Rel rel;
				const struct bpf_insn *in;

				if (!gelf_getrel(rd, (int)k, &rel) || rel.r_offset / 8 >= cnt)
					continue;
				in = (const struct bpf_insn *)data->d_buf + rel.r_offset / 8;
				if (isa_is_lddw(in))
					relocated[rel.r_offset / 8] = 1;
			}
		}
		compare_section(path, name, data->d_buf, cnt, relocated, &dump);
		free(relocated);
		sections++;
	}
	CHECK(sections > 0);
	elf_end(elf);
	close(fd);
	dump_free(&dump);
}

static void test_against_llvm(void)
{
	const char *dir = GPUEXT_TEST_BPF_DIR;
	struct dirent **ents;
	int n, objs = 0;

	elf_version(EV_CURRENT);
	n = scandir(dir, &ents, NULL, alphasort);
	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		size_t len = strlen(nm);
		char path[1024];

		if (!strncmp(nm, "disasm_", 7) && len > 6 && !strcmp(nm + len - 6, ".bpf.o")) {
			snprintf(path, sizeof(path), "%s/%s", dir, nm);
			compare_object(path);
			objs++;
		}
		free(ents[i]);
	}
	if (n > 0)
		free(ents);
	CHECK(objs >= 5);
	CHECK(compared > 300);
	printf("llvm-objdump comparison: %d objects, %u instructions equal, %u assembled back\n",
	       objs, compared, asm_checked);
}

/* ------------------------------------------------------------------ */
/* 2. Exact texts                                                      */
/* ------------------------------------------------------------------ */

static void expect_text(const struct gpuext_prog *prog, struct bpf_insn a, struct bpf_insn b,
			int want_ret, const char *want)
{
	struct bpf_insn pair[2] = { a, b };
	char buf[256];
	int n = gpuext_disasm_insn(prog, pair, 2, 0, buf, sizeof(buf));

	CHECK_EQ_INT(n, want_ret);
	if (want_ret > 0) {
		test_checks++;
		if (strcmp(buf, want))
			test_fail(__FILE__, __LINE__, "disasm \"%s\", want \"%s\"", buf, want);
	} else {
		CHECK_STR_CONTAINS(buf, want);
	}
}

#define I(c, d, s, o, i) isa_make((c), (d), (s), (o), (i))
#define NOP I(0, 0, 0, 0, 0)

static void test_texts(void)
{
	GPUEXT_OPTS(gpuext_map_def, def, .name = "counts", .type = BPF_MAP_TYPE_ARRAY,
		    .key_size = 4, .value_size = 64, .max_entries = 1);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *m = NULL, *m2 = NULL;
	struct gpuext_prog *prog = NULL;
	struct bpf_insn prog_insns[] = {
		I(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_IDX, 0, 1), NOP,
		I(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1),
		I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
		I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	struct gpuext_map *maps[2];
	char sbuf[128];
	int err;

	err = gpuext_runtime__new(NULL, &rt);
	CHECK_EQ_INT(err, 0);
	if (err)
		return;
	CHECK_EQ_INT(gpuext_map__create(rt, &def, &m), 0);
	def.name = "flags";
	def.value_size = 8;
	CHECK_EQ_INT(gpuext_map__create(rt, &def, &m2), 0);
	if (!m || !m2)
		goto out;
	maps[0] = m;
	maps[1] = m2;
	err = gpuext_prog__new(rt, "texts", prog_insns, 6, maps, 2, &prog);
	CHECK_EQ_INT(err, 0);

	/* plain forms, as llvm prints them */
	expect_text(NULL, I(0x07, 1, 0, 0, -4), NOP, 1, "r1 += -0x4");
	expect_text(NULL, I(0x0c, 1, 2, 0, 0), NOP, 1, "w1 += w2");
	expect_text(NULL, I(0x61, 0, 1, 4, 0), NOP, 1, "w0 = *(u32 *)(r1 + 0x4)");
	expect_text(NULL, I(0x79, 0, 1, -8, 0), NOP, 1, "r0 = *(u64 *)(r1 - 0x8)");
	expect_text(NULL, I(0x91, 0, 1, 0, 0), NOP, 1, "r0 = *(s8 *)(r1 + 0x0)");
	expect_text(NULL, I(0x65, 1, 0, 2, 3), NOP, 1, "if r1 s> 0x3 goto +0x2");
	expect_text(NULL, I(0x06, 0, 0, 0, -3), NOP, 1, "gotol -0x3");
	expect_text(NULL, I(0x8d, 4, 0, 0, 0), NOP, 1, "callx r4");
	expect_text(NULL, I(0xdb, 1, 2, 0, BPF_ADD), NOP, 1, "lock *(u64 *)(r1 + 0x0) += r2");
	expect_text(NULL, I(0xdb, 1, 2, 0, BPF_ADD | BPF_FETCH), NOP, 1,
		    "r2 = atomic_fetch_add((u64 *)(r1 + 0x0), r2)");
	expect_text(NULL, I(0xc3, 1, 2, 4, BPF_XCHG), NOP, 1, "w2 = xchg32_32(r1 + 0x4, w2)");
	expect_text(NULL, I(0xdb, 1, 2, -8, BPF_CMPXCHG), NOP, 1,
		    "r0 = cmpxchg_64(r1 - 0x8, r0, r2)");
	expect_text(NULL, I(0xbf, 1, 2, 8, 0), NOP, 1, "r1 = (s8)r2");
	expect_text(NULL, I(0xdc, 0, 0, 0, 16), NOP, 1, "r0 = be16 r0");
	expect_text(NULL, I(0xd7, 0, 0, 0, 32), NOP, 1, "r0 = bswap32 r0");
	expect_text(NULL, I(0x87, 0, 0, 0, 0), NOP, 1, "r0 = -r0");
	expect_text(NULL, I(0x3f, 0, 1, 1, 0), NOP, 1, "r0 s/= r1");
	expect_text(NULL, I(0x18, 1, 0, 0, 0x1234), NOP, 2, "r1 = 0x1234 ll");
	expect_text(NULL, I(0x18, 1, 0, 0, -1), I(0, 0, 0, 0, -1), 2, "r1 = -0x1 ll");
	expect_text(NULL, I(0x85, 0, 0, 0, 1), NOP, 1, "call 0x1");
	expect_text(NULL, I(0x85, 0, 1, 0, -5), NOP, 1, "call -0x5");
	expect_text(NULL, I(0x85, 0, 1, 0, 5), NOP, 1, "call +0x5");

	/* names: from the program's runtime and maps */
	snprintf(sbuf, sizeof(sbuf), "r1 = map_fd[counts] ll");
	expect_text(prog, I(0x18, 1, 1, 0, (int32_t)gpuext_map__id(m)), NOP, 2, sbuf);
	expect_text(prog, I(0x18, 1, 2, 0, (int32_t)gpuext_map__id(m2)), I(0, 0, 0, 0, 0x10), 2,
		    "r1 = map_value_fd[flags]+0x10 ll");
	expect_text(prog, I(0x18, 1, 3, 0, 7), NOP, 2, "r1 = var[0x7] ll");
	expect_text(NULL, I(0x18, 1, 4, 0, 5), NOP, 2, "r1 = func[+0x5] ll");
	expect_text(prog, I(0x18, 1, 5, 0, 0), NOP, 2, "r1 = map[counts] ll");
	expect_text(prog, I(0x18, 1, 6, 0, 1), I(0, 0, 0, 0, 8), 2, "r1 = map_value[flags]+0x8 ll");
	expect_text(NULL, I(0x18, 1, 1, 0, 3), NOP, 2, "r1 = map_fd[#3] ll");
	expect_text(NULL, I(0x18, 1, 6, 0, 2), NOP, 2, "r1 = map_value[#2]+0x0 ll");
	expect_text(prog, I(0x18, 1, 5, 0, 9), NOP, 2, "r1 = map[#9] ll");
	expect_text(prog, I(0x85, 0, 0, 0, BPF_FUNC_map_lookup_elem), NOP, 1,
		    "call 0x1 ; bpf_map_lookup_elem");
	expect_text(NULL, I(0x85, 0, 2, 0, 0x10001), NOP, 1, "call kfunc[#65537]");

	/* invalid encodings say why */
	expect_text(NULL, I(0x20, 0, 0, 0, 0), NOP, -EINVAL, "invalid: ");
	expect_text(NULL, I(0x20, 0, 0, 0, 0), NOP, -EINVAL, "legacy");
	expect_text(NULL, I(0x07, 11, 0, 0, 0), NOP, -EINVAL, "invalid: ");
	expect_text(NULL, I(0x95, 1, 0, 0, 0), NOP, -EINVAL, "exit");
	expect_text(NULL, I(0xc3, 1, 2, 0, 0x42), NOP, -EINVAL, "atomic");

out:
	gpuext_prog__free(prog);
	gpuext_map__destroy(m);
	gpuext_map__destroy(m2);
	gpuext_runtime__free(rt);
}

/* ------------------------------------------------------------------ */
/* 3. Round trip of random valid encodings                             */
/* ------------------------------------------------------------------ */

static uint64_t rng_state = 0x243f6a8885a308d3ULL;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Field values that hit the interesting encodings often. */
static int32_t rnd_imm(void)
{
	static const int32_t special[] = { 0, 1, -1, 8, 16, 32, 64, INT32_MIN, INT32_MAX,
					   BPF_ADD, BPF_OR, BPF_AND, BPF_XOR, BPF_ADD | BPF_FETCH,
					   BPF_OR | BPF_FETCH, BPF_AND | BPF_FETCH,
					   BPF_XOR | BPF_FETCH, BPF_XCHG, BPF_CMPXCHG };

	if (rnd() % 3)
		return special[rnd() % (sizeof(special) / sizeof(special[0]))];
	return (int32_t)(uint32_t)rnd();
}

static int16_t rnd_off(void)
{
	static const int16_t special[] = { 0, 0, 0, 1, -1, 8, 16, 32, INT16_MIN, INT16_MAX };

	if (rnd() % 3)
		return special[rnd() % (sizeof(special) / sizeof(special[0]))];
	return (int16_t)(uint16_t)rnd();
}

static uint8_t rnd_reg(void)
{
	return (uint8_t)(rnd() % 8 ? rnd() % 11 : rnd() % 16);
}

static void round_trip_one(const struct gpuext_prog *prog, const struct gpuext_asm_opts *opts,
			   const struct bpf_insn *x, size_t n, unsigned *bad)
{
	char text[256], err[256] = "";
	struct bpf_insn *back = NULL;
	size_t cnt = 0;
	int r;

	r = gpuext_disasm_insn(prog, x, n, 0, text, sizeof(text));
	if (r != (int)n) {
		if ((*bad)++ < 10)
			test_fail(__FILE__, __LINE__, "valid %02x: disasm gave %d (%s)", x->code, r,
				  text);
		return;
	}
	r = gpuext_asm(text, opts, &back, &cnt, err, sizeof(err));
	if (r || cnt != n || memcmp(back, x, n * sizeof(*x))) {
		if ((*bad)++ < 10)
			test_fail(__FILE__, __LINE__,
				  "round trip of %02x dst=%u src=%u off=%d imm=%d: \"%s\" -> %s "
				  "(got %02x dst=%u src=%u off=%d imm=%d)",
				  x->code, x->dst_reg, x->src_reg, x->off, x->imm, text,
				  r ? err : "other bytes", cnt ? back->code : 0, cnt ? back->dst_reg : 0,
				  cnt ? back->src_reg : 0, cnt ? back->off : 0, cnt ? back->imm : 0);
	}
	free(back);
}

static void test_round_trip(void)
{
	static const uint8_t classes[] = { BPF_LD, BPF_LDX, BPF_ST, BPF_STX,
					   BPF_ALU, BPF_JMP, BPF_JMP32, BPF_ALU64 };
	GPUEXT_OPTS(gpuext_map_def, def, .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 1);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *maps[3] = { 0 };
	struct gpuext_prog *prog = NULL;
	struct bpf_insn pinsns[] = { I(0xb7, 0, 0, 0, 0), I(0x95, 0, 0, 0, 0) };
	unsigned valid[8] = { 0 }, bad = 0, tries = 0, opcodes_valid = 0;
	char names[3][8];

	if (gpuext_runtime__new(NULL, &rt))
		return;
	for (int k = 0; k < 3; k++) {
		snprintf(names[k], sizeof(names[k]), "m%d", k);
		def.name = names[k];
		CHECK_EQ_INT(gpuext_map__create(rt, &def, &maps[k]), 0);
	}
	CHECK_EQ_INT(gpuext_prog__new(rt, "rt", pinsns, 2, maps, 3, &prog), 0);
	GPUEXT_OPTS(gpuext_asm_opts, opts, .rt = rt, .maps = maps, .map_cnt = 3);

	for (int c = 0; c < 8; c++) {
		tries = 0;
		while (valid[c] < 3000 && tries++ < 400000) {
			struct bpf_insn x[2];
			struct isa_decoded d;

			x[0] = I((uint8_t)((rnd() & 0xf8) | classes[c]), rnd_reg(), rnd_reg(), rnd_off(),
				 rnd_imm());
			x[1] = I(0, 0, 0, 0, rnd_imm());
			if (classes[c] == BPF_LD) {
				x[0].code = BPF_LD | BPF_DW | BPF_IMM;
				x[0].src_reg = (uint8_t)(rnd() % 7);
				x[0].off = 0;
				if (rnd() % 2) /* name an existing map sometimes */
					x[0].imm = x[0].src_reg == 1 || x[0].src_reg == 2
							   ? (int32_t)gpuext_map__id(maps[rnd() % 3])
							   : (int32_t)(rnd() % 4);
			}
			if (isa_decode(x, 2, 0, &d, NULL, 0))
				continue;
			valid[c]++;
			/* names printed from @prog are read back through @opts */
			if (rnd() % 4)
				round_trip_one(prog, &opts, x, d.slots, &bad);
			else
				round_trip_one(NULL, rnd() % 2 ? &opts : NULL, x, d.slots, &bad);
		}
		CHECK(valid[c] >= 3000);
	}
	printf("round trip: %u LD, %u LDX, %u ST, %u STX, %u ALU, %u JMP, %u JMP32, %u ALU64 "
	       "encodings\n", valid[0], valid[1], valid[2], valid[3], valid[4], valid[5], valid[6],
	       valid[7]);
	CHECK_EQ_INT(bad, 0);

	/* Every opcode: text, or "invalid: <reason>". */
	for (int code = 0; code < 256; code++) {
		bool ok = false;

		for (int v = 0; v < 64 && !ok; v++) {
			struct bpf_insn x[2] = { I((uint8_t)code, 1, v & 1 ? 2 : 0, 0, 0), NOP };
			static const int32_t imms[] = { 0, 16, BPF_ADD, BPF_XCHG };
			char buf[256];
			int r;

			x[0].imm = imms[(v >> 1) % 4];
			x[0].off = (v >> 3) % 2 ? 8 : 0;
			if ((v >> 4) % 2)
				x[0].dst_reg = 0;
			if ((v >> 5) % 2)
				x[0].src_reg = 1;
			r = gpuext_disasm_insn(NULL, x, 2, 0, buf, sizeof(buf));
			if (r > 0) {
				ok = true;
				CHECK(buf[0] && strncmp(buf, "invalid", 7));
				round_trip_one(NULL, NULL, x, (size_t)r, &bad);
			} else {
				CHECK_EQ_INT(r, -EINVAL);
				test_checks++;
				if (strncmp(buf, "invalid: ", 9) || strlen(buf) < 15)
					test_fail(__FILE__, __LINE__, "opcode 0x%02x: no reason (\"%s\")",
						  code, buf);
			}
		}
		opcodes_valid += ok;
	}
	printf("opcodes: %u of 256 have a valid encoding, the rest are reported invalid\n",
	       opcodes_valid);
	/* RFC 9669: 27 ALU, 26 ALU64, 26 JMP, 23 JMP32, 1 LD, 7 LDX, 4 ST, 6 STX */
	CHECK_EQ_INT(opcodes_valid, 120);
	CHECK_EQ_INT(bad, 0);

	gpuext_prog__free(prog);
	for (int k = 0; k < 3; k++)
		gpuext_map__destroy(maps[k]);
	gpuext_runtime__free(rt);
}

/* ------------------------------------------------------------------ */
/* 4. Assembler: labels, names, errors                                 */
/* ------------------------------------------------------------------ */

static void expect_asm_error(const char *text, const char *want)
{
	struct bpf_insn *out = NULL;
	size_t cnt = 0;
	char err[256] = "";
	int r = gpuext_asm(text, NULL, &out, &cnt, err, sizeof(err));

	CHECK_EQ_INT(r, -EINVAL);
	CHECK(out == NULL);
	CHECK_STR_CONTAINS(err, want);
}

static void test_asm(void)
{
	struct gpuext_runtime *rt = NULL;
	struct bpf_insn *out = NULL;
	size_t cnt = 0;
	char err[256] = "";
	int r;
	const char *prog =
		"# a comment line\n"
		"start:\n"
		"\tr1 = 0x5            ; trailing comment\n"
		"loop:\tr1 += -1\n"
		"\tif r1 != 0 goto loop\n"
		"\tr2 = func[sub] ll\n"
		"\tcall sub\n"
		"\tcall bpf_get_prandom_u32\n"
		"\tgotol done\n"
		"\tgoto +0x0 <.text+0x48>\n"
		"sub: r0 = 7\n"
		"\texit\n"
		"done:\n"
		"\texit\n";

	CHECK_EQ_INT(gpuext_runtime__new(NULL, &rt), 0);
	GPUEXT_OPTS(gpuext_asm_opts, opts, .rt = rt);
	r = gpuext_asm(prog, &opts, &out, &cnt, err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (!r) {
		CHECK_EQ_INT(cnt, 12);
		CHECK_EQ_INT(out[0].imm, 5);
		CHECK_EQ_INT(out[1].code, BPF_ALU64 | BPF_ADD | BPF_K);
		CHECK_EQ_INT(out[1].imm, -1);
		CHECK_EQ_INT(out[2].off, -2);		/* 2 -> 1 */
		CHECK_EQ_INT(out[3].src_reg, BPF_PSEUDO_FUNC);
		CHECK_EQ_INT(out[3].imm, 9 - 4);	/* sub at 9, relative to 3 + 1 */
		CHECK_EQ_INT(out[5].src_reg, BPF_PSEUDO_CALL);
		CHECK_EQ_INT(out[5].imm, 9 - 6);
		CHECK_EQ_INT(out[6].src_reg, 0);
		CHECK_EQ_INT(out[6].imm, BPF_FUNC_get_prandom_u32);
		CHECK_EQ_INT(out[7].code, BPF_JMP32 | BPF_JA);
		CHECK_EQ_INT(out[7].imm, 11 - 8);
		CHECK_EQ_INT(out[8].off, 0);
	} else {
		printf("asm error: %s\n", err);
	}
	free(out);

	/* a raw encoding, and the 32-bit immediate rules */
	r = gpuext_asm(".insn code=0x8f dst=1 src=2 off=-1 imm=0xffffffff\nw1 = 0xffffffff\n",
		       NULL, &out, &cnt, err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (!r) {
		CHECK_EQ_INT(out[0].code, 0x8f);
		CHECK_EQ_INT(out[0].dst_reg, 1);
		CHECK_EQ_INT(out[0].src_reg, 2);
		CHECK_EQ_INT(out[0].off, -1);
		CHECK_EQ_INT(out[0].imm, -1);
		CHECK_EQ_INT(out[1].imm, -1);
	}
	free(out);

	expect_asm_error("r0 = 1\nr0 += \nexit\n", "line 2, column 6: expected a register or an immediate");
	expect_asm_error("r0 = 0xffffffff\n", "sign-extended 32-bit");
	expect_asm_error("  r11 = 1\n", "line 1, column 3: expected a register");
	expect_asm_error("goto nowhere\n", "line 1, column 6: undefined label 'nowhere'");
	expect_asm_error("r0 = *(u32 *)(r1 + 0x4\n", "expected ')'");
	expect_asm_error("r0 = *(q32 *)(r1)\n", "expected u8, u16, u32, u64");
	expect_asm_error("if r1 =! 0 goto +1\n", "expected a comparison");
	expect_asm_error("if r1 == 0 goto 1\n", "signed offset");
	expect_asm_error("w1 += r2\n", "expected a 32-bit register");
	expect_asm_error("r1 = le16 r2\n", "in place");
	expect_asm_error("r1 = map_fd[nomap] ll\n", "no map named 'nomap'");
	expect_asm_error("a:\na:\n", "already defined on line 1");
	expect_asm_error("frobnicate r1\n", "expected an instruction");
	expect_asm_error("exit r1\n", "unexpected 'r1'");
	expect_asm_error("r1 = 0x10000000000000000 ll\n", "64 bits");
	gpuext_runtime__free(rt);
}

int main(void)
{
	test_texts();
	test_asm();
	test_round_trip();
	test_against_llvm();
	return test_done("disasm");
}
