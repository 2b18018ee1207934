"""Memory-only PyTorch programs for tests/torch (run with the torch root's python3, on simcuda).

    python3 workload.py SCENARIO RESULT.json [--seed N] [--steps N] [--streams 1|2]
                        [--empty-cache] [--fraction F] [--snapshot FILE] [--max-entries N]
                        [--outside-mib N]

Each scenario allocates, views and frees tensors (kernels do not compute on simcuda, only memory
is real), catches torch.cuda.OutOfMemoryError (the first one ends the program's work), and
writes RESULT.json: torch.cuda.memory_stats() of every device used, at the end, the OOM message
torch raised (or null), and what the scenario did. --snapshot dumps torch's own snapshot
(_record_memory_history on from the start) beside it. PYTORCH_CUDA_ALLOC_CONF and
PYTORCH_NO_CUDA_MEMORY_CACHING act as torch reads them. --outside-mib N (the oom scenario) holds
N MiB of device memory outside torch's allocator before the failing request: a cuMemAlloc_v2
through libcuda by ctypes, as a library with its own buffers (NCCL, cuBLAS workspaces) does.
"""
import argparse
import ctypes
import json
import random
import sys

import torch

MIB = 1 << 20


def sizes_for(rng, steps):
    """A mix of small (<1 MiB, the small pool), medium and large requests, in bytes."""
    out = []
    for _ in range(steps):
        r = rng.random()
        if r < 0.3:
            out.append(rng.randrange(1, 1024) * 512)
        elif r < 0.8:
            out.append(rng.randrange(1, 40) * MIB + rng.randrange(0, 4) * 512 * 1024)
        else:
            out.append(rng.randrange(40, 200) * MIB)
    return out


def empty(nbytes, device="cuda", stream=None):
    if stream is None:
        return torch.empty(nbytes, dtype=torch.uint8, device=device)
    with torch.cuda.stream(stream):
        return torch.empty(nbytes, dtype=torch.uint8, device=device)


def mixed(args, state):
    """A seeded program: allocations, views that outlive their base's name, frees, a side stream
    with record_stream, and empty_cache() every so often when asked."""
    rng = random.Random(args.seed)
    side = torch.cuda.Stream() if args.streams == 2 else None
    live = []
    for step, nbytes in enumerate(sizes_for(rng, args.steps)):
        state["step"] = step
        on_side = side is not None and rng.random() < 0.4
        t = empty(nbytes, stream=side if on_side else None)
        if on_side:
            # used on the default stream too: its free waits for both
            torch.cuda.current_stream().wait_stream(side)
            t.record_stream(torch.cuda.current_stream())
        if rng.random() < 0.3:
            t = t.view(-1)[: max(1, nbytes // 2)]  # a view keeps the whole block alive
        live.append(t)
        while live and rng.random() < 0.45:
            live.pop(rng.randrange(len(live)))
        if side is not None and rng.random() < 0.1:
            side.synchronize()
        if args.empty_cache and step % 10 == 9:
            torch.cuda.empty_cache()
    state["live_at_end"] = len(live)
    return live


def fragmentation(args, state):
    """The seed's shape at small scale: the device fills with 120 MiB segments, each then carved
    into six 20 MiB tensors of which every other one is freed, so every segment is partly in use
    and holds 20 MiB holes; the device keeps less than a new segment needs. A request larger
    than any hole then fails although reserved - allocated is far above it."""
    seg = 120 * MIB
    free, _ = torch.cuda.mem_get_info()
    n = free // seg
    leftover = free - n * seg
    keep = []
    if leftover > 40 * MIB:  # a filler of its own segment, so that under 30 MiB stays free
        keep.append(empty((leftover - 30 * MIB) // (2 * MIB) * 2 * MIB))
    whole = [empty(seg) for _ in range(n)]
    del whole  # n free 120 MiB segments, cached
    parts = [empty(20 * MIB) for _ in range(6 * n)]  # best fit: segment by segment
    keep += parts[0::2]
    del parts
    state["segments_filled"] = int(n)
    state["step"] = "request"
    keep.append(empty(int(state.get("request_mib", 45)) * MIB))
    return keep


def graph(args, state):
    """Allocations inside a torch.cuda.graph capture (the graph's private pool), replayed."""
    static_in = empty(8 * MIB)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm-up, as torch's docs do before capturing
            tmp = static_in.view(-1)[: 4 * MIB].clone()
            del tmp
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        a = static_in.view(-1)[: 4 * MIB].clone()
        b = torch.empty(16 * MIB, dtype=torch.uint8, device="cuda")
        del a
        c = torch.empty(2 * MIB, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    out = [static_in, b, c]
    del g
    return out


def two_devices(args, state):
    """Tensors on cuda:0 and cuda:1, each device with its own cache."""
    keep = []
    rng = random.Random(args.seed)
    for step, nbytes in enumerate(sizes_for(rng, args.steps)):
        state["step"] = step
        dev = "cuda:%d" % (step % 2)
        t = empty(nbytes, device=dev)
        keep.append(t)
        while keep and rng.random() < 0.4:
            keep.pop(rng.randrange(len(keep)))
    return keep


def pending_free(args, state):
    """A block freed while another stream still uses it: torch keeps it until that stream's
    event completes (the snapshot shows it active, pending free)."""
    side = torch.cuda.Stream()
    t = empty(30 * MIB)
    keep = empty(10 * MIB)
    with torch.cuda.stream(side):
        t.record_stream(side)
    del t
    return [keep]


def cache_emptied(args, state):
    """Segments released by empty_cache() while others stay in use."""
    keep = [empty(12 * MIB), empty(300 * 1024)]
    tmp = [empty(n * MIB) for n in (25, 50, 75)]
    del tmp
    torch.cuda.empty_cache()
    keep.append(empty(7 * MIB))
    return keep


def emptied_between(args, state):
    """The four lines: 100 MiB, freed, empty_cache(), then 200 MiB (peak reserved 200 MiB)."""
    t = empty(100 * MIB)
    del t
    torch.cuda.empty_cache()
    return [empty(200 * MIB)]


def retried(args, state):
    """An OOM retry that succeeds: 900 MiB cached, then 1200 MiB on a 2 GiB card (torch frees
    the cache and tries again: num_alloc_retries 1, no OOM)."""
    t = empty(900 * MIB)
    del t
    return [empty(1200 * MIB)]


def ring(args, state):
    """More events than max_entries: the snapshot's trace keeps the last ones only."""
    keep = []
    for i in range(40):
        t = empty((i % 7 + 1) * MIB)
        if i % 3:
            keep.append(t)
    return keep


def outside_alloc(nbytes):
    """nbytes of device memory straight from the driver (libcuda's cuMemAlloc_v2 by ctypes),
    in the current context (torch made it current). @return the device pointer."""
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if cuda.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
        dev = ctypes.c_int()
        if cuda.cuDeviceGet(ctypes.byref(dev), 0) or \
                cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cuda.cuCtxSetCurrent(ctx):
            raise RuntimeError("no CUDA context for cuMemAlloc_v2")
    ptr = ctypes.c_uint64()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes))
    if rc != 0:
        raise RuntimeError("cuMemAlloc_v2 of %d bytes returned %d" % (nbytes, rc))
    return ptr.value


def oom(args, state):
    """Runs out of memory on purpose: the observer sees it, the program catches it."""
    keep = [empty(200 * MIB) for _ in range(4)]
    if args.outside_mib:  # held to the end: the process exits with it
        state["outside_ptr"] = outside_alloc(args.outside_mib * MIB)
    state["step"] = "request"
    keep.append(empty(int(state.get("request_mib", 4096)) * MIB))
    return keep


def expandable_oom(args, state):
    """Expandable segments on two devices, running out of memory on cuda:1 (run with
    expandable_segments:True): one 100 MiB map that empty_cache() splits into two dump-time
    segments by unmapping its middle (the tensors after it are too large for the hole), tensors
    that span two maps, until the device is full, and a request the rest of the GPU cannot hold
    (reserved but unallocated is small)."""
    dev = "cuda:1"
    keep = [empty(8 * MIB, device="cuda:0")]
    x = empty(100 * MIB, device=dev)  # one map of 100 MiB
    del x
    a, b, c = (empty(n * MIB, device=dev) for n in (20, 60, 20))
    del b
    torch.cuda.empty_cache()  # unmaps the free middle of the one map
    keep += [a, c]
    free, _ = torch.cuda.mem_get_info(1)
    for _ in range(int(free // (150 * MIB))):
        keep.append(empty(150 * MIB, device=dev))
    state["step"] = "request"
    keep.append(empty(int(state.get("request_mib", 400)) * MIB, device=dev))
    return keep


def expandable_holes(args, state):
    """Expandable segments (run with expandable_segments:True): the device filled with 19 MiB
    tensors, every other one freed, then a request larger than any hole. No hole holds a whole
    20 MiB page for c10 to unmap before it gives up: what stays reserved but unallocated is
    more than the request, scattered, no piece as large as it."""
    free, _ = torch.cuda.mem_get_info()
    parts = [empty(19 * MIB) for _ in range(int((free - 300 * MIB) // (19 * MIB)))]
    keep = parts[0::2]
    del parts
    state["step"] = "request"
    keep.append(empty(int(state.get("request_mib", 400)) * MIB))
    return keep


def pending_ring(args, state):
    """A block freed while another stream uses it, whose alloc and free both fell out of a
    ring-limited history (frees do not complete pending ones; allocations would)."""
    side = torch.cuda.Stream()
    t = empty(30 * MIB)
    with torch.cuda.stream(side):
        t.record_stream(side)
    keep = [empty((i % 3 + 1) * MIB) for i in range(12)]
    del t
    del keep[:6]
    return keep


SCENARIOS = {
    "mixed": mixed,
    "fragmentation": fragmentation,
    "graph": graph,
    "two_devices": two_devices,
    "pending_free": pending_free,
    "cache_emptied": cache_emptied,
    "emptied_between": emptied_between,
    "retried": retried,
    "ring": ring,
    "oom": oom,
    "expandable_oom": expandable_oom,
    "pending_ring": pending_ring,
    "expandable_holes": expandable_holes,
}

STAT_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak",
    "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "active_bytes.all.current", "active_bytes.all.peak",
    "requested_bytes.all.current", "requested_bytes.all.peak",
    "segment.all.current", "segment.all.peak",
    "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
    "allocation.all.allocated",
)


def stats(device):
    s = torch.cuda.memory_stats(device)
    return {k: int(s.get(k, 0)) for k in STAT_KEYS}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("result")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--streams", type=int, default=1, choices=(1, 2))
    p.add_argument("--empty-cache", action="store_true")
    p.add_argument("--fraction", type=float, default=None)
    p.add_argument("--request-mib", type=int, default=None)
    p.add_argument("--snapshot", default=None)
    p.add_argument("--max-entries", type=int, default=100000)
    p.add_argument("--outside-mib", type=int, default=0)
    args = p.parse_args()

    torch.cuda.init()
    if args.fraction is not None:
        torch.cuda.set_per_process_memory_fraction(args.fraction)
    if args.snapshot:
        torch.cuda.memory._record_memory_history(max_entries=args.max_entries)
    state = {"scenario": args.scenario, "step": None}
    dump_at_oom = args.snapshot and args.scenario in ("oom", "expandable_oom", "expandable_holes")
    devices = 2 if args.scenario in ("two_devices", "expandable_oom") else 1

    def on_oom(device, alloc, device_allocated, device_free):
        """torch's figures as the first OOM happens (before it raises, so before the
        program's tensors go); the oom scenario's snapshot is dumped here too."""
        if "stats_at_oom" in state:
            return
        state["stats_at_oom"] = [stats(d) for d in range(devices)]
        if dump_at_oom:
            torch.cuda.memory._dump_snapshot(args.snapshot)

    try:
        torch._C._cuda_attach_out_of_memory_observer(on_oom)
    except RuntimeError:  # backend:cudaMallocAsync has no observers; stats_at_oom stays unset
        pass
    if args.request_mib is not None:
        state["request_mib"] = args.request_mib
    message = None
    held = None
    try:
        held = SCENARIOS[args.scenario](args, state)
    except torch.cuda.OutOfMemoryError as err:
        message = str(err)
    torch.cuda.synchronize()
    result = {
        "oom": message,
        "oom_step": state["step"] if message else None,
        "state": state,
        "stats": [stats(d) for d in range(devices)],
        "total_memory": torch.cuda.get_device_properties(0).total_memory,
        "version": torch.__version__,
    }
    if args.snapshot and not dump_at_oom:
        torch.cuda.memory._dump_snapshot(args.snapshot)  # with the figures of result["stats"]
    with open(args.result, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    del held
    return 0


if __name__ == "__main__":
    sys.exit(main())
