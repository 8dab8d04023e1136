/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spirv_bundle_run: runs a SPIR-V bundle on a Vulkan device. Self-contained
 * on purpose (C99 + libc + dlopen; no Vulkan headers, no gpuext): a GPU
 * machine needs neither LLVM nor libbpf nor gpuext, only a C compiler, a
 * Vulkan driver (ICD) and a Vulkan loader (libvulkan.so.1, or the one named
 * by $GPUEXT_VULKAN_LOADER, dlopen'ed).
 *
 * The bundle is written by `spirv_isa_bundle DIR` where gpuext builds:
 * DIR/manifest.txt lists the ISA corpus cases (their Vulkan-flavour SPIR-V
 * under DIR/spv/, the input memory, and r0 and the memory after the run as
 * the reference interpreter computed them) and the dispatch ABI ("abi" line,
 * codegen/spirv/spirv_vk.c): one host-visible buffer [r0 | header | memory |
 * stacks | data] reached through buffer device addresses passed as push
 * constants, one workgroup of one invocation. The data area (device maps and
 * variables, "data=after_stack" in the abi line) starts right after the
 * stacks; a case's "data" record fills it, "expect_data" is what the
 * interpreter left in the maps and variables.
 *
 *   spirv_bundle_run BUNDLE_DIR [--device SUBSTR] [--case SUBSTR] [--timeout-ms N] [-v]
 *
 * The device: --device, else $GPUEXT_VK_DEVICE (a substring of the device
 * name, e.g. "NVIDIA", "llvmpipe"), else the first discrete GPU, integrated
 * GPU, other, CPU in that order. VK_EXT_debug_utils messages (loader, driver,
 * layers) are printed with the case they belong to.
 *
 * Prints a per-family table and every disagreement with why. Exit status:
 * 0 all agree, 1 a disagreement or failure, 2 no loader / no usable device,
 * 3 bad bundle or usage.
 *
 * The few Vulkan types and constants used are declared in svk.h beside this
 * file (svk_ / SVK_), written from the Vulkan specification; building with
 * -DGPUEXT_VK_ABI_CHECK where <vulkan/vulkan_core.h> exists checks every one
 * against the official header at compile time.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "svk.h"

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

typedef svk_void_fn (*svk_gipa_fn)(svk_instance, const char *);

static struct {
	svk_gipa_fn GetInstanceProcAddr;
	svk_result (*EnumerateInstanceVersion)(uint32_t *);
	svk_result (*EnumerateInstanceExtensionProperties)(const char *, uint32_t *,
							   struct svk_extension_properties *);
	svk_result (*CreateInstance)(const struct svk_instance_create_info *, const void *,
				     svk_instance *);
	/* instance level */
	void (*DestroyInstance)(svk_instance, const void *);
	svk_result (*EnumeratePhysicalDevices)(svk_instance, uint32_t *, svk_phys *);
	void (*GetPhysicalDeviceProperties)(svk_phys, struct svk_phys_props *);
	void (*GetPhysicalDeviceProperties2)(svk_phys, struct svk_phys_props2 *);
	void (*GetPhysicalDeviceFeatures2)(svk_phys, struct svk_features2 *);
	void (*GetPhysicalDeviceQueueFamilyProperties)(svk_phys, uint32_t *,
						       struct svk_queue_family_props *);
	void (*GetPhysicalDeviceMemoryProperties)(svk_phys, struct svk_memory_props *);
	svk_result (*CreateDevice)(svk_phys, const struct svk_device_create_info *, const void *,
				   svk_device *);
	svk_void_fn (*GetDeviceProcAddr)(svk_device, const char *);
	svk_result (*CreateDebugUtilsMessengerEXT)(svk_instance,
						   const struct svk_debug_messenger_create_info *,
						   const void *, svk_handle *);
	void (*DestroyDebugUtilsMessengerEXT)(svk_instance, svk_handle, const void *);
	/* device level */
	void (*DestroyDevice)(svk_device, const void *);
	void (*GetDeviceQueue)(svk_device, uint32_t, uint32_t, svk_queue *);
	svk_result (*CreateCommandPool)(svk_device, const struct svk_command_pool_create_info *,
					const void *, svk_handle *);
	void (*DestroyCommandPool)(svk_device, svk_handle, const void *);
	svk_result (*AllocateCommandBuffers)(svk_device,
					     const struct svk_command_buffer_allocate_info *,
					     svk_cmdbuf *);
	svk_result (*CreateFence)(svk_device, const struct svk_fence_create_info *, const void *,
				  svk_handle *);
	void (*DestroyFence)(svk_device, svk_handle, const void *);
	svk_result (*ResetFences)(svk_device, uint32_t, const svk_handle *);
	svk_result (*WaitForFences)(svk_device, uint32_t, const svk_handle *, svk_bool, uint64_t);
	svk_result (*CreatePipelineLayout)(svk_device, const struct svk_pipeline_layout_create_info *,
					   const void *, svk_handle *);
	void (*DestroyPipelineLayout)(svk_device, svk_handle, const void *);
	svk_result (*CreateShaderModule)(svk_device, const struct svk_shader_module_create_info *,
					 const void *, svk_handle *);
	void (*DestroyShaderModule)(svk_device, svk_handle, const void *);
	svk_result (*CreateComputePipelines)(svk_device, svk_handle, uint32_t,
					     const struct svk_compute_pipeline_create_info *,
					     const void *, svk_handle *);
	void (*DestroyPipeline)(svk_device, svk_handle, const void *);
	svk_result (*CreateBuffer)(svk_device, const struct svk_buffer_create_info *, const void *,
				   svk_handle *);
	void (*DestroyBuffer)(svk_device, svk_handle, const void *);
	void (*GetBufferMemoryRequirements)(svk_device, svk_handle, struct svk_memory_requirements *);
	svk_result (*AllocateMemory)(svk_device, const struct svk_memory_allocate_info *,
				     const void *, svk_handle *);
	void (*FreeMemory)(svk_device, svk_handle, const void *);
	svk_result (*BindBufferMemory)(svk_device, svk_handle, svk_handle, svk_size);
	svk_result (*MapMemory)(svk_device, svk_handle, svk_size, svk_size, svk_flags, void **);
	void (*UnmapMemory)(svk_device, svk_handle);
	svk_addr (*GetBufferDeviceAddress)(svk_device, const struct svk_buffer_device_address_info *);
	svk_result (*BeginCommandBuffer)(svk_cmdbuf, const struct svk_command_buffer_begin_info *);
	svk_result (*EndCommandBuffer)(svk_cmdbuf);
	svk_result (*ResetCommandBuffer)(svk_cmdbuf, svk_flags);
	void (*CmdBindPipeline)(svk_cmdbuf, int32_t, svk_handle);
	void (*CmdPushConstants)(svk_cmdbuf, svk_handle, svk_flags, uint32_t, uint32_t, const void *);
	void (*CmdDispatch)(svk_cmdbuf, uint32_t, uint32_t, uint32_t);
	void (*CmdPipelineBarrier)(svk_cmdbuf, svk_flags, svk_flags, svk_flags, uint32_t,
				   const struct svk_memory_barrier *, uint32_t, const void *, uint32_t,
				   const void *);
	svk_result (*QueueSubmit)(svk_queue, uint32_t, const struct svk_submit_info *, svk_handle);
	svk_result (*DeviceWaitIdle)(svk_device);
} vk;

static const char *vk_result_name(svk_result r)
{
	switch (r) {
	case 0: return "VK_SUCCESS";
	case 1: return "VK_NOT_READY";
	case 2: return "VK_TIMEOUT";
	case 5: return "VK_INCOMPLETE";
	case -1: return "VK_ERROR_OUT_OF_HOST_MEMORY";
	case -2: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
	case -3: return "VK_ERROR_INITIALIZATION_FAILED";
	case -4: return "VK_ERROR_DEVICE_LOST";
	case -5: return "VK_ERROR_MEMORY_MAP_FAILED";
	case -6: return "VK_ERROR_LAYER_NOT_PRESENT";
	case -7: return "VK_ERROR_EXTENSION_NOT_PRESENT";
	case -8: return "VK_ERROR_FEATURE_NOT_PRESENT";
	case -9: return "VK_ERROR_INCOMPATIBLE_DRIVER";
	case -10: return "VK_ERROR_TOO_MANY_OBJECTS";
	case -13: return "VK_ERROR_UNKNOWN";
	case -1000012000: return "VK_ERROR_INVALID_SHADER_NV";
	case -1000257000: return "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS";
	case 1000297000: return "VK_PIPELINE_COMPILE_REQUIRED";
	default: return "VkResult ?";
	}
}

/* ------------------------------------------------------------------ */
/* Messages from VK_EXT_debug_utils, attached to the current case      */
/* ------------------------------------------------------------------ */

static char dbg[4096];
static size_t dbg_len;
static unsigned dbg_dropped;
static bool verbose;

static svk_bool debug_cb(int32_t severity, svk_flags types,
			 const struct svk_debug_callback_data *d, void *user)
{
	const char *sev = severity >= SVK_DEBUG_SEVERITY_ERROR	   ? "error"
			  : severity >= SVK_DEBUG_SEVERITY_WARNING ? "warning"
			  : severity >= SVK_DEBUG_SEVERITY_INFO	   ? "info"
								   : "verbose";
	int n;

	(void)types;
	(void)user;
	if (!d || !d->pMessage)
		return 0;
	n = snprintf(dbg + dbg_len, sizeof(dbg) - dbg_len, "%s[vk %s%s%s] %s", dbg_len ? " | " : "",
		     sev, d->pMessageIdName ? " " : "", d->pMessageIdName ? d->pMessageIdName : "",
		     d->pMessage);
	if (n < 0 || (size_t)n >= sizeof(dbg) - dbg_len) {
		dbg[dbg_len] = '\0';
		dbg_dropped++;
	} else {
		for (char *c = dbg + dbg_len; *c; c++) /* one line per note */
			if (*c == '\n' || *c == '\r')
				*c = ' ';
		dbg_len += (size_t)n;
	}
	return 0; /* never abort the call */
}

/* Takes the collected messages, after @sep when there are any (and clears them). */
static const char *debug_sep(const char *sep, char *buf, size_t len)
{
	if (!dbg_len)
		snprintf(buf, len, "%s", "");
	else if (dbg_dropped)
		snprintf(buf, len, "%s%.4000s (+%u messages)", sep, dbg, dbg_dropped);
	else
		snprintf(buf, len, "%s%.4000s", sep, dbg);
	dbg_len = 0;
	dbg[0] = '\0';
	dbg_dropped = 0;
	return buf;
}

static const char *debug_take(char *buf, size_t len)
{
	return debug_sep("", buf, len);
}

/* printf arguments for "%s%s": the collected messages after @sep, or nothing. */
#define MSGS(sep) "", debug_sep(sep, msgs, sizeof(msgs))

/* ------------------------------------------------------------------ */
/* The bundle                                                           */
/* ------------------------------------------------------------------ */

enum { PUSH_MEM, PUSH_MEM_LEN, PUSH_STACK, PUSH_R0_OUT, PUSH_MAX = 8 };

struct abi {
	char entry[64];
	uint32_t header, mem_align, stack, stack_align;
	bool data_after_stack;	/* "data=after_stack": maps/variables right after the stacks */
	int push[PUSH_MAX];
	unsigned push_cnt;
};

struct tcase {
	char *family, *name, *spv, *skip_kind, *skip_why;
	uint8_t *input, *want_mem;
	size_t mem_len;
	uint8_t *data, *want_data;	/* the data area (maps, variables) before and after */
	size_t data_len;
	uint64_t want_r0;
	bool has_r0;
};

struct family {
	char name[64];
	unsigned cases, skipped, cant, ran, agree, differ, failed;
};

static struct family fams[64];
static size_t fam_cnt;
static char *report;
static size_t report_len;

static struct family *family(const char *name)
{
	for (size_t i = 0; i < fam_cnt; i++)
		if (!strcmp(fams[i].name, name))
			return &fams[i];
	if (fam_cnt == sizeof(fams) / sizeof(fams[0]))
		return &fams[fam_cnt - 1];
	snprintf(fams[fam_cnt].name, sizeof(fams[0].name), "%s", name);
	return &fams[fam_cnt++];
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(r = realloc(report, report_len + (size_t)n + 2)))
		return;
	report = r;
	va_start(ap, fmt);
	vsnprintf(report + report_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	report_len += (size_t)n;
	report[report_len++] = '\n';
	report[report_len] = '\0';
}

static char *dupstr(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "-" or 2*@n hex digits into a new buffer (*out NULL for "-"); false when malformed. */
static bool unhex(const char *s, size_t n, uint8_t **out)
{
	uint8_t *b;

	*out = NULL;
	if (!strcmp(s, "-"))
		return n == 0;
	if (strlen(s) != 2 * n)
		return false;
	b = malloc(n ? n : 1);
	if (!b)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return false;
		}
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	*out = b;
	return true;
}

static bool parse_abi(char *line, struct abi *a)
{
	char *save = NULL;

	memset(a, 0, sizeof(*a));
	for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(t, '=');

		if (!eq)
			continue;
		*eq++ = '\0';
		if (!strcmp(t, "entry"))
			snprintf(a->entry, sizeof(a->entry), "%s", eq);
		else if (!strcmp(t, "local") && strcmp(eq, "1,1,1"))
			return false; /* the runner dispatches one workgroup of one invocation */
		else if (!strcmp(t, "header"))
			a->header = (uint32_t)strtoul(eq, NULL, 0);
		else if (!strcmp(t, "mem_align"))
			a->mem_align = (uint32_t)strtoul(eq, NULL, 0);
		else if (!strcmp(t, "stack"))
			a->stack = (uint32_t)strtoul(eq, NULL, 0);
		else if (!strcmp(t, "stack_align"))
			a->stack_align = (uint32_t)strtoul(eq, NULL, 0);
		else if (!strcmp(t, "data")) {
			if (strcmp(eq, "after_stack"))
				return false;
			a->data_after_stack = true;
		}
		else if (!strcmp(t, "push")) {
			char *s2 = NULL;

			for (char *f = strtok_r(eq, ",", &s2); f; f = strtok_r(NULL, ",", &s2)) {
				int k = !strcmp(f, "mem")	  ? PUSH_MEM
					: !strcmp(f, "mem_len") ? PUSH_MEM_LEN
					: !strcmp(f, "stack")	  ? PUSH_STACK
					: !strcmp(f, "r0_out")  ? PUSH_R0_OUT
								  : -1;

				if (k < 0 || a->push_cnt == PUSH_MAX)
					return false;
				a->push[a->push_cnt++] = k;
			}
		}
	}
	return a->entry[0] && a->header >= 8 && a->mem_align && !(a->mem_align & (a->mem_align - 1)) &&
	       a->stack && a->push_cnt && (!a->stack_align || (a->header % a->stack_align == 0 &&
							       a->mem_align % a->stack_align == 0));
}

/* Reads DIR/manifest.txt; returns the case count or -1 (message printed). */
static long load_bundle(const char *dir, struct abi *abi, struct tcase **out)
{
	char path[4096], *line = NULL;
	size_t cap = 0, cnt = 0, alloc = 0, lineno = 0;
	struct tcase *cs = NULL, *cur = NULL;
	bool have_abi = false, ok = true;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (ok && (n = getline(&line, &cap, f)) >= 0) {
		char *sp, *arg;

		lineno++;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (lineno == 1) {
			if (strcmp(line, "gpuext-spirv-bundle 1")) {
				fprintf(stderr, "%s: not a SPIR-V bundle of version 1\n", path);
				ok = false;
			}
			continue;
		}
		if (!n || line[0] == '#')
			continue;
		sp = strchr(line, ' ');
		arg = sp ? sp + 1 : line + n;
		if (sp)
			*sp = '\0';
		if (!strcmp(line, "abi")) {
			have_abi = parse_abi(arg, abi);
			if (!have_abi) {
				fprintf(stderr, "%s:%zu: an ABI this runner does not implement\n", path,
					lineno);
				ok = false;
			}
			continue;
		}
		if (!strcmp(line, "case") || !strcmp(line, "skip")) {
			char fam[128], name[256];
			int used = 0;

			if (cur) {
				ok = false;
				break;
			}
			if (cnt == alloc) {
				struct tcase *g = realloc(cs, (alloc = alloc ? 2 * alloc : 512) *
								      sizeof(*cs));

				if (!g) {
					ok = false;
					break;
				}
				cs = g;
			}
			cur = &cs[cnt++];
			memset(cur, 0, sizeof(*cur));
			if (sscanf(arg, "%127s %255s %n", fam, name, &used) < 2) {
				ok = false;
				break;
			}
			cur->family = dupstr(fam);
			cur->name = dupstr(name);
			if (!strcmp(line, "skip")) {
				char kind[32] = "?";
				int used2 = 0;

				sscanf(arg + used, "%31s %n", kind, &used2);
				cur->skip_kind = dupstr(kind);
				cur->skip_why = dupstr(arg + used + used2);
				cur = NULL;
			}
			continue;
		}
		if (!cur) {
			ok = false;
			break;
		}
		if (!strcmp(line, "spv")) {
			char rel[1024];

			if (sscanf(arg, "%1023s", rel) != 1) {
				ok = false;
				break;
			}
			snprintf(path, sizeof(path), "%s/%s", dir, rel);
			cur->spv = dupstr(path);
		} else if (!strcmp(line, "input")) {
			char *hex = strchr(arg, ' ');

			cur->mem_len = strtoul(arg, NULL, 10);
			ok = hex && unhex(hex + 1, cur->mem_len, &cur->input);
		} else if (!strcmp(line, "expect_r0")) {
			cur->want_r0 = strtoull(arg, NULL, 16);
			cur->has_r0 = true;
		} else if (!strcmp(line, "expect_mem")) {
			ok = unhex(arg, cur->mem_len, &cur->want_mem);
		} else if (!strcmp(line, "data")) {
			char *hex = strchr(arg, ' ');

			cur->data_len = strtoul(arg, NULL, 10);
			ok = abi->data_after_stack && hex && unhex(hex + 1, cur->data_len, &cur->data);
		} else if (!strcmp(line, "expect_data")) {
			ok = unhex(arg, cur->data_len, &cur->want_data);
		} else if (!strcmp(line, "end")) {
			ok = cur->spv && cur->has_r0 && (!cur->mem_len || (cur->input && cur->want_mem)) &&
			     (!cur->data_len || (cur->data && cur->want_data));
			cur = NULL;
		} /* other keys: later versions; ignored */
	}
	free(line);
	fclose(f);
	if (ok && (cur || !have_abi))
		ok = false;
	if (!ok) {
		fprintf(stderr, "%s/manifest.txt: malformed near line %zu\n", dir, lineno);
		for (size_t i = 0; i < cnt; i++) {
			free(cs[i].family), free(cs[i].name), free(cs[i].spv);
			free(cs[i].skip_kind), free(cs[i].skip_why);
			free(cs[i].input), free(cs[i].want_mem);
			free(cs[i].data), free(cs[i].want_data);
		}
		free(cs);
		return -1;
	}
	*out = cs;
	return (long)cnt;
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(b = malloc(n ? (size_t)n : 1)) || fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */

static void *lib;
static svk_instance instance;
static svk_handle messenger;
static svk_phys phys;
static svk_device dev;
static svk_queue queue;
static svk_handle pool, fence, layout, buf, dmem;
static svk_cmdbuf cmd;
static uint8_t *map;
static svk_addr base;
static svk_size buf_size;
static char dev_name[SVK_MAX_NAME];

/* Capabilities the modules may declare and the feature each needs. */
static struct {
	uint32_t cap;
	const char *name, *feature;
	bool have;
} caps[] = {
	{ 1, "Shader", NULL, true },
	{ 11, "Int64", "shaderInt64", false },
	{ 22, "Int16", "shaderInt16", false },
	{ 39, "Int8", "shaderInt8", false },
	{ 12, "Int64Atomics", "shaderBufferInt64Atomics", false },
	{ 4433, "StorageBuffer16BitAccess", "storageBuffer16BitAccess", false },
	{ 4448, "StorageBuffer8BitAccess", "storageBuffer8BitAccess", false },
	{ 5347, "PhysicalStorageBufferAddresses", "bufferDeviceAddress", false },
};
static unsigned cap_uses[sizeof(caps) / sizeof(caps[0])];

static void cap_have(const char *feature, bool have)
{
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		if (caps[i].feature && !strcmp(caps[i].feature, feature))
			caps[i].have = have;
}

/*
 * The capabilities of @spv the device does not have (into @why), or an
 * unknown one; false when it cannot run.
 */
static bool check_caps(const uint32_t *w, size_t words, char *why, size_t len)
{
	bool ok = true;

	why[0] = '\0';
	if (words < 5 || w[0] != 0x07230203) {
		snprintf(why, len, "not a SPIR-V module (magic 0x%08x)", words ? w[0] : 0);
		return false;
	}
	for (size_t i = 5; i < words;) {
		uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;

		if (!wc || i + wc > words) {
			snprintf(why, len, "malformed instruction at word %zu", i);
			return false;
		}
		if (op == 17 /* OpCapability */ && wc == 2) {
			size_t k;

			for (k = 0; k < sizeof(caps) / sizeof(caps[0]); k++)
				if (caps[k].cap == w[i + 1])
					break;
			if (k == sizeof(caps) / sizeof(caps[0])) {
				size_t n = strlen(why);

				snprintf(why + n, len - n, "%scapability %u (unknown to this runner)",
					 n ? ", " : "", w[i + 1]);
				/* Let the driver decide; only noted. */
			} else {
				cap_uses[k]++;
				if (!caps[k].have) {
					size_t n = strlen(why);

					snprintf(why + n, len - n, "%scapability %s needs %s", n ? ", " : "",
						 caps[k].name, caps[k].feature);
					ok = false;
				}
			}
		}
		i += wc;
	}
	return ok;
}

static bool load_fn(svk_void_fn *slot, svk_void_fn f, const char *name)
{
	*slot = f;
	if (!f)
		fprintf(stderr, "spirv_bundle_run: the loader has no %s\n", name);
	return f != NULL;
}

#define INST_FN(n) load_fn((svk_void_fn *)&vk.n, vk.GetInstanceProcAddr(instance, "vk" #n), "vk" #n)
#define DEV_FN(n) load_fn((svk_void_fn *)&vk.n, vk.GetDeviceProcAddr(dev, "vk" #n), "vk" #n)

static const char *type_name(int32_t t)
{
	switch (t) {
	case SVK_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
	case SVK_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
	case SVK_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
	case SVK_DEVICE_TYPE_CPU: return "CPU";
	default: return "other";
	}
}

static bool icontains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return true;
	return !n;
}

/* Opens the loader, an instance and the device; 0, or 2 (message printed). */
static int open_device(const char *want, const struct abi *abi, size_t max_mem, size_t max_data)
{
	const char *loader = getenv("GPUEXT_VULKAN_LOADER");
	struct svk_app_info app = {
		.sType = SVK_ST_APPLICATION_INFO,
		.pApplicationName = "gpuext spirv_bundle_run",
		.apiVersion = SVK_API_1_3,
	};
	struct svk_debug_messenger_create_info dmci = {
		.sType = SVK_ST_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = SVK_DEBUG_SEVERITY_WARNING | SVK_DEBUG_SEVERITY_ERROR |
				   (verbose ? SVK_DEBUG_SEVERITY_INFO : 0),
		.messageType = SVK_DEBUG_TYPE_GENERAL | SVK_DEBUG_TYPE_VALIDATION |
			       SVK_DEBUG_TYPE_PERFORMANCE,
		.pfnUserCallback = debug_cb,
	};
	const char *ext_debug = "VK_EXT_debug_utils";
	struct svk_instance_create_info ici = {
		.sType = SVK_ST_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	struct svk_extension_properties exts[128];
	uint32_t ext_cnt = 128, ver = (1u << 22), cnt = 16;
	svk_phys devs[16];
	int best = -1, best_rank = -1;
	svk_result r;
	char msgs[4096];

	if (!loader || !*loader)
		loader = "libvulkan.so.1";
	lib = dlopen(loader, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("no Vulkan loader: %s (set GPUEXT_VULKAN_LOADER to a libvulkan.so.1)\n",
		       dlerror());
		return 2;
	}
	vk.GetInstanceProcAddr = (svk_gipa_fn)(uintptr_t)dlsym(lib, "vkGetInstanceProcAddr");
	if (!vk.GetInstanceProcAddr) {
		printf("%s has no vkGetInstanceProcAddr\n", loader);
		return 2;
	}
	vk.EnumerateInstanceVersion = (svk_result(*)(uint32_t *))(uintptr_t)vk.GetInstanceProcAddr(
		NULL, "vkEnumerateInstanceVersion");
	if (vk.EnumerateInstanceVersion)
		vk.EnumerateInstanceVersion(&ver);
	printf("loader: %s (Vulkan %u.%u.%u)\n", loader, ver >> 22, (ver >> 12) & 0x3ff,
	       ver & 0xfff);
	if (!load_fn((svk_void_fn *)&vk.CreateInstance,
		     vk.GetInstanceProcAddr(NULL, "vkCreateInstance"), "vkCreateInstance") ||
	    !load_fn((svk_void_fn *)&vk.EnumerateInstanceExtensionProperties,
		     vk.GetInstanceProcAddr(NULL, "vkEnumerateInstanceExtensionProperties"),
		     "vkEnumerateInstanceExtensionProperties"))
		return 2;
	r = vk.EnumerateInstanceExtensionProperties(NULL, &ext_cnt, exts);
	if (r != SVK_SUCCESS && r != SVK_INCOMPLETE)
		ext_cnt = 0;
	for (uint32_t i = 0; i < ext_cnt; i++) {
		if (!strcmp(exts[i].extensionName, ext_debug)) {
			ici.enabledExtensionCount = 1;
			ici.ppEnabledExtensionNames = &ext_debug;
			ici.pNext = &dmci; /* messages of vkCreateInstance itself */
		}
	}
	r = vk.CreateInstance(&ici, NULL, &instance);
	if (r != SVK_SUCCESS) {
		printf("vkCreateInstance (Vulkan 1.3) failed: %s (%d)%s%s\n", vk_result_name(r), r,
		       MSGS(": "));
		printf("no ICD usable? VK_LOADER_DEBUG=all shows what the loader tried; "
		       "VK_ICD_FILENAMES names a driver's JSON\n");
		return 2;
	}
	if (!INST_FN(DestroyInstance) || !INST_FN(EnumeratePhysicalDevices) ||
	    !INST_FN(GetPhysicalDeviceProperties) || !INST_FN(GetPhysicalDeviceProperties2) ||
	    !INST_FN(GetPhysicalDeviceFeatures2) || !INST_FN(GetPhysicalDeviceQueueFamilyProperties) ||
	    !INST_FN(GetPhysicalDeviceMemoryProperties) || !INST_FN(CreateDevice) ||
	    !INST_FN(GetDeviceProcAddr))
		return 2;
	if (ici.enabledExtensionCount && INST_FN(CreateDebugUtilsMessengerEXT) &&
	    INST_FN(DestroyDebugUtilsMessengerEXT)) {
		dmci.pNext = NULL;
		if (vk.CreateDebugUtilsMessengerEXT(instance, &dmci, NULL, &messenger) != SVK_SUCCESS)
			messenger = 0;
	}
	printf("debug messages: %s\n",
	       messenger ? "VK_EXT_debug_utils (warnings and errors, shown per case)"
			 : "none (VK_EXT_debug_utils not offered)");
	if (dbg_len)
		printf("  instance: %s\n", debug_take(msgs, sizeof(msgs)));

	r = vk.EnumeratePhysicalDevices(instance, &cnt, devs);
	if ((r != SVK_SUCCESS && r != SVK_INCOMPLETE) || !cnt) {
		printf("no Vulkan device: vkEnumeratePhysicalDevices %s (%d), %u devices%s%s\n",
		       vk_result_name(r), r, cnt, MSGS(": "));
		return 2;
	}
	for (uint32_t i = 0; i < cnt; i++) {
		struct svk_driver_props drv = { .sType = SVK_ST_PHYSICAL_DEVICE_DRIVER_PROPERTIES };
		struct svk_phys_props2 p2 = { .sType = SVK_ST_PHYSICAL_DEVICE_PROPERTIES_2 };
		struct svk_phys_props *p = &p2.properties;
		int rank;

		vk.GetPhysicalDeviceProperties(devs[i], p);
		if (p->apiVersion >= ((1u << 22) | (2u << 12))) {
			p2.pNext = &drv;
			vk.GetPhysicalDeviceProperties2(devs[i], &p2);
		}
		printf("device %u: %s (%s, Vulkan %u.%u.%u, vendor 0x%04x, driver %s %s)\n", i,
		       p->deviceName, type_name(p->deviceType), p->apiVersion >> 22,
		       (p->apiVersion >> 12) & 0x3ff, p->apiVersion & 0xfff, p->vendorID,
		       drv.driverName[0] ? drv.driverName : "?", drv.driverInfo);
		if (p->apiVersion < ((1u << 22) | (3u << 12)))
			rank = -1; /* SPIR-V 1.6 modules: Vulkan 1.3 */
		else if (want && *want)
			rank = icontains(p->deviceName, want) ? 10 : -1;
		else
			rank = p->deviceType == SVK_DEVICE_TYPE_DISCRETE_GPU	 ? 4
			       : p->deviceType == SVK_DEVICE_TYPE_INTEGRATED_GPU ? 3
			       : p->deviceType == SVK_DEVICE_TYPE_CPU		 ? 1
										 : 2;
		if (rank > best_rank) {
			best_rank = rank;
			best = (int)i;
			snprintf(dev_name, sizeof(dev_name), "%s", p->deviceName);
		}
	}
	if (best < 0) {
		printf("no Vulkan 1.3 device%s%s\n", want && *want ? " named like " : "",
		       want && *want ? want : "");
		return 2;
	}
	phys = devs[best];
	printf("using device %d: %s\n", best, dev_name);

	{
		struct svk_f8bit_storage f8 = { .sType = SVK_ST_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES };
		struct svk_f16bit_storage f16 = { .sType = SVK_ST_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
						  .pNext = &f8 };
		struct svk_ffloat16_int8 fi8 = {
			.sType = SVK_ST_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &f16 };
		struct svk_fbda fbda = {
			.sType = SVK_ST_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES, .pNext = &fi8 };
		struct svk_fatomic_int64 fa64 = {
			.sType = SVK_ST_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES, .pNext = &fbda };
		struct svk_features2 f2 = { .sType = SVK_ST_PHYSICAL_DEVICE_FEATURES_2, .pNext = &fa64 };
		struct svk_queue_family_props qf[16];
		uint32_t qf_cnt = 16, qfam = UINT32_MAX;
		float prio = 1.0f;
		struct svk_device_queue_create_info qci = {
			.sType = SVK_ST_DEVICE_QUEUE_CREATE_INFO,
			.queueCount = 1,
			.pQueuePriorities = &prio,
		};
		struct svk_device_create_info dci = {
			.sType = SVK_ST_DEVICE_CREATE_INFO,
			.pNext = &f2,
			.queueCreateInfoCount = 1,
			.pQueueCreateInfos = &qci,
		};
		bool i64, i16, i8, sb8, sb16, bda, a64;

		vk.GetPhysicalDeviceFeatures2(phys, &f2);
		i64 = f2.features[SVK_FEAT_SHADER_INT64];
		i16 = f2.features[SVK_FEAT_SHADER_INT16];
		i8 = fi8.shaderInt8;
		sb8 = f8.storageBuffer8BitAccess;
		sb16 = f16.storageBuffer16BitAccess;
		bda = fbda.bufferDeviceAddress;
		a64 = fa64.shaderBufferInt64Atomics;
		printf("features: bufferDeviceAddress %d, shaderInt64 %d, shaderInt8 %d, "
		       "storageBuffer8BitAccess %d (required); shaderInt16 %d, "
		       "storageBuffer16BitAccess %d, shaderBufferInt64Atomics %d\n",
		       bda, i64, i8, sb8, i16, sb16, a64);
		if (!bda || !i64 || !i8 || !sb8) {
			printf("%s lacks a feature the eBPF shaders need\n", dev_name);
			return 2;
		}
		cap_have("shaderInt64", i64);
		cap_have("shaderInt16", i16);
		cap_have("shaderInt8", i8);
		cap_have("storageBuffer8BitAccess", sb8);
		cap_have("storageBuffer16BitAccess", sb16);
		cap_have("bufferDeviceAddress", bda);
		cap_have("shaderBufferInt64Atomics", a64);
		/* Enable what the device has of what the modules may use, nothing else. */
		memset(f2.features, 0, sizeof(f2.features));
		f2.features[SVK_FEAT_SHADER_INT64] = 1;
		f2.features[SVK_FEAT_SHADER_INT16] = i16;
		fa64 = (struct svk_fatomic_int64){ SVK_ST_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES,
						   &fbda, a64, 0 };
		fbda = (struct svk_fbda){ SVK_ST_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES, &fi8,
					  1, 0, 0 };
		fi8 = (struct svk_ffloat16_int8){ SVK_ST_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
						  &f16, 0, 1 };
		f16 = (struct svk_f16bit_storage){ SVK_ST_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, &f8,
						   sb16, 0, 0, 0 };
		f8 = (struct svk_f8bit_storage){ SVK_ST_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, NULL, 1,
						 0, 0 };

		vk.GetPhysicalDeviceQueueFamilyProperties(phys, &qf_cnt, qf);
		for (uint32_t i = 0; i < qf_cnt && qfam == UINT32_MAX; i++)
			if (qf[i].queueFlags & SVK_QUEUE_COMPUTE_BIT)
				qfam = i;
		if (qfam == UINT32_MAX) {
			printf("%s has no compute queue\n", dev_name);
			return 2;
		}
		qci.queueFamilyIndex = qfam;
		r = vk.CreateDevice(phys, &dci, NULL, &dev);
		if (r != SVK_SUCCESS) {
			printf("vkCreateDevice failed: %s (%d)%s%s\n", vk_result_name(r), r,
			       MSGS(": "));
			dev = NULL;
			return 2;
		}
		if (!DEV_FN(DestroyDevice) || !DEV_FN(GetDeviceQueue) || !DEV_FN(CreateCommandPool) ||
		    !DEV_FN(DestroyCommandPool) || !DEV_FN(AllocateCommandBuffers) ||
		    !DEV_FN(CreateFence) || !DEV_FN(DestroyFence) || !DEV_FN(ResetFences) ||
		    !DEV_FN(WaitForFences) || !DEV_FN(CreatePipelineLayout) ||
		    !DEV_FN(DestroyPipelineLayout) || !DEV_FN(CreateShaderModule) ||
		    !DEV_FN(DestroyShaderModule) || !DEV_FN(CreateComputePipelines) ||
		    !DEV_FN(DestroyPipeline) || !DEV_FN(CreateBuffer) || !DEV_FN(DestroyBuffer) ||
		    !DEV_FN(GetBufferMemoryRequirements) || !DEV_FN(AllocateMemory) ||
		    !DEV_FN(FreeMemory) || !DEV_FN(BindBufferMemory) || !DEV_FN(MapMemory) ||
		    !DEV_FN(UnmapMemory) || !DEV_FN(GetBufferDeviceAddress) ||
		    !DEV_FN(BeginCommandBuffer) || !DEV_FN(EndCommandBuffer) ||
		    !DEV_FN(ResetCommandBuffer) || !DEV_FN(CmdBindPipeline) ||
		    !DEV_FN(CmdPushConstants) || !DEV_FN(CmdDispatch) || !DEV_FN(CmdPipelineBarrier) ||
		    !DEV_FN(QueueSubmit) || !DEV_FN(DeviceWaitIdle))
			return 2;
		vk.GetDeviceQueue(dev, qfam, 0, &queue);

		{
			struct svk_command_pool_create_info cpci = {
				.sType = SVK_ST_COMMAND_POOL_CREATE_INFO,
				.flags = SVK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
				.queueFamilyIndex = qfam,
			};
			struct svk_command_buffer_allocate_info cbai = {
				.sType = SVK_ST_COMMAND_BUFFER_ALLOCATE_INFO,
				.level = SVK_COMMAND_BUFFER_LEVEL_PRIMARY,
				.commandBufferCount = 1,
			};
			struct svk_fence_create_info fci = { .sType = SVK_ST_FENCE_CREATE_INFO };
			struct svk_push_constant_range pcr = {
				.stageFlags = SVK_STAGE_COMPUTE_BIT,
				.size = 8 * abi->push_cnt,
			};
			struct svk_pipeline_layout_create_info plci = {
				.sType = SVK_ST_PIPELINE_LAYOUT_CREATE_INFO,
				.pushConstantRangeCount = 1,
				.pPushConstantRanges = &pcr,
			};
			const char *what = "vkCreateCommandPool";

			r = vk.CreateCommandPool(dev, &cpci, NULL, &pool);
			if (r == SVK_SUCCESS) {
				cbai.commandPool = pool;
				what = "vkAllocateCommandBuffers";
				r = vk.AllocateCommandBuffers(dev, &cbai, &cmd);
			}
			if (r == SVK_SUCCESS) {
				what = "vkCreateFence";
				r = vk.CreateFence(dev, &fci, NULL, &fence);
			}
			if (r == SVK_SUCCESS) {
				what = "vkCreatePipelineLayout";
				r = vk.CreatePipelineLayout(dev, &plci, NULL, &layout);
			}
			if (r != SVK_SUCCESS) {
				printf("%s failed: %s (%d)%s%s\n", what, vk_result_name(r), r,
				       MSGS(": "));
				return 2;
			}
		}
	}

	/* One buffer for every run: [r0 | header | memory | stacks | data], host-visible. */
	{
		size_t mem_al = (max_mem + abi->mem_align - 1) & ~(size_t)(abi->mem_align - 1);
		struct svk_buffer_create_info bci = {
			.sType = SVK_ST_BUFFER_CREATE_INFO,
			.usage = SVK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
				 SVK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
			.sharingMode = SVK_SHARING_MODE_EXCLUSIVE,
		};
		struct svk_memory_allocate_flags_info mafi = {
			.sType = SVK_ST_MEMORY_ALLOCATE_FLAGS_INFO,
			.flags = SVK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
		};
		struct svk_memory_allocate_info mai = {
			.sType = SVK_ST_MEMORY_ALLOCATE_INFO,
			.pNext = &mafi,
		};
		struct svk_buffer_device_address_info bdai = { .sType = SVK_ST_BUFFER_DEVICE_ADDRESS_INFO };
		const svk_flags want_props =
			SVK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | SVK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
		struct svk_memory_requirements req;
		struct svk_memory_props mp;
		int mt = -1;

		buf_size = abi->header + mem_al + abi->stack + ((max_data + 63) & ~(size_t)63);
		bci.size = buf_size;
		r = vk.CreateBuffer(dev, &bci, NULL, &buf);
		if (r != SVK_SUCCESS) {
			printf("vkCreateBuffer (%llu bytes) failed: %s (%d)\n",
			       (unsigned long long)buf_size, vk_result_name(r), r);
			return 2;
		}
		vk.GetBufferMemoryRequirements(dev, buf, &req);
		vk.GetPhysicalDeviceMemoryProperties(phys, &mp);
		for (uint32_t i = 0; i < mp.memoryTypeCount && mt < 0; i++)
			if ((req.memoryTypeBits & (1u << i)) &&
			    (mp.memoryTypes[i].propertyFlags & want_props) == want_props)
				mt = (int)i;
		if (mt < 0) {
			printf("%s has no host-visible coherent memory for the buffer\n", dev_name);
			return 2;
		}
		mai.allocationSize = req.size;
		mai.memoryTypeIndex = (uint32_t)mt;
		r = vk.AllocateMemory(dev, &mai, NULL, &dmem);
		if (r == SVK_SUCCESS)
			r = vk.BindBufferMemory(dev, buf, dmem, 0);
		if (r == SVK_SUCCESS)
			r = vk.MapMemory(dev, dmem, 0, buf_size, 0, (void **)&map);
		if (r != SVK_SUCCESS) {
			printf("allocating/mapping %llu bytes of memory type %d failed: %s (%d)%s%s\n",
			       (unsigned long long)req.size, mt, vk_result_name(r), r,
			       MSGS(": "));
			map = NULL;
			return 2;
		}
		bdai.buffer = buf;
		base = vk.GetBufferDeviceAddress(dev, &bdai);
		printf("buffer: %llu bytes, memory type %d (flags 0x%x, heap %u), device address "
		       "0x%llx\n", (unsigned long long)buf_size, mt, mp.memoryTypes[mt].propertyFlags,
		       mp.memoryTypes[mt].heapIndex, (unsigned long long)base);
		if (!base || (abi->stack_align && base % abi->stack_align)) {
			printf("unusable buffer device address 0x%llx\n", (unsigned long long)base);
			return 2;
		}
	}
	if (dbg_len)
		printf("  device: %s\n", debug_take(msgs, sizeof(msgs)));
	return 0;
}

static void close_device(void)
{
	if (dev) {
		vk.DeviceWaitIdle(dev);
		if (map)
			vk.UnmapMemory(dev, dmem);
		if (buf)
			vk.DestroyBuffer(dev, buf, NULL);
		if (dmem)
			vk.FreeMemory(dev, dmem, NULL);
		if (layout)
			vk.DestroyPipelineLayout(dev, layout, NULL);
		if (fence)
			vk.DestroyFence(dev, fence, NULL);
		if (pool)
			vk.DestroyCommandPool(dev, pool, NULL);
		vk.DestroyDevice(dev, NULL);
	}
	if (messenger)
		vk.DestroyDebugUtilsMessengerEXT(instance, messenger, NULL);
	if (instance)
		vk.DestroyInstance(instance, NULL);
	/* The loader stays loaded: some drivers register exit handlers. */
}

enum run_res { RUN_AGREE, RUN_DIFFER, RUN_FAILED, RUN_CANT, RUN_DEAD };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs one case; notes what went wrong. */
static enum run_res run_case(const struct abi *abi, const struct tcase *tc, uint64_t timeout_ns)
{
	size_t spv_len = 0, mem_al = (tc->mem_len + abi->mem_align - 1) & ~(size_t)(abi->mem_align - 1);
	uint32_t *spv = read_file(tc->spv, &spv_len);
	svk_handle sm = 0, pipe = 0;
	enum run_res res = RUN_FAILED;
	char why[1024], msgs[4096];
	const char *stage = "";
	svk_result r = SVK_SUCCESS;
	uint64_t r0;

	debug_take(msgs, sizeof(msgs));
	if (!spv || !spv_len || spv_len % 4) {
		note("  %s/%s: cannot read %s (or not whole words)", tc->family, tc->name, tc->spv);
		free(spv);
		return RUN_FAILED;
	}
	if (!check_caps(spv, spv_len / 4, why, sizeof(why))) {
		bool malformed = !strstr(why, "capability");

		note("  %s/%s: %s: %s", tc->family, tc->name, malformed ? "bad module" : "not run",
		     why);
		free(spv);
		return malformed ? RUN_FAILED : RUN_CANT;
	}
	if (why[0] && verbose)
		note("  %s/%s: note: %s", tc->family, tc->name, why);
	{
		struct svk_shader_module_create_info smci = {
			.sType = SVK_ST_SHADER_MODULE_CREATE_INFO,
			.codeSize = spv_len,
			.pCode = spv,
		};

		stage = "vkCreateShaderModule";
		r = vk.CreateShaderModule(dev, &smci, NULL, &sm);
	}
	if (r == SVK_SUCCESS) {
		struct svk_compute_pipeline_create_info cpci = {
			.sType = SVK_ST_COMPUTE_PIPELINE_CREATE_INFO,
			.stage = {
				.sType = SVK_ST_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = SVK_STAGE_COMPUTE_BIT,
				.module = sm,
				.pName = abi->entry,
			},
			.layout = layout,
			.basePipelineIndex = -1,
		};

		stage = "vkCreateComputePipelines";
		r = vk.CreateComputePipelines(dev, 0, 1, &cpci, NULL, &pipe);
	}
	if (r != SVK_SUCCESS) {
		note("  %s/%s: the driver refused it: %s returned %s (%d)%s%s", tc->family, tc->name,
		     stage, vk_result_name(r), r, MSGS("; "));
		res = r == SVK_ERROR_DEVICE_LOST ? RUN_DEAD : RUN_FAILED;
		goto out;
	}
	{
		uint64_t vals[PUSH_MAX] = { 0 }, push[PUSH_MAX];
		struct svk_command_buffer_begin_info cbbi = {
			.sType = SVK_ST_COMMAND_BUFFER_BEGIN_INFO,
			.flags = SVK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
		};
		struct svk_memory_barrier mb = {
			.sType = SVK_ST_MEMORY_BARRIER,
			.srcAccessMask = SVK_ACCESS_SHADER_WRITE_BIT,
			.dstAccessMask = SVK_ACCESS_HOST_READ_BIT,
		};
		struct svk_submit_info si = {
			.sType = SVK_ST_SUBMIT_INFO,
			.commandBufferCount = 1,
			.pCommandBuffers = &cmd,
		};
		double t0;

		vals[PUSH_MEM] = tc->mem_len ? base + abi->header : 0;
		vals[PUSH_MEM_LEN] = tc->mem_len;
		vals[PUSH_STACK] = base + abi->header + mem_al;
		vals[PUSH_R0_OUT] = base;
		for (unsigned i = 0; i < abi->push_cnt; i++)
			push[i] = vals[abi->push[i]];
		memset(map, 0, buf_size);
		if (tc->mem_len)
			memcpy(map + abi->header, tc->input, tc->mem_len);
		if (tc->data_len)
			memcpy(map + abi->header + mem_al + abi->stack, tc->data, tc->data_len);

		stage = "vkResetCommandBuffer";
		r = vk.ResetCommandBuffer(cmd, 0);
		if (r == SVK_SUCCESS) {
			stage = "vkBeginCommandBuffer";
			r = vk.BeginCommandBuffer(cmd, &cbbi);
		}
		if (r == SVK_SUCCESS) {
			vk.CmdBindPipeline(cmd, SVK_PIPELINE_BIND_POINT_COMPUTE, pipe);
			vk.CmdPushConstants(cmd, layout, SVK_STAGE_COMPUTE_BIT, 0, 8 * abi->push_cnt,
					    push);
			vk.CmdDispatch(cmd, 1, 1, 1);
			vk.CmdPipelineBarrier(cmd, SVK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
					      SVK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0,
					      NULL);
			stage = "vkEndCommandBuffer";
			r = vk.EndCommandBuffer(cmd);
		}
		if (r == SVK_SUCCESS) {
			stage = "vkResetFences";
			r = vk.ResetFences(dev, 1, &fence);
		}
		if (r == SVK_SUCCESS) {
			stage = "vkQueueSubmit";
			r = vk.QueueSubmit(queue, 1, &si, fence);
		}
		t0 = now_ms();
		if (r == SVK_SUCCESS) {
			stage = "vkWaitForFences";
			r = vk.WaitForFences(dev, 1, &fence, 1, timeout_ns);
		}
		if (r != SVK_SUCCESS) {
			note("  %s/%s: did not run: %s returned %s (%d)%s%s%s", tc->family, tc->name,
			     stage, vk_result_name(r), r,
			     r == SVK_TIMEOUT ? " (the dispatch did not finish in time)" : "",
			     MSGS("; "));
			res = r == SVK_TIMEOUT || r == SVK_ERROR_DEVICE_LOST ? RUN_DEAD : RUN_FAILED;
			goto out;
		}
		if (verbose)
			printf("  %s/%s: %.3f ms\n", tc->family, tc->name, now_ms() - t0);
	}
	memcpy(&r0, map, sizeof(r0));
	res = RUN_AGREE;
	if (r0 != tc->want_r0) {
		note("  %s/%s: r0 = 0x%" PRIx64 ", interpreter 0x%" PRIx64, tc->family, tc->name, r0,
		     tc->want_r0);
		res = RUN_DIFFER;
	}
	if (tc->mem_len && memcmp(map + abi->header, tc->want_mem, tc->mem_len)) {
		const uint8_t *got = map + abi->header;
		size_t first = 0, diff = 0;

		for (size_t i = tc->mem_len; i--;)
			if (got[i] != tc->want_mem[i])
				first = i, diff++;
		note("  %s/%s: memory differs in %zu of %zu bytes; first at byte %zu: 0x%02x, "
		     "interpreter 0x%02x", tc->family, tc->name, diff, tc->mem_len, first, got[first],
		     tc->want_mem[first]);
		res = RUN_DIFFER;
	}
	if (tc->data_len && memcmp(map + abi->header + mem_al + abi->stack, tc->want_data,
				   tc->data_len)) {
		const uint8_t *got = map + abi->header + mem_al + abi->stack;
		size_t first = 0, diff = 0;

		for (size_t i = tc->data_len; i--;)
			if (got[i] != tc->want_data[i])
				first = i, diff++;
		note("  %s/%s: maps/variables differ in %zu of %zu bytes; first at byte %zu: 0x%02x, "
		     "interpreter 0x%02x", tc->family, tc->name, diff, tc->data_len, first, got[first],
		     tc->want_data[first]);
		res = RUN_DIFFER;
	}
	if (dbg_len) {
		const char *what = res == RUN_AGREE ? "agrees; messages" : "messages";

		note("  %s/%s: %s: %s", tc->family, tc->name, what, debug_take(msgs, sizeof(msgs)));
	}
out:
	if (pipe)
		vk.DestroyPipeline(dev, pipe, NULL);
	if (sm)
		vk.DestroyShaderModule(dev, sm, NULL);
	free(spv);
	return res;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *filter = NULL, *want = getenv("GPUEXT_VK_DEVICE");
	uint64_t timeout_ns = 10000ull * 1000000ull;
	struct tcase *cs = NULL;
	struct abi abi;
	unsigned tot[7] = { 0 }, failures = 0;
	size_t max_mem = 0, max_data = 0;
	bool alive = true;
	double t0;
	long cnt;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--case") && i + 1 < argc)
			filter = argv[++i];
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			want = argv[++i];
		else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
			timeout_ns = strtoull(argv[++i], NULL, 0) * 1000000ull;
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			dir = NULL;
			break;
		}
	}
	if (!dir) {
		fprintf(stderr, "usage: %s BUNDLE_DIR [--device SUBSTR] [--case SUBSTR] "
			"[--timeout-ms N] [-v]\n"
			"runs a SPIR-V bundle (spirv_isa_bundle) on a Vulkan device and compares r0 and\n"
			"memory with the interpreter. Exit 0 = all agree, 1 = disagreement, 2 = no\n"
			"loader/device, 3 = bad bundle. GPUEXT_VK_DEVICE picks the device by name,\n"
			"GPUEXT_VULKAN_LOADER names the loader library.\n", argv[0]);
		return 3;
	}
	cnt = load_bundle(dir, &abi, &cs);
	if (cnt < 0)
		return 3;
	for (long i = 0; i < cnt; i++)
		if (!cs[i].skip_kind && cs[i].mem_len > max_mem)
			max_mem = cs[i].mem_len;
	for (long i = 0; i < cnt; i++)
		if (!cs[i].skip_kind && cs[i].data_len > max_data)
			max_data = cs[i].data_len;
	printf("bundle: %s, %ld entries; abi: entry %s, %u push u64s, header %u, stack %u\n", dir,
	       cnt, abi.entry, abi.push_cnt, abi.header, abi.stack);
	rc = open_device(want, &abi, max_mem, max_data);
	if (rc) {
		close_device();
		return rc;
	}
	t0 = now_ms();
	for (long i = 0; i < cnt; i++) {
		const struct tcase *tc = &cs[i];
		struct family *f;

		if (filter && !strstr(tc->name, filter))
			continue;
		f = family(tc->family);
		f->cases++;
		if (tc->skip_kind) {
			if (!strcmp(tc->skip_kind, "error") || !strcmp(tc->skip_kind, "verifier"))
				f->skipped++;
			else
				f->cant++;
			continue;
		}
		if (!alive) {
			f->failed++;
			failures++;
			continue;
		}
		switch (run_case(&abi, tc, timeout_ns)) {
		case RUN_AGREE: f->ran++; f->agree++; break;
		case RUN_DIFFER: f->ran++; f->differ++; failures++; break;
		case RUN_CANT: f->cant++; break;
		case RUN_FAILED: f->failed++; failures++; break;
		case RUN_DEAD: f->failed++; failures++; alive = false; break;
		}
	}
	printf("\n%s: %.1f s for the runs (pipeline creation included)\n", dev_name,
	       (now_ms() - t0) / 1e3);
	printf("\n%-10s %6s %8s %9s %6s %6s %7s %7s\n", "family", "cases", "skipped", "can't-run",
	       "ran", "agree", "differ", "failed");
	for (size_t i = 0; i < fam_cnt; i++) {
		const struct family *f = &fams[i];

		printf("%-10s %6u %8u %9u %6u %6u %7u %7u\n", f->name, f->cases, f->skipped, f->cant,
		       f->ran, f->agree, f->differ, f->failed);
		tot[0] += f->cases, tot[1] += f->skipped, tot[2] += f->cant, tot[3] += f->ran;
		tot[4] += f->agree, tot[5] += f->differ, tot[6] += f->failed;
	}
	printf("%-10s %6u %8u %9u %6u %6u %7u %7u\n", "total", tot[0], tot[1], tot[2], tot[3],
	       tot[4], tot[5], tot[6]);
	printf("skipped = expects an error, or the verifier rejects it; can't-run = no exact Vulkan\n"
	       "module (non-array maps, helpers: see the bundle's \"skip\" lines) or a capability the device\n"
	       "lacks; failed = the driver refused the module/pipeline or the dispatch failed\n");
	printf("capabilities used:");
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++)
		if (cap_uses[k])
			printf(" %s x%u", caps[k].name, cap_uses[k]);
	printf("\n");
	if (report_len)
		printf("\ndisagreements and notes:\n%s", report);
	if (!alive)
		printf("\nSTOPPED EARLY: the device timed out or was lost; the cases after it did not "
		       "run\n");
	printf("\nresult: %s on %s (%u ran, %u agree, %u differ, %u failed)\n",
	       failures ? "FAIL" : "PASS", dev_name, tot[3], tot[4], tot[5], tot[6]);
	close_device();
	for (long i = 0; i < cnt; i++) {
		free(cs[i].family), free(cs[i].name), free(cs[i].spv);
		free(cs[i].skip_kind), free(cs[i].skip_why);
		free(cs[i].input), free(cs[i].want_mem);
		free(cs[i].data), free(cs[i].want_data);
	}
	free(cs);
	free(report);
	return failures ? 1 : 0;
}
