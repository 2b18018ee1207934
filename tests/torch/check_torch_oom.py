"""record --torch with real torch running out of memory: the snapshot merges into the trace;
`oom` names the verdict with the real cached blocks; the OOM message `whatif` writes for the
recorded setting is byte-identical to the one torch raised ("total capacity" included); device
memory a library holds outside the allocator (a ctypes cuMemAlloc_v2) is `oom`'s outside_bytes
at the failure, exactly."""
import json
import sys

import torchcheck as tc

MIB = tc.MIB
# (name, scenario, workload args, gpu, SIMCUDA_USED, the verdict oom must give)
RUNS = [
    # the seed's shape: every segment partly in use, holes smaller than the request
    ("seed_shape", "fragmentation", [], "1GiB", "0", "fragmentation"),
    ("seed_shape_held", "fragmentation", [], "2GiB", "600MiB", "fragmentation"),
    ("seed_shape_42", "fragmentation", ["--request-mib", "42"], "1536MiB", "0", "fragmentation"),
    # shapes of our own: more than the device has, with and without other processes
    ("over_capacity", "oom", ["--request-mib", "4096"], "2GiB", "0", None),
    ("others_hold", "oom", ["--request-mib", "700"], "2GiB", "700MiB", None),
    # 96 MiB from the driver outside torch's allocator before the failing request
    ("outside", "oom", ["--request-mib", "4096", "--outside-mib", "96"], "2GiB", "0", None),
]


def verdict_of(trace):
    out = tc.cli_json("oom", "--json", trace)
    episodes = out.get("episodes") or (out.get("traces") or [{}])[0].get("episodes") or []
    return episodes


def main():
    f = tc.Failures("torch_oom")
    for name, scenario, args, gpu, used, verdict in RUNS:
        res, trace, _ = tc.workload("out", name, scenario, args, record="torch", gpu=gpu,
                                    extra_env={"SIMCUDA_USED": used})
        if not f.check("torch raised OutOfMemoryError", res["oom"], name):
            continue
        records = [json.loads(l) for l in tc.run([tc.CLI, "dump", trace]).stdout.splitlines()]
        allocs = sum(1 for r in records if r.get("record") == "alloc_event" and
                     r.get("action") == "alloc")
        asked = res["state"]["stats_at_oom"][0]["allocation.all.allocated"]
        f.check("snapshot merged: every allocation torch made is in the trace", allocs == asked,
                "%s: %d allocator-level allocations in the trace, torch made %d" % (
                    name, allocs, asked))
        episodes = verdict_of(trace)
        if not f.check("oom finds the episode", len(episodes) >= 1, name):
            continue
        e = episodes[0]
        if "--outside-mib" in args:
            want = int(args[args.index("--outside-mib") + 1]) * MIB
            got = (e.get("allocator") or {}).get("outside_bytes")
            f.check("oom's outside_bytes is the driver memory outside the allocator", got == want,
                    "%s: oom says %s outside the allocator, the program held %d" % (name, got, want))
        if verdict:
            f.check("oom verdict", e["verdict"] == verdict,
                    "%s: %s where %s was expected" % (name, e["verdict"], verdict))
            a = e.get("allocator") or {}
            st = res["state"]["stats_at_oom"][0]
            f.check("oom's cached blocks are torch's",
                    a.get("reserved_bytes") == st["reserved_bytes.all.current"] and
                    a.get("allocated_bytes") == st["allocated_bytes.all.current"],
                    "%s: oom says reserved %s allocated %s, torch %s / %s" % (
                        name, tc.fmt(a.get("reserved_bytes")), tc.fmt(a.get("allocated_bytes")),
                        tc.fmt(st["reserved_bytes.all.current"]),
                        tc.fmt(st["allocated_bytes.all.current"])))
        w = tc.cli_json("whatif", "--json", trace)
        first = w["results"][0]
        msg = (first.get("first_oom") or {}).get("message")
        f.check("whatif OOM message byte-identical", msg == res["oom"],
                "%s:\n  torch:  %r\n  whatif: %r" % (name, res["oom"], msg))
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
