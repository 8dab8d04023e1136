// SPDX-License-Identifier: Apache-2.0
/*
 * Runs Vulkan-flavour SPIR-V: libvulkan.so.1 is opened with dlopen() at run
 * time (the library is never linked), a compute pipeline is built from the
 * module, and one workgroup of one invocation is dispatched over a single
 * host-visible buffer that holds the result slot, the input memory and the
 * eBPF stacks; the shader reaches it through its device address (push
 * constants, struct gpuext_spirv_vk_args).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "internal.h"
#include "spirv.h"

/* Instance-level and device-level entry points we use. */
#define VK_INSTANCE_FNS(X)                                                      \
	X(vkDestroyInstance) X(vkEnumeratePhysicalDevices)                      \
	X(vkGetPhysicalDeviceProperties) X(vkGetPhysicalDeviceFeatures2)        \
	X(vkGetPhysicalDeviceQueueFamilyProperties)                             \
	X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice)                \
	X(vkGetDeviceProcAddr)
#define VK_DEVICE_FNS(X)                                                        \
	X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateCommandPool)           \
	X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkCreateFence)    \
	X(vkDestroyFence) X(vkResetFences) X(vkWaitForFences)                   \
	X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)                    \
	X(vkCreateShaderModule) X(vkDestroyShaderModule)                        \
	X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateBuffer)      \
	X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) \
	X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory)   \
	X(vkGetBufferDeviceAddress) X(vkBeginCommandBuffer)                     \
	X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdBindPipeline)      \
	X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier)          \
	X(vkQueueSubmit) X(vkDeviceWaitIdle)

/* Owned by the caller of gpuext_spirv_vk__open(); lives until __close(). */
struct gpuext_spirv_vk {
	void *lib;
	const struct gpuext_runtime *rt;
	PFN_vkGetInstanceProcAddr gipa;
#define VK_MEMBER(fn) PFN_##fn fn;
	VK_INSTANCE_FNS(VK_MEMBER)
	VK_DEVICE_FNS(VK_MEMBER)
#undef VK_MEMBER
	VkInstance instance;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t queue_family;
	VkCommandPool pool;
	VkCommandBuffer cmd;
	VkFence fence;
	VkPipelineLayout layout;
	VkPhysicalDeviceMemoryProperties memprops;
	char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
};

#define VK_TRY(vk, call, what)                                                     \
	do {                                                                       \
		VkResult r_ = (call);                                              \
		if (r_ != VK_SUCCESS) {                                            \
			gpuext_log((vk)->rt, GPUEXT_LOG_WARN, "vulkan: %s failed (VkResult %d)", \
				   what, (int)r_);                                 \
			err = r_ == VK_ERROR_OUT_OF_HOST_MEMORY ? -ENOMEM : -EIO; \
			goto out;                                                  \
		}                                                                  \
	} while (0)

static bool pick(const VkPhysicalDeviceProperties *p, const char *want)
{
	return want && *want && strstr(p->deviceName, want);
}

static int choose_device(struct gpuext_spirv_vk *vk, const char *want)
{
	VkPhysicalDevice devs[16];
	uint32_t cnt = 16;
	int best = -1, best_rank = -1;

	if (vk->vkEnumeratePhysicalDevices(vk->instance, &cnt, devs) < 0 || !cnt)
		return -ENODEV;
	for (uint32_t i = 0; i < cnt; i++) {
		VkPhysicalDeviceProperties p;
		int rank;

		vk->vkGetPhysicalDeviceProperties(devs[i], &p);
		if (VK_API_VERSION_MINOR(p.apiVersion) < 2 && VK_API_VERSION_MAJOR(p.apiVersion) == 1)
			continue; /* buffer device address is core from 1.2 */
		if (want && *want)
			rank = pick(&p, want) ? 10 : -1;
		else if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)
			rank = 4;
		else if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU)
			rank = 3;
		else
			rank = 1;
		if (rank > best_rank) {
			best_rank = rank;
			best = (int)i;
			snprintf(vk->name, sizeof(vk->name), "%s", p.deviceName);
		}
	}
	if (best < 0)
		return -ENODEV;
	vk->phys = devs[best];
	return 0;
}

void gpuext_spirv_vk__close(struct gpuext_spirv_vk *vk)
{
	if (!vk)
		return;
	if (vk->dev) {
		vk->vkDeviceWaitIdle(vk->dev);
		if (vk->layout)
			vk->vkDestroyPipelineLayout(vk->dev, vk->layout, NULL);
		if (vk->fence)
			vk->vkDestroyFence(vk->dev, vk->fence, NULL);
		if (vk->pool)
			vk->vkDestroyCommandPool(vk->dev, vk->pool, NULL);
		vk->vkDestroyDevice(vk->dev, NULL);
	}
	if (vk->instance)
		vk->vkDestroyInstance(vk->instance, NULL);
	if (vk->lib)
		dlclose(vk->lib);
	free(vk);
}

int gpuext_spirv_vk__open(const struct gpuext_spirv_vk_opts *opts, struct gpuext_spirv_vk **out)
{
	struct gpuext_spirv_vk *vk = calloc(1, sizeof(*vk));
	PFN_vkCreateInstance create_instance;
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "gpuext",
		.apiVersion = VK_API_VERSION_1_3,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkPhysicalDevice8BitStorageFeatures f8 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES };
	VkPhysicalDevice16BitStorageFeatures f16 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, .pNext = &f8 };
	VkPhysicalDeviceShaderFloat16Int8Features fi8 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &f16 };
	VkPhysicalDeviceBufferDeviceAddressFeatures fbda = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
		.pNext = &fi8 };
	VkPhysicalDeviceShaderAtomicInt64Features fa64 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES,
		.pNext = &fbda };
	VkPhysicalDeviceFeatures2 f2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &fa64 };
	VkQueueFamilyProperties qf[16];
	uint32_t qf_cnt = 16;
	float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f2,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
	};
	VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = sizeof(struct gpuext_spirv_vk_args),
	};
	VkPipelineLayoutCreateInfo plci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	const char *want = opts && opts->device ? opts->device : getenv("GPUEXT_VK_DEVICE");
	int err = 0;

	*out = NULL;
	if (!vk)
		return -ENOMEM;
	vk->rt = opts ? opts->rt : NULL;
	vk->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!vk->lib) {
		gpuext_log(vk->rt, GPUEXT_LOG_INFO, "vulkan: no loader (libvulkan.so.1): %s",
			   dlerror());
		err = -ENODEV;
		goto out;
	}
	vk->gipa = (PFN_vkGetInstanceProcAddr)dlsym(vk->lib, "vkGetInstanceProcAddr");
	create_instance = vk->gipa ? (PFN_vkCreateInstance)vk->gipa(NULL, "vkCreateInstance")
				   : NULL;
	if (!create_instance) {
		err = -ENODEV;
		goto out;
	}
	if (create_instance(&ici, NULL, &vk->instance) != VK_SUCCESS) {
		gpuext_log(vk->rt, GPUEXT_LOG_INFO, "vulkan: no Vulkan 1.3 instance");
		err = -ENODEV;
		goto out;
	}
#define VK_LOAD_I(fn)                                                              \
	vk->fn = (PFN_##fn)vk->gipa(vk->instance, #fn);                             \
	if (!vk->fn) {                                                             \
		err = -ENODEV;                                                     \
		goto out;                                                          \
	}
	VK_INSTANCE_FNS(VK_LOAD_I)
#undef VK_LOAD_I
	err = choose_device(vk, want);
	if (err) {
		gpuext_log(vk->rt, GPUEXT_LOG_INFO, "vulkan: no Vulkan 1.2+ device%s%s",
			   want ? " named like " : "", want ? want : "");
		goto out;
	}
	vk->vkGetPhysicalDeviceFeatures2(vk->phys, &f2);
	if (!fbda.bufferDeviceAddress || !f2.features.shaderInt64 || !fi8.shaderInt8 ||
	    !f8.storageBuffer8BitAccess) {
		gpuext_log(vk->rt, GPUEXT_LOG_WARN,
			   "vulkan: %s lacks a feature the eBPF shaders need (bufferDeviceAddress %d, "
			   "shaderInt64 %d, shaderInt8 %d, storageBuffer8BitAccess %d)",
			   vk->name, fbda.bufferDeviceAddress, f2.features.shaderInt64,
			   fi8.shaderInt8, f8.storageBuffer8BitAccess);
		err = -ENODEV;
		goto out;
	}
	/* Enable what the device has of what we may use, nothing else. */
	f2.features = (VkPhysicalDeviceFeatures){
		.shaderInt64 = VK_TRUE,
		.shaderInt16 = f2.features.shaderInt16,
	};
	fbda.bufferDeviceAddressCaptureReplay = VK_FALSE;
	fbda.bufferDeviceAddressMultiDevice = VK_FALSE;
	fi8.shaderFloat16 = VK_FALSE;
	f8.uniformAndStorageBuffer8BitAccess = VK_FALSE;
	f8.storagePushConstant8 = VK_FALSE;
	f16.uniformAndStorageBuffer16BitAccess = VK_FALSE;
	f16.storagePushConstant16 = VK_FALSE;
	f16.storageInputOutput16 = VK_FALSE;
	fa64.shaderSharedInt64Atomics = VK_FALSE;

	vk->vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &qf_cnt, qf);
	vk->queue_family = UINT32_MAX;
	for (uint32_t i = 0; i < qf_cnt; i++) {
		if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
			vk->queue_family = i;
			break;
		}
	}
	if (vk->queue_family == UINT32_MAX) {
		err = -ENODEV;
		goto out;
	}
	qci.queueFamilyIndex = vk->queue_family;
	VK_TRY(vk, vk->vkCreateDevice(vk->phys, &dci, NULL, &vk->dev), "vkCreateDevice");
#define VK_LOAD_D(fn)                                                              \
	vk->fn = (PFN_##fn)vk->vkGetDeviceProcAddr(vk->dev, #fn);                   \
	if (!vk->fn) {                                                             \
		err = -ENODEV;                                                     \
		goto out;                                                          \
	}
	VK_DEVICE_FNS(VK_LOAD_D)
#undef VK_LOAD_D
	vk->vkGetPhysicalDeviceMemoryProperties(vk->phys, &vk->memprops);
	vk->vkGetDeviceQueue(vk->dev, vk->queue_family, 0, &vk->queue);
	{
		VkCommandPoolCreateInfo cpci = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
			.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
			.queueFamilyIndex = vk->queue_family,
		};
		VkCommandBufferAllocateInfo cbai = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
			.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
			.commandBufferCount = 1,
		};
		VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };

		VK_TRY(vk, vk->vkCreateCommandPool(vk->dev, &cpci, NULL, &vk->pool),
		       "vkCreateCommandPool");
		cbai.commandPool = vk->pool;
		VK_TRY(vk, vk->vkAllocateCommandBuffers(vk->dev, &cbai, &vk->cmd),
		       "vkAllocateCommandBuffers");
		VK_TRY(vk, vk->vkCreateFence(vk->dev, &fci, NULL, &vk->fence), "vkCreateFence");
		VK_TRY(vk, vk->vkCreatePipelineLayout(vk->dev, &plci, NULL, &vk->layout),
		       "vkCreatePipelineLayout");
	}
	gpuext_log(vk->rt, GPUEXT_LOG_INFO, "vulkan: running on %s", vk->name);
	*out = vk;
	return 0;
out:
	gpuext_spirv_vk__close(vk);
	return err;
}

const char *gpuext_spirv_vk__device_name(const struct gpuext_spirv_vk *vk)
{
	return vk->name;
}

static int find_memory(const struct gpuext_spirv_vk *vk, uint32_t type_bits)
{
	const VkMemoryPropertyFlags want =
		VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

	for (uint32_t i = 0; i < vk->memprops.memoryTypeCount; i++)
		if ((type_bits & (1u << i)) &&
		    (vk->memprops.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}

#define HDR_BYTES 64u	/* r0 at 0; the rest keeps the memory 64-aligned */

int gpuext_spirv_vk__run_spv(struct gpuext_spirv_vk *vk, const void *spv, size_t spv_len,
			     void *mem, size_t mem_len, uint64_t *r0, char *errbuf, size_t err_len)
{
	return gpuext_spirv_vk__run_spv_data(vk, spv, spv_len, mem, mem_len, NULL, 0, r0, errbuf,
					     err_len);
}

int gpuext_spirv_vk__run_spv_data(struct gpuext_spirv_vk *vk, const void *spv, size_t spv_len,
				  void *mem, size_t mem_len, void *data, size_t data_len,
				  uint64_t *r0, char *errbuf, size_t err_len)
{
	size_t mem_al = (mem_len + 63) & ~(size_t)63;
	size_t data_off = HDR_BYTES + mem_al + GPUEXT_SPIRV_VK_STACK_MAX;
	VkDeviceSize size = data_off + ((data_len + 63) & ~(size_t)63);
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
			 VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkMemoryAllocateFlagsInfo mafi = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
		.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
	};
	VkShaderModuleCreateInfo smci = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = spv_len,
		.pCode = spv,
	};
	VkBuffer buf = VK_NULL_HANDLE;
	VkDeviceMemory dm = VK_NULL_HANDLE;
	VkShaderModule sm = VK_NULL_HANDLE;
	VkPipeline pipe = VK_NULL_HANDLE;
	VkMemoryRequirements req;
	uint8_t *map = NULL;
	int err = 0, mt;

	if (errbuf && err_len)
		errbuf[0] = '\0';
	VK_TRY(vk, vk->vkCreateBuffer(vk->dev, &bci, NULL, &buf), "vkCreateBuffer");
	vk->vkGetBufferMemoryRequirements(vk->dev, buf, &req);
	mt = find_memory(vk, req.memoryTypeBits);
	if (mt < 0) {
		snprintf(errbuf, err_len, "no host-visible coherent memory on %s", vk->name);
		err = -ENODEV;
		goto out;
	}
	{
		VkMemoryAllocateInfo mai = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
			.pNext = &mafi,
			.allocationSize = req.size,
			.memoryTypeIndex = (uint32_t)mt,
		};

		VK_TRY(vk, vk->vkAllocateMemory(vk->dev, &mai, NULL, &dm), "vkAllocateMemory");
	}
	VK_TRY(vk, vk->vkBindBufferMemory(vk->dev, buf, dm, 0), "vkBindBufferMemory");
	VK_TRY(vk, vk->vkMapMemory(vk->dev, dm, 0, size, 0, (void **)&map), "vkMapMemory");
	memset(map, 0, size);
	if (mem_len)
		memcpy(map + HDR_BYTES, mem, mem_len);
	if (data_len)
		memcpy(map + data_off, data, data_len);

	if (vk->vkCreateShaderModule(vk->dev, &smci, NULL, &sm) != VK_SUCCESS) {
		snprintf(errbuf, err_len, "%s refused the shader module", vk->name);
		err = -ENOTSUP;
		goto out;
	}
	{
		VkComputePipelineCreateInfo cpci = {
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.stage = {
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.module = sm,
				.pName = GPUEXT_SPIRV_VK_ENTRY_NAME,
			},
			.layout = vk->layout,
		};
		VkResult r = vk->vkCreateComputePipelines(vk->dev, VK_NULL_HANDLE, 1, &cpci, NULL,
							  &pipe);

		if (r != VK_SUCCESS) {
			snprintf(errbuf, err_len, "%s could not build the pipeline (VkResult %d)",
				 vk->name, (int)r);
			err = -ENOTSUP;
			goto out;
		}
	}
	{
		VkBufferDeviceAddressInfo bdai = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
			.buffer = buf,
		};
		VkDeviceAddress base = vk->vkGetBufferDeviceAddress(vk->dev, &bdai);
		struct gpuext_spirv_vk_args args = {
			.mem = mem_len ? base + HDR_BYTES : 0,
			.mem_len = mem_len,
			.stack = base + HDR_BYTES + mem_al,
			.r0_out = base,
		};
		VkCommandBufferBeginInfo cbbi = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
			.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
		};
		VkMemoryBarrier mb = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
			.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
		};
		VkSubmitInfo si = {
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.commandBufferCount = 1,
			.pCommandBuffers = &vk->cmd,
		};
		VkResult r;

		VK_TRY(vk, vk->vkResetCommandBuffer(vk->cmd, 0), "vkResetCommandBuffer");
		VK_TRY(vk, vk->vkBeginCommandBuffer(vk->cmd, &cbbi), "vkBeginCommandBuffer");
		vk->vkCmdBindPipeline(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
		vk->vkCmdPushConstants(vk->cmd, vk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
				       sizeof(args), &args);
		vk->vkCmdDispatch(vk->cmd, 1, 1, 1);
		vk->vkCmdPipelineBarrier(vk->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
					 VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
		VK_TRY(vk, vk->vkEndCommandBuffer(vk->cmd), "vkEndCommandBuffer");
		VK_TRY(vk, vk->vkResetFences(vk->dev, 1, &vk->fence), "vkResetFences");
		VK_TRY(vk, vk->vkQueueSubmit(vk->queue, 1, &si, vk->fence), "vkQueueSubmit");
		r = vk->vkWaitForFences(vk->dev, 1, &vk->fence, VK_TRUE, 30ull * 1000000000ull);
		if (r != VK_SUCCESS) {
			snprintf(errbuf, err_len, "the dispatch did not finish (VkResult %d)", (int)r);
			err = r == VK_TIMEOUT ? -ETIMEDOUT : -EIO;
			goto out;
		}
	}
	memcpy(r0, map, sizeof(*r0));
	if (mem_len)
		memcpy(mem, map + HDR_BYTES, mem_len);
	if (data_len)
		memcpy(data, map + data_off, data_len);
out:
	if (pipe)
		vk->vkDestroyPipeline(vk->dev, pipe, NULL);
	if (sm)
		vk->vkDestroyShaderModule(vk->dev, sm, NULL);
	if (map)
		vk->vkUnmapMemory(vk->dev, dm);
	if (buf)
		vk->vkDestroyBuffer(vk->dev, buf, NULL);
	if (dm)
		vk->vkFreeMemory(vk->dev, dm, NULL);
	if (err && errbuf && err_len && !errbuf[0])
		snprintf(errbuf, err_len, "Vulkan call failed on %s (see the log)", vk->name);
	return err;
}

int gpuext_spirv_vk__run_prog(struct gpuext_spirv_vk *vk, struct gpuext_prog *prog, void *mem,
			      size_t mem_len, uint64_t *r0, char *err, size_t err_len)
{
	char inexact[512];
	GPUEXT_OPTS(gpuext_spirv_emit_opts, o, .vulkan = true, .inexact = inexact,
		    .inexact_len = sizeof(inexact), .err = err, .err_len = err_len);
	void *bin = NULL;
	size_t len = 0;
	int r;

	r = gpuext_spirv_emit_opts(prog, &o, &bin, &len);
	if (r)
		return r;
	if (inexact[0]) {
		snprintf(err, err_len, "%s", inexact);
		free(bin);
		return -ENOTSUP;
	}
	{
		void *data = NULL;
		size_t data_len = 0;

		r = gpuext_spirv_vk_data_save(prog, &data, &data_len);
		if (r) {
			snprintf(err, err_len, "cannot read the maps and variables (%d)", r);
		} else {
			r = gpuext_spirv_vk__run_spv_data(vk, bin, len, mem, mem_len, data, data_len,
							  r0, err, err_len);
			if (!r)
				r = gpuext_spirv_vk_data_load(prog, data, data_len);
		}
		free(data);
	}
	free(bin);
	return r;
}

int gpuext_spirv_vk_run(struct gpuext_prog *prog, void *mem, size_t len, uint64_t *r0)
{
	const struct gpuext_runtime *rt = gpuext_prog__runtime(prog);
	GPUEXT_OPTS(gpuext_spirv_vk_opts, vo, .rt = rt);
	struct gpuext_spirv_vk *vk = NULL;
	char err[512] = "";
	int r;

	r = gpuext_spirv_vk__open(&vo, &vk);
	if (r) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "spirv-vulkan: no usable Vulkan device (%s)",
			   strerror(-r));
		return r;
	}
	r = gpuext_spirv_vk__run_prog(vk, prog, mem, len, r0, err, sizeof(err));
	if (r)
		gpuext_log(rt, GPUEXT_LOG_WARN, "spirv-vulkan: %s on %s: %s", gpuext_prog__name(prog),
			   vk->name, err);
	gpuext_spirv_vk__close(vk);
	return r;
}
