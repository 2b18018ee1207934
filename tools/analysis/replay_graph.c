/* replay_graph.c — graph memory nodes in the replay (docs/analysis.md "Graph memory"): the
 * allocation and free nodes of each graph, copied into each exec instantiated from it; a
 * launch makes the exec's allocations live (kind graph) from the device's graph pool and runs
 * its frees; the pool keeps what comes back until a trim. Graphs are rare next to allocations:
 * their nodes are one dense array, scanned. */

#include "cmt_grow.h"
#include "replay_books.h"

static struct cmt__graph_node *node_add(cmt_replay *rp)
{
    if (CMT_GROW(rp->graph_nodes, rp->graph_node_cap, rp->graph_node_count + 1, 16) != 0) {
        rp->failed = 1;
        return NULL;
    }
    return &rp->graph_nodes[rp->graph_node_count++];
}

/* Forgets the nodes of one graph (in_exec 0) or exec (in_exec 1). */
static void nodes_forget(cmt_replay *rp, uint64_t owner, int in_exec)
{
    size_t kept = 0;
    for (size_t i = 0; i < rp->graph_node_count; i++) {
        const struct cmt__graph_node *n = &rp->graph_nodes[i];
        if (n->owner != owner || n->in_exec != in_exec)
            rp->graph_nodes[kept++] = *n;
    }
    rp->graph_node_count = kept;
}

static uint64_t graph_pool_of(int32_t dev)
{
    uint32_t slot = dev >= -1 && dev < MAX_DEVICE_SLOTS - 1 ? (uint32_t)(dev + 1) : 0;
    return CMT__GRAPH_POOL(slot);
}

/* The graph pool gives up to size retained bytes to a new allocation. */
static void pool_take(cmt_replay *rp, int32_t dev, uint64_t size)
{
    struct cmt__entry *p = cmt__pool_find(rp, graph_pool_of(dev));
    if (!p || !p->size)
        return;
    uint64_t reuse = p->size < size ? p->size : size;
    p->size -= reuse;
    cmt__device_slot(rp, p->dev)->kind_bytes[CMT_KIND_POOL] -= reuse;
    rp->totals.pool_retained_bytes -= reuse;
}

/* A live graph allocation at ptr goes back to its graph pool. @return its bytes, or 0 when
 * no graph allocation is live there. */
static uint64_t free_to_pool(cmt_replay *rp, struct cmt_replay_step *st, uint64_t ptr)
{
    struct cmt__entry *a = cmt__map_find(&rp->allocs, ptr);
    if (!a || a->kind != CMT_KIND_GRAPH + 1)
        return 0;
    uint64_t size = a->size;
    cmt__pool_retain(rp, NULL, a->aux, a->dev, size);
    cmt__note_owner(rp, st, a->dev);
    cmt__drop(rp, a);
    cmt__map_remove(&rp->allocs, a);
    return size;
}

/* The exec's nodes: copied together at its instantiation, and kept in order, so they are one
 * run of the array. @return its start (count: none), *end its end. */
static size_t exec_nodes(const cmt_replay *rp, uint64_t exec, size_t *end)
{
    size_t start = 0;
    while (start < rp->graph_node_count &&
           !(rp->graph_nodes[start].in_exec && rp->graph_nodes[start].owner == exec))
        start++;
    size_t stop = start;
    while (stop < rp->graph_node_count && rp->graph_nodes[stop].in_exec &&
           rp->graph_nodes[stop].owner == exec)
        stop++;
    *end = stop;
    return start;
}

/* Whether a free node among [start, end) frees ptr. */
static int frees(const cmt_replay *rp, size_t start, size_t end, uint64_t ptr)
{
    for (size_t i = start; i < end; i++)
        if (rp->graph_nodes[i].is_free && rp->graph_nodes[i].ptr == ptr)
            return 1;
    return 0;
}

/* A launch: allocations first (each from its device's graph pool), then frees. An allocation
 * its own graph frees is never live: the pool retains its bytes once every allocation of the
 * launch has taken its own (they may all be live at once inside the graph). The step changes
 * several objects at once, as a reset does: it names no kind or object (st->kind stays none),
 * its delta is the net change on the event's device, released what its free nodes freed. */
static void launch(cmt_replay *rp, struct cmt_replay_step *st, uint64_t exec)
{
    struct cmt_event *e = &st->rec.u.event;
    int32_t event_dev = e->dev;
    uint32_t event_stack = e->stack;
    uint64_t before = cmt__device_slot(rp, event_dev)->live_bytes;
    size_t end, start = exec_nodes(rp, exec, &end);
    for (size_t i = start; i < end && !rp->failed; i++) {
        struct cmt__graph_node n = rp->graph_nodes[i];
        if (n.is_free)
            continue;
        free_to_pool(rp, st, n.ptr); /* still live from a launch before (auto-free) */
        pool_take(rp, n.dev, n.size);
        if (frees(rp, start, end, n.ptr))
            continue;
        /* the object is the node's: its device, its call site */
        e->dev = n.dev;
        e->stack = n.stack;
        cmt__add_object(rp, st, &rp->allocs, n.ptr, CMT_KIND_GRAPH, n.size, graph_pool_of(n.dev));
        e->dev = event_dev;
        e->stack = event_stack;
    }
    uint64_t released = 0;
    for (size_t i = start; i < end; i++) {
        struct cmt__graph_node n = rp->graph_nodes[i];
        if (!n.is_free && frees(rp, start, end, n.ptr))
            cmt__pool_retain(rp, NULL, graph_pool_of(n.dev), n.dev, n.size);
        else if (n.is_free)
            released += free_to_pool(rp, st, n.ptr);
    }
    st->kind = CMT_KIND_NONE;
    st->site = 0;
    st->key = st->bytes = 0;
    st->object = st->replaced = CMT_NO_OBJECT;
    st->released = released;
    st->delta = (int64_t)(cmt__device_slot(rp, event_dev)->live_bytes - before);
}

/* ---- the handlers of CMT_REPLAY_OPS for graph memory (replay_ops.h); a failed call changes
 * nothing ---- */

/* An allocation node (a free node: is_free) of a graph: an address, no memory yet. */
static void add_node(cmt_replay *rp, const struct cmt_event *e, int is_free)
{
    struct cmt__graph_node *n = e->result == 0 && (e->fields & CMT_F(PTR)) &&
                                        (e->fields & CMT_F(HANDLE))
                                    ? node_add(rp)
                                    : NULL;
    if (n)
        *n = (struct cmt__graph_node){.owner = e->v[CMT_FIELD_HANDLE],
                                      .ptr = e->v[CMT_FIELD_PTR],
                                      .size = e->v[CMT_FIELD_SIZE],
                                      .stack = e->stack,
                                      .dev = e->dev,
                                      .is_free = (uint8_t)is_free};
}

void cmt__apply_graph_alloc_node(cmt_replay *rp, struct cmt_replay_device *d,
                                 struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    add_node(rp, &st->rec.u.event, 0);
}

void cmt__apply_graph_free_node(cmt_replay *rp, struct cmt_replay_device *d,
                                struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    add_node(rp, &st->rec.u.event, 1);
}

/* An exec gets its graph's memory nodes. */
void cmt__apply_graph_instantiate(cmt_replay *rp, struct cmt_replay_device *d,
                                  struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    uint64_t exec = e->v[CMT_FIELD_PTR], graph = e->v[CMT_FIELD_HANDLE];
    if (e->result != 0 || !(e->fields & CMT_F(PTR)) || !(e->fields & CMT_F(HANDLE)))
        return;
    nodes_forget(rp, exec, 1); /* an exec handle reused after a destroy we did not see */
    for (size_t i = 0, count = rp->graph_node_count; i < count; i++) {
        if (rp->graph_nodes[i].in_exec || rp->graph_nodes[i].owner != graph)
            continue;
        struct cmt__graph_node *n = node_add(rp);
        if (!n)
            break;
        *n = rp->graph_nodes[i];
        n->owner = exec;
        n->in_exec = 1;
    }
}

void cmt__apply_graph_launch(cmt_replay *rp, struct cmt_replay_device *d,
                             struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(PTR)))
        launch(rp, st, e->v[CMT_FIELD_PTR]);
}

void cmt__apply_graph_exec_destroy(cmt_replay *rp, struct cmt_replay_device *d,
                                   struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(PTR)))
        nodes_forget(rp, e->v[CMT_FIELD_PTR], 1);
}

void cmt__apply_graph_destroy(cmt_replay *rp, struct cmt_replay_device *d,
                              struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(HANDLE)))
        nodes_forget(rp, e->v[CMT_FIELD_HANDLE], 0);
}

/* The device's graph pool releases what it retains. */
void cmt__apply_graph_mem_trim(cmt_replay *rp, struct cmt_replay_device *d,
                               struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    struct cmt__entry *p = e->result == 0 ? cmt__map_find(&rp->pools, graph_pool_of(e->dev)) : NULL;
    if (p)
        cmt__pool_trim(rp, p, 0);
}
