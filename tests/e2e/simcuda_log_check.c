/* simcuda_log_check: compares traces with simcuda's own log of the memory calls it served
 * (SIMCUDA_LOG, simcuda/simcuda_log.h): "every allocation the driver served is in the trace,
 * and nothing else".
 *
 *   simcuda_log_check CUMEMTRACE LOG TRACE...
 *
 * Each trace is read as `CUMEMTRACE dump` prints it (JSON lines), and its process id from the
 * trace itself. Every log line counts, failed calls too; a trace event counts when its op makes
 * or releases memory (alloc_ops and free_ops below). A log line matches an unmatched event of
 * the same process with the same entry point, result, address (ptr) and, where the event
 * carries them, size and handle (or pool). Prints one line per process (successful allocations
 * and frees, and failed calls, served / recorded) and one per unmatched call, then exits 0
 * when everything matched, 1 when not, 2 on bad input. A test helper, not an installed tool. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

/* The ops, as `dump` names them, that the comparison covers. */
static const char *const alloc_ops[] = {
    "alloc", "alloc_pitch", "alloc_managed", "alloc_async", "alloc_host", "host_register",
    "vmm_create", "va_reserve", "vmm_map", "vmm_retain", "vmm_import", "ipc_open", "pool_create",
    "array_create", "pool_attr",
    /* pool IPC, the pool queries and a range's handle: the handles simcuda gave */
    "pool_export", "pool_import", "pool_export_ptr", "pool_import_ptr", "pool_default",
    "pool_current", "mem_range_handle",
    /* graph memory nodes: the node's address, the exec, the launch that takes memory */
    "graph_alloc_node", "graph_instantiate", "graph_launch",
    /* stream capture: its begin, and its end with the graph it returns */
    "capture_begin", "capture_end"};
static const char *const free_ops[] = {
    "free",          "free_async",    "free_host",       "host_unregister",
    "vmm_release",   "va_free",       "vmm_unmap",       "ipc_close",
    "pool_destroy",  "array_destroy", "graph_free_node", "graph_exec_destroy",
    "graph_destroy", "graph_mem_trim"};
/* Multicast objects: creating one and binding memory count as allocations, unbinding as a free. */
static const char *const multicast_ops[] = {"multicast_create", "multicast_bind_mem",
                                            "multicast_bind_addr", "multicast_unbind"};

struct call {
    long pid;
    char entry[64];
    uint64_t address, size, handle;
    bool has_size, has_handle;
    int result;
    bool is_free;
    bool matched;
    char text[256];
};

struct calls {
    struct call *v;
    size_t n, cap;
};

static struct call *push(struct calls *c)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->v = realloc(c->v, c->cap * sizeof(*c->v));
        if (!c->v) {
            fprintf(stderr, "simcuda_log_check: out of memory\n");
            exit(2);
        }
    }
    struct call *call = &c->v[c->n++];
    memset(call, 0, sizeof(*call));
    return call;
}

static int op_kind(const char *op)
{
    for (size_t i = 0; i < sizeof alloc_ops / sizeof *alloc_ops; i++)
        if (!strcmp(op, alloc_ops[i]))
            return 1;
    for (size_t i = 0; i < sizeof free_ops / sizeof *free_ops; i++)
        if (!strcmp(op, free_ops[i]))
            return 2;
    for (size_t i = 0; i < sizeof multicast_ops / sizeof *multicast_ops; i++)
        if (!strcmp(op, multicast_ops[i]))
            return strcmp(op, "multicast_unbind") ? 1 : 2;
    return 0;
}

/* The value of "key": in a flat JSON object line: a number (*number) or a string (into text). */
static bool json_field(const char *line, const char *key, uint64_t *number, char *text, size_t size)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(line, pattern);
    if (!at)
        return false;
    at += strlen(pattern);
    if (*at == '"') {
        const char *end = strchr(at + 1, '"');
        if (!end || !text || (size_t)(end - at - 1) >= size)
            return false;
        memcpy(text, at + 1, (size_t)(end - at - 1));
        text[end - at - 1] = 0;
        return true;
    }
    if (!number)
        return false;
    *number = strtoull(at, NULL, 10);
    if (*at == '-')
        *number = (uint64_t)strtoll(at, NULL, 10);
    return true;
}

static void chomp(char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
}

/* The log's successful calls. */
static void read_log(const char *path, struct calls *served)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "simcuda_log_check: cannot read %s\n", path);
        exit(2);
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        chomp(line);
        long pid;
        int result;
        char entry[64];
        unsigned long long address, size, handle;
        if (sscanf(line,
                   "simcuda pid=%ld entry=%63s result=%d address=0x%llx size=%llu handle=0x%llx",
                   &pid, entry, &result, &address, &size, &handle) != 6) {
            fprintf(stderr, "simcuda_log_check: %s: not a simcuda log line: %s\n", path, line);
            exit(2);
        }
        struct call *c = push(served);
        c->pid = pid;
        c->result = result;
        snprintf(c->entry, sizeof c->entry, "%s", entry);
        c->address = address;
        c->size = size;
        c->handle = handle;
        c->is_free = strstr(entry, "Free") || strstr(entry, "Release") || strstr(entry, "Unmap") ||
                     strstr(entry, "Close") || strstr(entry, "Unregister") ||
                     strstr(entry, "Destroy") || strstr(entry, "Unbind") || strstr(entry, "Trim");
        snprintf(c->text, sizeof c->text, "%s", line);
    }
    fclose(f);
}

/* The trace's successful memory events, through `cli dump`. */
static long read_trace(const char *cli, const char *path, struct calls *recorded)
{
    cmt_reader *reader;
    if (cmt_reader_open_file(&reader, path, NULL) != 0) {
        fprintf(stderr, "simcuda_log_check: cannot open trace %s\n", path);
        exit(2);
    }
    /* the PROCESS record comes first: a damaged trace (a killed process's) still names it */
    int damage = cmt_reader_preload(reader);
    const struct cmt_process *process = cmt_reader_process(reader);
    if (!process && damage < 0)
        fprintf(stderr, "simcuda_log_check: %s: no PROCESS record before the damage: %s\n", path,
                cmt_reader_damage(reader));
    long pid = process ? (long)process->pid : -1;
    cmt_reader_close(reader);
    char command[4200];
    snprintf(command, sizeof command, "'%s' dump '%s'", cli, path);
    FILE *dump = popen(command, "r");
    if (!dump) {
        fprintf(stderr, "simcuda_log_check: cannot run %s\n", command);
        exit(2);
    }
    char line[4096], op[32], api[64];
    while (fgets(line, sizeof line, dump)) {
        chomp(line);
        uint64_t result = 1, value;
        if (strstr(line, "\"record\":")) /* not a driver call (allocator-level and others) */
            continue;
        if (!json_field(line, "op", NULL, op, sizeof op) ||
            !json_field(line, "api", NULL, api, sizeof api) ||
            !json_field(line, "result", &result, NULL, 0) || !op_kind(op))
            continue;
        struct call *c = push(recorded);
        c->pid = pid;
        c->result = (int)result;
        snprintf(c->entry, sizeof c->entry, "%s", api);
        c->is_free = op_kind(op) == 2;
        if (json_field(line, "ptr", &value, NULL, 0))
            c->address = value;
        if ((c->has_size = json_field(line, "size", &value, NULL, 0)))
            c->size = value;
        if ((c->has_handle = json_field(line, "handle", &value, NULL, 0)) ||
            (c->has_handle = json_field(line, "pool", &value, NULL, 0)))
            c->handle = value;
        snprintf(c->text, sizeof c->text, "%s", line);
    }
    if (pclose(dump) != 0) {
        fprintf(stderr, "simcuda_log_check: %s failed\n", command);
        exit(2);
    }
    return pid;
}

static bool same(const struct call *event, const struct call *logged)
{
    return event->pid == logged->pid && !strcmp(event->entry, logged->entry) &&
           event->result == logged->result && event->address == logged->address &&
           (!event->has_size || event->size == logged->size) &&
           (!event->has_handle || event->handle == logged->handle);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: simcuda_log_check CUMEMTRACE LOG TRACE...\n");
        return 2;
    }
    struct calls served = {0}, recorded = {0};
    read_log(argv[2], &served);
    long pids[256];
    int npids = 0;
    for (int i = 3; i < argc && npids < 256; i++)
        pids[npids++] = read_trace(argv[1], argv[i], &recorded);
    /* In order, so repeated identical calls pair up first with first; the search starts at
     * the first line still unmatched (a long run of calls matches in linear time). */
    size_t first = 0;
    for (size_t e = 0; e < recorded.n; e++) {
        while (first < served.n && served.v[first].matched)
            first++;
        for (size_t l = first; l < served.n; l++) {
            if (!served.v[l].matched && same(&recorded.v[e], &served.v[l])) {
                served.v[l].matched = recorded.v[e].matched = true;
                break;
            }
        }
    }
    int status = 0;
    for (int p = 0; p < npids; p++) {
        /* served and recorded: successful allocations, successful frees, failed calls */
        size_t counts[6] = {0};
        for (size_t l = 0; l < served.n; l++)
            if (served.v[l].pid == pids[p])
                counts[served.v[l].result ? 4 : served.v[l].is_free ? 2 : 0]++;
        for (size_t e = 0; e < recorded.n; e++)
            if (recorded.v[e].pid == pids[p])
                counts[recorded.v[e].result ? 5 : recorded.v[e].is_free ? 3 : 1]++;
        printf("pid %ld: allocations served %zu / recorded %zu, frees served %zu / recorded %zu, "
               "failed calls served %zu / recorded %zu\n",
               pids[p], counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
    }
    for (size_t l = 0; l < served.n; l++) {
        if (!served.v[l].matched) {
            printf("served, not recorded: %s\n", served.v[l].text);
            status = 1;
        }
    }
    for (size_t e = 0; e < recorded.n; e++) {
        if (!recorded.v[e].matched) {
            printf("recorded, not served: %s\n", recorded.v[e].text);
            status = 1;
        }
    }
    printf("%s\n", status ? "MISMATCH" : "all served calls recorded, nothing else");
    free(served.v);
    free(recorded.v);
    return status;
}
