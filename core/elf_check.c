/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of a BPF ELF object before anything else reads it.
 *
 * libbpf is robust but its messages rarely say where a file is broken, and
 * the linker in loader.c wants to index sections, symbols and instructions
 * without re-checking bounds. So this file checks every structure the
 * loader (or libbpf) will follow, in the order a reader meets them, and
 * stops at the first problem with a message that names the object, the
 * section (index and name, once names are known to be sound), the byte
 * offset at fault and what was expected.
 *
 * Everything is read with memcpy: the caller's buffer carries no alignment
 * promise.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/btf.h>

#include "loader_impl.h"

#define BTF_EXT_MAGIC 0xeB9F

static void elf_err(struct gpuext_runtime *rt, const struct ldr_elf *elf, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void elf_err(struct gpuext_runtime *rt, const struct ldr_elf *elf, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpuext_log(rt, GPUEXT_LOG_WARN, "%s: %s", elf->objname, msg);
}

/* "section 7 (.rel.text)" or, before names are trusted, "section 7". */
static const char *sec_desc(const struct ldr_elf *elf, size_t idx, char *buf, size_t len)
{
	if (idx < elf->sec_cnt && elf->secs && elf->secs[idx].name)
		snprintf(buf, len, "section %zu (%s)", idx, elf->secs[idx].name);
	else
		snprintf(buf, len, "section %zu", idx);
	return buf;
}

/* Is [off, off+size) inside a buffer of @len bytes? Overflow-safe. */
static bool in_bounds(uint64_t off, uint64_t size, uint64_t len)
{
	return off <= len && size <= len - off;
}

static const char *machine_name(unsigned m)
{
	switch (m) {
	case EM_NONE: return "EM_NONE";
	case EM_386: return "i386";
	case EM_ARM: return "ARM";
	case EM_X86_64: return "x86-64";
	case EM_AARCH64: return "AArch64";
	case EM_PPC: return "PowerPC";
	case EM_PPC64: return "PowerPC64";
	case EM_S390: return "s390";
	case EM_MIPS: return "MIPS";
	case EM_SPARCV9: return "SPARC v9";
	case EM_RISCV: return "RISC-V";
	case EM_LOONGARCH: return "LoongArch";
	case EM_CUDA: return "NVIDIA CUDA";
	case EM_AMDGPU: return "AMD GPU";
	default: return NULL;
	}
}

static const char *type_name(unsigned t)
{
	switch (t) {
	case ET_NONE: return "ET_NONE (no file type)";
	case ET_EXEC: return "ET_EXEC (executable)";
	case ET_DYN: return "ET_DYN (shared object)";
	case ET_CORE: return "ET_CORE (core dump)";
	default: return "an unknown type";
	}
}

static int check_header(struct gpuext_runtime *rt, struct ldr_elf *elf, Elf64_Ehdr *eh)
{
	const uint8_t *b = elf->buf;

	if (elf->len == 0) {
		elf_err(rt, elf, "file is empty (0 bytes); expected a BPF ELF object");
		return -ENOEXEC;
	}
	if (elf->len >= SELFMAG && memcmp(b, ELFMAG, SELFMAG) != 0) {
		elf_err(rt, elf, "not an ELF file: bad magic %02x %02x %02x %02x at offset 0x0, expected 7f 45 4c 46 (\"\\x7fELF\")",
			b[0], b[1], b[2], b[3]);
		return -ENOEXEC;
	}
	if (elf->len < sizeof(*eh)) {
		elf_err(rt, elf, "file is %zu bytes, too small for an ELF header (%zu bytes): truncated?",
			elf->len, sizeof(*eh));
		return -ENOEXEC;
	}
	memcpy(eh, b, sizeof(*eh));
	if (eh->e_ident[EI_CLASS] != ELFCLASS64) {
		elf_err(rt, elf, "%s ELF file (EI_CLASS %u at offset 0x%x); BPF objects are ELFCLASS64",
			eh->e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit (ELFCLASS32)" : "unknown-class",
			eh->e_ident[EI_CLASS], EI_CLASS);
		return -ENOEXEC;
	}
	if (eh->e_ident[EI_DATA] == ELFDATA2MSB) {
		elf_err(rt, elf, "big-endian ELF file (ELFDATA2MSB at offset 0x%x): big-endian BPF objects are not supported; build with -target bpfel (or -target bpf on a little-endian host)",
			EI_DATA);
		return -ENOEXEC;
	}
	if (eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		elf_err(rt, elf, "unknown data encoding %u at offset 0x%x, expected ELFDATA2LSB (1)",
			eh->e_ident[EI_DATA], EI_DATA);
		return -ENOEXEC;
	}
	if (eh->e_machine != EM_BPF) {
		const char *m = machine_name(eh->e_machine);

		if (m)
			elf_err(rt, elf, "%s object, not BPF (e_machine %u at offset 0x%zx, expected EM_BPF %u)",
				m, eh->e_machine, offsetof(Elf64_Ehdr, e_machine), EM_BPF);
		else
			elf_err(rt, elf, "machine %u object, not BPF (e_machine at offset 0x%zx, expected EM_BPF %u)",
				eh->e_machine, offsetof(Elf64_Ehdr, e_machine), EM_BPF);
		return -ENOEXEC;
	}
	if (eh->e_type != ET_REL) {
		elf_err(rt, elf, "e_type at offset 0x%zx is %s; a BPF object must be ET_REL (relocatable, as clang -c writes it)",
			offsetof(Elf64_Ehdr, e_type), type_name(eh->e_type));
		return -ENOEXEC;
	}
	return 0;
}

static int check_section_table(struct gpuext_runtime *rt, struct ldr_elf *elf,
			       const Elf64_Ehdr *eh)
{
	uint64_t tbl;

	if (eh->e_shnum == 0 || eh->e_shoff == 0) {
		elf_err(rt, elf, "no section header table (e_shoff 0x%" PRIx64 ", e_shnum %u at offset 0x%zx)%s",
			(uint64_t)eh->e_shoff, eh->e_shnum, offsetof(Elf64_Ehdr, e_shnum),
			eh->e_shoff ? "; extended section numbering is not supported" : "");
		return -EINVAL;
	}
	if (eh->e_shentsize != sizeof(Elf64_Shdr)) {
		elf_err(rt, elf, "e_shentsize at offset 0x%zx is %u, expected %zu",
			offsetof(Elf64_Ehdr, e_shentsize), eh->e_shentsize, sizeof(Elf64_Shdr));
		return -EINVAL;
	}
	tbl = (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr);
	if (!in_bounds(eh->e_shoff, tbl, elf->len)) {
		elf_err(rt, elf, "section header table at offset 0x%" PRIx64 " (%u entries of %zu bytes) ends at 0x%" PRIx64 ", past the end of the file (size 0x%zx): truncated?",
			(uint64_t)eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr),
			(uint64_t)eh->e_shoff + tbl, elf->len);
		return -EINVAL;
	}
	if (eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx >= eh->e_shnum) {
		elf_err(rt, elf, "e_shstrndx %u (at offset 0x%zx) is out of range: the file has %u sections",
			eh->e_shstrndx, offsetof(Elf64_Ehdr, e_shstrndx), eh->e_shnum);
		return -EINVAL;
	}
	elf->sec_cnt = eh->e_shnum;
	elf->secs = calloc(elf->sec_cnt, sizeof(*elf->secs));
	if (!elf->secs)
		return -ENOMEM;
	for (size_t i = 0; i < elf->sec_cnt; i++) {
		Elf64_Shdr sh;
		struct ldr_sec *s = &elf->secs[i];

		memcpy(&sh, elf->buf + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		s->type = sh.sh_type;
		s->flags = sh.sh_flags;
		s->offset = sh.sh_offset;
		s->size = sh.sh_size;
		s->entsize = sh.sh_entsize;
		s->link = sh.sh_link;
		s->info = sh.sh_info;
	}
	return 0;
}

static int check_names(struct gpuext_runtime *rt, struct ldr_elf *elf, const Elf64_Ehdr *eh)
{
	const struct ldr_sec *shstr = &elf->secs[eh->e_shstrndx];
	char d[96];
	const char *names;

	if (shstr->type != SHT_STRTAB) {
		elf_err(rt, elf, "%s: the section name table (e_shstrndx) has type %u, expected SHT_STRTAB",
			sec_desc(elf, eh->e_shstrndx, d, sizeof(d)), shstr->type);
		return -EINVAL;
	}
	if (!in_bounds(shstr->offset, shstr->size, elf->len)) {
		elf_err(rt, elf, "%s: section name table at offset 0x%" PRIx64 " size 0x%" PRIx64 " runs past the end of the file (size 0x%zx)",
			sec_desc(elf, eh->e_shstrndx, d, sizeof(d)), shstr->offset, shstr->size,
			elf->len);
		return -EINVAL;
	}
	names = (const char *)elf->buf + shstr->offset;
	for (size_t i = 0; i < elf->sec_cnt; i++) {
		uint32_t off;
		Elf64_Shdr sh;

		memcpy(&sh, elf->buf + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		off = sh.sh_name;
		if (off >= shstr->size) {
			elf_err(rt, elf, "section %zu: name offset 0x%x is past the end of the section name table (size 0x%" PRIx64 ")",
				i, off, shstr->size);
			return -EINVAL;
		}
		if (!memchr(names + off, '\0', shstr->size - off)) {
			elf_err(rt, elf, "section %zu: name at offset 0x%x of the section name table (size 0x%" PRIx64 ") is not NUL-terminated",
				i, off, shstr->size);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < elf->sec_cnt; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, elf->buf + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		elf->secs[i].name = names + sh.sh_name;
	}
	return 0;
}

static int check_section_data(struct gpuext_runtime *rt, struct ldr_elf *elf)
{
	char d[96];

	for (size_t i = 1; i < elf->sec_cnt; i++) {
		struct ldr_sec *s = &elf->secs[i];

		if (s->type == SHT_NOBITS || s->type == SHT_NULL)
			continue;
		if (!in_bounds(s->offset, s->size, elf->len)) {
			elf_err(rt, elf, "%s: data at offset 0x%" PRIx64 " size 0x%" PRIx64 " runs past the end of the file (size 0x%zx)",
				sec_desc(elf, i, d, sizeof(d)), s->offset, s->size, elf->len);
			return -EINVAL;
		}
		s->data = elf->buf + s->offset;
		if (s->type == SHT_RELA) {
			elf_err(rt, elf, "%s: SHT_RELA relocations are not used by BPF objects (expected SHT_REL)",
				sec_desc(elf, i, d, sizeof(d)));
			return -EINVAL;
		}
		if (s->type == SHT_SYMTAB) {
			if (elf->symtab_idx) {
				elf_err(rt, elf, "%s: a second symbol table (the first is section %u)",
					sec_desc(elf, i, d, sizeof(d)), elf->symtab_idx);
				return -EINVAL;
			}
			elf->symtab_idx = (uint32_t)i;
		}
		if (s->type == SHT_PROGBITS && (s->flags & SHF_EXECINSTR)) {
			s->exec = true;
			if (s->size % 8) {
				elf_err(rt, elf, "%s: size 0x%" PRIx64 " is not a multiple of 8 (the instruction size); the last instruction, at offset 0x%" PRIx64 ", is cut",
					sec_desc(elf, i, d, sizeof(d)), s->size,
					s->size & ~(uint64_t)7);
				return -EINVAL;
			}
		}
		if (strcmp(s->name, ".text") == 0)
			elf->text_idx = (uint32_t)i;
		if (strcmp(s->name, ".BTF") == 0)
			elf->btf_idx = (uint32_t)i;
		if (strcmp(s->name, ".BTF.ext") == 0)
			elf->btf_ext_idx = (uint32_t)i;
	}
	return 0;
}

static int check_symbols(struct gpuext_runtime *rt, struct ldr_elf *elf)
{
	const struct ldr_sec *st, *str;
	char d[96];

	if (!elf->symtab_idx) {
		elf_err(rt, elf, "no symbol table (SHT_SYMTAB section); was the object stripped?");
		return -EINVAL;
	}
	st = &elf->secs[elf->symtab_idx];
	sec_desc(elf, elf->symtab_idx, d, sizeof(d));
	if (st->entsize != sizeof(Elf64_Sym) || st->size % sizeof(Elf64_Sym)) {
		elf_err(rt, elf, "%s: entry size %" PRIu64 " and size 0x%" PRIx64 " do not describe a table of %zu-byte symbols",
			d, st->entsize, st->size, sizeof(Elf64_Sym));
		return -EINVAL;
	}
	if (st->link == 0 || st->link >= elf->sec_cnt || elf->secs[st->link].type != SHT_STRTAB) {
		elf_err(rt, elf, "%s: sh_link %u does not name a string table section", d, st->link);
		return -EINVAL;
	}
	str = &elf->secs[st->link];
	elf->strtab = (const char *)str->data;
	elf->strtab_size = str->size;
	elf->sym_cnt = st->size / sizeof(Elf64_Sym);
	if (elf->sym_cnt == 0) {
		elf_err(rt, elf, "%s: the symbol table is empty", d);
		return -EINVAL;
	}
	elf->syms = malloc(st->size);
	if (!elf->syms)
		return -ENOMEM;
	memcpy(elf->syms, st->data, st->size);

	for (size_t i = 1; i < elf->sym_cnt; i++) {
		const Elf64_Sym *sym = &elf->syms[i];
		uint64_t at = st->offset + i * sizeof(*sym);
		const struct ldr_sec *s;

		if (sym->st_name >= elf->strtab_size ||
		    !memchr(elf->strtab + sym->st_name, '\0', elf->strtab_size - sym->st_name)) {
			elf_err(rt, elf, "%s: symbol %zu at offset 0x%" PRIx64 ": name offset 0x%x is outside the string table or not NUL-terminated (string table size 0x%zx)",
				d, i, at, sym->st_name, elf->strtab_size);
			return -EINVAL;
		}
		if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS ||
		    sym->st_shndx == SHN_COMMON)
			continue;
		if (sym->st_shndx >= elf->sec_cnt) {
			elf_err(rt, elf, "%s: symbol %zu (%s) at offset 0x%" PRIx64 ": section index %u is out of range (the file has %zu sections)",
				d, i, elf->strtab + sym->st_name, at, sym->st_shndx, elf->sec_cnt);
			return -EINVAL;
		}
		s = &elf->secs[sym->st_shndx];
		if (ELF64_ST_TYPE(sym->st_info) == STT_SECTION)
			continue;
		if (!in_bounds(sym->st_value, sym->st_size, s->size)) {
			elf_err(rt, elf, "%s: symbol %zu (%s) at offset 0x%" PRIx64 ": [0x%" PRIx64 ", +0x%" PRIx64 ") lies outside section %u (%s, size 0x%" PRIx64 ")",
				d, i, elf->strtab + sym->st_name, at, (uint64_t)sym->st_value,
				(uint64_t)sym->st_size, sym->st_shndx, s->name, s->size);
			return -EINVAL;
		}
		if (s->exec && ELF64_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_value % 8) {
			elf_err(rt, elf, "%s: function symbol %zu (%s) at offset 0x%" PRIx64 ": start 0x%" PRIx64 " in section %s is not 8-byte aligned",
				d, i, elf->strtab + sym->st_name, at, (uint64_t)sym->st_value, s->name);
			return -EINVAL;
		}
	}
	return 0;
}

static const char *rel_type_ok(uint32_t type, unsigned *width)
{
	switch (type) {
	case LDR_R_BPF_64_64: *width = 8; return "R_BPF_64_64";
	case LDR_R_BPF_64_ABS64: *width = 8; return "R_BPF_64_ABS64";
	case LDR_R_BPF_64_ABS32: *width = 4; return "R_BPF_64_ABS32";
	case LDR_R_BPF_64_NODYLD32: *width = 4; return "R_BPF_64_NODYLD32";
	case LDR_R_BPF_64_32: *width = 8; return "R_BPF_64_32";
	default: return NULL;
	}
}

static int check_one_relsec(struct gpuext_runtime *rt, struct ldr_elf *elf, size_t ri)
{
	struct ldr_sec *rs = &elf->secs[ri], *t;
	char d[96];
	size_t n;

	sec_desc(elf, ri, d, sizeof(d));
	if (rs->entsize != sizeof(Elf64_Rel) || rs->size % sizeof(Elf64_Rel)) {
		elf_err(rt, elf, "%s: entry size %" PRIu64 " and size 0x%" PRIx64 " do not describe a table of %zu-byte relocations",
			d, rs->entsize, rs->size, sizeof(Elf64_Rel));
		return -EINVAL;
	}
	if (rs->link != elf->symtab_idx) {
		elf_err(rt, elf, "%s: sh_link %u is not the symbol table (section %u)", d, rs->link,
			elf->symtab_idx);
		return -EINVAL;
	}
	if (rs->info == 0 || rs->info >= elf->sec_cnt) {
		elf_err(rt, elf, "%s: sh_info %u does not name a section (the file has %zu)", d,
			rs->info, elf->sec_cnt);
		return -EINVAL;
	}
	t = &elf->secs[rs->info];
	if (t->type == SHT_REL || t->type == SHT_SYMTAB || t->type == SHT_STRTAB ||
	    t->type == SHT_NULL) {
		elf_err(rt, elf, "%s: relocates section %u (%s), which holds no relocatable data",
			d, rs->info, t->name);
		return -EINVAL;
	}
	if (t->rel_sec) {
		elf_err(rt, elf, "%s: section %u (%s) already has relocation section %u", d,
			rs->info, t->name, t->rel_sec);
		return -EINVAL;
	}
	t->rel_sec = (uint32_t)ri;
	n = rs->size / sizeof(Elf64_Rel);
	t->rels = calloc(n ? n : 1, sizeof(*t->rels));
	if (!t->rels)
		return -ENOMEM;
	if (t->exec) {
		t->rel_at = calloc(t->size / 8 + 1, sizeof(*t->rel_at));
		if (!t->rel_at)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		Elf64_Rel r;
		uint32_t type, sym;
		unsigned width = 8;
		const char *tn;

		memcpy(&r, rs->data + i * sizeof(r), sizeof(r));
		type = (uint32_t)ELF64_R_TYPE(r.r_info);
		sym = (uint32_t)ELF64_R_SYM(r.r_info);
		tn = rel_type_ok(type, &width);
		if (!tn) {
			elf_err(rt, elf, "%s: relocation %zu at offset 0x%" PRIx64 " has unknown type %u (expected R_BPF_64_64, R_BPF_64_ABS64, R_BPF_64_ABS32, R_BPF_64_NODYLD32 or R_BPF_64_32)",
				d, i, (uint64_t)r.r_offset, type);
			return -EINVAL;
		}
		if (!in_bounds(r.r_offset, width, t->size)) {
			elf_err(rt, elf, "%s: relocation %zu at offset 0x%" PRIx64 " points past the end of section '%s' (size 0x%" PRIx64 ")",
				d, i, (uint64_t)r.r_offset, t->name, t->size);
			return -EINVAL;
		}
		if (t->exec && r.r_offset % 8) {
			elf_err(rt, elf, "%s: relocation %zu at offset 0x%" PRIx64 " in section '%s' is not 8-byte aligned (it must point at an instruction)",
				d, i, (uint64_t)r.r_offset, t->name);
			return -EINVAL;
		}
		if (sym == 0 || sym >= elf->sym_cnt) {
			elf_err(rt, elf, "%s: relocation %zu at offset 0x%" PRIx64 " refers to symbol %u; the symbol table has %zu entries (0 is reserved)",
				d, i, (uint64_t)r.r_offset, sym, elf->sym_cnt);
			return -EINVAL;
		}
		if (t->exec) {
			uint64_t insn = r.r_offset / 8;

			if (t->rel_at[insn]) {
				elf_err(rt, elf, "%s: relocation %zu at offset 0x%" PRIx64 ": instruction %" PRIu64 " of section '%s' is already relocated by relocation %u",
					d, i, (uint64_t)r.r_offset, insn, t->name,
					t->rels[t->rel_at[insn] - 1].idx);
				return -EINVAL;
			}
			t->rel_at[insn] = (uint32_t)t->rel_cnt + 1;
		}
		t->rels[t->rel_cnt++] = (struct ldr_rel){
			.offset = r.r_offset, .sym = sym, .type = type, .idx = (uint32_t)i,
		};
	}
	return 0;
}

static int check_relocations(struct gpuext_runtime *rt, struct ldr_elf *elf)
{
	for (size_t i = 1; i < elf->sec_cnt; i++) {
		int err;

		if (elf->secs[i].type != SHT_REL)
			continue;
		err = check_one_relsec(rt, elf, i);
		if (err)
			return err;
	}
	return 0;
}

static int check_code(struct gpuext_runtime *rt, struct ldr_elf *elf)
{
	char d[96];

	for (size_t i = 1; i < elf->sec_cnt; i++) {
		const struct ldr_sec *s = &elf->secs[i];
		size_t n;

		if (!s->exec)
			continue;
		sec_desc(elf, i, d, sizeof(d));
		n = s->size / 8;
		for (size_t r = 0; r < s->rel_cnt; r++) {
			const struct ldr_rel *rel = &s->rels[r];
			uint8_t code = s->data[rel->offset];
			bool lddw = code == (BPF_LD | BPF_DW | BPF_IMM), call = code == (BPF_JMP | BPF_CALL);

			if ((lddw && rel->type == LDR_R_BPF_64_64) || (call && rel->type == LDR_R_BPF_64_32))
				continue;
			elf_err(rt, elf, "section %u (%s): relocation %u at offset 0x%" PRIx64 " has type %u for an instruction with opcode 0x%02x in '%s'; expected R_BPF_64_64 on an ld_imm64 or R_BPF_64_32 on a call",
				s->rel_sec, elf->secs[s->rel_sec].name, rel->idx, rel->offset,
				rel->type, code, s->name);
			return -EINVAL;
		}
		for (size_t k = 0; k < n; k++) {
			uint8_t code = s->data[k * 8];

			if (code != (BPF_LD | BPF_DW | BPF_IMM))
				continue;
			if (k + 1 >= n) {
				elf_err(rt, elf, "%s: ld_imm64 at offset 0x%zx (insn %zu) is cut by the end of the section: its second half is missing",
					d, k * 8, k);
				return -EINVAL;
			}
			if (s->rel_at && s->rel_at[k + 1]) {
				elf_err(rt, elf, "%s: relocation %u at offset 0x%zx points into the second half of an ld_imm64 (insn %zu)",
					d, s->rels[s->rel_at[k + 1] - 1].idx, (k + 1) * 8, k);
				return -EINVAL;
			}
			k++;
		}
	}
	return 0;
}

/* A string at @off of a string area [str, str+size), or NULL. */
static const char *str_at(const char *str, size_t size, uint32_t off)
{
	if (off >= size || !memchr(str + off, '\0', size - off))
		return NULL;
	return str + off;
}

static int check_btf(struct gpuext_runtime *rt, struct ldr_elf *elf, const char **strs,
		     size_t *str_len)
{
	const struct ldr_sec *s = &elf->secs[elf->btf_idx];
	struct btf_header h;
	char d[96];

	sec_desc(elf, elf->btf_idx, d, sizeof(d));
	if (s->size < sizeof(h) || !s->data) {
		elf_err(rt, elf, "%s: size 0x%" PRIx64 " is smaller than a BTF header (%zu bytes)", d,
			s->size, sizeof(h));
		return -EINVAL;
	}
	memcpy(&h, s->data, sizeof(h));
	if (h.magic != BTF_MAGIC) {
		elf_err(rt, elf, "%s: bad BTF magic 0x%04x at offset 0x0, expected 0x%04x%s", d,
			h.magic, BTF_MAGIC, h.magic == 0x9feb ? " (a big-endian BTF)" : "");
		return -EINVAL;
	}
	if (h.version != BTF_VERSION) {
		elf_err(rt, elf, "%s: BTF version %u at offset 0x2, expected %u", d, h.version,
			BTF_VERSION);
		return -EINVAL;
	}
	if (h.hdr_len < sizeof(h) || h.hdr_len > s->size) {
		elf_err(rt, elf, "%s: BTF header length %u at offset 0x4 is outside [%zu, section size 0x%" PRIx64 "]",
			d, h.hdr_len, sizeof(h), s->size);
		return -EINVAL;
	}
	if (!in_bounds(h.type_off, h.type_len, s->size - h.hdr_len) ||
	    !in_bounds(h.str_off, h.str_len, s->size - h.hdr_len) || h.type_off % 4) {
		elf_err(rt, elf, "%s: BTF type data (offset 0x%x, length 0x%x) or strings (offset 0x%x, length 0x%x) lie outside the section (0x%" PRIx64 " bytes after the 0x%x-byte header) or are misaligned",
			d, h.type_off, h.type_len, h.str_off, h.str_len, s->size - h.hdr_len,
			h.hdr_len);
		return -EINVAL;
	}
	*strs = (const char *)s->data + h.hdr_len + h.str_off;
	*str_len = h.str_len;
	return 0;
}

/*
 * Only CO-RE records matter to the loader (they are refused), but the
 * header is checked in full: libbpf parses func_info/line_info from it.
 */
static int check_btf_ext(struct gpuext_runtime *rt, struct ldr_elf *elf, const char *strs,
			 size_t str_len)
{
	const struct ldr_sec *s = &elf->secs[elf->btf_ext_idx];
	uint32_t w[8] = { 0 };
	uint16_t magic;
	uint32_t hdr_len, data_len, co, cl, rec_size, pos;
	const uint8_t *data;
	char d[96];

	sec_desc(elf, elf->btf_ext_idx, d, sizeof(d));
	if (s->size < 24 || !s->data) {
		elf_err(rt, elf, "%s: size 0x%" PRIx64 " is smaller than a BTF.ext header (24 bytes)",
			d, s->size);
		return -EINVAL;
	}
	memcpy(&magic, s->data, 2);
	memcpy(&hdr_len, s->data + 4, 4);
	if (magic != BTF_EXT_MAGIC) {
		elf_err(rt, elf, "%s: bad BTF.ext magic 0x%04x at offset 0x0, expected 0x%04x", d,
			magic, BTF_EXT_MAGIC);
		return -EINVAL;
	}
	if (hdr_len < 24 || hdr_len > s->size || hdr_len % 4) {
		elf_err(rt, elf, "%s: BTF.ext header length %u at offset 0x4 is outside [24, section size 0x%" PRIx64 "] or misaligned",
			d, hdr_len, s->size);
		return -EINVAL;
	}
	memcpy(w, s->data + 8, (hdr_len >= 40 ? 32 : hdr_len - 8));
	data = s->data + hdr_len;
	data_len = (uint32_t)(s->size - hdr_len);
	for (int k = 0; k < (hdr_len >= 32 ? 3 : 2); k++) {
		if (!in_bounds(w[2 * k], w[2 * k + 1], data_len) || w[2 * k] % 4) {
			static const char *const what[] = { "func_info", "line_info", "core_relo" };

			elf_err(rt, elf, "%s: BTF.ext %s (offset 0x%x, length 0x%x) lies outside the section data (0x%x bytes after the header) or is misaligned",
				d, what[k], w[2 * k], w[2 * k + 1], data_len);
			return -EINVAL;
		}
	}
	if (hdr_len < 32)
		return 0;
	co = w[4];
	cl = w[5];
	if (cl == 0)
		return 0;
	if (cl < 4) {
		elf_err(rt, elf, "%s: BTF.ext core_relo at offset 0x%x is too short", d, hdr_len + co);
		return -EINVAL;
	}
	memcpy(&rec_size, data + co, 4);
	if (rec_size < 16 || rec_size % 4) {
		elf_err(rt, elf, "%s: BTF.ext core_relo record size %u at offset 0x%x, expected a multiple of 4, at least 16",
			d, rec_size, hdr_len + co);
		return -EINVAL;
	}
	for (pos = 4; pos < cl;) {
		uint32_t name_off, num;
		const char *sec_name;
		uint32_t sec;

		if (cl - pos < 8) {
			elf_err(rt, elf, "%s: BTF.ext core_relo section header at offset 0x%x is cut", d,
				hdr_len + co + pos);
			return -EINVAL;
		}
		memcpy(&name_off, data + co + pos, 4);
		memcpy(&num, data + co + pos + 4, 4);
		pos += 8;
		sec_name = str_at(strs, str_len, name_off);
		if (!sec_name) {
			elf_err(rt, elf, "%s: BTF.ext core_relo at offset 0x%x names section string 0x%x, outside the BTF strings",
				d, hdr_len + co + pos - 8, name_off);
			return -EINVAL;
		}
		if ((uint64_t)num * rec_size > cl - pos) {
			elf_err(rt, elf, "%s: BTF.ext core_relo at offset 0x%x: %u records of %u bytes run past the end (0x%x bytes left)",
				d, hdr_len + co + pos - 8, num, rec_size, cl - pos);
			return -EINVAL;
		}
		sec = ldr_find_sec(elf, sec_name);
		for (uint32_t k = 0; k < num; k++, pos += rec_size) {
			struct ldr_core_relo *c;

			if (!sec)
				continue;
			c = realloc(elf->core, (elf->core_cnt + 1) * sizeof(*c));
			if (!c)
				return -ENOMEM;
			elf->core = c;
			c += elf->core_cnt++;
			c->sec = sec;
			memcpy(&c->insn_off, data + co + pos, 4);
			memcpy(&c->access_str_off, data + co + pos + 8, 4);
		}
		if (!sec)
			pos += num * rec_size;
	}
	return 0;
}

uint32_t ldr_find_sec(const struct ldr_elf *elf, const char *name)
{
	for (size_t i = 1; i < elf->sec_cnt; i++)
		if (elf->secs[i].name && strcmp(elf->secs[i].name, name) == 0)
			return (uint32_t)i;
	return 0;
}

const char *ldr_sym_name(const struct ldr_elf *elf, const Elf64_Sym *sym)
{
	if (ELF64_ST_TYPE(sym->st_info) == STT_SECTION && sym->st_shndx < elf->sec_cnt &&
	    sym->st_shndx != SHN_UNDEF)
		return elf->secs[sym->st_shndx].name;
	return elf->strtab + sym->st_name;
}

void ldr_elf_free(struct ldr_elf *elf)
{
	if (elf->secs) {
		for (size_t i = 0; i < elf->sec_cnt; i++) {
			free(elf->secs[i].rels);
			free(elf->secs[i].rel_at);
		}
	}
	free(elf->secs);
	free(elf->syms);
	free(elf->core);
	memset(elf, 0, sizeof(*elf));
}

int ldr_elf_parse(struct gpuext_runtime *rt, const char *objname, const void *buf, size_t len,
		  struct ldr_elf *elf)
{
	Elf64_Ehdr eh;
	const char *btf_strs = NULL;
	size_t btf_str_len = 0;
	int err;

	memset(elf, 0, sizeof(*elf));
	elf->objname = objname;
	elf->buf = buf;
	elf->len = len;

	err = check_header(rt, elf, &eh);
	if (!err)
		err = check_section_table(rt, elf, &eh);
	if (!err)
		err = check_names(rt, elf, &eh);
	if (!err)
		err = check_section_data(rt, elf);
	if (!err)
		err = check_symbols(rt, elf);
	if (!err)
		err = check_relocations(rt, elf);
	if (!err)
		err = check_code(rt, elf);
	if (!err && elf->btf_idx)
		err = check_btf(rt, elf, &btf_strs, &btf_str_len);
	if (!err && elf->btf_ext_idx) {
		if (!elf->btf_idx) {
			elf_err(rt, elf, "section %u (.BTF.ext) without a .BTF section", elf->btf_ext_idx);
			err = -EINVAL;
		} else {
			err = check_btf_ext(rt, elf, btf_strs, btf_str_len);
		}
	}
	if (err == -ENOMEM)
		elf_err(rt, elf, "out of memory while reading the ELF file");
	if (err)
		ldr_elf_free(elf);
	return err;
}
