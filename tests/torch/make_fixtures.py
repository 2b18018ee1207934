"""Writes the snapshot reader's fixtures with real torch (run in the torch root; see README):
small snapshots from torch's own _dump_snapshot, each with the figures torch.cuda.memory_stats()
gave at that moment beside it (NAME.json), into tests/torch/fixtures/. check_fixtures.py checks
`cumemtrace report` against them in every build.

    scripts/torch-run.sh --no-record --bind tests/torch -- python3 tests/torch/make_fixtures.py [NAME...]

With names, only those fixtures are written again.
"""
import json
import os
import sys

import torchcheck as tc

OUT = os.path.join(tc.HERE, "fixtures")
# (name, scenario, args, conf, devices, what it covers)
FIXTURES = [
    ("expandable", "mixed", ["--seed", "21", "--steps", "30"], "expandable_segments:True", 1,
     "expandable segments (segment_map / segment_unmap)"),
    ("pending_free", "pending_free", [], None, 1,
     "a free pending on another stream (record_stream)"),
    ("cache_emptied", "cache_emptied", [], None, 1, "segments released by empty_cache()"),
    ("emptied_between", "emptied_between", [], None, 1,
     "empty_cache() between a free and a larger allocation (its segment free compared)"),
    ("retried", "retried", [], None, 1,
     "an out-of-memory retry that succeeded (no oom entry: the retry bounds the capacity)"),
    ("ring", "ring", ["--max-entries", "16"], None, 1,
     "a ring-limited history (max_entries=16 of 40 allocations)"),
    ("ring_emptied", "mixed", ["--seed", "100", "--empty-cache", "--max-entries", "40"], None, 1,
     "a ring-limited history (max_entries=40) of a seeded run with empty_cache() calls"),
    ("oom", "oom", ["--request-mib", "4096"], None, 1,
     "an OOM caught by the observer, which dumped the snapshot"),
    ("two_devices", "two_devices", ["--seed", "22", "--steps", "24"], None, 2,
     "tensors on cuda:0 and cuda:1"),
    ("expandable_oom", "expandable_oom", [], "expandable_segments:True", 2,
     "expandable segments split by empty_cache(), a tensor over two maps, an OOM on cuda:1"),
    ("pending_ring", "pending_ring", ["--max-entries", "8"], None, 1,
     "a pending free whose alloc and free_requested fell out of the ring"),
    ("expandable_holes", "expandable_holes", [], "expandable_segments:True", 1,
     "expandable segments, an OOM with reserved but unallocated memory scattered in holes"),
    ("fraction_oom", "oom", ["--request-mib", "600", "--fraction", "0.5"], None, 1,
     "an OOM under set_per_process_memory_fraction(0.5): the device had the request free"),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]  # names to write again (default: all)
    for name, scenario, args, conf, devices, covers in FIXTURES:
        if only and name not in only:
            continue
        snap = os.path.join(OUT, name + ".pickle")
        res, _, _ = tc.workload("out", name, scenario, args + ["--snapshot", snap], conf=conf,
                                gpu="2GiB", devices=devices)
        stats = res["state"].get("stats_at_oom") or res["stats"]
        figures = {"kind": name, "covers": covers, "scenario": scenario, "args": args,
                   "conf": conf, "devices": devices, "torch_version": res["version"],
                   "simulated_memory": "2GiB", "stats": stats, "oom": res["oom"]}
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(figures, f, indent=1, sort_keys=True)
            f.write("\n")
        print("make_fixtures: %s.pickle (%d bytes): %s" % (name, os.path.getsize(snap), covers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
