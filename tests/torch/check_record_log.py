"""record of real torch equals SIMCUDA_LOG (what simcuda served), under each way torch allocates:
caching on, caching off, expandable segments, backend:cudaMallocAsync, a torch.cuda.graph capture,
and record --torch too."""
import sys

import torchcheck as tc

RUNS = [
    ("caching_on", "mixed", {}, ["--streams", "2"]),
    ("caching_off", "mixed", {"no_caching": True}, ["--streams", "2"]),
    ("expandable", "mixed", {"conf": "expandable_segments:True"}, ["--streams", "2"]),
    ("async_backend", "mixed", {"conf": "backend:cudaMallocAsync"}, ["--streams", "2"]),
    ("graph_capture", "graph", {}, []),
    ("graph_capture_async", "graph", {"conf": "backend:cudaMallocAsync"}, []),
    ("record_torch", "mixed", {"record": "torch"}, ["--empty-cache"]),
    ("two_devices", "two_devices", {"devices": 2}, []),
]


def main():
    f = tc.Failures("record_log")
    for name, scenario, opts, args in RUNS:
        opts = dict(opts)
        record = opts.pop("record", "plain")
        _, trace, log = tc.workload("out", name, scenario, args, record=record, log=True,
                                    gpu="4GiB", **opts)
        p = tc.run([tc.LOG_CHECK, tc.CLI, log, trace], check=False)
        sys.stdout.write("".join("  %s: %s\n" % (name, l) for l in p.stdout.splitlines()[:3]))
        f.check("record equals SIMCUDA_LOG", p.returncode == 0,
                "%s: simcuda_log_check exited %d:\n%s%s" % (name, p.returncode, p.stdout, p.stderr))
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
