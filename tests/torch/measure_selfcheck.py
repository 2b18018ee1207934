"""Measures `whatif`'s self-check against real torch on many seeded runs (not a ctest: it
prints counts for a commit message or a closing note). Run in the torch root:

    scripts/torch-run.sh --no-record --bind tests/torch -- \
        python3 -B tests/torch/measure_selfcheck.py OUT_DIR [--empty-cache N] [--ring N] \
        [--before BUILD] [--gpu 2GiB] [--ring-entries 40] [--seed-base 0]

--before BUILD also runs another build's CLI on every snapshot (before/after in one pass).

empty_cache runs: `mixed --streams 2 --empty-cache`, full history; the truth is torch's
memory_stats() at the end (peak reserved, num_device_alloc, num_device_free, OOM).
Ring runs: the same program twice, dumped with `_record_memory_history(max_entries=40)` and with
its full history; the truth in the ring's window (the last 40 entries) is the full trace's:
reserved at the window's start and its peak inside the window, from torch's own segment events.
"""
import argparse
import json
import os
import pickle
import sys

import torchcheck as tc

RING = 40  # --ring-entries
GPU = "2GiB"  # --gpu: a smaller card runs out of memory
SEED_BASE = 0  # --seed-base


CLIS = {}  # label -> the CLI measured


def selfchecks(snap):
    return {label: json.loads(tc.run([cli, "whatif", "--json", snap]).stdout)["self_check"]
            for label, cli in CLIS.items()}


def agrees(sc):
    return (sc["ran"] and sc["agreeing_segments"] == sc["recorded_segments"] ==
            sc["model_segments"] and sc.get("agreeing_segment_frees", 0) ==
            sc.get("recorded_segment_frees", 0) == sc.get("model_segment_frees", 0) and
            sc["recorded_ooms"] == sc["model_ooms"])


def empty_cache_runs(out, n, fs):
    for seed in range(SEED_BASE + 1, SEED_BASE + n + 1):
        name = "ec%d" % seed
        snap = os.path.join(out, name + ".pickle")
        res, _, _ = tc.workload(out, name, "mixed", ["--seed", str(seed), "--streams", "2",
                                                      "--empty-cache", "--snapshot", snap],
                                gpu=GPU)
        st = res["stats"][0]
        for label, sc in selfchecks(snap).items():
            f = fs[label]
            f.check("empty_cache: self-check agrees", agrees(sc), name)
            f.check("empty_cache: peak reserved", sc["model_peak_reserved_bytes"] ==
                    st["reserved_bytes.all.peak"], "%s model %d torch %d" % (
                        name, sc["model_peak_reserved_bytes"], st["reserved_bytes.all.peak"]))
            f.check("empty_cache: OOM", (sc["model_ooms"] > 0) == (res["oom"] is not None), name)
            f.check("empty_cache: segment allocations", sc["model_segments"] ==
                    st["num_device_alloc"], "%s model %d torch %d" % (
                        name, sc["model_segments"], st["num_device_alloc"]))
            if "model_segment_frees" in sc:
                f.check("empty_cache: segment frees", sc["model_segment_frees"] ==
                        st["num_device_free"], "%s model %d torch %d" % (
                            name, sc["model_segment_frees"], st["num_device_free"]))


def window_truth(full):
    """Reserved at the start of the last RING entries and the peak inside them."""
    with open(full, "rb") as fp:
        snap = pickle.load(fp)
    trace = snap["device_traces"][0]
    reserved, start, peak = 0, None, 0
    first = len(trace) - RING
    for i, e in enumerate(trace):
        if i == first:
            start = peak = reserved
        if e["action"] in ("segment_alloc", "segment_map"):
            reserved += e["size"]
        elif e["action"] in ("segment_free", "segment_unmap"):
            reserved -= e["size"]
        if i >= first:
            peak = max(peak, reserved)
    return (start if start is not None else 0), peak, len(trace)


def ring_runs(out, n, fs):
    for k in range(n):
        seed = SEED_BASE + 100 + k
        streams = "2" if k % 2 else "1"
        args = ["--seed", str(seed), "--streams", streams] + (["--empty-cache"] if k % 3 == 0
                                                               else [])
        name = "ring%d" % seed
        snap = os.path.join(out, name + ".pickle")
        full = os.path.join(out, name + "-full.pickle")
        tc.workload(out, name, "mixed", args + ["--snapshot", snap, "--max-entries", str(RING)],
                    gpu=GPU)
        tc.workload(out, name + "-full", "mixed", args + ["--snapshot", full], gpu=GPU)
        start, peak, entries = window_truth(full)
        if entries <= RING:
            continue
        for label, sc in selfchecks(snap).items():
            f = fs[label]
            f.check("ring: self-check agrees", agrees(sc), name)
            f.check("ring: peak reserved in the window", sc["model_peak_reserved_bytes"] == peak,
                    "%s model %d torch %d" % (name, sc["model_peak_reserved_bytes"], peak))


def main():
    global RING, GPU, SEED_BASE
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--empty-cache", type=int, default=25)
    p.add_argument("--ring", type=int, default=60)
    p.add_argument("--before", default=None)
    p.add_argument("--gpu", default=GPU)
    p.add_argument("--ring-entries", type=int, default=RING)
    p.add_argument("--seed-base", type=int, default=SEED_BASE)
    a = p.parse_args()
    RING, GPU, SEED_BASE = a.ring_entries, a.gpu, a.seed_base
    if a.before:
        CLIS["before"] = os.path.join(a.before, "bin", "cumemtrace")
    CLIS["after"] = tc.CLI
    fs = {label: tc.Failures("selfcheck " + label) for label in CLIS}
    empty_cache_runs(a.out, a.empty_cache, fs)
    ring_runs(a.out, a.ring, fs)
    for f in fs.values():
        f.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
