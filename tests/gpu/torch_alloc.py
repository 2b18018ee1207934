#!/usr/bin/env python3
"""torch_alloc.py MODE — PyTorch allocations for tests/gpu/run.sh to record on a real GPU.

MODE names the allocator configuration run.sh put in PYTORCH_CUDA_ALLOC_CONF (default,
expandable = expandable_segments:True, async = backend:cudaMallocAsync); this script only
reports it. It allocates and frees tensors of a few sizes (small and large pool), leaves some
memory cached by the allocator, then asks for 2 GiB more than is free: the caching allocator
fails, frees its cache, retries and fails again (cudaMallocAsync fails once), and PyTorch raises
torch.cuda.OutOfMemoryError. Prints "torch_alloc: oom=1" when it did; exits 0 only then.
"""
import os
import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
dev = torch.device("cuda", 0)
print(f"torch_alloc: mode={mode} PYTORCH_CUDA_ALLOC_CONF={conf!r} torch={torch.__version__} "
      f"cuda={torch.version.cuda} device={torch.cuda.get_device_name(0)!r}", flush=True)

MiB = 1 << 20
keep = [torch.empty(n, dtype=torch.uint8, device=dev) for n in (256 * 1024, 3 * MiB, 64 * MiB, 300 * MiB)]
cached = [torch.empty(n, dtype=torch.uint8, device=dev) for n in (1 * MiB, 30 * MiB, 500 * MiB)]
for t in cached:
    t.fill_(1)
del cached  # freed to the allocator's cache, not to the driver
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info(0)
print(f"torch_alloc: reserved={torch.cuda.memory_reserved(0)} free={free} total={total}", flush=True)

oom = 0
try:
    huge = torch.empty(free + 2 * 1024 * MiB, dtype=torch.uint8, device=dev)
    del huge
except torch.cuda.OutOfMemoryError as e:
    oom = 1
    print("torch_alloc: OutOfMemoryError: " + str(e).splitlines()[0][:200], flush=True)
del keep
torch.cuda.synchronize()
torch.cuda.empty_cache()
print(f"torch_alloc: oom={oom}", flush=True)
sys.exit(0 if oom else 1)
