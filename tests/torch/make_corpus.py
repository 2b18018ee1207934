"""Writes the corpus check_corpus.py reads: real snapshots of real torch 2.6 on simcuda, many per
python process (run in the torch root, as tests/torch/run.sh does; the current directory is
where the corpus goes):

    python3 make_corpus.py                 every group below, two processes at a time
    python3 make_corpus.py GROUP           one group, in this process (the driver runs these)

Each case starts from an empty cache (everything freed, synchronized, empty_cache()), resets
the peaks and turns history on (_record_memory_history, torch's own; with a ring limit where
the class has one), runs a seeded memory-only program, and dumps torch's own snapshot
(_dump_snapshot: torch.cuda.memory._snapshot() pickled as torch does) as CLASS-SEED.pickle.
Beside it CLASS-SEED.json holds torch.cuda.memory_stats() of every device at the dump (its
.peak figures are the case's peaks), the OOM message torch raised, and the OOM observer's
figures. A case whose snapshot is dumped inside the OOM observer has the stats of that moment.
"""
import json
import os
import random
import subprocess
import sys

MIB = 1 << 20
GIB = 1 << 30

# group: (environment, [(class, seeds)]). The environment decides what torch and simcuda
# read at start-up (allocator settings, devices, memory, other processes' bytes).
BASE_ENV = {"SIMCUDA_MEMORY": "2GiB", "SIMCUDA_DEVICES": "1", "SIMCUDA_REUSE_ADDRESSES": "0"}
GROUPS = {
    "default": ({}, [("random", 40), ("empty_cache", 40), ("pending", 40)]),
    "ring": ({}, [("ring40", 40), ("ring120", 40)]),
    "oom": ({}, [("oom_capacity", 10), ("oom_exhausted", 14), ("oom_fragmented", 10)]),
    "others": ({"SIMCUDA_USED": "1GiB"}, [("oom_others", 10)]),
    "expandable": ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                   [("expandable", 30), ("expandable_empty_cache", 14),
                    ("expandable_oom", 12)]),
    "two_devices": ({"SIMCUDA_DEVICES": "2"}, [("two_devices", 30)]),
}


def sizes(rng, n):
    """Small (the small pool), medium and large requests, in bytes."""
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.35:
            out.append(rng.randrange(1, 2048) * rng.choice((1, 4, 256)))
        elif r < 0.85:
            out.append(rng.randrange(1, 30) * MIB + rng.randrange(0, 8) * 64 * 1024)
        else:
            out.append(rng.randrange(30, 120) * MIB)
    return out


def run_group(name, out_dir):
    import torch

    def empty(nbytes, device="cuda", stream=None):
        if stream is None:
            return torch.empty(nbytes, dtype=torch.uint8, device=device)
        with torch.cuda.stream(stream):
            return torch.empty(nbytes, dtype=torch.uint8, device=device)

    ndev = torch.cuda.device_count()
    side = torch.cuda.Stream()
    held = []
    at_oom = {}

    def stats(dev):
        return {k: int(v) for k, v in torch.cuda.memory_stats(dev).items()
                if isinstance(v, (int, float))}

    def random_stream(rng, steps, devices=1, empty_cache=False, streams=False):
        for step, nbytes in enumerate(sizes(rng, steps)):
            dev = "cuda:%d" % rng.randrange(devices)
            on_side = streams and rng.random() < 0.3
            t = empty(nbytes, device=dev, stream=side if on_side else None)
            if streams and rng.random() < 0.3:
                t.record_stream(side)  # its free waits for the side stream's work
            held.append(t)
            while held and rng.random() < 0.45:
                held.pop(rng.randrange(len(held)))
            if empty_cache and rng.random() < 0.1:
                torch.cuda.empty_cache()
            if streams and rng.random() < 0.05:
                side.synchronize()

    def fill(rng, chunk_mib):
        while True:  # until torch raises OutOfMemoryError
            held.append(empty(rng.randrange(chunk_mib // 2, chunk_mib) * MIB))

    def fragment(rng):
        """Segments carved into 20 MiB tensors, every other one freed: holes everywhere, a
        request larger than any hole fails though reserved - allocated is far above it."""
        seg = rng.choice((100, 120, 140)) * MIB
        free, _ = torch.cuda.mem_get_info()
        n = free // seg
        if free - n * seg > 40 * MIB:  # a filler in its own segment: under 30 MiB stays free
            held.append(empty((free - n * seg - 30 * MIB) // (2 * MIB) * 2 * MIB))
        whole = [empty(seg) for _ in range(n)]
        del whole
        parts = [empty(20 * MIB) for _ in range(n * (seg // (20 * MIB)))]
        held.extend(parts[0::2])
        del parts
        held.append(empty(rng.randrange(41, 60) * MIB))

    def body(cls, rng):
        if cls in ("random", "ring40", "ring120"):
            random_stream(rng, rng.randrange(40, 160))
        elif cls in ("empty_cache", "expandable_empty_cache"):
            random_stream(rng, rng.randrange(40, 120), empty_cache=True)
        elif cls == "expandable":
            random_stream(rng, rng.randrange(30, 120), streams=rng.random() < 0.5)
        elif cls == "pending":
            random_stream(rng, rng.randrange(20, 80), streams=True)
            for _ in range(rng.randrange(1, 4)):  # freed while the side stream uses them
                t = empty(rng.randrange(1, 40) * MIB)
                t.record_stream(side)
                del t
        elif cls == "two_devices":
            random_stream(rng, rng.randrange(30, 120), devices=ndev)
        elif cls == "oom_capacity":
            random_stream(rng, rng.randrange(5, 30))
            held.append(empty(rng.randrange(3, 8) * GIB))
        elif cls in ("oom_exhausted", "oom_others", "expandable_oom"):
            random_stream(rng, rng.randrange(5, 30))
            fill(rng, rng.choice((40, 100, 300)))
        elif cls == "oom_fragmented":
            fragment(rng)

    def on_oom(device, alloc, device_total, device_free):
        if at_oom.get("stats") is None:
            at_oom["stats"] = [stats(d) for d in range(ndev)]
            at_oom["observer"] = {"device": device, "alloc": alloc, "total": device_total,
                                  "free": device_free}
            if at_oom.get("dump"):
                torch.cuda.memory._dump_snapshot(at_oom["dump"])

    torch._C._cuda_attach_out_of_memory_observer(on_oom)
    env, classes = GROUPS[name]
    written = 0
    for cls, seeds in classes:
        for seed in range(seeds):
            rng = random.Random("%s-%d" % (cls, seed))
            base = os.path.join(out_dir, "%s-%d" % (cls, seed))
            held.clear()
            torch.cuda.synchronize()
            for d in range(ndev):
                with torch.cuda.device(d):
                    torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(d)
            torch.cuda.memory._record_memory_history(None)
            ring = int(cls[4:]) if cls.startswith("ring") else 100000
            torch.cuda.memory._record_memory_history(max_entries=ring)
            start = [stats(d) for d in range(ndev)]  # num_ooms and the like never reset
            in_observer = cls.startswith("oom") or cls.endswith("oom")
            in_observer = in_observer and rng.random() < 0.5
            at_oom.clear()
            at_oom["dump"] = base + ".pickle" if in_observer else None
            message = None
            try:
                body(cls, rng)
            except torch.cuda.OutOfMemoryError as err:
                message = str(err)
            except RuntimeError as err:  # seen with expandable segments near capacity
                if "out of memory" not in str(err):
                    raise
                message = str(err)
            final = at_oom.get("stats") if in_observer and message else None
            if final is None:
                final = [stats(d) for d in range(ndev)]
                torch.cuda.memory._dump_snapshot(base + ".pickle")
            figures = {"class": cls, "seed": seed, "group": name, "env": env,
                       "devices": ndev, "max_entries": ring if ring < 100000 else None,
                       "dumped_in_oom_observer": bool(in_observer and message),
                       "stats": final, "start_stats": start, "oom": message,
                       "oom_observer": at_oom.get("observer"),
                       "total_memory": [torch.cuda.get_device_properties(d).total_memory
                                        for d in range(ndev)],
                       "torch_version": torch.__version__}
            with open(base + ".json", "w") as f:
                json.dump(figures, f, sort_keys=True)
            written += 1
    held.clear()
    print("make_corpus: %s: %d snapshots" % (name, written), flush=True)


def drive(out_dir):
    """Every group in its own process (start-up decides the settings), two at a time."""
    here = os.path.abspath(__file__)
    pending = list(GROUPS)
    running = []
    failed = 0
    while pending or running:
        while pending and len(running) < 2:
            g = pending.pop(0)
            env = dict(os.environ)
            for k in ("PYTORCH_CUDA_ALLOC_CONF", "SIMCUDA_USED"):
                env.pop(k, None)
            env.update(BASE_ENV)
            env.update(GROUPS[g][0])
            running.append((g, subprocess.Popen([sys.executable, "-B", here, g, out_dir],
                                                env=env)))
        g, p = running.pop(0)
        if p.wait() != 0:
            print("make_corpus: group %s exited %d" % (g, p.returncode))
            failed += 1
    if failed:
        return 1
    with open(os.path.join(out_dir, "COMPLETE"), "w") as f:
        f.write("written by make_corpus.py\n")
    return 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] in GROUPS:
        run_group(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.getcwd())
        return 0
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):  # a corpus of earlier classes must not linger
        if old == "COMPLETE" or old.endswith((".pickle", ".json")):
            os.unlink(os.path.join(out_dir, old))
    return drive(out_dir)


if __name__ == "__main__":
    sys.exit(main())
