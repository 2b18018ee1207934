/* Graphs, as far as a runtime with no kernels can take them: a graph is a list of nodes in the
 * order they were added (an order their dependencies always respect), and launching its
 * instantiation runs the nodes in that order on the calling thread: copies and sets as the
 * runtime's own calls, host nodes by calling them, kernels and empty nodes as nothing.
 *
 * Stream capture goes through the driver's (cuStreamBeginCapture, cuStreamEndCapture): while a
 * stream captures, cudaMallocAsync / cudaFreeAsync on it become memory nodes of the driver's
 * capture graph, which cudaStreamEndCapture hands to a new runtime graph as its driver graph;
 * other work given to a capturing stream runs at once, as on any simcuda stream, and is not
 * part of the graph.
 * Graph memory nodes go through the driver, as in the real runtime: a graph with memory nodes
 * owns a driver graph that holds them (cuGraphAddMemAllocNode, cuGraphAddMemFreeNode), its
 * instantiation a driver exec (cuGraphInstantiateWithFlags), and a launch launches that exec
 * first (cuGraphLaunch: the allocations take their memory, the graph's frees run), then runs
 * the other nodes. The driver graph holds the memory nodes only: their dependencies on other
 * nodes stay in the runtime graph, whose order the launch follows for everything else. */
#include "simcudart_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIMCUDART__GRAPH_MAGIC 0x47524150u /* "GRAP" */
#define SIMCUDART__EXEC_MAGIC 0x47455845u  /* "GEXE" */

enum node_kind {
    NODE_EMPTY,
    NODE_KERNEL,
    NODE_COPY,
    NODE_COPY_1D,
    NODE_SET,
    NODE_HOST,
    NODE_MEMORY /* an allocation or free node: the driver graph's */
};

/* The runtime's and the driver's memory node parameters share their layout. */
_Static_assert(sizeof(struct cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS),
               "cudaMemAllocNodeParams is CUDA_MEM_ALLOC_NODE_PARAMS");

struct CUgraphNode_st {
    enum node_kind kind;
    struct CUgraph_st *graph;
    union {
        struct cudaMemcpy3DParms copy;
        struct {
            void *dst;
            const void *src;
            size_t count;
            enum cudaMemcpyKind kind;
        } copy_1d;
        struct cudaMemsetParams set;
        struct cudaHostNodeParams host;
        CUgraphNode driver; /* NODE_MEMORY */
    } u;
};

struct CUgraph_st {
    uint32_t magic;
    struct CUgraphNode_st **nodes;
    size_t count, capacity;
    /* the driver graph of its memory nodes, NULL without any (the driver's CUgraph is a
     * pointer to its own struct of the same tag: a different object) */
    CUgraph driver;
};

struct CUgraphExec_st {
    uint32_t magic;
    struct CUgraph_st *graph; /* a clone, so later edits of the source do not reach it */
    CUgraphExec driver;       /* the driver graph's exec, NULL without memory nodes */
};

static bool graph_valid(cudaGraph_t graph)
{
    return graph && graph->magic == SIMCUDART__GRAPH_MAGIC;
}

cudaError_t cudaGraphCreate(cudaGraph_t *graph, unsigned int flags)
{
    if (!graph || flags != 0)
        return simcudart__result(cudaErrorInvalidValue);
    struct CUgraph_st *created = calloc(1, sizeof(*created));
    if (!created)
        return simcudart__result(cudaErrorMemoryAllocation);
    created->magic = SIMCUDART__GRAPH_MAGIC;
    *graph = created;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    if (!graph_valid(graph))
        return simcudart__result(cudaErrorInvalidValue);
    for (size_t i = 0; i < graph->count; i++)
        free(graph->nodes[i]);
    free(graph->nodes);
    if (graph->driver) {
        SIMCUDART_ENTER();
        cuGraphDestroy(graph->driver);
    }
    graph->magic = 0;
    free(graph);
    return cudaSuccess;
}

/* Appends a node after checking that its dependencies belong to the graph. */
static cudaError_t add_node(cudaGraphNode_t *out, cudaGraph_t graph,
                            const cudaGraphNode_t *dependencies, size_t count,
                            struct CUgraphNode_st node)
{
    if (!out || !graph_valid(graph) || (count && !dependencies))
        return simcudart__result(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        if (!dependencies[i] || dependencies[i]->graph != graph)
            return simcudart__result(cudaErrorInvalidValue);
    }
    if (graph->count == graph->capacity) {
        size_t capacity = graph->capacity ? graph->capacity * 2 : 8;
        struct CUgraphNode_st **grown = realloc(graph->nodes, capacity * sizeof(*grown));
        if (!grown)
            return simcudart__result(cudaErrorMemoryAllocation);
        graph->nodes = grown;
        graph->capacity = capacity;
    }
    struct CUgraphNode_st *added = malloc(sizeof(*added));
    if (!added)
        return simcudart__result(cudaErrorMemoryAllocation);
    *added = node;
    added->graph = graph;
    graph->nodes[graph->count++] = added;
    *out = added;
    return cudaSuccess;
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                  const cudaGraphNode_t *dependencies, size_t count)
{
    return add_node(node, graph, dependencies, count, (struct CUgraphNode_st){.kind = NODE_EMPTY});
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                   const cudaGraphNode_t *dependencies, size_t count,
                                   const struct cudaKernelNodeParams *params)
{
    if (!params)
        return simcudart__result(cudaErrorInvalidValue);
    return add_node(node, graph, dependencies, count, (struct CUgraphNode_st){.kind = NODE_KERNEL});
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                   const cudaGraphNode_t *dependencies, size_t count,
                                   const struct cudaMemcpy3DParms *params)
{
    if (!params)
        return simcudart__result(cudaErrorInvalidValue);
    struct CUgraphNode_st added = {.kind = NODE_COPY, .u.copy = *params};
    return add_node(node, graph, dependencies, count, added);
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *node, cudaGraph_t graph,
                                     const cudaGraphNode_t *dependencies, size_t count, void *dst,
                                     const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    struct CUgraphNode_st added = {.kind = NODE_COPY_1D};
    added.u.copy_1d.dst = dst;
    added.u.copy_1d.src = src;
    added.u.copy_1d.count = bytes;
    added.u.copy_1d.kind = kind;
    return add_node(node, graph, dependencies, count, added);
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                   const cudaGraphNode_t *dependencies, size_t count,
                                   const struct cudaMemsetParams *params)
{
    if (!params || (params->elementSize != 1 && params->elementSize != 4))
        return simcudart__result(params ? cudaErrorNotSupported : cudaErrorInvalidValue);
    struct CUgraphNode_st added = {.kind = NODE_SET, .u.set = *params};
    return add_node(node, graph, dependencies, count, added);
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                 const cudaGraphNode_t *dependencies, size_t count,
                                 const struct cudaHostNodeParams *params)
{
    if (!params || !params->fn)
        return simcudart__result(cudaErrorInvalidValue);
    struct CUgraphNode_st added = {.kind = NODE_HOST, .u.host = *params};
    return add_node(node, graph, dependencies, count, added);
}

/* Checks a memory node's place in the runtime graph (its dependencies), then adds it to the
 * driver graph, made at the first memory node. */
static cudaError_t add_memory_node(cudaGraphNode_t *node, cudaGraph_t graph,
                                   const cudaGraphNode_t *dependencies, size_t count,
                                   struct cudaMemAllocNodeParams *alloc, void *freed)
{
    if (!node || !graph_valid(graph) || (count && !dependencies))
        return simcudart__result(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        if (!dependencies[i] || dependencies[i]->graph != graph)
            return simcudart__result(cudaErrorInvalidValue);
    }
    SIMCUDART_ENTER();
    if (!graph->driver) {
        cudaError_t error = simcudart__driver_result(cuGraphCreate(&graph->driver, 0));
        if (error != cudaSuccess)
            return error;
    }
    CUgraphNode driver;
    CUresult result = alloc ? cuGraphAddMemAllocNode(&driver, graph->driver, NULL, 0,
                                                     (CUDA_MEM_ALLOC_NODE_PARAMS *)alloc)
                            : cuGraphAddMemFreeNode(&driver, graph->driver, NULL, 0,
                                                    (CUdeviceptr)freed);
    if (result != CUDA_SUCCESS)
        return simcudart__driver_result(result);
    struct CUgraphNode_st added = {.kind = NODE_MEMORY, .u.driver = driver};
    return add_node(node, graph, dependencies, count, added);
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                     const cudaGraphNode_t *dependencies, size_t count,
                                     struct cudaMemAllocNodeParams *params)
{
    if (!params)
        return simcudart__result(cudaErrorInvalidValue);
    return add_memory_node(node, graph, dependencies, count, params, NULL);
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                    const cudaGraphNode_t *dependencies, size_t count, void *dptr)
{
    return add_memory_node(node, graph, dependencies, count, NULL, dptr);
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
                                           struct cudaMemAllocNodeParams *params_out)
{
    if (!node || node->kind != NODE_MEMORY || !params_out)
        return simcudart__result(cudaErrorInvalidValue);
    return simcudart__driver_result(
        cuGraphMemAllocNodeGetParams(node->u.driver, (CUDA_MEM_ALLOC_NODE_PARAMS *)params_out));
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out)
{
    if (!node || node->kind != NODE_MEMORY || !dptr_out)
        return simcudart__result(cudaErrorInvalidValue);
    return simcudart__driver_result(
        cuGraphMemFreeNodeGetParams(node->u.driver, (CUdeviceptr *)dptr_out));
}

cudaError_t cudaDeviceGraphMemTrim(int device)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(cuDeviceGraphMemTrim(device));
}

/* cudaGraphMemAttributeType and CUgraphMem_attribute number the attributes alike. */
cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                           void *value)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(
        cuDeviceGetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                           void *value)
{
    SIMCUDART_ENTER();
    return simcudart__driver_result(
        cuDeviceSetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count)
{
    if (!graph_valid(graph) || !count)
        return simcudart__result(cudaErrorInvalidValue);
    if (!nodes) {
        *count = graph->count;
        return cudaSuccess;
    }
    size_t given = *count < graph->count ? *count : graph->count;
    memcpy(nodes, graph->nodes, given * sizeof(*nodes));
    for (size_t i = given; i < *count; i++)
        nodes[i] = NULL;
    *count = given;
    return cudaSuccess;
}

static const char *node_kind_name(enum node_kind kind)
{
    static const char *const names[] = {"empty",  "kernel", "memcpy", "memcpy",
                                        "memset", "host",   "memory"};
    return names[kind];
}

/* A DOT digraph of the nodes in the order a launch runs them (the order they were added; the
 * dependencies given are not kept), each labelled with its kind; flags add nothing. */
cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char *path, unsigned int flags)
{
    if (!graph_valid(graph) || !path)
        return simcudart__result(cudaErrorInvalidValue);
    FILE *out = fopen(path, "w");
    if (!out)
        return simcudart__result(cudaErrorOperatingSystem);
    fprintf(out, "digraph simcudart_graph {\n");
    for (size_t i = 0; i < graph->count; i++) {
        fprintf(out, "  node%zu [label=\"%s\"];\n", i, node_kind_name(graph->nodes[i]->kind));
        if (i > 0)
            fprintf(out, "  node%zu -> node%zu;\n", i - 1, i);
    }
    fprintf(out, "}\n");
    return simcudart__result(fclose(out) == 0 ? cudaSuccess : cudaErrorOperatingSystem);
}

/* The runtime nodes of original, in a new graph without a driver graph (an exec's copy). */
static cudaError_t clone_nodes(cudaGraph_t *clone, cudaGraph_t original)
{
    cudaGraph_t made;
    cudaGraphNode_t node;
    cudaError_t error = cudaGraphCreate(&made, 0);
    if (error != cudaSuccess)
        return error;
    for (size_t i = 0; error == cudaSuccess && i < original->count; i++)
        error = add_node(&node, made, NULL, 0, *original->nodes[i]);
    if (error != cudaSuccess) {
        cudaGraphDestroy(made);
        return error;
    }
    *clone = made;
    return cudaSuccess;
}

/* A graph with memory nodes is not cloned: the driver forbids it (cuGraphClone). A driver
 * graph without nodes (a capture that captured no allocation) does not count: the clone has
 * the runtime nodes only. */
cudaError_t cudaGraphClone(cudaGraph_t *clone, cudaGraph_t original)
{
    if (!clone || !graph_valid(original))
        return simcudart__result(cudaErrorInvalidValue);
    if (original->driver) {
        SIMCUDART_ENTER();
        size_t memory_nodes = 0;
        cudaError_t error = simcudart__driver_result(
            cuGraphGetNodes(original->driver, NULL, &memory_nodes));
        if (error != cudaSuccess)
            return error;
        if (memory_nodes)
            return simcudart__result(cudaErrorNotSupported);
    }
    return clone_nodes(clone, original);
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                          unsigned long long flags)
{
    if (!exec || !graph_valid(graph))
        return simcudart__result(cudaErrorInvalidValue);
    struct CUgraphExec_st *made = calloc(1, sizeof(*made));
    if (!made)
        return simcudart__result(cudaErrorMemoryAllocation);
    cudaError_t error = clone_nodes(&made->graph, graph);
    if (error == cudaSuccess && graph->driver) {
        error = simcudart__driver_result(
            cuGraphInstantiateWithFlags(&made->driver, graph->driver, flags));
        if (error != cudaSuccess)
            cudaGraphDestroy(made->graph);
    }
    if (error != cudaSuccess) {
        free(made);
        return error;
    }
    made->magic = SIMCUDART__EXEC_MAGIC;
    *exec = made;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    return cudaGraphInstantiateWithFlags(exec, graph, flags);
}

static cudaError_t run_node(const struct CUgraphNode_st *node, cudaStream_t stream)
{
    const struct cudaMemsetParams *set = &node->u.set;
    cudaError_t error = cudaSuccess;
    switch (node->kind) {
    case NODE_EMPTY:
    case NODE_KERNEL:
    case NODE_MEMORY: return cudaSuccess;
    case NODE_COPY: return cudaMemcpy3DAsync(&node->u.copy, stream);
    case NODE_COPY_1D:
        return cudaMemcpyAsync(node->u.copy_1d.dst, node->u.copy_1d.src, node->u.copy_1d.count,
                               node->u.copy_1d.kind, stream);
    case NODE_SET:
        for (size_t row = 0; error == cudaSuccess && row < set->height; row++) {
            CUdeviceptr dst = (CUdeviceptr)(uintptr_t)set->dst + row * set->pitch;
            error = simcudart__driver_result(
                set->elementSize == 4
                    ? cuMemsetD32Async(dst, set->value, set->width, stream)
                    : cuMemsetD8Async(dst, (unsigned char)set->value, set->width, stream));
        }
        return error;
    case NODE_HOST: node->u.host.fn(node->u.host.userData); return cudaSuccess;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    if (!exec || exec->magic != SIMCUDART__EXEC_MAGIC)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    cudaError_t error = simcudart__driver_result(cuStreamQuery(stream));
    if (error == cudaSuccess && exec->driver) /* its memory first: the nodes use it */
        error = simcudart__driver_result(cuGraphLaunch(exec->driver, stream));
    for (size_t i = 0; error == cudaSuccess && i < exec->graph->count; i++)
        error = run_node(exec->graph->nodes[i], stream);
    return error;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!exec || exec->magic != SIMCUDART__EXEC_MAGIC)
        return simcudart__result(cudaErrorInvalidValue);
    cudaGraphDestroy(exec->graph);
    if (exec->driver)
        cuGraphExecDestroy(exec->driver);
    exec->magic = 0;
    free(exec);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    if (!stream || stream == cudaStreamLegacy)
        return simcudart__result(cudaErrorStreamCaptureUnsupported);
    SIMCUDART_ENTER();
    return simcudart__driver_result(
        cuStreamBeginCapture((CUstream)stream, (CUstreamCaptureMode)mode));
}

/* The runtime graph holds the driver's capture graph (its memory nodes) and no nodes of its
 * own: launching its exec launches the driver's. */
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!graph)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    CUgraph driver = NULL;
    cudaError_t error = simcudart__driver_result(cuStreamEndCapture((CUstream)stream, &driver));
    if (error == cudaSuccess)
        error = cudaGraphCreate(graph, 0);
    if (error == cudaSuccess)
        (*graph)->driver = driver;
    else if (driver)
        cuGraphDestroy(driver);
    return error;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status)
{
    if (!status)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    CUstreamCaptureStatus driver = CU_STREAM_CAPTURE_STATUS_NONE;
    cudaError_t error = simcudart__driver_result(cuStreamIsCapturing((CUstream)stream, &driver));
    *status = (enum cudaStreamCaptureStatus)driver; /* the same values */
    return error;
}

/* graph_out is NULL: the capture's graph is the driver's, not yet a runtime graph. */
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                     unsigned long long *id, cudaGraph_t *graph,
                                     const cudaGraphNode_t **dependencies,
                                     const cudaGraphEdgeData **edges, size_t *count)
{
    if (!status)
        return simcudart__result(cudaErrorInvalidValue);
    SIMCUDART_ENTER();
    CUstreamCaptureStatus driver = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t driver_id = 0;
    cudaError_t error = simcudart__driver_result(
        cuStreamGetCaptureInfo((CUstream)stream, &driver, &driver_id, NULL, NULL, NULL, NULL));
    if (error != cudaSuccess)
        return error;
    *status = (enum cudaStreamCaptureStatus)driver;
    if (id)
        *id = driver == CU_STREAM_CAPTURE_STATUS_NONE ? 0 : driver_id;
    if (graph)
        *graph = NULL;
    if (dependencies)
        *dependencies = NULL;
    if (edges)
        *edges = NULL;
    if (count)
        *count = 0;
    return cudaSuccess;
}
