"""A memory-only torch program with the program's own phases, for check_phases.py:
torch.cuda.nvtx ranges and record_function ranges around allocations, an out-of-memory failure
inside an NVTX range, and the figures the checks compare against in RESULT.json:

    python3 phases_prog.py RESULT.json

RESULT.json: mem_get_info() (free, total) at the start, just before the OOM and at the end;
the bytes torch allocated inside each innermost range (memory_allocated() before and after);
the OOM message. The ranges: NVTX load_weights; train_step > forward and, by record_function,
train_step > optimizer_state; NVTX tight (popped at once); NVTX huge_request around a request of twice the device."""
import json
import sys

import torch

MIB = 1 << 20


def empty(mib):
    return torch.empty(mib * MIB, dtype=torch.uint8, device="cuda")


def inside(out, name, fn):
    """Runs fn; notes the bytes torch allocated while it ran (no frees in it)."""
    before = torch.cuda.memory_allocated()
    fn()
    out["inside"][name] = torch.cuda.memory_allocated() - before


def main():
    out = {"inside": {}}
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    out["mem_get_info_start"] = [free, total]
    keep = []
    # NVTX push/pop around allocations
    torch.cuda.nvtx.range_push("load_weights")
    inside(out, "load_weights", lambda: keep.extend([empty(64), empty(32)]))
    torch.cuda.nvtx.range_pop()
    # a nested NVTX range
    torch.cuda.nvtx.range_push("train_step")
    torch.cuda.nvtx.range_push("forward")
    act = []
    inside(out, "forward", lambda: act.extend([empty(100), empty(20)]))
    torch.cuda.nvtx.range_pop()
    # record_function (reaches the trace through the snapshot's external_annotations)
    with torch.autograd.profiler.record_function("optimizer_state"):
        inside(out, "optimizer_state", lambda: keep.append(empty(48)))
    torch.cuda.nvtx.range_pop()
    del act
    # a range that closes microseconds after its allocation returns (the snapshot's clock must
    # be placed to the microsecond for the block to land inside it)
    torch.cuda.nvtx.range_push("tight")
    t = empty(8)
    torch.cuda.nvtx.range_pop()
    out["inside"]["tight"] = t.untyped_storage().nbytes()
    keep.append(t)
    # an OOM inside an NVTX range
    torch.cuda.nvtx.range_push("huge_request")
    free_oom, total_oom = torch.cuda.mem_get_info()
    out["mem_get_info_oom"] = [free_oom, total_oom]
    out["oom_request"] = total * 2
    try:
        big = torch.empty(total * 2, dtype=torch.uint8, device="cuda")
        out["oom"] = None
        del big
    except torch.cuda.OutOfMemoryError as e:
        out["oom"] = str(e)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    out["mem_get_info_end"] = list(torch.cuda.mem_get_info())
    out["allocated_end"] = torch.cuda.memory_allocated()
    out["reserved_end"] = torch.cuda.memory_reserved()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
