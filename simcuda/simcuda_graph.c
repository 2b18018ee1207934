/* simcuda_graph.c — driver graphs as far as memory needs them (simulated): graphs of memory
 * allocation and free nodes, their executable instantiations, launches, and the device's graph
 * memory pool. No node runs anything; other node types are absent.
 *
 * After the CUDA programming guide's "Graph Memory Nodes": an allocation node reserves its
 * virtual address when it is created, and the address stays the same across instantiations
 * and launches. Physical memory is taken from the device's graph pool when a graph is
 * launched; a free node (at its graph's launch), cuMemFree or cuMemFreeAsync gives it back to
 * the graph pool, which keeps it reserved (counted as used by cuMemGetInfo) until
 * cuDeviceGraphMemTrim. Simplifications: a launch completes at once (alloc nodes first, then
 * free nodes, so an allocation freed in its own graph takes its pages for the launch and
 * leaves them reserved); the graph pool is a count of pages per device, any reserved page
 * backing any allocation; an exec's destruction releases nothing (the guide lets the driver
 * release unused reserve then; here only a trim or a context's end does). A launch whose
 * allocations from an earlier launch are still live fails with CUDA_ERROR_INVALID_VALUE
 * unless the exec was instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, as
 * the driver's documentation says. Handles are objects of this file, found in its lists
 * before use, so a stale or foreign handle gives CUDA_ERROR_INVALID_VALUE. */
#include <stdlib.h>
#include <string.h>

#include "simcuda_internal.h"
#include "simcuda_log.h"

/* One allocation node's memory: the range is reserved while a graph, an exec or a live
 * allocation refers to it. */
struct simcuda__graph_alloc {
    int device;
    CUdeviceptr base;
    uint64_t size, pages;
    struct CUgraph_st *graph; /* its graph, NULL once that is destroyed */
    unsigned exec_refs;       /* execs instantiated from its graph that still exist */
    bool backed;              /* holds pages of the graph pool (launched, not yet freed) */
    bool freed_in_graph;      /* a free node of its own graph frees it */
    struct CUctx_st *ctx;     /* the launch's context while backed */
};

enum node_type { NODE_ALLOC, NODE_FREE };

struct CUgraphNode_st {
    enum node_type type;
    struct CUgraph_st *graph;
    struct simcuda__graph_alloc *alloc; /* NODE_ALLOC */
    CUDA_MEM_ALLOC_NODE_PARAMS params;  /* NODE_ALLOC, as given (dptr filled) */
    CUdeviceptr dptr;                   /* NODE_FREE */
    struct CUgraphNode_st *next;
};

struct CUgraph_st {
    struct CUgraphNode_st *nodes;
    unsigned execs; /* live execs of a graph with memory nodes: at most one */
    struct CUgraph_st *next;
};

struct CUgraphExec_st {
    struct simcuda__graph_alloc **allocs;
    size_t alloc_count;
    CUdeviceptr *frees;
    size_t free_count;
    unsigned long long flags;
    struct CUgraph_st *graph; /* NULL once destroyed */
    struct CUgraphExec_st *next;
};

/* The graph memory pool of each device, in pages (reserved pages count in pages_in_use). */
static struct {
    uint64_t reserved, used, reserved_high, used_high;
} pools[SIMCUDA__MAX_DEVICES];

static struct CUgraph_st *graphs; /* lock held */
static struct CUgraphExec_st *execs;

static struct CUgraph_st *graph_find(CUgraph graph)
{
    struct CUgraph_st *g = graphs;
    while (g && g != graph)
        g = g->next;
    return g;
}

static struct CUgraphExec_st *exec_find(CUgraphExec exec)
{
    struct CUgraphExec_st *x = execs;
    while (x && x != exec)
        x = x->next;
    return x;
}

/* A node of a live graph (nodes are few: a linear search). */
static struct CUgraphNode_st *node_find(CUgraphNode node)
{
    for (struct CUgraph_st *g = graphs; g; g = g->next)
        for (struct CUgraphNode_st *n = g->nodes; n; n = n->next)
            if (n == node)
                return n;
    return NULL;
}

/* The graph allocation whose range starts at dptr, or NULL. */
static struct simcuda__graph_alloc *alloc_at(CUdeviceptr dptr)
{
    struct simcuda__va_space *space = simcuda__space_of(dptr, NULL);
    struct simcuda__va_entry *entry = space ? simcuda__va_find(space, dptr) : NULL;
    return entry && entry->base == dptr && entry->kind == SIMCUDA__RANGE_GRAPH ? entry->object
                                                                               : NULL;
}

static void alloc_maybe_release(struct simcuda__graph_alloc *alloc)
{
    if (alloc->graph || alloc->exec_refs || alloc->backed)
        return;
    simcuda__va_release(&simcuda__state.devices[alloc->device].va, alloc->base);
    free(alloc);
}

static void alloc_back(struct simcuda__graph_alloc *alloc, struct CUctx_st *ctx)
{
    int d = alloc->device;
    pools[d].used += alloc->pages;
    if (pools[d].used > pools[d].reserved) {
        simcuda__state.devices[d].pages_in_use += pools[d].used - pools[d].reserved;
        pools[d].reserved = pools[d].used;
    }
    if (pools[d].reserved > pools[d].reserved_high)
        pools[d].reserved_high = pools[d].reserved;
    if (pools[d].used > pools[d].used_high)
        pools[d].used_high = pools[d].used;
    alloc->backed = true;
    alloc->ctx = ctx;
}

/* Gives a live allocation's pages back to the graph pool (they stay reserved). */
static void alloc_unback(struct simcuda__graph_alloc *alloc)
{
    pools[alloc->device].used -= alloc->pages;
    alloc->backed = false;
    alloc->ctx = NULL;
}

static void pool_trim(int device)
{
    uint64_t unused = pools[device].reserved - pools[device].used;
    simcuda__state.devices[device].pages_in_use -= unused;
    pools[device].reserved = pools[device].used;
}

CUresult simcuda__graph_free(struct simcuda__graph_alloc *alloc)
{
    if (!alloc->backed)
        return CUDA_ERROR_INVALID_VALUE;
    alloc_unback(alloc);
    alloc_maybe_release(alloc);
    return CUDA_SUCCESS;
}

/* Backed or not: a graph's own copy and set nodes use its memory during its launch, which
 * simcudart runs around the driver's (README.md). */
bool simcuda__graph_range_valid(const struct simcuda__graph_alloc *alloc, uint64_t offset,
                                uint64_t size)
{
    return offset <= alloc->size && alloc->size - offset >= size;
}

void simcuda__free_context_graph_memory(struct CUctx_st *ctx)
{
    struct simcuda__va_space *space = &simcuda__state.devices[ctx->device].va;
    for (size_t i = space->count; i-- > 0;) { /* backwards: a release removes entry i */
        struct simcuda__va_entry *entry = &space->entries[i];
        if (entry->kind == SIMCUDA__RANGE_GRAPH &&
            ((struct simcuda__graph_alloc *)entry->object)->ctx == ctx)
            simcuda__graph_free(entry->object);
    }
    pool_trim(ctx->device);
}

/* ---- graphs and nodes ---- */

struct CUgraph_st *simcuda__graph_new(void)
{
    struct CUgraph_st *graph = calloc(1, sizeof(*graph));
    if (graph) {
        graph->next = graphs;
        graphs = graph;
    }
    return graph;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct CUgraph_st *graph = NULL;
    if (result == CUDA_SUCCESS && (!phGraph || flags != 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && !(graph = simcuda__graph_new()))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS)
        *phGraph = graph;
    simcuda__unlock();
    return result;
}

CUresult simcuda__graph_discard(CUgraph hGraph)
{
    struct CUgraph_st **link = &graphs;
    while (*link && *link != hGraph)
        link = &(*link)->next;
    if (!*link)
        return CUDA_ERROR_INVALID_VALUE;
    {
        struct CUgraph_st *graph = *link;
        *link = graph->next;
        for (struct CUgraphExec_st *x = execs; x; x = x->next)
            if (x->graph == graph)
                x->graph = NULL;
        for (struct CUgraphNode_st *n = graph->nodes, *next; n; n = next) {
            next = n->next;
            if (n->type == NODE_ALLOC) {
                n->alloc->graph = NULL;
                alloc_maybe_release(n->alloc);
            }
            free(n);
        }
        free(graph);
    }
    return CUDA_SUCCESS;
}

static CUresult graph_destroy(CUgraph hGraph)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    if (result == CUDA_SUCCESS)
        result = simcuda__graph_discard(hGraph);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    return SIMCUDA__LOG(graph_destroy(hGraph), 0, 0, (uintptr_t)hGraph);
}

/* The graph's nodes (its memory nodes: the only kind here), newest first; with nodes
 * NULL only their count. */
static CUresult graph_get_nodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct CUgraph_st *graph = result == CUDA_SUCCESS ? graph_find(hGraph) : NULL;
    if (result == CUDA_SUCCESS && (!graph || !numNodes))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        size_t count = 0;
        for (struct CUgraphNode_st *n = graph->nodes; n; n = n->next, count++)
            if (nodes && count < *numNodes)
                nodes[count] = n;
        if (nodes)
            for (size_t i = count; i < *numNodes; i++)
                nodes[i] = NULL; /* as the driver: unused entries NULL */
        if (!nodes || count < *numNodes)
            *numNodes = count;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes,
                                                size_t *numNodes)
{
    return graph_get_nodes(hGraph, nodes, numNodes);
}

/* Lock held. The checks every node creation makes; a node appended to the graph. */
static CUresult node_add(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                         size_t numDependencies, struct CUgraphNode_st **out)
{
    CUresult result = simcuda__require_init();
    struct CUgraph_st *graph = result == CUDA_SUCCESS ? graph_find(hGraph) : NULL;
    if (result != CUDA_SUCCESS)
        return result;
    if (!graph || !phGraphNode || (numDependencies && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numDependencies; i++) {
        struct CUgraphNode_st *dep = node_find(dependencies[i]);
        if (!dep || dep->graph != graph)
            return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphNode_st *node = calloc(1, sizeof(*node));
    if (!node)
        return CUDA_ERROR_OUT_OF_MEMORY;
    node->graph = graph;
    *out = node;
    return CUDA_SUCCESS;
}

static void node_link(struct CUgraphNode_st *node, CUgraphNode *phGraphNode)
{
    node->next = node->graph->nodes;
    node->graph->nodes = node;
    *phGraphNode = node;
}

static CUresult alloc_node_checks(const CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    if (!p || p->bytesize == 0 || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    return simcuda__check_device(p->poolProps.location.id) == CUDA_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_DEVICE;
}

/* Lock held. */
static CUresult add_alloc_node_locked(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    struct CUgraphNode_st *node = NULL;
    CUresult result = node_add(phGraphNode, hGraph, dependencies, numDependencies, &node);
    if (result == CUDA_SUCCESS)
        result = alloc_node_checks(p);
    struct simcuda__graph_alloc *alloc = NULL;
    if (result == CUDA_SUCCESS && !(alloc = calloc(1, sizeof(*alloc))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        alloc->device = p->poolProps.location.id;
        alloc->size = p->bytesize;
        alloc->pages = simcuda__pages_for(p->bytesize);
        result = simcuda__va_reserve(&simcuda__state.devices[alloc->device].va,
                                     alloc->pages * SIMCUDA__PAGE_SIZE, SIMCUDA__PAGE_SIZE, 0,
                                     SIMCUDA__RANGE_GRAPH, alloc, &alloc->base);
    }
    if (result == CUDA_SUCCESS) {
        alloc->graph = node->graph;
        p->dptr = alloc->base;
        node->type = NODE_ALLOC;
        node->alloc = alloc;
        node->params = *p;
        node->params.accessDescs = NULL; /* the caller's array: not kept */
        node->params.accessDescCount = 0;
        node_link(node, phGraphNode);
    } else {
        free(alloc);
        free(node);
    }
    return result;
}

static CUresult add_alloc_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                               const CUgraphNode *dependencies, size_t numDependencies,
                               CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    simcuda__lock();
    CUresult result = add_alloc_node_locked(phGraphNode, hGraph, dependencies, numDependencies, p);
    simcuda__unlock();
    return result;
}

CUresult simcuda__graph_capture_alloc(CUgraph graph, int device, size_t bytesize, CUdeviceptr *dptr)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p = {.bytesize = bytesize};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = device;
    CUgraphNode node;
    CUresult result = add_alloc_node_locked(&node, graph, NULL, 0, &p);
    if (result == CUDA_SUCCESS)
        *dptr = p.dptr;
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                       const CUgraphNode *dependencies,
                                                       size_t numDependencies,
                                                       CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    CUresult result = add_alloc_node(phGraphNode, hGraph, dependencies, numDependencies,
                                     nodeParams);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? nodeParams->dptr : 0,
                        nodeParams ? nodeParams->bytesize : 0, (uintptr_t)hGraph);
}

/* Lock held. */
static CUresult add_free_node_locked(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies, size_t numDependencies,
                                     CUdeviceptr dptr)
{
    struct CUgraphNode_st *node = NULL;
    CUresult result = node_add(phGraphNode, hGraph, dependencies, numDependencies, &node);
    struct simcuda__graph_alloc *alloc = result == CUDA_SUCCESS ? alloc_at(dptr) : NULL;
    if (result == CUDA_SUCCESS &&
        (!alloc || (alloc->graph == node->graph && alloc->freed_in_graph)))
        result = CUDA_ERROR_INVALID_VALUE; /* not graph memory, or freed twice in its graph */
    if (result == CUDA_SUCCESS) {
        if (alloc->graph == node->graph)
            alloc->freed_in_graph = true;
        node->type = NODE_FREE;
        node->dptr = dptr;
        node_link(node, phGraphNode);
    } else {
        free(node);
    }
    return result;
}

static CUresult add_free_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              CUdeviceptr dptr)
{
    simcuda__lock();
    CUresult result = add_free_node_locked(phGraphNode, hGraph, dependencies, numDependencies,
                                           dptr);
    simcuda__unlock();
    return result;
}

CUresult simcuda__graph_capture_free(CUgraph graph, CUdeviceptr dptr)
{
    CUgraphNode node;
    return add_free_node_locked(&node, graph, NULL, 0, dptr);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                      const CUgraphNode *dependencies,
                                                      size_t numDependencies, CUdeviceptr dptr)
{
    return SIMCUDA__LOG(add_free_node(phGraphNode, hGraph, dependencies, numDependencies, dptr),
                        dptr, 0, (uintptr_t)hGraph);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                             CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct CUgraphNode_st *node = result == CUDA_SUCCESS ? node_find(hNode) : NULL;
    if (result == CUDA_SUCCESS && (!node || node->type != NODE_ALLOC || !params_out))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *params_out = node->params;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode,
                                                            CUdeviceptr *dptr_out)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct CUgraphNode_st *node = result == CUDA_SUCCESS ? node_find(hNode) : NULL;
    if (result == CUDA_SUCCESS && (!node || node->type != NODE_FREE || !dptr_out))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *dptr_out = node->dptr;
    simcuda__unlock();
    return result;
}

/* ---- executable graphs ---- */

static bool has_memory_nodes(const struct CUgraph_st *graph)
{
    return graph->nodes != NULL; /* every node simulated is a memory node */
}

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct CUgraph_st *graph = result == CUDA_SUCCESS ? graph_find(hGraph) : NULL;
    struct CUgraphExec_st *exec = NULL;
    /* the driver: a graph with memory nodes has at most one executable graph at a time */
    if (result == CUDA_SUCCESS &&
        (!graph || !phGraphExec || (has_memory_nodes(graph) && graph->execs)))
        result = CUDA_ERROR_INVALID_VALUE;
    size_t allocs = 0, frees = 0;
    if (result == CUDA_SUCCESS)
        for (struct CUgraphNode_st *n = graph->nodes; n; n = n->next)
            *(n->type == NODE_ALLOC ? &allocs : &frees) += 1;
    if (result == CUDA_SUCCESS &&
        (!(exec = calloc(1, sizeof(*exec))) ||
         (allocs && !(exec->allocs = calloc(allocs, sizeof(*exec->allocs)))) ||
         (frees && !(exec->frees = calloc(frees, sizeof(*exec->frees))))))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        for (struct CUgraphNode_st *n = graph->nodes; n; n = n->next) {
            if (n->type == NODE_ALLOC) {
                n->alloc->exec_refs++;
                exec->allocs[exec->alloc_count++] = n->alloc;
            } else {
                exec->frees[exec->free_count++] = n->dptr;
            }
        }
        exec->flags = flags;
        exec->graph = graph;
        if (has_memory_nodes(graph))
            graph->execs++;
        exec->next = execs;
        execs = exec;
        *phGraphExec = exec;
    } else if (exec) {
        free(exec->allocs);
        free(exec->frees);
        free(exec);
    }
    simcuda__unlock();
    return result;
}

static CUresult instantiate_logged(const char *entry, CUgraphExec *phGraphExec, CUgraph hGraph,
                                   unsigned long long flags)
{
    CUresult result = instantiate(phGraphExec, hGraph, flags);
    return simcuda__log(entry, result, result == CUDA_SUCCESS ? (uintptr_t)*phGraphExec : 0, 0,
                        (uintptr_t)hGraph);
}

/* The CUDA 11 five-argument ABI (cuda.h now names cuGraphInstantiateWithFlags
 * cuGraphInstantiate): no flags; no error node and an empty log, whatever the result. */
static CUresult instantiate_legacy(const char *entry, CUgraphExec *phGraphExec, CUgraph hGraph,
                                   CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    CUresult result = instantiate_logged(entry, phGraphExec, hGraph, 0);
    if (phErrorNode)
        *phErrorNode = NULL;
    if (logBuffer && bufferSize)
        logBuffer[0] = 0;
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUgraphNode *phErrorNode, char *logBuffer,
                                                   size_t bufferSize)
{
    return instantiate_legacy(__func__, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                      CUgraphNode *phErrorNode, char *logBuffer,
                                                      size_t bufferSize)
{
    return instantiate_legacy(__func__, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
                                                            CUgraph hGraph,
                                                            unsigned long long flags)
{
    return instantiate_logged(__func__, phGraphExec, hGraph, flags);
}

static CUresult instantiate_with_params(const char *entry, CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    if (!params)
        return simcuda__log(entry, CUDA_ERROR_INVALID_VALUE, 0, 0, (uintptr_t)hGraph);
    CUresult result = instantiate_logged(entry, phGraphExec, hGraph, params->flags);
    params->hErrNode_out = NULL;
    params->result_out = result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                                : CUDA_GRAPH_INSTANTIATE_ERROR;
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec,
                                                             CUgraph hGraph,
                                                             CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    return instantiate_with_params(__func__, phGraphExec, hGraph, params);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(
    CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    return instantiate_with_params(__func__, phGraphExec, hGraph, params);
}

/* Lock held. Whether the exec's free nodes name memory that is live when they run: an
 * allocation of this exec (backed by the launch) or one backed now. */
static bool frees_valid(const struct CUgraphExec_st *exec)
{
    for (size_t i = 0; i < exec->free_count; i++) {
        struct simcuda__graph_alloc *alloc = alloc_at(exec->frees[i]);
        bool mine = false;
        for (size_t k = 0; alloc && k < exec->alloc_count; k++)
            mine |= exec->allocs[k] == alloc;
        if (!alloc || (!mine && !alloc->backed))
            return false;
    }
    return true;
}

/* Lock held. @return whether each device has the pages the launch's allocations need beyond
 * the unused reserve of its graph pool. */
static bool pages_available(const struct CUgraphExec_st *exec)
{
    uint64_t need[SIMCUDA__MAX_DEVICES] = {0};
    for (size_t k = 0; k < exec->alloc_count; k++)
        if (!exec->allocs[k]->backed) /* else auto-freed and backed again by the same pages */
            need[exec->allocs[k]->device] += exec->allocs[k]->pages;
    for (int d = 0; d < SIMCUDA__MAX_DEVICES; d++) {
        uint64_t spare = pools[d].reserved - pools[d].used;
        if (need[d] > spare && need[d] - spare > simcuda__free_bytes(d) / SIMCUDA__PAGE_SIZE)
            return false;
    }
    return true;
}

static CUresult launch(CUgraphExec hGraphExec, CUstream hStream, uint64_t *bytes)
{
    *bytes = 0;
    struct CUctx_st *ctx;
    simcuda__lock();
    CUresult result = simcuda__stream_context(hStream, &ctx);
    struct CUgraphExec_st *exec = result == CUDA_SUCCESS ? exec_find(hGraphExec) : NULL;
    if (result == CUDA_SUCCESS && !exec)
        result = CUDA_ERROR_INVALID_VALUE;
    bool auto_free = exec && (exec->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    for (size_t k = 0; result == CUDA_SUCCESS && k < exec->alloc_count; k++)
        if (exec->allocs[k]->backed && !auto_free)
            result = CUDA_ERROR_INVALID_VALUE; /* still live from an earlier launch */
    if (result == CUDA_SUCCESS && !frees_valid(exec))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && !pages_available(exec))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        for (size_t k = 0; k < exec->alloc_count; k++) {
            if (exec->allocs[k]->backed) /* auto-free on launch */
                alloc_unback(exec->allocs[k]);
            alloc_back(exec->allocs[k], ctx);
            *bytes += exec->allocs[k]->size;
        }
        for (size_t i = 0; i < exec->free_count; i++)
            simcuda__graph_free(alloc_at(exec->frees[i]));
    }
    simcuda__unlock();
    return result;
}

/* Logged with address = the exec, size = the bytes its allocation nodes took, handle = the
 * stream. */
SIMCUDA_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    uint64_t bytes;
    CUresult result = launch(hGraphExec, hStream, &bytes);
    return SIMCUDA__LOG(result, (uintptr_t)hGraphExec, bytes, (uintptr_t)hStream);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    uint64_t bytes;
    CUresult result = launch(hGraphExec, hStream, &bytes);
    return SIMCUDA__LOG(result, (uintptr_t)hGraphExec, bytes, (uintptr_t)hStream);
}

static CUresult exec_destroy(CUgraphExec hGraphExec)
{
    simcuda__lock();
    CUresult result = simcuda__require_init();
    struct CUgraphExec_st **link = &execs;
    while (*link && *link != hGraphExec)
        link = &(*link)->next;
    if (result == CUDA_SUCCESS && !*link)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        struct CUgraphExec_st *exec = *link;
        *link = exec->next;
        if (exec->graph && has_memory_nodes(exec->graph))
            exec->graph->execs--;
        for (size_t k = 0; k < exec->alloc_count; k++) {
            exec->allocs[k]->exec_refs--;
            alloc_maybe_release(exec->allocs[k]); /* a live allocation outlives its exec */
        }
        free(exec->allocs);
        free(exec->frees);
        free(exec);
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    return SIMCUDA__LOG(exec_destroy(hGraphExec), (uintptr_t)hGraphExec, 0, 0);
}

/* ---- the device's graph memory pool ---- */

static CUresult graph_mem_trim(CUdevice device, uint64_t *released)
{
    *released = 0;
    simcuda__lock();
    CUresult result = simcuda__check_device(device);
    if (result == CUDA_SUCCESS) {
        *released = (pools[device].reserved - pools[device].used) * SIMCUDA__PAGE_SIZE;
        pool_trim(device);
    }
    simcuda__unlock();
    return result;
}

/* Logged with size = the reserved bytes released. */
SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
    uint64_t released;
    CUresult result = graph_mem_trim(device, &released);
    return SIMCUDA__LOG(result, 0, released, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device,
                                                             CUgraphMem_attribute attr, void *value)
{
    simcuda__lock();
    CUresult result = simcuda__check_device(device);
    if (result == CUDA_SUCCESS && !value)
        result = CUDA_ERROR_INVALID_VALUE;
    uint64_t pages = 0;
    if (result == CUDA_SUCCESS) {
        switch (attr) {
        case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: pages = pools[device].used; break;
        case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: pages = pools[device].used_high; break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: pages = pools[device].reserved; break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: pages = pools[device].reserved_high; break;
        default: result = CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    if (result == CUDA_SUCCESS)
        *(cuuint64_t *)value = pages * SIMCUDA__PAGE_SIZE;
    simcuda__unlock();
    return result;
}

/* Only the high watermarks can be set, and only to 0: they restart from the current use. */
SIMCUDA_EXPORT CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device,
                                                             CUgraphMem_attribute attr, void *value)
{
    simcuda__lock();
    CUresult result = simcuda__check_device(device);
    if (result == CUDA_SUCCESS && (!value || *(cuuint64_t *)value != 0))
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
            pools[device].used_high = pools[device].used;
        else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
            pools[device].reserved_high = pools[device].reserved;
        else
            result = CUDA_ERROR_INVALID_VALUE;
    }
    simcuda__unlock();
    return result;
}
