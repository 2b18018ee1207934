/* Initialisation from the environment, device queries, versions and error strings. */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct simcuda__state simcuda__state = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t simcuda__once = PTHREAD_ONCE_INIT;

void simcuda__lock(void)
{
    pthread_mutex_lock(&simcuda__state.lock);
    simcuda__shared_lock();
}

void simcuda__unlock(void)
{
    simcuda__shared_publish(); /* what this process holds now, for the others */
    simcuda__shared_unlock();
    pthread_mutex_unlock(&simcuda__state.lock);
}

/* A child forked while another thread is inside the simulator must not inherit its lock
 * held: fork waits for the lock and both sides release it. */
__attribute__((constructor)) static void simcuda__register_atfork(void)
{
    pthread_atfork(simcuda__lock, simcuda__unlock, simcuda__unlock);
}

/* Plain bytes, or a K/M/G/T suffix with or without "iB" (all binary: K = KiB). */
static bool parse_size(const char *text, uint64_t *out)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } suffixes[] = {{"", 0},     {"B", 0},  {"K", 10},   {"KiB", 10}, {"M", 20},
                    {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40}};
    char *end;
    if (!isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0)
        return false;
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (strcasecmp(end, suffixes[i].suffix) == 0) {
            if (value > (UINT64_MAX >> suffixes[i].shift))
                return false;
            *out = (uint64_t)value << suffixes[i].shift;
            return true;
        }
    }
    return false;
}

static uint64_t env_size(const char *name, uint64_t fallback, const char *fallback_text)
{
    const char *text = getenv(name);
    uint64_t value;
    if (!text)
        return fallback;
    if (parse_size(text, &value))
        return value;
    fprintf(stderr,
            "simcuda: %s=\"%s\" is not a size (bytes, or a K/M/G/KiB/MiB/GiB suffix); "
            "using %s\n",
            name, text, fallback_text);
    return fallback;
}

static int env_devices(void)
{
    const char *text = getenv("SIMCUDA_DEVICES");
    char *end;
    if (!text)
        return 1;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno == 0 && end != text && *end == '\0' && value >= 0 && value <= SIMCUDA__MAX_DEVICES)
        return (int)value;
    fprintf(stderr, "simcuda: SIMCUDA_DEVICES=\"%s\" is not a device count 0..%d; using 1\n", text,
            SIMCUDA__MAX_DEVICES);
    return 1;
}

/* SIMCUDA_REUSE_ADDRESSES: 1 (default) reuses freed address ranges first fit; 0 never hands out
 * an address range twice (each reservation lies above every earlier one). */
static bool env_reuse_addresses(void)
{
    const char *text = getenv("SIMCUDA_REUSE_ADDRESSES");
    if (!text || strcmp(text, "1") == 0)
        return true;
    if (strcmp(text, "0") == 0)
        return false;
    fprintf(stderr, "simcuda: SIMCUDA_REUSE_ADDRESSES=\"%s\" is not 0 or 1; using 1\n", text);
    return true;
}

static void simcuda__setup(void)
{
    struct simcuda__state *state = &simcuda__state;
    uint64_t capacity = env_size("SIMCUDA_MEMORY", SIMCUDA__DEFAULT_MEMORY, "24GiB");
    uint64_t used = env_size("SIMCUDA_USED", 0, "0");
    if (used > capacity) {
        fprintf(stderr, "simcuda: SIMCUDA_USED=\"%s\" exceeds SIMCUDA_MEMORY; using 0\n",
                getenv("SIMCUDA_USED"));
        used = 0;
    }
    state->context_overhead = env_size("SIMCUDA_CONTEXT_OVERHEAD",
                                       SIMCUDA__DEFAULT_CONTEXT_OVERHEAD, "256MiB");
    state->device_count = env_devices();
    simcuda__log_open();
    bool reuse = env_reuse_addresses();
    for (int d = 0; d < state->device_count; d++) {
        struct simcuda__device *dev = &state->devices[d];
        dev->capacity = capacity;
        dev->used_by_others = used;
        dev->va.start = SIMCUDA__VA_BASE + (uint64_t)d * SIMCUDA__VA_STRIDE;
        dev->va.size = SIMCUDA__VA_STRIDE;
        dev->va.never_reuse = !reuse;
        dev->legacy_va.start = SIMCUDA__LEGACY_VA_BASE + (uint64_t)d * SIMCUDA__LEGACY_VA_STRIDE;
        dev->legacy_va.size = SIMCUDA__LEGACY_VA_STRIDE;
        dev->managed_va.start = SIMCUDA__MANAGED_VA_BASE + (uint64_t)d * SIMCUDA__VA_STRIDE;
        dev->managed_va.size = SIMCUDA__VA_STRIDE;
        dev->managed_va.never_reuse = !reuse;
        dev->primary.magic = SIMCUDA__CTX_MAGIC;
        dev->primary.device = d;
        dev->primary.primary = true;
        simcuda__pool_init(&dev->default_pool, d, true);
        dev->current_pool = &dev->default_pool;
    }
    simcuda__shared_setup();
}

CUresult simcuda__require_init(void)
{
    return __atomic_load_n(&simcuda__state.initialized, __ATOMIC_ACQUIRE)
               ? CUDA_SUCCESS
               : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult simcuda__check_device(CUdevice device)
{
    return device >= 0 && device < simcuda__state.device_count ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_DEVICE;
}

uint64_t simcuda__free_bytes(int device)
{
    const struct simcuda__device *dev = &simcuda__state.devices[device];
    uint64_t held = dev->used_by_others + dev->pages_in_use * SIMCUDA__PAGE_SIZE +
                    simcuda__shared_others(device);
    if (dev->contexts_alive > 0)
        held += simcuda__state.context_overhead;
    return held >= dev->capacity ? 0 : dev->capacity - held;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&simcuda__once, simcuda__setup);
    if (simcuda__state.device_count == 0)
        return CUDA_ERROR_NO_DEVICE;
    __atomic_store_n(&simcuda__state.initialized, true, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = SIMCUDA__DRIVER_VERSION;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (simcuda__check_device(ordinal) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = simcuda__state.device_count;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    snprintf(name, (size_t)len, "simcuda GPU %d (simulated)", dev);
    return CUDA_SUCCESS;
}

static CUresult device_total_memory(uint64_t *bytes, CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    *bytes = simcuda__state.devices[dev].capacity;
    return CUDA_SUCCESS;
}

/* The device's memory for a caller's output: CUDA_ERROR_INVALID_VALUE for a NULL one. */
static CUresult total_memory_into(const void *bytes, uint64_t *total, CUdevice dev)
{
    CUresult result = device_total_memory(total, dev);
    return result == CUDA_SUCCESS && !bytes ? CUDA_ERROR_INVALID_VALUE : result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    uint64_t total;
    CUresult result = total_memory_into(bytes, &total, dev);
    if (result == CUDA_SUCCESS)
        *bytes = total;
    return result;
}

/* The 32-bit legacy variant saturates at 4 GiB - 1. */
SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    uint64_t total;
    CUresult result = total_memory_into(bytes, &total, dev);
    if (result == CUDA_SUCCESS)
        *bytes = total > UINT32_MAX ? UINT32_MAX : (unsigned int)total;
    return result;
}

static int attribute_value(CUdevice_attribute attribute, CUdevice dev)
{
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x10 + dev;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return SIMCUDA__PITCH_ALIGNMENT;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
        return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50 << 20;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: return 0;
    default: return 0;
    }
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                                                     CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    *pi = attribute_value(attrib, dev);
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    static const char prefix[] = "simcuda-gpu-";
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    memset(uuid->bytes, 0, sizeof(uuid->bytes));
    memcpy(uuid->bytes, prefix, sizeof(prefix) - 1);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return device_uuid(uuid, dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return device_uuid(uuid, dev);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    *major = attribute_value(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    *minor = attribute_value(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    return CUDA_SUCCESS;
}

/* simcuda's devices never reach one another's memory. */
SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev,
                                                      CUdevice peerDev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    if (simcuda__check_device(dev) != CUDA_SUCCESS ||
        simcuda__check_device(peerDev) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = 0;
    return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    return Flags != 0 || !peerContext ? CUDA_ERROR_INVALID_VALUE
                                      : CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

/* clang-format off */
#define SIMCUDA__ERROR_NAME_CASE(code, description) case code: return #code;
#define SIMCUDA__ERROR_STRING_CASE(code, description) case code: return "simcuda: " description;
/* clang-format on */

#include "simcuda_errors.h"

static const char *error_name(CUresult error)
{
    switch (error) {
        SIMCUDA_ERRORS(SIMCUDA__ERROR_NAME_CASE)
    }
    return NULL;
}

static const char *error_string(CUresult error)
{
    switch (error) {
        SIMCUDA_ERRORS(SIMCUDA__ERROR_STRING_CASE)
    }
    return NULL;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = error_string(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = error_name(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
