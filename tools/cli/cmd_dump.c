/* cmd_dump.c — `cumemtrace dump`: every event as one JSON object per line.
 *
 * Keys: seq, t_ns, tid, api (exact entry point), op, result (CUresult), dev, then the call's
 * values under their field names (ptr, size, stream, pool, handle, offset, ...), stack (leaf
 * node id) and, with --stacks, frames (symbolized, innermost first). Allocator-level records
 * (docs/trace-format.md) follow in file order with a "record" key: "allocator" (id, name,
 * version, conf) and "alloc_event" (allocator, action, t_ns, tid, dev, its fields, stack), and
 * ranges (NVTX, annotate.h, snapshot annotations) as "range" (action, t_ns, tid, domain,
 * category, id, message, seq when it follows a driver event).
 * --all adds the other records (device, meminfo, note, signal, end), keyed the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "output.h"
#include "reader.h"

static const char usage[] =
    "usage: cumemtrace dump [--stacks] [--all] FILE\n"
    "       cumemtrace dump [--stacks] [--all] TRACE... | DIR\n\n"
    "Prints each recorded call as one JSON object per line. Several traces (or a directory's\n"
    "*.cmt, in name order): each after a line {\"record\":\"file\",\"path\":...} naming it.\n\n"
    "  --stacks   add \"frames\": the call stack, innermost first\n"
    "  --all      also print device, meminfo, note, signal and end records\n";

/* The values a record carries, under their field names: v[f] as name(f) where bit f of
 * `fields` is set. */
static void json_values(struct cmt__json *j, const uint64_t *v, uint32_t fields, uint32_t n,
                        const char *(*name)(uint32_t))
{
    for (uint32_t f = 0; f < n; f++)
        if (fields & (UINT32_C(1) << f))
            cmt__json_u64(j, name(f), v[f]);
}

/* "stack": the leaf node id, and with --stacks "frames": the call stack, innermost first. */
static void json_stack(struct cmt__json *j, const cmt_reader *r, uint32_t stack, int stacks)
{
    cmt__json_u64(j, "stack", stack);
    if (stacks)
        cmt__json_stack(j, "frames", r, stack);
}

static void dump_event(struct cmt__json *j, const cmt_reader *r, const struct cmt_event *e,
                       int stacks)
{
    const struct cmt_api *api = cmt_reader_api(r, e->api);
    cmt__json_object(j, NULL);
    CMT__JSON_U64S(j, {"seq", e->seq}, {"t_ns", e->t_ns}, {"tid", e->tid});
    if (api)
        cmt__json_string(j, "api", api->name);
    else
        cmt__json_u64(j, "api", e->api);
    cmt__json_string(j, "op", api && cmt_op_name(api->op) ? cmt_op_name(api->op) : "other");
    cmt__json_i64(j, "result", e->result);
    cmt__json_i64(j, "dev", e->dev);
    json_values(j, e->v, e->fields, CMT_NFIELDS, cmt_field_name);
    json_stack(j, r, e->stack, stacks);
    cmt__json_end_object(j);
    cmt__json_finish(j);
}

/* "action": its name, or its number when this reader does not know it (a newer writer's). */
static void json_action(struct cmt__json *j, const char *name, uint32_t value)
{
    if (name)
        cmt__json_string(j, "action", name);
    else
        cmt__json_u64(j, "action", value);
}

static void dump_alloc(struct cmt__json *j, const cmt_reader *r, const struct cmt_record *rec,
                       int stacks)
{
    cmt__json_object(j, NULL);
    if (rec->type == CMT_REC_ALLOCATOR) {
        const struct cmt_alloc_info *a = &rec->u.alloc_info;
        cmt__json_string(j, "record", "allocator");
        cmt__json_u64(j, "id", a->id);
        cmt__json_u64(j, "t_ns", a->t_ns);
        cmt__json_i64(j, "dev", a->dev);
        cmt__json_string(j, "name", a->name);
        cmt__json_string(j, "version", a->version);
        cmt__json_string(j, "conf", a->conf);
    } else {
        const struct cmt_alloc_event *e = &rec->u.alloc_event;
        cmt__json_string(j, "record", "alloc_event");
        cmt__json_u64(j, "allocator", e->allocator);
        json_action(j, cmt_alloc_action_name(e->action), e->action);
        cmt__json_u64(j, "t_ns", e->t_ns);
        cmt__json_u64(j, "tid", e->tid);
        cmt__json_i64(j, "dev", e->dev);
        json_values(j, e->v, e->fields, CMT_NAFIELDS, cmt_alloc_field_name);
        json_stack(j, r, e->stack, stacks);
    }
    cmt__json_end_object(j);
    cmt__json_finish(j);
}

static void dump_range(struct cmt__json *j, const struct cmt_range *g)
{
    cmt__json_object(j, NULL);
    cmt__json_string(j, "record", "range");
    json_action(j, cmt_range_action_name(g->action), g->action);
    CMT__JSON_U64S(j, {"t_ns", g->t_ns}, {"tid", g->tid}, {"domain", g->domain},
                   {"category", g->category}, {"id", g->id});
    cmt__json_string(j, "message", g->message);
    if (g->have_seq)
        cmt__json_u64(j, "seq", g->seq);
    cmt__json_end_object(j);
    cmt__json_finish(j);
}

static void dump_other(struct cmt__json *j, const struct cmt_record *rec)
{
    cmt__json_object(j, NULL);
    switch (rec->type) {
    case CMT_REC_DEVICE:
        cmt__json_string(j, "record", "device");
        cmt__json_i64(j, "dev", rec->u.device.dev);
        cmt__json_string(j, "name", rec->u.device.name);
        cmt__json_u64(j, "total", rec->u.device.total_bytes);
        cmt__json_u64(j, "free", rec->u.device.free_bytes);
        break;
    case CMT_REC_MEMINFO:
        cmt__json_string(j, "record", "meminfo");
        cmt__json_u64(j, "t_ns", rec->u.meminfo.t_ns);
        cmt__json_i64(j, "dev", rec->u.meminfo.dev);
        cmt__json_string(j, "reason",
                         rec->u.meminfo.reason == CMT_MEMINFO_OOM    ? "oom"
                         : rec->u.meminfo.reason == CMT_MEMINFO_EXIT ? "exit"
                                                                     : "baseline");
        CMT__JSON_U64S(j, {"free", rec->u.meminfo.free_bytes},
                       {"total", rec->u.meminfo.total_bytes}, {"seq", rec->u.meminfo.seq});
        break;
    case CMT_REC_NOTE:
        cmt__json_string(j, "record", "note");
        cmt__json_string(j, "text", rec->u.note.text);
        break;
    case CMT_REC_SIGNAL:
        cmt__json_string(j, "record", "signal");
        CMT__JSON_U64S(j, {"t_ns", rec->u.signal.t_ns}, {"signo", rec->u.signal.signo},
                       {"tid", rec->u.signal.tid});
        break;
    case CMT_REC_END:
        cmt__json_string(j, "record", "end");
        cmt__json_u64(j, "t_ns", rec->u.end.t_ns);
        cmt__json_u64(j, "events", rec->u.end.events);
        break;
    }
    cmt__json_end_object(j);
    cmt__json_finish(j);
}

/* Dumps one trace. @return its exit status. */
static int dump_one(const char *path, int stacks, int all)
{
    cmt_reader *r;
    if (cmt__open_trace("dump", path, &r))
        return 1;
    /* symbols are stored at the end; damage preloading meets is met again, and named, below */
    int preloaded = stacks ? cmt_reader_preload(r) : 0;
    struct cmt__json j;
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0) {
        cmt__json_init(&j, stdout); /* one document per line */
        if (rec.type == CMT_REC_EVENT)
            dump_event(&j, r, &rec.u.event, stacks);
        else if (rec.type == CMT_REC_ALLOCATOR || rec.type == CMT_REC_ALLOC_EVENT)
            dump_alloc(&j, r, &rec, stacks);
        else if (rec.type == CMT_REC_RANGE)
            dump_range(&j, &rec.u.range);
        else if (all && (rec.type == CMT_REC_DEVICE || rec.type == CMT_REC_MEMINFO ||
                         rec.type == CMT_REC_NOTE || rec.type == CMT_REC_SIGNAL ||
                         rec.type == CMT_REC_END))
            dump_other(&j, &rec);
    }
    int status = cmt__warn_damage("dump", path, r, rc < 0 ? rc : preloaded);
    cmt_reader_close(r);
    return status; /* like the analyses: what was readable was printed, the damage was named */
}

enum { OPT_HELP = 1, OPT_STACKS, OPT_ALL };

const struct cmt__option cmt_cmd_dump_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--stacks", 0, OPT_STACKS, NULL},
    {NULL, "--all", 0, OPT_ALL, NULL},
    {0},
};

int cmt_cmd_dump(int argc, char **argv)
{
    int stacks = 0, all = 0, opt;
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    size_t ninputs = 0;
    if (!inputs) {
        fprintf(stderr, "cumemtrace dump: out of memory\n");
        return 1;
    }
    struct cmt__opts p;
    cmt__opts_init(&p, "dump", argc, argv, cmt_cmd_dump_options, 0);
    while ((opt = cmt__opts_next(&p)) != CMT__OPT_END) {
        if (opt == OPT_STACKS) {
            stacks = 1;
        } else if (opt == OPT_ALL) {
            all = 1;
        } else if (opt == CMT__OPT_ARG) {
            inputs[ninputs++] = p.value;
        } else {
            if (opt == OPT_HELP)
                fputs(usage, stdout);
            free(inputs);
            return opt == OPT_HELP ? 0 : 2;
        }
    }
    if (!ninputs) {
        free(inputs);
        return cmt__usage_error("dump", "missing trace FILE");
    }
    int status = 0;
    if (ninputs == 1 && !cmt__is_dir(inputs[0])) {
        status = dump_one(inputs[0], stacks, all);
        free(inputs);
        return status;
    }
    char **paths;
    size_t n;
    if (cmt__trace_paths("dump", inputs, ninputs, &paths, &n) != 0) {
        free(inputs);
        return 1;
    }
    for (size_t i = 0; i < n; i++) { /* each trace after a line naming it */
        struct cmt__json j;
        cmt__json_init(&j, stdout);
        cmt__json_object(&j, NULL);
        cmt__json_string(&j, "record", "file");
        cmt__json_string(&j, "path", paths[i]);
        cmt__json_end_object(&j);
        cmt__json_finish(&j);
        fflush(stdout);
        status |= dump_one(paths[i], stacks, all);
    }
    cmt__trace_paths_free(paths, n);
    free(inputs);
    return status;
}
