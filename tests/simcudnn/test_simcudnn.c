/* simcudnn: the version queries, the error strings, and every other function refused with
 * cuDNN 9's CUDNN_STATUS_NOT_SUPPORTED (3000). The functions are declared here as cuDNN 9's
 * cudnn_graph.h / cudnn_ops.h declare them (statuses as int). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#define NOT_SUPPORTED 3000

size_t cudnnGetVersion(void);
size_t cudnnGetCudartVersion(void);
const char *cudnnGetErrorString(int status);
void cudnnGetLastErrorString(char *message, size_t max_size);
int cudnnGetProperty(int type, int *value);
int cudnnCreate(void **handle);
int cudnnCreateTensorDescriptor(void **descriptor);
int cudnnConvolutionForward(void *handle, const void *alpha, const void *x_desc, const void *x,
                            const void *w_desc, const void *w, const void *conv_desc, int algo,
                            void *workspace, size_t workspace_size, const void *beta,
                            const void *y_desc, void *y);

Test(simcudnn, versions_are_cudnn_9_0_0_on_cuda_12_4)
{
    cr_assert_eq(cudnnGetVersion(), 90000);
    cr_assert_eq(cudnnGetCudartVersion(), 12040);
    int major = -1, minor = -1, patch = -1;
    cr_assert_eq(cudnnGetProperty(0, &major), 0);
    cr_assert_eq(cudnnGetProperty(1, &minor), 0);
    cr_assert_eq(cudnnGetProperty(2, &patch), 0);
    cr_assert_eq(major * 10000 + minor * 100 + patch, (int)cudnnGetVersion());
    cr_assert_eq(cudnnGetProperty(3, &major), 2000, "CUDNN_STATUS_BAD_PARAM");
    cr_assert_eq(cudnnGetProperty(0, NULL), 2000);
}

Test(simcudnn, every_other_function_is_not_supported)
{
    void *handle = (void *)1, *descriptor = (void *)1;
    cr_assert_eq(cudnnCreate(&handle), NOT_SUPPORTED);
    cr_assert_eq(handle, (void *)1, "nothing is written");
    cr_assert_eq(cudnnCreateTensorDescriptor(&descriptor), NOT_SUPPORTED);
    char message[128] = "unchanged";
    cudnnGetLastErrorString(message, sizeof message);
    cr_assert_not_null(strstr(message, "cudnnCreateTensorDescriptor is not supported"), "%s",
                       message);
    cr_assert_eq(cudnnConvolutionForward(NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL,
                                         NULL, NULL),
                 NOT_SUPPORTED);
    cudnnGetLastErrorString(message, 8);
    cr_assert_str_eq(message, "simcudn", "cut to the buffer");
}

Test(simcudnn, error_strings_name_cudnn_9_statuses)
{
    cr_assert_str_eq(cudnnGetErrorString(0), "CUDNN_STATUS_SUCCESS");
    cr_assert_str_eq(cudnnGetErrorString(NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
    cr_assert_str_eq(cudnnGetErrorString(2000), "CUDNN_STATUS_BAD_PARAM");
    cr_assert_str_eq(cudnnGetErrorString(9), "CUDNN_UNKNOWN_STATUS", "cuDNN 8's number");
}

Test(simcudnn, exports_carry_the_node_libcudnn_so_9)
{
    cr_assert_not_null(dlvsym(RTLD_DEFAULT, "cudnnGetVersion", "libcudnn.so.9"));
    cr_assert_not_null(dlvsym(RTLD_DEFAULT, "cudnnBackendExecute", "libcudnn.so.9"));
    cr_assert_null(dlsym(RTLD_DEFAULT, "last_refused"), "only cudnn* is exported");
}
