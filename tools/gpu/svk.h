/* SPDX-License-Identifier: Apache-2.0 */
/*
 * svk.h: the few Vulkan types and constants tools/gpu/spirv_bundle_run.c uses
 * (svk_ / SVK_), written from the Vulkan 1.3 specification so that the
 * runner needs no Vulkan headers on a GPU machine. Building the runner with
 * -DGPUEXT_VK_ABI_CHECK where <vulkan/vulkan_core.h> exists checks every one
 * against the official header at compile time. Included by that file only.
 */
#ifndef GPUEXT_TOOLS_GPU_SVK_H
#define GPUEXT_TOOLS_GPU_SVK_H

#include <stddef.h>
#include <stdint.h>


typedef int32_t svk_result;
typedef uint32_t svk_bool;
typedef uint32_t svk_flags;
typedef uint64_t svk_size;
typedef uint64_t svk_addr;
typedef struct svk_instance_t *svk_instance;	/* dispatchable handles */
typedef struct svk_phys_t *svk_phys;
typedef struct svk_device_t *svk_device;
typedef struct svk_queue_t *svk_queue;
typedef struct svk_cmdbuf_t *svk_cmdbuf;
typedef uint64_t svk_handle;			/* non-dispatchable (64-bit ABI) */
typedef void (*svk_void_fn)(void);

enum {
	SVK_SUCCESS = 0,
	SVK_NOT_READY = 1,
	SVK_TIMEOUT = 2,
	SVK_INCOMPLETE = 5,
	SVK_ERROR_OUT_OF_HOST_MEMORY = -1,
	SVK_ERROR_DEVICE_LOST = -4,
};

/* VkStructureType */
enum {
	SVK_ST_APPLICATION_INFO = 0,
	SVK_ST_INSTANCE_CREATE_INFO = 1,
	SVK_ST_DEVICE_QUEUE_CREATE_INFO = 2,
	SVK_ST_DEVICE_CREATE_INFO = 3,
	SVK_ST_SUBMIT_INFO = 4,
	SVK_ST_MEMORY_ALLOCATE_INFO = 5,
	SVK_ST_FENCE_CREATE_INFO = 8,
	SVK_ST_BUFFER_CREATE_INFO = 12,
	SVK_ST_SHADER_MODULE_CREATE_INFO = 16,
	SVK_ST_PIPELINE_SHADER_STAGE_CREATE_INFO = 18,
	SVK_ST_COMPUTE_PIPELINE_CREATE_INFO = 29,
	SVK_ST_PIPELINE_LAYOUT_CREATE_INFO = 30,
	SVK_ST_COMMAND_POOL_CREATE_INFO = 39,
	SVK_ST_COMMAND_BUFFER_ALLOCATE_INFO = 40,
	SVK_ST_COMMAND_BUFFER_BEGIN_INFO = 42,
	SVK_ST_MEMORY_BARRIER = 46,
	SVK_ST_PHYSICAL_DEVICE_FEATURES_2 = 1000059000,
	SVK_ST_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001,
	SVK_ST_MEMORY_ALLOCATE_FLAGS_INFO = 1000060000,
	SVK_ST_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES = 1000082000,
	SVK_ST_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES = 1000083000,
	SVK_ST_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT = 1000128004,
	SVK_ST_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES = 1000177000,
	SVK_ST_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES = 1000180000,
	SVK_ST_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000,
	SVK_ST_BUFFER_DEVICE_ADDRESS_INFO = 1000244001,
	SVK_ST_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES = 1000257000,
};

enum {
	SVK_API_1_3 = (1u << 22) | (3u << 12),
	SVK_QUEUE_COMPUTE_BIT = 0x2,
	SVK_STAGE_COMPUTE_BIT = 0x20,			/* VkShaderStageFlagBits */
	SVK_BUFFER_USAGE_STORAGE_BUFFER_BIT = 0x20,
	SVK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT = 0x20000,
	SVK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT = 0x1,
	SVK_MEMORY_PROPERTY_HOST_VISIBLE_BIT = 0x2,
	SVK_MEMORY_PROPERTY_HOST_COHERENT_BIT = 0x4,
	SVK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT = 0x2,
	SVK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT = 0x2,
	SVK_COMMAND_BUFFER_LEVEL_PRIMARY = 0,
	SVK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT = 0x1,
	SVK_PIPELINE_BIND_POINT_COMPUTE = 1,
	SVK_ACCESS_SHADER_READ_BIT = 0x20,
	SVK_ACCESS_SHADER_WRITE_BIT = 0x40,
	SVK_ACCESS_HOST_READ_BIT = 0x2000,
	SVK_ACCESS_HOST_WRITE_BIT = 0x4000,
	SVK_PIPELINE_STAGE_COMPUTE_SHADER_BIT = 0x800,
	SVK_PIPELINE_STAGE_HOST_BIT = 0x4000,
	SVK_SHARING_MODE_EXCLUSIVE = 0,
	SVK_DEVICE_TYPE_OTHER = 0,
	SVK_DEVICE_TYPE_INTEGRATED_GPU = 1,
	SVK_DEVICE_TYPE_DISCRETE_GPU = 2,
	SVK_DEVICE_TYPE_VIRTUAL_GPU = 3,
	SVK_DEVICE_TYPE_CPU = 4,
	SVK_DEBUG_SEVERITY_VERBOSE = 0x1,
	SVK_DEBUG_SEVERITY_INFO = 0x10,
	SVK_DEBUG_SEVERITY_WARNING = 0x100,
	SVK_DEBUG_SEVERITY_ERROR = 0x1000,
	SVK_DEBUG_TYPE_GENERAL = 0x1,
	SVK_DEBUG_TYPE_VALIDATION = 0x2,
	SVK_DEBUG_TYPE_PERFORMANCE = 0x4,
};

/* Index of a member of VkPhysicalDeviceFeatures (55 VkBool32 in spec order). */
enum { SVK_FEATURE_COUNT = 55, SVK_FEAT_SHADER_INT64 = 40, SVK_FEAT_SHADER_INT16 = 41 };

#define SVK_MAX_NAME 256
#define SVK_UUID 16

struct svk_app_info {
	int32_t sType;
	const void *pNext;
	const char *pApplicationName;
	uint32_t applicationVersion;
	const char *pEngineName;
	uint32_t engineVersion;
	uint32_t apiVersion;
};

struct svk_instance_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	const struct svk_app_info *pApplicationInfo;
	uint32_t enabledLayerCount;
	const char *const *ppEnabledLayerNames;
	uint32_t enabledExtensionCount;
	const char *const *ppEnabledExtensionNames;
};

struct svk_extension_properties {
	char extensionName[SVK_MAX_NAME];
	uint32_t specVersion;
};

/* VkPhysicalDeviceProperties: the leading members; limits and sparse properties opaque. */
struct svk_phys_props {
	uint32_t apiVersion;
	uint32_t driverVersion;
	uint32_t vendorID;
	uint32_t deviceID;
	int32_t deviceType;
	char deviceName[SVK_MAX_NAME];
	uint8_t pipelineCacheUUID[SVK_UUID];
	uint64_t limits_and_sparse[100];	/* 528 bytes in Vulkan 1.3; room to spare */
};

struct svk_phys_props2 {
	int32_t sType;
	void *pNext;
	struct svk_phys_props properties;
};

struct svk_driver_props {
	int32_t sType;
	void *pNext;
	int32_t driverID;
	char driverName[SVK_MAX_NAME];
	char driverInfo[SVK_MAX_NAME];
	uint8_t conformanceVersion[4];
};

struct svk_features2 {
	int32_t sType;
	void *pNext;
	svk_bool features[SVK_FEATURE_COUNT];
};

struct svk_f8bit_storage {
	int32_t sType;
	void *pNext;
	svk_bool storageBuffer8BitAccess;
	svk_bool uniformAndStorageBuffer8BitAccess;
	svk_bool storagePushConstant8;
};

struct svk_f16bit_storage {
	int32_t sType;
	void *pNext;
	svk_bool storageBuffer16BitAccess;
	svk_bool uniformAndStorageBuffer16BitAccess;
	svk_bool storagePushConstant16;
	svk_bool storageInputOutput16;
};

struct svk_ffloat16_int8 {
	int32_t sType;
	void *pNext;
	svk_bool shaderFloat16;
	svk_bool shaderInt8;
};

struct svk_fbda {
	int32_t sType;
	void *pNext;
	svk_bool bufferDeviceAddress;
	svk_bool bufferDeviceAddressCaptureReplay;
	svk_bool bufferDeviceAddressMultiDevice;
};

struct svk_fatomic_int64 {
	int32_t sType;
	void *pNext;
	svk_bool shaderBufferInt64Atomics;
	svk_bool shaderSharedInt64Atomics;
};

struct svk_queue_family_props {
	svk_flags queueFlags;
	uint32_t queueCount;
	uint32_t timestampValidBits;
	uint32_t minImageTransferGranularity[3];
};

struct svk_device_queue_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	uint32_t queueFamilyIndex;
	uint32_t queueCount;
	const float *pQueuePriorities;
};

struct svk_device_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	uint32_t queueCreateInfoCount;
	const struct svk_device_queue_create_info *pQueueCreateInfos;
	uint32_t enabledLayerCount;
	const char *const *ppEnabledLayerNames;
	uint32_t enabledExtensionCount;
	const char *const *ppEnabledExtensionNames;
	const void *pEnabledFeatures;	/* VkPhysicalDeviceFeatures; NULL: features2 chained */
};

struct svk_memory_type {
	svk_flags propertyFlags;
	uint32_t heapIndex;
};

struct svk_memory_heap {
	svk_size size;
	svk_flags flags;
};

struct svk_memory_props {
	uint32_t memoryTypeCount;
	struct svk_memory_type memoryTypes[32];
	uint32_t memoryHeapCount;
	struct svk_memory_heap memoryHeaps[16];
};

struct svk_command_pool_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	uint32_t queueFamilyIndex;
};

struct svk_command_buffer_allocate_info {
	int32_t sType;
	const void *pNext;
	svk_handle commandPool;
	int32_t level;
	uint32_t commandBufferCount;
};

struct svk_fence_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
};

struct svk_push_constant_range {
	svk_flags stageFlags;
	uint32_t offset;
	uint32_t size;
};

struct svk_pipeline_layout_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	uint32_t setLayoutCount;
	const svk_handle *pSetLayouts;
	uint32_t pushConstantRangeCount;
	const struct svk_push_constant_range *pPushConstantRanges;
};

struct svk_shader_module_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	size_t codeSize;
	const uint32_t *pCode;
};

struct svk_shader_stage_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	int32_t stage;
	svk_handle module;
	const char *pName;
	const void *pSpecializationInfo;
};

struct svk_compute_pipeline_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	struct svk_shader_stage_create_info stage;
	svk_handle layout;
	svk_handle basePipelineHandle;
	int32_t basePipelineIndex;
};

struct svk_buffer_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	svk_size size;
	svk_flags usage;
	int32_t sharingMode;
	uint32_t queueFamilyIndexCount;
	const uint32_t *pQueueFamilyIndices;
};

struct svk_memory_requirements {
	svk_size size;
	svk_size alignment;
	uint32_t memoryTypeBits;
};

struct svk_memory_allocate_info {
	int32_t sType;
	const void *pNext;
	svk_size allocationSize;
	uint32_t memoryTypeIndex;
};

struct svk_memory_allocate_flags_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	uint32_t deviceMask;
};

struct svk_buffer_device_address_info {
	int32_t sType;
	const void *pNext;
	svk_handle buffer;
};

struct svk_command_buffer_begin_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	const void *pInheritanceInfo;
};

struct svk_memory_barrier {
	int32_t sType;
	const void *pNext;
	svk_flags srcAccessMask;
	svk_flags dstAccessMask;
};

struct svk_submit_info {
	int32_t sType;
	const void *pNext;
	uint32_t waitSemaphoreCount;
	const svk_handle *pWaitSemaphores;
	const svk_flags *pWaitDstStageMask;
	uint32_t commandBufferCount;
	const svk_cmdbuf *pCommandBuffers;
	uint32_t signalSemaphoreCount;
	const svk_handle *pSignalSemaphores;
};

/* VkDebugUtilsMessengerCallbackDataEXT: the leading members we read. */
struct svk_debug_callback_data {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	const char *pMessageIdName;
	int32_t messageIdNumber;
	const char *pMessage;
};

typedef svk_bool (*svk_debug_fn)(int32_t severity, svk_flags types,
				 const struct svk_debug_callback_data *data, void *user);

struct svk_debug_messenger_create_info {
	int32_t sType;
	const void *pNext;
	svk_flags flags;
	svk_flags messageSeverity;
	svk_flags messageType;
	svk_debug_fn pfnUserCallback;
	void *pUserData;
};

#ifdef GPUEXT_VK_ABI_CHECK
/* Only where the official header exists: every declaration above against it. */
#include <vulkan/vulkan_core.h>
#define SAME_SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), #a " vs " #b)
#define SAME_OFF(a, b, m) _Static_assert(offsetof(a, m) == offsetof(b, m), #a "." #m)
#define SAME_VAL(a, b) _Static_assert((long long)(a) == (long long)(b), #a " vs " #b)
SAME_SIZE(struct svk_app_info, VkApplicationInfo);
SAME_OFF(struct svk_app_info, VkApplicationInfo, apiVersion);
SAME_SIZE(struct svk_instance_create_info, VkInstanceCreateInfo);
SAME_OFF(struct svk_instance_create_info, VkInstanceCreateInfo, ppEnabledExtensionNames);
SAME_SIZE(struct svk_extension_properties, VkExtensionProperties);
SAME_OFF(struct svk_phys_props, VkPhysicalDeviceProperties, deviceType);
SAME_OFF(struct svk_phys_props, VkPhysicalDeviceProperties, deviceName);
SAME_OFF(struct svk_phys_props, VkPhysicalDeviceProperties, pipelineCacheUUID);
_Static_assert(sizeof(struct svk_phys_props) >= sizeof(VkPhysicalDeviceProperties), "props room");
_Static_assert(_Alignof(struct svk_phys_props) == _Alignof(VkPhysicalDeviceProperties), "align");
SAME_OFF(struct svk_phys_props2, VkPhysicalDeviceProperties2, properties);
SAME_SIZE(struct svk_driver_props, VkPhysicalDeviceDriverProperties);
SAME_OFF(struct svk_driver_props, VkPhysicalDeviceDriverProperties, driverInfo);
SAME_SIZE(struct svk_features2, VkPhysicalDeviceFeatures2);
SAME_VAL(SVK_FEAT_SHADER_INT64, offsetof(VkPhysicalDeviceFeatures, shaderInt64) / 4);
SAME_VAL(SVK_FEAT_SHADER_INT16, offsetof(VkPhysicalDeviceFeatures, shaderInt16) / 4);
SAME_SIZE(struct svk_f8bit_storage, VkPhysicalDevice8BitStorageFeatures);
SAME_OFF(struct svk_f8bit_storage, VkPhysicalDevice8BitStorageFeatures, storagePushConstant8);
SAME_SIZE(struct svk_f16bit_storage, VkPhysicalDevice16BitStorageFeatures);
SAME_OFF(struct svk_f16bit_storage, VkPhysicalDevice16BitStorageFeatures, storageInputOutput16);
SAME_SIZE(struct svk_ffloat16_int8, VkPhysicalDeviceShaderFloat16Int8Features);
SAME_OFF(struct svk_ffloat16_int8, VkPhysicalDeviceShaderFloat16Int8Features, shaderInt8);
SAME_SIZE(struct svk_fbda, VkPhysicalDeviceBufferDeviceAddressFeatures);
SAME_OFF(struct svk_fbda, VkPhysicalDeviceBufferDeviceAddressFeatures, bufferDeviceAddress);
SAME_SIZE(struct svk_fatomic_int64, VkPhysicalDeviceShaderAtomicInt64Features);
SAME_OFF(struct svk_fatomic_int64, VkPhysicalDeviceShaderAtomicInt64Features,
	 shaderBufferInt64Atomics);
SAME_SIZE(struct svk_queue_family_props, VkQueueFamilyProperties);
SAME_SIZE(struct svk_device_queue_create_info, VkDeviceQueueCreateInfo);
SAME_OFF(struct svk_device_queue_create_info, VkDeviceQueueCreateInfo, pQueuePriorities);
SAME_SIZE(struct svk_device_create_info, VkDeviceCreateInfo);
SAME_OFF(struct svk_device_create_info, VkDeviceCreateInfo, pEnabledFeatures);
SAME_SIZE(struct svk_memory_props, VkPhysicalDeviceMemoryProperties);
SAME_OFF(struct svk_memory_props, VkPhysicalDeviceMemoryProperties, memoryHeapCount);
SAME_OFF(struct svk_memory_props, VkPhysicalDeviceMemoryProperties, memoryHeaps);
SAME_SIZE(struct svk_command_pool_create_info, VkCommandPoolCreateInfo);
SAME_SIZE(struct svk_command_buffer_allocate_info, VkCommandBufferAllocateInfo);
SAME_OFF(struct svk_command_buffer_allocate_info, VkCommandBufferAllocateInfo, commandBufferCount);
SAME_SIZE(struct svk_fence_create_info, VkFenceCreateInfo);
SAME_SIZE(struct svk_push_constant_range, VkPushConstantRange);
SAME_SIZE(struct svk_pipeline_layout_create_info, VkPipelineLayoutCreateInfo);
SAME_OFF(struct svk_pipeline_layout_create_info, VkPipelineLayoutCreateInfo, pPushConstantRanges);
SAME_SIZE(struct svk_shader_module_create_info, VkShaderModuleCreateInfo);
SAME_OFF(struct svk_shader_module_create_info, VkShaderModuleCreateInfo, pCode);
SAME_SIZE(struct svk_shader_stage_create_info, VkPipelineShaderStageCreateInfo);
SAME_OFF(struct svk_shader_stage_create_info, VkPipelineShaderStageCreateInfo, pName);
SAME_SIZE(struct svk_compute_pipeline_create_info, VkComputePipelineCreateInfo);
SAME_OFF(struct svk_compute_pipeline_create_info, VkComputePipelineCreateInfo, layout);
SAME_OFF(struct svk_compute_pipeline_create_info, VkComputePipelineCreateInfo, basePipelineIndex);
SAME_SIZE(struct svk_buffer_create_info, VkBufferCreateInfo);
SAME_OFF(struct svk_buffer_create_info, VkBufferCreateInfo, sharingMode);
SAME_SIZE(struct svk_memory_requirements, VkMemoryRequirements);
SAME_SIZE(struct svk_memory_allocate_info, VkMemoryAllocateInfo);
SAME_SIZE(struct svk_memory_allocate_flags_info, VkMemoryAllocateFlagsInfo);
SAME_SIZE(struct svk_buffer_device_address_info, VkBufferDeviceAddressInfo);
SAME_SIZE(struct svk_command_buffer_begin_info, VkCommandBufferBeginInfo);
SAME_SIZE(struct svk_memory_barrier, VkMemoryBarrier);
SAME_SIZE(struct svk_submit_info, VkSubmitInfo);
SAME_OFF(struct svk_submit_info, VkSubmitInfo, pCommandBuffers);
SAME_OFF(struct svk_debug_callback_data, VkDebugUtilsMessengerCallbackDataEXT, pMessage);
SAME_SIZE(struct svk_debug_messenger_create_info, VkDebugUtilsMessengerCreateInfoEXT);
SAME_OFF(struct svk_debug_messenger_create_info, VkDebugUtilsMessengerCreateInfoEXT, pUserData);
SAME_VAL(SVK_ST_APPLICATION_INFO, VK_STRUCTURE_TYPE_APPLICATION_INFO);
SAME_VAL(SVK_ST_INSTANCE_CREATE_INFO, VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
SAME_VAL(SVK_ST_DEVICE_QUEUE_CREATE_INFO, VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
SAME_VAL(SVK_ST_DEVICE_CREATE_INFO, VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
SAME_VAL(SVK_ST_SUBMIT_INFO, VK_STRUCTURE_TYPE_SUBMIT_INFO);
SAME_VAL(SVK_ST_MEMORY_ALLOCATE_INFO, VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
SAME_VAL(SVK_ST_FENCE_CREATE_INFO, VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
SAME_VAL(SVK_ST_BUFFER_CREATE_INFO, VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
SAME_VAL(SVK_ST_SHADER_MODULE_CREATE_INFO, VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
SAME_VAL(SVK_ST_PIPELINE_SHADER_STAGE_CREATE_INFO,
	 VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
SAME_VAL(SVK_ST_COMPUTE_PIPELINE_CREATE_INFO, VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
SAME_VAL(SVK_ST_PIPELINE_LAYOUT_CREATE_INFO, VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
SAME_VAL(SVK_ST_COMMAND_POOL_CREATE_INFO, VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
SAME_VAL(SVK_ST_COMMAND_BUFFER_ALLOCATE_INFO, VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
SAME_VAL(SVK_ST_COMMAND_BUFFER_BEGIN_INFO, VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
SAME_VAL(SVK_ST_MEMORY_BARRIER, VK_STRUCTURE_TYPE_MEMORY_BARRIER);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_FEATURES_2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_PROPERTIES_2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
SAME_VAL(SVK_ST_MEMORY_ALLOCATE_FLAGS_INFO, VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
	 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
	 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
SAME_VAL(SVK_ST_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
	 VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
	 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES,
	 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
	 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
SAME_VAL(SVK_ST_BUFFER_DEVICE_ADDRESS_INFO, VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
SAME_VAL(SVK_ST_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
	 VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES);
SAME_VAL(SVK_API_1_3, VK_API_VERSION_1_3);
SAME_VAL(SVK_QUEUE_COMPUTE_BIT, VK_QUEUE_COMPUTE_BIT);
SAME_VAL(SVK_STAGE_COMPUTE_BIT, VK_SHADER_STAGE_COMPUTE_BIT);
SAME_VAL(SVK_BUFFER_USAGE_STORAGE_BUFFER_BIT, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
SAME_VAL(SVK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT, VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
SAME_VAL(SVK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
SAME_VAL(SVK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
SAME_VAL(SVK_MEMORY_PROPERTY_HOST_COHERENT_BIT, VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
SAME_VAL(SVK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT, VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT);
SAME_VAL(SVK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
	 VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
SAME_VAL(SVK_COMMAND_BUFFER_LEVEL_PRIMARY, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
SAME_VAL(SVK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	 VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
SAME_VAL(SVK_PIPELINE_BIND_POINT_COMPUTE, VK_PIPELINE_BIND_POINT_COMPUTE);
SAME_VAL(SVK_ACCESS_SHADER_READ_BIT, VK_ACCESS_SHADER_READ_BIT);
SAME_VAL(SVK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_WRITE_BIT);
SAME_VAL(SVK_ACCESS_HOST_READ_BIT, VK_ACCESS_HOST_READ_BIT);
SAME_VAL(SVK_ACCESS_HOST_WRITE_BIT, VK_ACCESS_HOST_WRITE_BIT);
SAME_VAL(SVK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
SAME_VAL(SVK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_HOST_BIT);
SAME_VAL(SVK_SHARING_MODE_EXCLUSIVE, VK_SHARING_MODE_EXCLUSIVE);
SAME_VAL(SVK_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
SAME_VAL(SVK_DEVICE_TYPE_INTEGRATED_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU);
SAME_VAL(SVK_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU);
SAME_VAL(SVK_DEVICE_TYPE_CPU, VK_PHYSICAL_DEVICE_TYPE_CPU);
SAME_VAL(SVK_DEBUG_SEVERITY_VERBOSE, VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT);
SAME_VAL(SVK_DEBUG_SEVERITY_INFO, VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT);
SAME_VAL(SVK_DEBUG_SEVERITY_WARNING, VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT);
SAME_VAL(SVK_DEBUG_SEVERITY_ERROR, VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT);
SAME_VAL(SVK_DEBUG_TYPE_GENERAL, VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT);
SAME_VAL(SVK_DEBUG_TYPE_VALIDATION, VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT);
SAME_VAL(SVK_DEBUG_TYPE_PERFORMANCE, VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT);
SAME_VAL(SVK_TIMEOUT, VK_TIMEOUT);
SAME_VAL(SVK_INCOMPLETE, VK_INCOMPLETE);
SAME_VAL(SVK_ERROR_DEVICE_LOST, VK_ERROR_DEVICE_LOST);
_Static_assert(sizeof(VkBuffer) == sizeof(svk_handle), "non-dispatchable handles are 64-bit");
#endif

#endif
