/* simcudnn: a stand-in libcudnn.so.9 that lets a program linked against cuDNN 9 (PyTorch) load
 * where NVIDIA's cuDNN is absent. It computes nothing: every function of simcudnn_symbols.h
 * answers CUDNN_STATUS_NOT_SUPPORTED and remembers its name for cudnnGetLastErrorString; the
 * version queries give cuDNN 9.0.0 (Debian trixie's nvidia-cudnn 9.0.0.312) and CUDA 12.4. */
#include "simcudnn_symbols.h"

#include <stddef.h>
#include <stdio.h>

#define SIMCUDNN_EXPORT __attribute__((visibility("default")))

/* cuDNN 9's numbering (cudnnStatus_t, cudnn_graph.h): the families are thousands, so
 * CUDNN_STATUS_NOT_SUPPORTED is 3000 (cuDNN 8's was 9). */
#define SIMCUDNN_STATUSES(X)                             \
    X(CUDNN_STATUS_SUCCESS, 0)                           \
    X(CUDNN_STATUS_NOT_INITIALIZED, 1001)                \
    X(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, 1002)    \
    X(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH, 1003) \
    X(CUDNN_STATUS_DEPRECATED, 1004)                     \
    X(CUDNN_STATUS_LICENSE_ERROR, 1005)                  \
    X(CUDNN_STATUS_RUNTIME_IN_PROGRESS, 1006)            \
    X(CUDNN_STATUS_RUNTIME_FP_OVERFLOW, 1007)            \
    X(CUDNN_STATUS_BAD_PARAM, 2000)                      \
    X(CUDNN_STATUS_NOT_SUPPORTED, 3000)                  \
    X(CUDNN_STATUS_INTERNAL_ERROR, 4000)                 \
    X(CUDNN_STATUS_EXECUTION_FAILED, 5000)

typedef enum {
#define SIMCUDNN__ENUM(name, value) name = value,
    SIMCUDNN_STATUSES(SIMCUDNN__ENUM)
#undef SIMCUDNN__ENUM
} cudnnStatus_t;

/* libraryPropertyType (library_types.h). */
enum { SIMCUDNN_MAJOR_VERSION, SIMCUDNN_MINOR_VERSION, SIMCUDNN_PATCH_LEVEL };

#define SIMCUDNN_MAJOR 9
#define SIMCUDNN_MINOR 0
#define SIMCUDNN_PATCH 0
/* cuDNN 9's CUDNN_VERSION: major * 10000 + minor * 100 + patch. */
#define SIMCUDNN_VERSION (SIMCUDNN_MAJOR * 10000 + SIMCUDNN_MINOR * 100 + SIMCUDNN_PATCH)
#define SIMCUDNN_CUDART_VERSION 12040

/* The name of the calling thread's last refused function. */
static _Thread_local const char *last_refused;

SIMCUDNN_EXPORT size_t cudnnGetVersion(void);
SIMCUDNN_EXPORT size_t cudnnGetCudartVersion(void);
SIMCUDNN_EXPORT const char *cudnnGetErrorString(cudnnStatus_t status);
SIMCUDNN_EXPORT void cudnnGetLastErrorString(char *message, size_t max_size);
SIMCUDNN_EXPORT cudnnStatus_t cudnnGetProperty(int type, int *value);

size_t cudnnGetVersion(void)
{
    return SIMCUDNN_VERSION;
}

size_t cudnnGetCudartVersion(void)
{
    return SIMCUDNN_CUDART_VERSION;
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch (status) {
#define SIMCUDNN__NAME(name, value) \
    case name: return #name;
        SIMCUDNN_STATUSES(SIMCUDNN__NAME)
#undef SIMCUDNN__NAME
    }
    return "CUDNN_UNKNOWN_STATUS";
}

void cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (!message || max_size == 0)
        return;
    if (last_refused)
        snprintf(message, max_size, "simcudnn: %s is not supported (cuDNN is simulated)",
                 last_refused);
    else
        message[0] = '\0';
}

cudnnStatus_t cudnnGetProperty(int type, int *value)
{
    if (!value)
        return CUDNN_STATUS_BAD_PARAM;
    switch (type) {
    case SIMCUDNN_MAJOR_VERSION: *value = SIMCUDNN_MAJOR; return CUDNN_STATUS_SUCCESS;
    case SIMCUDNN_MINOR_VERSION: *value = SIMCUDNN_MINOR; return CUDNN_STATUS_SUCCESS;
    case SIMCUDNN_PATCH_LEVEL: *value = SIMCUDNN_PATCH; return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_BAD_PARAM;
}

/* Each refused function reads none of its parameters, so it is defined without them: on the
 * x86-64 and AArch64 calling conventions the caller's arguments are then simply unread. */
#define SIMCUDNN__REFUSE(name)                \
    SIMCUDNN_EXPORT cudnnStatus_t name(void); \
    cudnnStatus_t name(void)                  \
    {                                         \
        last_refused = #name;                 \
        return CUDNN_STATUS_NOT_SUPPORTED;    \
    }
SIMCUDNN_NOT_SUPPORTED(SIMCUDNN__REFUSE)
#undef SIMCUDNN__REFUSE
