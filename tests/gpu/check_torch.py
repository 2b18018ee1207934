#!/usr/bin/env python3
"""check_torch.py MODE OUT TRACE REPORT_JSON WHATIF_TXT — checks one `record --torch` run of
torch_train.py MODE (tests/gpu/run.sh). One PASS/FAIL/SKIP line per check:

  snapshot   the snapshot record kept or merged equals PyTorch's own dump at the same point
             (segments and device_traces); merged: the trace's ALLOC_EVENT records (those not
             flagged "before") are as many as PyTorch's trace entries
  peaks      report --json's allocator peaks equal torch.cuda.memory_stats()'s
             allocated_bytes.all.peak and reserved_bytes.all.peak (SKIP when report has no
             allocator figures in this build)
  driver     the driver-level peak of live bytes on device 0 is at least PyTorch's reserved peak
             (what PyTorch reserved came from the driver)
  selfcheck  whatif's self-check reproduces every segment allocation (SKIP when this build's
             whatif has none)
"""
import json
import os
import pickle
import re
import sys

mode, out, trace, report_path, whatif_path = sys.argv[1:6]
label = "torch_" + mode
with open(os.path.join(out, label + ".stats.json")) as f:
    stats = json.load(f)


def say(kind, text):
    print("%s %s: %s" % (kind, label, text))


def load_pickle(path):
    with open(path, "rb") as f:
        return pickle.load(f)


own = load_pickle(os.path.join(out, label + ".own.pickle"))
kept = trace[:-4] + ".torch.pickle"
if os.path.exists(kept):
    snap = load_pickle(kept)
    same = snap.get("segments") == own.get("segments") and \
        snap.get("device_traces") == own.get("device_traces")
    say("PASS" if same else "FAIL", "the snapshot record kept (%s) %s PyTorch's own dump" %
        (os.path.basename(kept), "equals" if same else "differs from"))
else:
    dump = os.path.join(out, label + ".jsonl")
    events = 0
    with open(dump) as f:
        for line in f:
            if '"record":"alloc_event"' in line and '"flags"' not in line:
                events += 1
    want = sum(len(t) for t in own.get("device_traces", []))
    say("PASS" if events == want else "FAIL",
        "merged trace has %d allocator events, PyTorch's own dump %d trace entries" % (events, want))

try:
    with open(report_path) as f:
        report = json.load(f)
except (OSError, ValueError) as e:
    report = None
    say("FAIL", "report --json unreadable: %s" % e)


def find_allocator(obj):
    if isinstance(obj, dict):
        if "allocator" in obj and isinstance(obj["allocator"], dict) and \
                "peak_reserved_bytes" in obj["allocator"]:
            return obj["allocator"]
        for v in obj.values():
            hit = find_allocator(v)
            if hit:
                return hit
    elif isinstance(obj, list):
        for v in obj:
            hit = find_allocator(v)
            if hit:
                return hit
    return None


def find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            hit = find_key(v, key)
            if hit is not None:
                return hit
    elif isinstance(obj, list):
        for v in obj:
            hit = find_key(v, key)
            if hit is not None:
                return hit
    return None


if report is not None:
    alloc = find_allocator(report)
    if alloc is None:
        say("SKIP", "report --json has no allocator figures in this build")
    else:
        for ours, theirs in (("peak_allocated_bytes", "allocated_peak"),
                             ("peak_reserved_bytes", "reserved_peak")):
            a, b = alloc.get(ours), stats[theirs]
            say("PASS" if a == b else "FAIL", "allocator.%s %s, memory_stats %s" % (ours, a, b))
    live = find_key(report, "peak_live_bytes")
    if live is None:
        say("FAIL", "report --json has no peak_live_bytes")
    else:
        say("PASS" if live >= stats["reserved_peak"] else "FAIL",
            "driver-level peak %d bytes (PyTorch reserved peak %d; %d outside PyTorch)" %
            (live, stats["reserved_peak"], live - stats["reserved_peak"]))

with open(whatif_path, errors="replace") as f:
    text = f.read()
m = re.search(r"reproduces (\d+) of (\d+) segment allocations", text)
if not m:
    say("SKIP", "whatif reports no self-check in this build")
else:
    say("PASS" if m.group(1) == m.group(2) else "FAIL", "the model " + m.group(0))
if mode == "frag" and stats.get("oom"):
    o = stats["oom"]
    say("PASS" if o["reserved"] - o["allocated"] >= o["request"] else "FAIL",
        "the OOM is fragmentation: %d reserved but unallocated against a %d request" %
        (o["reserved"] - o["allocated"], o["request"]))
    with open(os.path.join(out, label + ".oom.txt"), errors="replace") as f:
        verdict = re.search(r"verdict\s+(\w+)", f.read())
    with open(os.path.join(out, label + ".jsonl"), errors="replace") as f:
        merged = any('"record":"alloc_event"' in line for line in f)
    if verdict is None:
        say("FAIL", "cumemtrace oom names no verdict")
    elif verdict.group(1) == "fragmentation":
        say("PASS", "cumemtrace oom: verdict fragmentation")
    else:
        say("FAIL" if merged else "SKIP",
            "cumemtrace oom: verdict %s%s" % (verdict.group(1), "" if merged else
                                              " (the trace has no allocator events: the snapshot "
                                              "is not merged in this build)"))
