#!/usr/bin/env python3
"""torch_train.py MODE OUTDIR — PyTorch runs for tests/gpu/run.sh to record with `record --torch`.

MODE train: a small training loop (an MLP, Adam, a few steps); MODE frag: a provoked
fragmentation OOM: one 8 GiB segment cut into four 2 GiB blocks, the first and third freed
(4 GiB reserved but unallocated, in two separate 2 GiB holes), then 3 GiB tensors until one
fails: the allocator holds more free bytes than the request in its cache, yet no block fits.
Both write OUTDIR/torch_MODE.stats.json (torch.cuda.memory_stats() at the end, the OOM's
figures) and, as the last thing they do, PyTorch's own snapshot OUTDIR/torch_MODE.own.pickle,
to compare with the one `record --torch` dumps at exit. Exits 0 when the run went as planned
(frag: exactly one OutOfMemoryError, at a 3 GiB request).
"""
import json
import os
import sys

import torch

mode, outdir = sys.argv[1], sys.argv[2]
dev = torch.device("cuda", 0)
GiB = 1 << 30
result = {"mode": mode, "torch": torch.__version__, "oom": None}


def train():
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(5):
        x = torch.randn(512, 4096, device=dev)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return model, opt


def fragment():
    big = torch.empty(8 * GiB, dtype=torch.uint8, device=dev)
    del big  # one cached 8 GiB segment
    parts = [torch.empty(2 * GiB, dtype=torch.uint8, device=dev) for _ in range(4)]
    kept = [parts[1], parts[3]]
    del parts  # blocks 0 and 2 go back: two 2 GiB holes that cannot merge
    fillers = []
    try:
        while True:
            fillers.append(torch.empty(3 * GiB, dtype=torch.uint8, device=dev))
    except torch.cuda.OutOfMemoryError as e:
        free, total = torch.cuda.mem_get_info(0)
        result["oom"] = {"request": 3 * GiB, "message": str(e).splitlines()[0][:300],
                         "device_free": free, "device_total": total,
                         "allocated": torch.cuda.memory_allocated(0),
                         "reserved": torch.cuda.memory_reserved(0)}
    return kept, fillers


keep = train() if mode == "train" else fragment()
stats = torch.cuda.memory_stats(0)
result["allocated_peak"] = stats["allocated_bytes.all.peak"]
result["reserved_peak"] = stats["reserved_bytes.all.peak"]
result["allocated_current"] = stats["allocated_bytes.all.current"]
result["reserved_current"] = stats["reserved_bytes.all.current"]
result["num_ooms"] = stats.get("num_ooms", 0)
with open(os.path.join(outdir, "torch_%s.stats.json" % mode), "w") as f:
    json.dump(result, f, indent=1)
print("torch_train: " + json.dumps(result), flush=True)
# PyTorch's own dump, last: nothing allocates between it and the hook's dump at exit
torch.cuda.memory._dump_snapshot(os.path.join(outdir, "torch_%s.own.pickle" % mode))
ok = result["oom"] is not None if mode == "frag" else result["num_ooms"] == 0
sys.exit(0 if ok else 1)
