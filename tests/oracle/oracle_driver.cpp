/*
 * oracle_driver — drives PyTorch's real CUDA caching allocator (c10::cuda::CUDACachingAllocator,
 * built from Debian's source package by build_oracle.sh) with a scripted tensor stream, on
 * simcuda through simcudart, and prints the figures the what-if model is compared on.
 *
 * Usage: oracle_driver [--memory-fraction F] SCRIPT
 *        oracle_driver --config
 *
 * --config parses the allocator settings as c10 does (CUDAAllocatorConfig, from the environment)
 * and prints either "config_error MESSAGE" (c10's error, or a std::exception's what()) or the
 * settings read: max_split_size, max_non_split_rounding, garbage_collection_threshold,
 * expandable_segments, and roundup (the divisions of c10's 16 size intervals).
 *
 * The allocator reads PYTORCH_CUDA_ALLOC_CONF (and PYTORCH_NO_CUDA_MEMORY_CACHING) itself. The
 * script has one request a line ('#' starts a comment):
 *   alloc SIZE [STREAM]   a tensor of SIZE bytes on stream STREAM (0, the default stream, when
 *                         left out; 1..N are streams from c10's pool, numbered in the order of
 *                         their handles, so the allocator's (stream, size, address) order is
 *                         the numbers' order); the Nth alloc line (from 0) is tensor N
 *   free ID               frees tensor ID (nothing if its allocation failed)
 *   empty_cache           torch.cuda.empty_cache()
 * A failed allocation (OutOfMemoryError) is caught and the script goes on, as a program that
 * catches torch.cuda.OutOfMemoryError would.
 *
 * Output, one "key value" a line: requests, oom (yes/no), first_oom_request (the tensor id of
 * the first failed allocation, -1 for none), failed_requests (their count), peak_reserved,
 * peak_allocated, reserved, allocated, device_alloc_calls, num_device_alloc, num_device_free,
 * num_alloc_retries, num_ooms, oom_message (the first OOM's message, newlines as \n), and
 * loop_seconds / loop_cpu_seconds: the wall and thread CPU time of the requests alone (no
 * start-up, no script reading), the anchor of bench/whatif's speed figures.
 *
 * device_alloc_calls counts device allocation attempts, failed ones included, as the model
 * does: every cudaMalloc c10 makes (counted by interposing cudaMalloc), plus, with expandable
 * segments, c10's num_device_alloc (successful maps) and the failed cuMemCreate calls (each
 * failed map stops at its first failed page; counted by wrapping c10's driver table entry).
 */
#include <c10/cuda/CUDAAllocatorConfig.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/driver_api.h>
#include <c10/util/Exception.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace c10::cuda::_internal
{
/* Declared by no header: ATen's CUDAHooks installs it. */
C10_CUDA_API void setHasPrimaryContext(bool (*func)(DeviceIndex));
} // namespace c10::cuda::_internal

namespace
{

long long cuda_malloc_calls = 0;
long long failed_mem_create = 0;
decltype(&cuMemCreate) real_mem_create = nullptr;

CUresult CUDAAPI counting_mem_create(CUmemGenericAllocationHandle *handle, size_t size,
                                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult result = real_mem_create(handle, size, prop, flags);
    if (result != CUDA_SUCCESS)
        failed_mem_create++;
    return result;
}

/* simcudart made device 0's primary context current at cudaSetDevice(0). */
bool has_primary_context(c10::DeviceIndex device)
{
    return device == 0;
}

struct request {
    enum { ALLOC, FREE, EMPTY_CACHE } kind;
    unsigned long long value; /* size, or tensor id */
    unsigned stream;
};

bool parse_script(const char *path, std::vector<request> &out, unsigned &streams)
{
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "oracle_driver: cannot open %s\n", path);
        return false;
    }
    std::string line;
    unsigned long long allocs = 0;
    for (int number = 1; std::getline(in, line); number++) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::string verb;
        if (!(words >> verb))
            continue;
        request r{};
        bool ok = true;
        if (verb == "alloc") {
            r.kind = request::ALLOC;
            ok = static_cast<bool>(words >> r.value);
            if (ok && !(words >> r.stream))
                r.stream = 0;
            allocs++;
            streams = std::max(streams, r.stream);
        } else if (verb == "free") {
            r.kind = request::FREE;
            ok = (words >> r.value) && r.value < allocs;
        } else if (verb == "empty_cache") {
            r.kind = request::EMPTY_CACHE;
        } else {
            ok = false;
        }
        if (!ok) {
            std::fprintf(stderr, "oracle_driver: %s:%d: not a request: %s\n", path, number,
                         line.c_str());
            return false;
        }
        out.push_back(r);
    }
    return true;
}

std::string escape(const std::string &text)
{
    std::string out;
    for (char c : text) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\\')
            out += "\\\\";
        else
            out += c;
    }
    return out;
}

} // namespace

/* Every cudaMalloc c10 makes comes here first (the executable exports it), then goes on to
 * simcudart's. */
extern "C" __attribute__((visibility("default"))) cudaError_t cudaMalloc(void **pointer,
                                                                         size_t size)
{
    using real_t = cudaError_t (*)(void **, size_t);
    static real_t real = reinterpret_cast<real_t>(dlsym(RTLD_NEXT, "cudaMalloc"));
    cuda_malloc_calls++;
    return real ? real(pointer, size) : cudaErrorInitializationError;
}

/* The settings c10 parsed from the environment, or its error. */
static int print_config()
{
    using config = c10::cuda::CUDACachingAllocator::CUDAAllocatorConfig;
    try {
        size_t split = config::max_split_size();
        std::printf("max_split_size %zu\n", split);
        std::printf("max_non_split_rounding %zu\n", config::max_non_split_rounding_size());
        std::printf("garbage_collection_threshold %.17g\n", config::garbage_collection_threshold());
        std::printf("expandable_segments %d\n", config::expandable_segments() ? 1 : 0);
        std::printf("roundup");
        for (size_t v : config::roundup_power2_divisions())
            std::printf(" %zu", v);
        std::printf("\n");
    } catch (const c10::Error &e) {
        std::printf("config_error %s\n", escape(e.what_without_backtrace()).c_str());
    } catch (const std::exception &e) {
        std::printf("config_error %s\n", escape(e.what()).c_str());
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && std::strcmp(argv[1], "--config") == 0)
        return print_config();
    double fraction = 0;
    int arg = 1;
    if (arg + 1 < argc && std::strcmp(argv[arg], "--memory-fraction") == 0) {
        fraction = std::atof(argv[arg + 1]);
        arg += 2;
    }
    if (arg + 1 != argc) {
        std::fprintf(stderr, "usage: oracle_driver [--memory-fraction F] SCRIPT\n");
        return 2;
    }
    std::vector<request> script;
    unsigned streams = 0;
    if (!parse_script(argv[arg], script, streams))
        return 2;

    namespace alloc = c10::cuda::CUDACachingAllocator;
    try {
        if (cudaSetDevice(0) != cudaSuccess) {
            std::fprintf(stderr, "oracle_driver: no device (is simcuda on LD_LIBRARY_PATH?)\n");
            return 2;
        }
        c10::cuda::_internal::setHasPrimaryContext(has_primary_context);
        c10::cuda::DriverAPI *api = c10::cuda::DriverAPI::get();
        real_mem_create = api->cuMemCreate_;
        api->cuMemCreate_ = counting_mem_create;
        alloc::init(c10::cuda::device_count());
        if (fraction > 0)
            alloc::setMemoryFraction(fraction, 0);

        std::vector<cudaStream_t> handles{nullptr};
        for (unsigned s = 1; s <= streams; s++)
            handles.push_back(c10::cuda::getStreamFromPool(false, 0).stream());
        std::sort(handles.begin() + 1, handles.end());

        std::vector<void *> tensors;
        tensors.reserve(script.size());
        long long first_oom = -1, failed = 0;
        std::string message;
        timespec wall0, cpu0, wall1, cpu1;
        clock_gettime(CLOCK_MONOTONIC, &wall0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
        for (const request &r : script) {
            switch (r.kind) {
            case request::ALLOC:
                try {
                    tensors.push_back(alloc::raw_alloc_with_stream(r.value, handles[r.stream]));
                } catch (const c10::OutOfMemoryError &e) {
                    if (first_oom < 0) {
                        first_oom = static_cast<long long>(tensors.size());
                        message = e.what_without_backtrace();
                    }
                    failed++;
                    tensors.push_back(nullptr);
                }
                break;
            case request::FREE:
                if (tensors[r.value])
                    alloc::raw_delete(tensors[r.value]);
                tensors[r.value] = nullptr;
                break;
            case request::EMPTY_CACHE: alloc::emptyCache(); break;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &wall1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
        auto seconds = [](const timespec &a, const timespec &b) {
            return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
        };

        const auto stats = alloc::getDeviceStats(0);
        const auto all = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
        long long attempts = cuda_malloc_calls;
        if (c10::cuda::CUDACachingAllocator::CUDAAllocatorConfig::expandable_segments())
            attempts += stats.num_device_alloc + failed_mem_create;
        std::printf("requests %zu\n", tensors.size());
        std::printf("oom %s\n", failed ? "yes" : "no");
        std::printf("first_oom_request %lld\n", first_oom);
        std::printf("failed_requests %lld\n", failed);
        std::printf("peak_reserved %lld\n", (long long)stats.reserved_bytes[all].peak);
        std::printf("peak_allocated %lld\n", (long long)stats.allocated_bytes[all].peak);
        std::printf("reserved %lld\n", (long long)stats.reserved_bytes[all].current);
        std::printf("allocated %lld\n", (long long)stats.allocated_bytes[all].current);
        std::printf("device_alloc_calls %lld\n", attempts);
        std::printf("num_device_alloc %lld\n", (long long)stats.num_device_alloc);
        std::printf("num_device_free %lld\n", (long long)stats.num_device_free);
        std::printf("num_alloc_retries %lld\n", (long long)stats.num_alloc_retries);
        std::printf("num_ooms %lld\n", (long long)stats.num_ooms);
        std::printf("oom_message %s\n", escape(message).c_str());
        std::printf("loop_seconds %.9f\n", seconds(wall0, wall1));
        std::printf("loop_cpu_seconds %.9f\n", seconds(cpu0, cpu1));
    } catch (const c10::Error &e) {
        std::fprintf(stderr, "oracle_driver: c10 error: %s\n", e.what_without_backtrace());
        return 3;
    }
    return 0;
}
