#!/usr/bin/env python3
"""make_fixtures.py — writes the snapshot fixtures of tests/tools/snapshot/fixtures/ and the
seed corpus of tests/fuzz/corpus/pickle_decode/ (both committed; run this only to change them).

Each fixture is a small hand-made snapshot in one of the forms PyTorch writes (see
../shared/notes/pytorch-snapshots.md); test_snapshot.c states the figures each one must give.
The frame lists are shared objects, as in PyTorch's pickles, so the memo is exercised."""
import os
import pickle
import sys

MIB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
CORPUS = os.path.join(HERE, "..", "..", "fuzz", "corpus", "pickle_decode")


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


UNWIND = frame("torch::unwind::unwind()", "??", 0)
ALLOC_FRAMES = [UNWIND, frame("forward", "model.py", 42), frame("<module>", "train.py", 7)]
FREE_FRAMES = [UNWIND, frame("backward", "model.py", 51), frame("<module>", "train.py", 9)]
OLD_FRAMES = [frame("init_weights", "model.py", 12), frame("<module>", "train.py", 3)]


def settings(**over):
    s = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128,roundup_power2_divisions:4",
         "max_split_size": 128 * MIB, "garbage_collection_threshold": 0.0,
         "expandable_segments": False, "pinned_num_register_threads": 1,
         "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
         "roundup_power2_divisions": {str(1 << k): 4 for k in range(16)}}
    s.update(over)
    return s


def block(addr, size, requested, state, frames):
    return {"address": addr, "size": size, "requested_size": requested, "state": state,
            "frames": frames}


def segment(dev, addr, total, blocks, small=False, expandable=False, pool=(0, 0)):
    active = sum(b["size"] for b in blocks if b["state"].startswith("active"))
    alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    return {"device": dev, "address": addr, "total_size": total, "allocated_size": alloc,
            "active_size": active, "requested_size": sum(b["requested_size"] for b in blocks),
            "stream": 0, "segment_type": "small" if small else "large",
            "segment_pool_id": pool, "is_expandable": expandable, "frames": [],
            "blocks": blocks}


def entry(action, addr, size, t=None, frames=None, **extra):
    e = {"action": action, "addr": addr, "size": size, "stream": 0}
    if t is not None:
        e["time_us"] = t
    e["frames"] = frames if frames is not None else []
    e.update(extra)
    return e


def full():
    """2.1+: two devices, a ring-limited trace (a free and a segment_free whose alloc is not
    in it), an oom entry, a user_defined entry (skipped), settings with a conf string."""
    A, B, C, D = 0x7F0000000000, 0x7F0001400000, 0x7F0010000000, 0x7F1000000000
    T = 1700000000000000
    seg0 = [segment(0, A, 20 * MIB, [block(A, 8 * MIB, 8 * MIB, "active_allocated", OLD_FRAMES),
                                     block(A + 8 * MIB, 4 * MIB, 4 * MIB - 100,
                                           "active_allocated", ALLOC_FRAMES),
                                     block(A + 12 * MIB, 8 * MIB, 8 * MIB, "inactive", [])]),
            segment(0, B, 2 * MIB, [block(B, 512, 100, "active_pending_free", ALLOC_FRAMES),
                                    block(B + 512, 2 * MIB - 512, 0, "inactive", [])],
                    small=True)]
    seg1 = [segment(1, D, 20 * MIB, [block(D, 3 * MIB, 3 * MIB, "active_allocated", ALLOC_FRAMES),
                                     block(D + 3 * MIB, 17 * MIB, 0, "inactive", [])])]
    dev0 = [entry("free_requested", A + 12 * MIB, 6 * MIB, T + 10, FREE_FRAMES),
            entry("free_completed", A + 12 * MIB, 6 * MIB, T + 11, FREE_FRAMES),
            entry("segment_free", C, 20 * MIB, T + 20, FREE_FRAMES),
            entry("segment_alloc", B, 2 * MIB, T + 30, ALLOC_FRAMES),
            entry("alloc", B, 100, T + 31, ALLOC_FRAMES, compile_context="N/A",
                  user_metadata=""),
            entry("alloc", A + 8 * MIB, 4 * MIB - 100, T + 40, ALLOC_FRAMES),
            entry("free_requested", B, 100, T + 50, FREE_FRAMES),
            {"action": "oom", "size": 40 * MIB, "stream": 0, "time_us": T + 60,
             "device_free": 10 * MIB, "frames": ALLOC_FRAMES},
            entry("user_defined", 0, 0, T + 61),
            entry("snapshot", 0, 0, T + 70)]
    dev1 = [entry("segment_alloc", D, 20 * MIB, T + 15, ALLOC_FRAMES),
            entry("alloc", D, 3 * MIB, T + 16, ALLOC_FRAMES),
            entry("alloc", D + 3 * MIB, 1 * MIB, T + 35, ALLOC_FRAMES),
            entry("free_requested", D + 3 * MIB, 1 * MIB, T + 36, FREE_FRAMES),
            entry("free_completed", D + 3 * MIB, 1 * MIB, T + 37, FREE_FRAMES)]
    return {"segments": seg0 + seg1, "device_traces": [dev0, dev1],
            "allocator_settings": settings(),
            "external_annotations": [{"stage": "START", "name": "step", "device": 0,
                                      "time_us": T}]}


def history():
    """2.0: blocks carry `history` (the last entry is the live allocation) and no address; the
    trace is one `snapshot` entry without time_us."""
    S = 0x7E0000000000
    blocks = [{"size": 20 * MIB, "requested_size": 20 * MIB - 1000, "state": "active_allocated",
               "history": [{"addr": S, "real_size": 5 * MIB, "frames": OLD_FRAMES},
                           {"addr": S, "real_size": 20 * MIB - 1000, "frames": ALLOC_FRAMES}]},
              {"size": 20 * MIB, "state": "active_allocated",
               "history": [{"addr": S + 20 * MIB, "real_size": 7 * MIB, "frames": OLD_FRAMES}]},
              {"size": 2 * MIB, "state": "inactive", "history": []}]
    seg = {"device": 0, "address": S, "total_size": 42 * MIB, "allocated_size": 40 * MIB,
           "active_size": 40 * MIB, "stream": 0, "segment_type": "large", "blocks": blocks}
    return {"segments": [seg],
            "device_traces": [[{"action": "snapshot", "addr": 0, "size": 40 * MIB,
                                "stream": 0}]]}


def bare_list():
    """torch.cuda.memory_snapshot(): a list of segments, here on devices 1 and 0."""
    P, Q = 0x7C0000000000, 0x7C1000000000
    return [segment(1, P, 20 * MIB, [block(P, 12 * MIB, 12 * MIB, "active_allocated",
                                           ALLOC_FRAMES),
                                     block(P + 12 * MIB, 8 * MIB, 0, "inactive", [])]),
            segment(0, Q, 2 * MIB, [block(Q, 1024, 1000, "active_allocated", OLD_FRAMES),
                                    block(Q + 1024, 2 * MIB - 1024, 0, "inactive", [])],
                    small=True)]


def no_time():
    """Early 2.x: no time_us; two devices, kept device by device in file order."""
    P, Q = 0x7B0000000000, 0x7B1000000000
    return {"segments": [segment(0, P, 20 * MIB, [block(P, 20 * MIB, 0, "inactive", [])]),
                         segment(1, Q, 20 * MIB, [block(Q, 4 * MIB, 4 * MIB, "active_allocated",
                                                        ALLOC_FRAMES),
                                                  block(Q + 4 * MIB, 16 * MIB, 0, "inactive",
                                                        [])])],
            "device_traces": [[entry("segment_alloc", P, 20 * MIB, None, ALLOC_FRAMES),
                               entry("alloc", P, 5 * MIB, None, ALLOC_FRAMES),
                               entry("free_requested", P, 5 * MIB, None, FREE_FRAMES),
                               entry("free_completed", P, 5 * MIB, None, FREE_FRAMES)],
                              [entry("alloc", Q, 4 * MIB, None, ALLOC_FRAMES)]]}


def expandable():
    """Expandable segments: segment_map/unmap; 20 MiB mapped before the window at E, 20 MiB at
    E+40MiB mapped before it and unmapped in it; 40 MiB mapped at dump time."""
    E = 0x7D0000000000
    blocks = [block(E, 10 * MIB, 10 * MIB, "active_allocated", OLD_FRAMES),
              block(E + 10 * MIB, 10 * MIB, 0, "inactive", []),
              block(E + 20 * MIB, 10 * MIB, 10 * MIB - 7, "active_allocated", ALLOC_FRAMES),
              block(E + 30 * MIB, 10 * MIB, 0, "inactive", [])]
    T = 1710000000000000
    return {"segments": [segment(0, E, 40 * MIB, blocks, expandable=True)],
            "device_traces": [[entry("segment_map", E + 20 * MIB, 20 * MIB, T, ALLOC_FRAMES),
                               entry("alloc", E + 20 * MIB, 10 * MIB - 7, T + 1, ALLOC_FRAMES),
                               entry("segment_unmap", E + 40 * MIB, 20 * MIB, T + 2,
                                     FREE_FRAMES)]],
            "allocator_settings": settings(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True",
                                           max_split_size=-1, expandable_segments=True,
                                           roundup_power2_divisions={str(1 << k): 0
                                                                     for k in range(16)})}


def rebuilt_settings():
    """allocator_settings without the conf string: the conversion rebuilds one."""
    s = settings(max_split_size=256 * MIB, expandable_segments=True,
                 garbage_collection_threshold=0.0,
                 roundup_power2_divisions={str(1 << k): 0 for k in range(16)})
    del s["PYTORCH_CUDA_ALLOC_CONF"]
    return {"segments": [], "device_traces": [[]], "allocator_settings": s}


def annotations():
    """external_annotations (record_function ranges): one before the window, "fwd" around an
    alloc, "step" around an alloc and an oom, an END whose START the ring lost, a stage of
    another kind (skipped)."""
    A = 0x7F0000000000
    T = 1700000000000000
    seg = [segment(0, A, 20 * MIB, [block(A, 2 * MIB, 2 * MIB, "active_allocated", ALLOC_FRAMES),
                                    block(A + 2 * MIB, 18 * MIB, 0, "inactive", [])])]
    dev0 = [entry("alloc", A, 2 * MIB, T + 5, ALLOC_FRAMES),
            entry("alloc", A + 2 * MIB, 4 * MIB, T + 25, ALLOC_FRAMES),
            entry("free_requested", A + 2 * MIB, 4 * MIB, T + 27, FREE_FRAMES),
            {"action": "oom", "size": 40 * MIB, "stream": 0, "time_us": T + 30,
             "device_free": 10 * MIB, "frames": ALLOC_FRAMES}]
    note = [{"stage": "START", "name": "early", "device": 0, "time_us": T - 100},
            {"stage": "END", "name": "early", "device": 0, "time_us": T - 50},
            {"stage": "START", "name": "fwd", "device": 0, "time_us": T},
            {"stage": "END", "name": "lost", "device": 0, "time_us": T + 1},
            {"stage": "END", "name": "fwd", "device": 0, "time_us": T + 10},
            {"stage": "START", "name": "Optimizer.step#AdamW.step", "device": 0,
             "time_us": T + 20},
            {"stage": "MARK", "name": "other", "device": 0, "time_us": T + 21},
            {"stage": "END", "name": "Optimizer.step#AdamW.step", "device": 0,
             "time_us": T + 40}]
    return {"segments": seg, "device_traces": [dev0], "allocator_settings": settings(),
            "external_annotations": note}


def graph_pool():
    """A CUDA graph's private pool beside the default one: segment_pool_id (0, 1) (what
    torch.cuda.graph_pool_handle() returns), a segment of 8 MiB holding 2 MiB; the default
    pool's 20 MiB holding 6 MiB."""
    A, G = 0x7F0000000000, 0x7F0002000000
    segs = [segment(0, A, 20 * MIB, [block(A, 6 * MIB, 6 * MIB, "active_allocated", ALLOC_FRAMES),
                                     block(A + 6 * MIB, 14 * MIB, 14 * MIB, "inactive", [])]),
            segment(0, G, 8 * MIB, [block(G, 2 * MIB, 2 * MIB, "active_allocated", ALLOC_FRAMES),
                                    block(G + 2 * MIB, 6 * MIB, 6 * MIB, "inactive", [])],
                    pool=(0, 1))]
    return {"segments": segs, "device_traces": [[]], "allocator_settings": settings()}


def segment_rounding():
    """An OOM that segment rounding makes: a 3 MiB request needs a new 20 MiB segment (c10's
    get_allocation_size), the device has 15 MiB free, the one segment is full."""
    A, T = 0x7F0000000000, 1700000000000000
    segs = [segment(0, A, 20 * MIB, [block(A, 20 * MIB, 20 * MIB, "active_allocated",
                                           ALLOC_FRAMES)])]
    dev0 = [entry("segment_alloc", A, 20 * MIB, T + 1, ALLOC_FRAMES),
            entry("alloc", A, 20 * MIB, T + 2, ALLOC_FRAMES),
            {"action": "oom", "size": 3 * MIB, "stream": 0, "time_us": T + 3,
             "device_free": 15 * MIB, "frames": ALLOC_FRAMES}]
    return {"segments": segs, "device_traces": [dev0], "allocator_settings": settings(
        PYTORCH_CUDA_ALLOC_CONF="", max_split_size=-1)}


FIXTURES_OF = {"segment_rounding.pickle": (segment_rounding, 4), "annotations.pickle": (annotations, 4), "graph_pool.pickle": (graph_pool, 4), "full.pickle": (full, 4), "history.pickle": (history, 4),
               "bare_list.pickle": (bare_list, 2), "no_time.pickle": (no_time, 3),
               "expandable.pickle": (expandable, 5), "rebuilt_settings.pickle": (rebuilt_settings, 4)}


def corpus_values():
    """Plain data of every kind the decoder reads, for the fuzzer to start from."""
    shared = [1, 2, 3]
    loop = []
    loop.append(loop)
    yield "scalars", [None, True, False, 0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31,
                      2**63 - 1, -2**63, 2**64 - 1, 1.5, -0.0, float("inf")]
    yield "strings", ["", "a", "é" * 100, b"", b"\x00\xff", bytearray(b"xyz"), "x" * 300]
    yield "containers", {"t0": (), "t1": (1,), "t2": (1, 2), "t3": (1, 2, 3), "t4": (1, 2, 3, 4),
                         "set": {1, 2}, "fs": frozenset([3]), "shared": [shared, shared],
                         (1, 2): "tuple key"}
    yield "recursive", loop
    yield "big", list(range(2500))
    yield "nested", [[[[[[[[[[{"deep": [1]}]]]]]]]]]]


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    os.makedirs(CORPUS, exist_ok=True)
    for name, (make, protocol) in FIXTURES_OF.items():
        data = pickle.dumps(make(), protocol=protocol)
        for path in (os.path.join(FIXTURES, name), os.path.join(CORPUS, name)):
            with open(path, "wb") as f:
                f.write(data)
    for name, value in corpus_values():
        for protocol in (2, 3, 4, 5):
            with open(os.path.join(CORPUS, "%s-p%d.pickle" % (name, protocol)), "wb") as f:
                f.write(pickle.dumps(value, protocol=protocol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
