/* demo_diffusion.c — a stand-in for a Stable Diffusion inpainting run on a
 * 24 GiB card, for `cumemtrace demo`.
 *
 * It allocates like PyTorch does: tensors go through the caching-allocator
 * model (tools/model), and every segment the model takes from or gives back
 * to the device is a real cuMemAlloc_v2/cuMemFree_v2 on the driver it is
 * linked against (simcuda in the demo). PYTORCH_CUDA_ALLOC_CONF is honoured
 * (parsed by the model), and PYTORCH_NO_CUDA_MEMORY_CACHING=1 makes every
 * tensor its own exact-size cuMemAlloc/cuMemFree, called from the function
 * that needs the tensor — the tensor-level stream `cumemtrace whatif` replays.
 *
 * The allocation pattern is the one in the write-up (tools/model/
 * model_scenario.h): three weight tensors, three denoising steps that each
 * leave a 950 MiB tensor behind a freed 1000 MiB one, then the VAE decodes the
 * first image in a 6.18 GiB buffer, a 100 MiB mask for the second image is
 * cut from that cached buffer, and decoding the second image fails:
 *   Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; 11.39 GiB
 *   already allocated; 3.43 GiB free; 17.62 GiB reserved in total by PyTorch)
 * With max_split_size_mb:6144 (or any value up to 6329) the run completes.
 * On simcuda the program sets SIMCUDA_MEMORY=24GiB and SIMCUDA_USED=2764MiB
 * unless they are set, so that 21556 MiB are free after the context's 256 MiB.
 *
 * The caching allocator reports what it does through cumemtrace/annotate.h
 * (as a PyTorch build with cumemtrace's hooks would): the ALLOCATOR record
 * with the settings it runs under, every tensor's block (alloc,
 * free_requested, free_completed, with the stack of the function that wanted
 * it), every segment (segment_alloc/free, segment_map/unmap for expandable
 * segments) at the device pointer the driver returned, and the OOM with its
 * figures. So the ordinary, caching-on run carries the tensor-level stream
 * too. Without cumemtrace these calls do nothing.
 *
 * Exit status: 0 done, 1 CUDA out of memory (PyTorch's message on stderr),
 * 2 bad PYTORCH_CUDA_ALLOC_CONF, 3 another CUDA error. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caching_model.h"
#include "cmt_grow.h"
#include "cumemtrace/annotate.h"

#define MIB ((size_t)1 << 20)
#define KIB ((size_t)1 << 10)
#define NOINLINE __attribute__((noinline))

struct mapping {
    uint64_t model_address, size;
    CUdeviceptr ptr;
};

/* What the model models (tools/model: c10 2.6's allocator), for the ALLOCATOR record. */
#define TORCH_VERSION "2.6.0"
#define STREAM 0 /* the default stream */
#define DEVICE 0

struct demo {
    int caching;
    struct cmt_model *model;
    struct mapping *maps; /* model segment or page -> device pointer */
    size_t map_count, map_capacity;
    size_t live_bytes; /* uncached mode: what live tensors hold */
    CUresult last_error;
    uint32_t annotated; /* the allocator's annotate.h id, 0 without cumemtrace */
    int expandable;     /* device hooks map and unmap pages of expandable segments */
};

struct tensor {
    cmt_model_handle handle; /* caching mode */
    CUdeviceptr ptr;         /* uncached mode */
    size_t bytes;
};

static struct demo demo;

static void check(CUresult rc, const char *what)
{
    if (rc == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    cuGetErrorName(rc, &name);
    fprintf(stderr, "demo_diffusion: %s failed: %s\n", what, name ? name : "unknown error");
    exit(3);
}

/* ---- the device side of the caching allocator ------------------------ */

static int device_alloc(void *ctx, uint64_t address, uint64_t size)
{
    struct demo *d = ctx;
    if (CMT_GROW(d->maps, d->map_capacity, d->map_count + 1, 64) != 0)
        return -1;
    CUdeviceptr ptr = 0;
    CUresult rc = cuMemAlloc_v2(&ptr, size);
    if (rc != CUDA_SUCCESS) {
        d->last_error = rc;
        return -1;
    }
    d->maps[d->map_count++] = (struct mapping){address, size, ptr};
    uint64_t flags = (d->expandable ? CMT_ANNOTATE_FLAG_EXPANDABLE : 0) |
                     (size == 2 * MIB ? CMT_ANNOTATE_FLAG_SMALL : 0); /* small pool: 2 MiB */
    cmt_annotate_segment(d->annotated,
                         d->expandable ? CMT_ANNOTATE_SEGMENT_MAP : CMT_ANNOTATE_SEGMENT_ALLOC,
                         DEVICE, ptr, size, STREAM, 0, flags);
    return 0;
}

static void device_free(void *ctx, uint64_t address, uint64_t size)
{
    struct demo *d = ctx;
    for (size_t i = 0; i < d->map_count; i++) {
        if (d->maps[i].model_address != address)
            continue;
        /* before the driver's free, so the trace never has the allocator holding memory
         * the driver already took back */
        cmt_annotate_segment(d->annotated,
                             d->expandable ? CMT_ANNOTATE_SEGMENT_UNMAP : CMT_ANNOTATE_SEGMENT_FREE,
                             DEVICE, d->maps[i].ptr, size, STREAM, 0,
                             d->expandable ? CMT_ANNOTATE_FLAG_EXPANDABLE : 0);
        check(cuMemFree_v2(d->maps[i].ptr), "cuMemFree_v2");
        d->maps[i] = d->maps[--d->map_count];
        return;
    }
}

/* The device pointer behind a model address (0 when no segment or page holds it). */
static uint64_t device_address(uint64_t model_address)
{
    for (size_t i = 0; i < demo.map_count; i++) {
        const struct mapping *m = &demo.maps[i];
        if (model_address >= m->model_address && model_address - m->model_address < m->size)
            return m->ptr + (model_address - m->model_address);
    }
    return 0;
}

/* What annotate.h reports of a tensor's block (device addresses). */
struct block_report {
    uint64_t addr, size, requested, stream, segment, flags;
};

/* @return 1 and *r when the allocator is annotated (cumemtrace is there). */
static int describe_block(const struct tensor *t, struct block_report *r)
{
    struct cmt_model_block b;
    if (!demo.annotated || cmt_model_block_info(demo.model, t->handle, &b) != CMT_EOK)
        return 0;
    *r = (struct block_report){.addr = device_address(b.address),
                               .size = b.size,
                               .requested = b.requested,
                               .stream = b.stream,
                               .segment = device_address(b.address - b.segment_offset),
                               .flags = (b.expandable ? CMT_ANNOTATE_FLAG_EXPANDABLE : 0) |
                                        (b.small_pool ? CMT_ANNOTATE_FLAG_SMALL : 0)};
    return 1;
}

/* ---- out of memory, as PyTorch says it -------------------------------- */

/* PyTorch asks the driver for free memory after releasing what it could. */
static void measure_device(struct cmt_model_oom *o)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (cuMemGetInfo_v2(&free_bytes, &total_bytes) == CUDA_SUCCESS) {
        o->device_free = free_bytes;
        o->device_total = total_bytes;
    }
}

static void raise_oom(const struct cmt_model_oom *o)
{
    char msg[1024];
    cmt_model_format_oom_as(o, CMT_MODEL_OOM_1X, msg, sizeof msg); /* the write-up's PyTorch */
    fprintf(stderr, "torch.cuda.OutOfMemoryError: %s\n", msg);
    exit(1);
}

/* @return 0 (the tensor's block in *r, r->size 0 when not annotated), 1 out of memory. */
static NOINLINE int cached_alloc(struct tensor *t, size_t bytes, struct block_report *r)
{
    t->bytes = bytes;
    int rc = cmt_model_alloc(demo.model, bytes, 0, &t->handle);
    if (rc == CMT_EMODEL_OOM)
        return 1;
    if (rc != CMT_EOK) {
        fprintf(stderr, "demo_diffusion: allocator: %s\n", cmt_strerror(rc));
        exit(3);
    }
    if (!describe_block(t, r))
        r->size = 0;
    return 0;
}

static NOINLINE void uncached_failed(size_t bytes, CUresult rc)
{
    if (rc != CUDA_ERROR_OUT_OF_MEMORY)
        check(rc, "cuMemAlloc_v2");
    struct cmt_model_oom o = {.requested = bytes,
                              .rounded = bytes,
                              .alloc_size = bytes,
                              .allocated = demo.live_bytes,
                              .reserved = demo.live_bytes};
    measure_device(&o);
    raise_oom(&o);
}

/* With caching on, what the allocator did is reported from here too, so the stack of
 * an alloc or OOM event starts in the function that wanted the tensor. The OOM entry
 * has PyTorch's trace figures: the rounded request, the device's free memory. */
#define CACHED_NEW(tensor, bytes)                                                                 \
    do {                                                                                          \
        struct block_report r_;                                                                   \
        if (cached_alloc((tensor), (bytes), &r_)) {                                               \
            struct cmt_model_oom o_ = *cmt_model_last_oom(demo.model);                            \
            measure_device(&o_);                                                                  \
            cmt_annotate_oom(demo.annotated, DEVICE, o_.rounded, o_.stream, o_.device_free,       \
                             o_.device_total, o_.allocated, o_.reserved);                         \
            raise_oom(&o_);                                                                       \
        }                                                                                         \
        if (r_.size)                                                                              \
            cmt_annotate_alloc(demo.annotated, DEVICE, r_.addr, r_.size, r_.requested, r_.stream, \
                               0, r_.segment, r_.flags);                                          \
    } while (0)

/* A macro, so that with caching off the driver is called from the function
 * that wants the tensor and the recorded stack names it. */
#define TENSOR_NEW(t, size)                                  \
    do {                                                     \
        if (demo.caching) {                                  \
            CACHED_NEW((t), (size));                         \
        } else {                                             \
            (t)->bytes = (size);                             \
            CUresult rc_ = cuMemAlloc_v2(&(t)->ptr, (size)); \
            if (rc_ != CUDA_SUCCESS)                         \
                uncached_failed((size), rc_);                \
            demo.live_bytes += (size);                       \
        }                                                    \
    } while (0)

static NOINLINE void tensor_free(struct tensor *t)
{
    struct block_report r;
    if (demo.caching && describe_block(t, &r)) {
        cmt_annotate_free(demo.annotated, CMT_ANNOTATE_FREE_REQUESTED, DEVICE, r.addr, r.size,
                          r.stream);
        /* the model frees at once (no stream-ordered deferral): completed as well */
        cmt_annotate_free(demo.annotated, CMT_ANNOTATE_FREE_COMPLETED, DEVICE, r.addr, r.size,
                          r.stream);
    }
    if (demo.caching) {
        cmt_model_free(demo.model, t->handle);
    } else {
        check(cuMemFree_v2(t->ptr), "cuMemFree_v2");
        demo.live_bytes -= t->bytes;
    }
    memset(t, 0, sizeof *t);
}

/* "GPU work" between allocations, so the timeline has a shape. */
static void compute(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the pipeline ----------------------------------------------------- */

struct pipeline {
    struct tensor unet, text_encoder, vae;
    struct tensor step_cache[3];
    struct tensor mask;
};

static NOINLINE void load_unet_weights(struct pipeline *p)
{
    TENSOR_NEW(&p->unet, 3000 * MIB);
    compute(4);
}

static NOINLINE void load_text_encoder(struct pipeline *p)
{
    TENSOR_NEW(&p->text_encoder, 3000 * MIB);
    compute(4);
}

static NOINLINE void load_vae_weights(struct pipeline *p)
{
    TENSOR_NEW(&p->vae, 2714 * MIB);
    compute(4);
}

/* Q x K^T for the whole latent: big, short-lived. */
static NOINLINE void attention_scores(void)
{
    struct tensor scores;
    TENSOR_NEW(&scores, 1000 * MIB);
    compute(3);
    tensor_free(&scores);
}

/* One denoising step: attention, then the residuals the next step reuses. */
static NOINLINE void inpaint_step(struct pipeline *p, int step)
{
    attention_scores();
    TENSOR_NEW(&p->step_cache[step], 950 * MIB);
    compute(3);
}

/* The decoder's activations for one 4096x4096 image: 6.18 GiB. */
static NOINLINE void vae_decode(int image)
{
    struct tensor activations;
    printf("  decoding image %d\n", image + 1);
    fflush(stdout);
    TENSOR_NEW(&activations, 6330 * MIB - 768 * KIB);
    compute(6);
    tensor_free(&activations);
}

static NOINLINE void prepare_mask(struct pipeline *p)
{
    TENSOR_NEW(&p->mask, 100 * MIB);
    compute(2);
}

static void run_pipeline(void)
{
    struct pipeline p = {0};
    printf("  loading weights (UNet, text encoder, VAE)\n");
    fflush(stdout);
    cmt_annotate_range_push("load_weights"); /* the phases every view names */
    load_unet_weights(&p);
    load_text_encoder(&p);
    load_vae_weights(&p);
    cmt_annotate_range_pop();
    for (int step = 0; step < 3; step++) {
        cmt_annotate_range_push("denoise");
        inpaint_step(&p, step);
        cmt_annotate_range_pop();
    }
    cmt_annotate_range_push("vae_decode");
    vae_decode(0);
    cmt_annotate_range_pop();
    cmt_annotate_range_push("prepare_mask");
    prepare_mask(&p);
    cmt_annotate_range_pop();
    cmt_annotate_range_push("vae_decode");
    vae_decode(1);
    cmt_annotate_range_pop();
    printf("  done: 2 images inpainted\n");
    tensor_free(&p.mask);
    for (int step = 0; step < 3; step++)
        tensor_free(&p.step_cache[step]);
    tensor_free(&p.vae);
    tensor_free(&p.text_encoder);
    tensor_free(&p.unet);
}

/* ---- setup ------------------------------------------------------------ */

static void setup_allocator(size_t total)
{
    const char *no_caching = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    demo.caching = !(no_caching && no_caching[0] == '1');
    if (!demo.caching) {
        printf("  allocator: caching disabled (PYTORCH_NO_CUDA_MEMORY_CACHING=1)\n");
        return;
    }
    struct cmt_model_config config;
    /* The driver decides what fits: the model may try up to the whole card. */
    cmt_model_config_default(&config, total);
    config.device_total = total;
    const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
    struct cmt_err err = {0};
    if (conf && cmt_model_config_parse(&config, conf, &err) != CMT_EOK) {
        fprintf(stderr, "demo_diffusion: PYTORCH_CUDA_ALLOC_CONF: %s\n", cmt_err_message(&err));
        exit(2);
    }
    if (cmt_model_create(&config, &demo.model) != CMT_EOK) {
        fprintf(stderr, "demo_diffusion: cannot create the allocator\n");
        exit(3);
    }
    demo.expandable = cmt_model_get_config(demo.model)->expandable_segments;
    /* the settings as the allocator read them: the raw string, "" for the defaults */
    demo.annotated = cmt_annotate_allocator("pytorch-cuda-caching", TORCH_VERSION,
                                            conf ? conf : "");
    struct cmt_model_device_hooks hooks = {device_alloc, device_free, &demo};
    cmt_model_set_device_hooks(demo.model, &hooks);
    printf("  allocator: caching, PYTORCH_CUDA_ALLOC_CONF=%s\n", conf ? conf : "");
}

int main(void)
{
    /* Only simcuda reads these; a real driver ignores them. */
    setenv("SIMCUDA_MEMORY", "24GiB", 0);
    setenv("SIMCUDA_USED", "2764MiB", 0);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "256MiB", 0);

    CUdevice dev;
    CUcontext ctx;
    char name[128] = "";
    size_t total = 0;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
    check(cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    printf("demo_diffusion: Stable Diffusion inpainting, 2 images at 4096x4096 on %s\n", name);
    setup_allocator(total);
    run_pipeline();
    if (demo.model) {
        cmt_model_empty_cache(demo.model);
        cmt_model_destroy(demo.model);
    }
    free(demo.maps);
    check(cuDevicePrimaryCtxRelease_v2(dev), "cuDevicePrimaryCtxRelease");
    return 0;
}
