"""whatif on a record --torch trace of real torch, against real torch run under each setting:
OOM yes/no, peak reserved, allocation retries and device allocations (memory_stats()), and the
device allocation calls, failed ones included (SIMCUDA_LOG), on one and two streams, with and
without empty_cache(). Where the trace cannot carry what the model needs,
whatif must say so (the result's `limits`): a comparison that differs there is counted as
said-so, one that differs without is a failure."""
import sys

import torchcheck as tc

# (conf for the real run, fraction for the real run, whatif's flags)
SETTINGS = [
    ("", None, []),
    ("max_split_size_mb:64", None, ["--max-split-size-mb", "64"]),
    ("expandable_segments:True", None, ["--expandable-segments", "true"]),
    ("roundup_power2_divisions:4", None, ["--roundup-power2-divisions", "4"]),
    ("max_non_split_rounding_mb:64", None, ["--max-non-split-rounding-mb", "64"]),
    ("garbage_collection_threshold:0.8", 0.9, ["--gc-threshold", "0.8"]),
    ("", 0.6, []),
]
# (name, workload args, simulated memory)
PROGRAMS = [
    ("one_stream", ["--seed", "3", "--steps", "80"], "3GiB"),
    ("one_stream_empty_cache", ["--seed", "3", "--steps", "80", "--empty-cache"], "3GiB"),
    ("two_streams_empty_cache", ["--seed", "5", "--steps", "80", "--streams", "2",
                                 "--empty-cache"], "3GiB"),
    ("tight", ["--seed", "11", "--steps", "80"], "1GiB"),
]
FIGURES = [  # (what, memory_stats key, whatif result key or (key, key in it))
    ("peak reserved", "reserved_bytes.all.peak", "peak_reserved_bytes"),
    ("alloc retries", "num_alloc_retries", "alloc_retries"),
    # c10's num_device_alloc counts the cudaMalloc calls that succeeded; whatif's
    # device_alloc_calls counts every attempt, failed ones included (compared with what
    # simcuda served below), so torch's figure is set against whatif's memory_stats.
    ("device allocations", "num_device_alloc", ("memory_stats", "num_device_alloc")),
]


def device_alloc_calls(logf):
    """cuMemAlloc calls simcuda served, failed ones included (SIMCUDA_LOG: one line a call)."""
    with open(logf) as f:
        return sum(1 for line in f
                   if line.split()[2:3] in (["entry=cuMemAlloc"], ["entry=cuMemAlloc_v2"]))


def whatif_figure(r, wkey):
    return r[wkey[0]][wkey[1]] if isinstance(wkey, tuple) else r[wkey]


def main():
    f = tc.Failures("whatif_torch")
    for name, args, gpu in PROGRAMS:
        _, trace, _ = tc.workload("out", name + "-recorded", "mixed", args, record="torch", gpu=gpu)
        for i, (conf, fraction, flags) in enumerate(SETTINGS):
            real, _, logf = tc.workload("out", "%s-%d" % (name, i), "mixed", args, conf=conf,
                                        fraction=fraction, gpu=gpu, log=True)
            wflags = list(flags) + (["--memory-fraction", str(fraction)] if fraction else [])
            w = tc.cli_json("whatif", "--json", *wflags, trace)
            r = w["results"][0]
            label = "%s, %s%s" % (name, conf or "default",
                                  ", fraction %s" % fraction if fraction else "")
            st = real["stats"][0]
            limits = r.get("limits") or []
            compare = [("OOM yes/no", bool(real["oom"]), r["oom"])] + [
                (what, st[key], whatif_figure(r, wkey)) for what, key, wkey in FIGURES]
            if "expandable_segments" not in conf:  # there a device allocation is a cuMemMap
                compare.append(("device allocation calls", device_alloc_calls(logf),
                                r["device_alloc_calls"]))
            for what, torch_says, whatif_says in compare:
                if torch_says != whatif_says and limits:
                    f.note("%s differs where whatif says the trace cannot tell" % what)
                    print("SAID %s: %s: whatif %s, torch %s (limits: %s)" % (
                        what, label, tc.fmt(whatif_says), tc.fmt(torch_says), ", ".join(limits)))
                    continue
                f.check(what, torch_says == whatif_says, "%s: whatif %s, torch %s" % (
                    label, tc.fmt(whatif_says), tc.fmt(torch_says)))
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
