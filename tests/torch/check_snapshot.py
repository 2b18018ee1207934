"""The figures `report` reads from torch's own _dump_snapshot equal torch.cuda.memory_stats()
at the end and at the peak (allocated, reserved, active, requested, segments), on one and on two
simulated devices."""
import json
import sys

import snapshot_figures
import torchcheck as tc

RUNS = [
    ("one_device", "mixed", ["--seed", "7", "--steps", "80"], {}, 1),
    ("one_device_streams", "mixed", ["--seed", "8", "--streams", "2", "--empty-cache"], {}, 1),
    ("expandable", "mixed", ["--seed", "9"], {"conf": "expandable_segments:True"}, 1),
    ("two_devices", "two_devices", ["--seed", "4", "--steps", "80"], {}, 2),
    ("cache_emptied", "cache_emptied", [], {}, 1),
    ("pending_free", "pending_free", [], {}, 1),
    ("graph", "graph", [], {}, 1),
]


def main():
    f = tc.Failures("snapshot_torch")
    for name, scenario, args, opts, devices in RUNS:
        snap = "out/%s.pickle" % name
        res, _, _ = tc.workload("out", name, scenario, args + ["--snapshot", snap],
                                gpu="4GiB", devices=devices, **opts)
        report = json.loads(tc.run([tc.CLI, "report", "--json", snap]).stdout)
        snapshot_figures.compare(f, name, report, res["stats"])
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
