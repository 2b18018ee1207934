"""The checker against PyTorch's own code (issue 22), with plain python3: for every snapshot real
torch wrote (make_corpus.py's corpus, each with memory_stats() beside it) and for the real files
of ../shared/data/snapshots, compares

- `cumemtrace report --json` (allocated, reserved, active, requested, inactive split, segments,
  at the end and at the peak; blocks at the end; per device) with torch.cuda.memory_stats() and
  with the snapshot's own segments and blocks;
- `oom --json` on OOM cases: the verdict the figures call for (docs/analysis.md's rules, on
  torch's own figures) and the request, free and reserved-but-unallocated bytes of torch's
  message;
- the `whatif` self-check: its peak reserved and OOMs against torch's, and that every
  difference from torch is among its flagged disagreements;
- `export -f memory-viz` read back by PyTorch's own torch/cuda/_memory_viz.py (segsum, memory,
  segments, trace, compare), with the original's sums.

    python3 check_corpus.py [--corpus DIR] [--real DIR] [--viz _memory_viz.py] [--first N]

Prints a table of agree / disagree per class and figure and the first disagreements. Exits 1 when
a (class, figure) disagrees that KNOWN_GAPS does not list, or one it lists agrees everywhere
(fixed: remove it). Missing inputs: skipped (77), a failure with CI=true.
"""
import argparse
import ast
import contextlib
import glob
import importlib.util
import io
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile

import snapshot_figures

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("CUMEMTRACE_BUILD", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "bin", "cumemtrace")
TORCH_ROOT = os.environ.get("CUMEMTRACE_TORCH_ROOT", "/var/cache/cumemtrace/torch-root")
VIZ = os.path.join(TORCH_ROOT, "usr/lib/python3/dist-packages/torch/cuda/_memory_viz.py")

# Why each known gap disagrees (measured on the corpus; tests/torch/README.md has the counts).
EMPTY_CACHE_REPLAY = "the self-check's replay of empty_cache() keeps other segments"
REAL_REPLAY = "the replay of a real file starts from another state than its segments show"

# The (class, figure) pairs that disagree today. The other helpers of issue 22 fix them: a
# fixed one must leave this list, a new one fails.
KNOWN_GAPS = {
    ('expandable_empty_cache', 'whatif self-check peak reserved'): EMPTY_CACHE_REPLAY,
    ('real', "whatif self-check peak reserved (the window's)"): REAL_REPLAY,
}

# (figure, memory_stats key, report's allocator key): snapshot_figures.py's table, and blocks
STAT_FIGURES = snapshot_figures.FIGURES + snapshot_figures.INACTIVE_SPLIT_FIGURES + [
    ("blocks at the end", "active.all.current", "blocks_at_end")]
GIB_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


class Table:
    """agree / disagree per (class, figure), the first disagreements of each."""

    def __init__(self, first):
        self.counts = {}
        self.first = first
        self.shown = {}

    def check(self, cls, figure, ok, detail=""):
        agree, disagree = self.counts.get((cls, figure), (0, 0))
        self.counts[(cls, figure)] = (agree + bool(ok), disagree + (not ok))
        if not ok and self.shown.get((cls, figure), 0) < self.first:
            self.shown[(cls, figure)] = self.shown.get((cls, figure), 0) + 1
            print("DIFF %s / %s: %s" % (cls, figure, detail), flush=True)
        return ok

    def finish(self):
        print("\n%-22s %-50s %5s %8s  %s" % ("class", "figure", "agree", "disagree", ""))
        bad = 0
        for (cls, figure), (agree, disagree) in sorted(self.counts.items()):
            known = (cls, figure) in KNOWN_GAPS
            note = ""
            if disagree and known:
                note = "known gap: " + KNOWN_GAPS[(cls, figure)]
            elif disagree:
                note, bad = "NEW GAP (not in KNOWN_GAPS)", bad + 1
            elif known:
                note, bad = "FIXED: remove it from KNOWN_GAPS", bad + 1
            print("%-22s %-50s %5d %8d  %s" % (cls, figure, agree, disagree, note))
        compared = {cls for cls, _ in self.counts}
        for key in sorted(k for k in set(KNOWN_GAPS) - set(self.counts) if k[0] in compared):
            print("KNOWN_GAPS lists %s / %s, which nothing compared" % key)
            bad += 1
        total = sum(a + d for a, d in self.counts.values())
        print("corpus: %d comparisons, %s" % (total, "FAILED (%d)" % bad if bad else "ok"))
        return 1 if bad else 0


def load_viz(path):
    spec = importlib.util.spec_from_file_location("memory_viz", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cli(*args):
    p = subprocess.run([CLI] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout, p.stderr.strip()


def cli_json(table, cls, what, *args):
    rc, out, err = cli(*args)
    try:
        got = json.loads(out) if rc == 0 else None
    except ValueError as e:
        got, err = None, "not JSON: %s" % e
    if not table.check(cls, "%s runs" % what, got is not None,
                       "%s: exit %d: %s" % (" ".join(args), rc, err[-300:])):
        return None
    return got


def parse_size(text):
    num, unit = text.split()
    return float(num) * GIB_UNITS[unit]


def snapshot_figures(snap, dev):
    """What the snapshot's own segments and blocks say of device dev (c10 wrote them)."""
    segs = [s for s in snap["segments"] if s.get("device", 0) == dev]
    blocks = [b for s in segs for b in s["blocks"]]
    return {"segments": len(segs), "blocks": len(blocks),
            "reserved": sum(s["total_size"] for s in segs),
            "allocated": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active": sum(b["size"] for b in blocks if b["state"].startswith("active")),
            "requested": sum(b.get("requested_size", b["size"]) for b in blocks
                             if b["state"].startswith("active"))}


def window_peak_reserved(snap, dev):
    """The most reserved at once over the trace's window, exact from torch's own data: the
    dump's reserved (its segments), undone backwards through the window's segment events."""
    reserved = peak = snapshot_figures(snap, dev)["reserved"]
    traces = snap.get("device_traces") or []
    for e in reversed(traces[dev] if dev < len(traces) else []):
        if e["action"] in ("segment_alloc", "segment_map"):
            reserved -= e["size"]
        elif e["action"] in ("segment_free", "segment_unmap"):
            reserved += e["size"]
        peak = max(peak, reserved)
    return peak


def devices_of(snap):
    n = len(snap.get("device_traces") or [])
    return sorted({s.get("device", 0) for s in snap["segments"]} |
                  {d for d in range(n) if snap["device_traces"][d]})


def viz_sums(viz, snap):
    """PyTorch's _memory_viz.py on a snapshot: segsum's text, memory()'s bytes per stream and
    state, segments()'s bytes per segment and state, trace()'s entries and total per device."""
    flat = lambda lines: lines  # noqa: E731  (the flamegraph's input, not its picture)
    per = {}
    for line in viz.memory(snap, format_flamegraph=flat).splitlines():
        frames, size = line.rsplit(" ", 1)
        key = ";".join(frames.split(";")[:2])
        per[key] = per.get(key, 0) + int(size)
    segs = {}
    for line in viz.segments(snap, format_flamegraph=flat).splitlines():
        frames, size = line.rsplit(" ", 1)
        key = ";".join(frames.split(";")[:3])
        segs[key] = segs.get(key, 0) + int(size)
    parts = re.split(r"Device (\d+) -+\n", viz.trace(snap))
    traces = {int(dev): [normal_line(x) for x in text.replace("TOTAL MEM", "\nTOTAL MEM")
                         .splitlines()] for dev, text in zip(parts[1::2], parts[2::2])}
    return {"segsum": viz.segsum(snap), "memory": per, "segments": segs, "trace": traces}


def normal_line(line):
    """trace() prints actions it does not name as dicts: the same dict whatever its key order."""
    if line.startswith("{"):
        return json.dumps(ast.literal_eval(line), sort_keys=True)
    return line


def on_device(snap, dev):
    out = dict(snap)
    out["segments"] = [s for s in snap["segments"] if s.get("device", 0) == dev]
    return out


def check_report(table, cls, name, report, snap, fig):
    """report's figures per device: against memory_stats() (the corpus) or against the
    snapshot's own segments and blocks (the real files, which have no stats)."""
    devices = {d["dev"]: d.get("allocator") for d in report["devices"]}
    stats = fig["stats"] if fig else None
    for dev in devices_of(snap) if stats is None else range(len(stats)):
        a = devices.get(dev)
        if not table.check(cls, "device in report", a is not None,
                           "%s: no allocator figures for device %d" % (name, dev)):
            continue
        if stats is None:
            check_against_snapshot(table, cls, name, a, snap, dev)
            continue
        ring = bool(fig.get("max_entries"))
        for figure, key, rkey in STAT_FIGURES:
            got, want = a.get(rkey), stats[dev].get(key, 0)
            if ring and figure == "peak reserved":
                want = window_peak_reserved(snap, dev)
                table.check(cls, "peak reserved (the window's, from the file)", got == want,
                            "%s dev %d: report %s, window %s" % (name, dev, got, want))
                continue
            if ring and figure.startswith("peak"):
                # the window's peak: the file cannot show one before its first event
                table.check(cls, figure + " (window: at most torch's)",
                            got is not None and got <= want,
                            "%s dev %d: report %s, torch %s" % (name, dev, got, want))
                continue
            table.check(cls, figure, got == want,
                        "%s dev %d: report %s, torch %s" % (name, dev, got, want))


def check_against_snapshot(table, cls, name, a, snap, dev):
    own = snapshot_figures(snap, dev)
    for figure, key in (("segments", "segments_at_end"), ("reserved", "reserved_bytes_at_end"),
                        ("allocated", "allocated_bytes_at_end"),
                        ("active", "active_bytes_at_end"),
                        ("requested", "requested_bytes_at_end")):
        got = a.get(key)
        table.check(cls, figure + " at the end (snapshot)", got == own[figure],
                    "%s dev %d: report %s, snapshot %s" % (name, dev, got, own[figure]))
    got, want = a.get("peak_reserved_bytes"), window_peak_reserved(snap, dev)
    table.check(cls, "peak reserved (the window's, from the file)", got == want,
                "%s dev %d: report %s, window %s" % (name, dev, got, want))


def torch_oom(message):
    """The figures of torch 2.x's OOM message (notes/pytorch-snapshots.md)."""
    size = r"([\d.]+ (?:bytes|KiB|MiB|GiB|TiB))"
    m = re.search(r"Tried to allocate %s\. GPU (\d+) has a total capacity of %s of which %s "
                  r"is free\..*?Of the allocated memory %s is allocated by PyTorch,.*?and %s is "
                  r"reserved by PyTorch but unallocated" % (size, size, size, size, size),
                  message, re.S)
    if not m:
        return None
    return {"request": parse_size(m.group(1)), "dev": int(m.group(2)),
            "total": parse_size(m.group(3)), "free": parse_size(m.group(4)),
            "allocated": parse_size(m.group(5)), "unallocated": parse_size(m.group(6))}


def expected_verdict(t, expandable):
    """docs/analysis.md's rules on torch's own figures."""
    reserved = t["allocated"] + t["unallocated"]
    others = t["total"] - t["free"] - reserved
    if t["request"] > t["total"]:
        return "over_capacity"
    if t["unallocated"] >= t["request"] and not expandable:
        return "fragmentation"
    if others >= reserved:
        return "held_by_others"
    return "exhausted_by_process"


def check_oom(table, cls, name, path, snap, fig):
    """oom's episode against torch: the verdict its message's figures call for, the free the
    OOM observer was given, the reserved bytes memory_stats() gave at the OOM. A snapshot
    holds no device total: without --capacity the verdict says so (total_unknown) unless the
    cache alone proves fragmentation; with the total torch reported (the observer's, else the
    message's) through --capacity, the verdict is the figures' own."""
    t = torch_oom(fig["oom"])
    if not table.check(cls, "oom message is torch's OutOfMemoryError", t is not None,
                       "%s: %s" % (name, fig["oom"][:200])):
        return
    obs = fig.get("oom_observer") or {}
    total = int(obs.get("total") or t["total"])
    bare = oom_episode(table, cls, name, t, "oom", "--json", path)
    given = oom_episode(table, cls, name, t, "oom", "--json", "--capacity", str(total), path)
    if bare is None or given is None:
        return
    expandable = "expandable_segments:True" in fig["env"].get("PYTORCH_CUDA_ALLOC_CONF", "")
    want = expected_verdict(t, expandable)
    table.check(cls, "oom verdict (--capacity: torch's total)", given.get("verdict") == want,
                "%s: %s, the figures say %s (torch: %s)" % (name, given.get("verdict"), want, t))
    unknown = want if want == "fragmentation" else "total_unknown"
    table.check(cls, "oom verdict without the total", bare.get("verdict") == unknown,
                "%s: %s, the file proves %s" % (name, bare.get("verdict"), unknown))
    table.check(cls, "oom total without --capacity: unknown",
                bare.get("total_bytes") == 0 and bare.get("total_given") is False,
                "%s: total_bytes %s given %s" % (name, bare.get("total_bytes"),
                                                 bare.get("total_given")))
    table.check(cls, "oom total with --capacity", given.get("total_bytes") == total and
                given.get("total_given") is True, "%s: total_bytes %s, given %s" % (
                    name, given.get("total_bytes"), total))
    e = given
    entries = [x for x in (snap["device_traces"] or [[]])[t["dev"]] if x["action"] == "oom"]
    if entries:
        table.check(cls, "oom request (the file's oom entry)",
                    e.get("request_bytes") == entries[-1]["size"],
                    "%s: %s, file %s" % (name, e.get("request_bytes"), entries[-1]["size"]))
    for figure, key, want in (("oom free (the observer's)", "free_bytes", obs.get("free")),
                              ("oom reserved (process_bytes)", "process_bytes",
                               fig["stats"][t["dev"]]["reserved_bytes.all.current"]
                               if fig["dumped_in_oom_observer"] else None)):
        if want is not None:
            table.check(cls, figure, e.get(key) == want,
                        "%s: %s, torch %s" % (name, e.get(key), want))


def oom_episode(table, cls, name, t, *args):
    """The last episode of `oom --json` on torch's failing device."""
    got = cli_json(table, cls, "oom", *args)
    if got is None:
        return None
    eps = [e for e in got.get("episodes", []) if e.get("dev") == t["dev"]]
    if not table.check(cls, "oom episode", len(eps) >= 1,
                       "%s: %d episodes on device %d" % (name, len(eps), t["dev"])):
        return None
    return eps[-1]


def check_whatif(table, cls, name, path, snap, fig):
    """The self-check's replay of the recorded setting against what torch did: its peak
    reserved (a ring-limited file: the window's, exact from the file) and its OOMs."""
    got = cli_json(table, cls, "whatif", "whatif", "--json", path)
    if got is None:
        return
    sc = got.get("self_check") or {}
    dev = got.get("device", 0)
    window = fig is None or bool(fig.get("max_entries"))  # a real file: what it proves
    if fig is None:
        ooms = sum(e["action"] == "oom" for e in snap["device_traces"][dev])
    else:
        ooms = fig["stats"][dev].get("num_ooms", 0) - fig["start_stats"][dev].get("num_ooms", 0)
    peak = (window_peak_reserved(snap, dev) if window
            else fig["stats"][dev]["reserved_bytes.all.peak"])
    model = sc.get("model_peak_reserved_bytes")
    peak_ok = model == peak
    ooms_ok = sc.get("model_ooms") == ooms
    detail = "%s: model peak reserved %s OOMs %s, torch %s / %s, %d flagged" % (
        name, model, sc.get("model_ooms"), peak, ooms, len(sc.get("disagreements", [])))
    table.check(cls, "whatif self-check peak reserved" + (" (the window's)" if window else ""),
                peak_ok, detail)
    table.check(cls, "whatif self-check OOMs", ooms_ok, detail)
    table.check(cls, "whatif agrees only where torch's figures agree",
                not (sc.get("agrees") and not (peak_ok and ooms_ok)), detail)
    table.check(cls, "whatif flags what differs",
                (peak_ok and ooms_ok) or bool(sc.get("disagreements")) or sc.get("agrees") is False,
                detail)


def check_export(table, cls, name, path, snap, viz):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "export.pickle")
        rc, _, err = cli("export", "-f", "memory-viz", "-o", out, path)
        if not table.check(cls, "export runs", rc == 0, "%s: exit %d: %s" % (name, rc, err)):
            return
        with open(out, "rb") as f:
            back = pickle.load(f)
    for dev in devices_of(snap):
        a, b = viz_sums(viz, on_device(snap, dev)), viz_sums(viz, on_device(back, dev))
        a["trace"] = "\n".join(a["trace"].get(dev, []))
        b["trace"] = "\n".join(b["trace"].get(dev, []))
        for what in ("segsum", "memory", "segments", "trace"):
            table.check(cls, "export: _memory_viz %s" % what, a[what] == b[what],
                        "%s dev %d: %s" % (name, dev, first_difference(a[what], b[what])))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            viz.compare(on_device(snap, dev)["segments"], on_device(back, dev)["segments"],
                        format_flamegraph=lambda lines: lines)
        same = printed.getvalue().count("[]") == 2
        table.check(cls, "export: _memory_viz compare", same,
                    "%s dev %d: %s" % (name, dev, printed.getvalue().replace("\n", "; ")[:300]))


def first_difference(a, b):
    if isinstance(a, str):
        la, lb = a.splitlines(), b.splitlines()
        for x, y in zip(la, lb):
            if x != y:
                return "original %r, export %r" % (x, y)
        return "%d lines, export %d" % (len(la), len(lb))
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            return "%s: original %s, export %s (%d keys, export %d)" % (
                k, a.get(k), b.get(k), len(a), len(b))
    return "equal"


def check_one(table, viz, cls, path, fig):
    name = os.path.basename(path)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    if isinstance(snap, list):  # torch.cuda.memory_snapshot(): segments only
        snap = {"segments": snap, "device_traces": []}
    report = cli_json(table, cls, "report", "report", "--json", path)
    if report is not None:
        check_report(table, cls, name, report, snap, fig)
    if fig and fig.get("oom"):
        check_oom(table, cls, name, path, snap, fig)
    if any(snap.get("device_traces") or []):
        check_whatif(table, cls, name, path, snap, fig)
    check_export(table, cls, name, path, snap, viz)


def missing(why):
    if os.environ.get("CI") == "true":
        print("corpus: %s; with CI=true this is a failure" % why)
        return 1
    print("corpus: SKIP: %s" % why)
    return 77


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=os.path.join(BUILD, "tests", "torch", "corpus"))
    p.add_argument("--real", default=os.path.join(REPO, "..", "shared", "data", "snapshots"))
    p.add_argument("--viz", default=os.environ.get("CMT_MEMORY_VIZ", VIZ))
    p.add_argument("--first", type=int, default=3, help="disagreements shown per figure")
    args = p.parse_args()
    if not os.path.exists(args.viz):
        return missing("no PyTorch _memory_viz.py at %s (the torch root has it)" % args.viz)
    if not os.path.exists(os.path.join(args.corpus, "COMPLETE")):
        return missing("no complete corpus in %s (make_corpus.py writes it)" % args.corpus)
    if not os.path.isdir(args.real):
        if os.environ.get("CI") == "true":
            return missing("no real snapshots in %s" % args.real)
        print("corpus: no real snapshots in %s: the corpus only" % args.real)
    viz = load_viz(args.viz)
    table = Table(args.first)
    counts = {}
    for fig_path in sorted(glob.glob(os.path.join(args.corpus, "*.json"))):
        with open(fig_path) as f:
            fig = json.load(f)
        counts[fig["class"]] = counts.get(fig["class"], 0) + 1
        check_one(table, viz, fig["class"], fig_path[: -len(".json")] + ".pickle", fig)
    real = sorted(f for f in glob.glob(os.path.join(args.real, "*")) if f.endswith(("pkl",
                                                                                      "pickle")))
    for path in real:
        check_one(table, viz, "real", path, None)
    print("corpus: %d snapshots by class: %s; %d real files" % (
        sum(counts.values()), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        len(real)))
    return table.finish()


if __name__ == "__main__":
    sys.exit(main())
