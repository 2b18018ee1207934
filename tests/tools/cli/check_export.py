#!/usr/bin/env python3
"""check_export.py FORMAT EXPORT REPORT_JSON [OOM_JSON] -- validates what `cumemtrace export`
wrote against the trace-event format, the folded-stack format or PyTorch's snapshot structure,
and its figures against `cumemtrace report --json` (and `oom --json`). Prints one line per
problem and exits 1 when there is any; used by test_export_cmd.c."""
import json
import pickle
import sys

problems = []


def need(cond, what):
    if not cond:
        problems.append(what)
    return cond


def check_perfetto(path, report, oom):
    with open(path) as f:
        doc = json.load(f)
    need(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
         "top level: an object with a traceEvents array")
    events = doc["traceEvents"]
    last_ts = {}
    open_slices = {}
    kinds_max = {}
    instants = []
    for i, e in enumerate(events):
        where = f"event {i}"
        if not need(isinstance(e, dict), f"{where}: not an object"):
            continue
        ph = e.get("ph")
        need(ph in ("C", "b", "e", "i", "M", "X", "B", "E", "n"), f"{where}: ph {ph!r}")
        for key in ("name", "pid", "tid", "ts"):
            need(key in e, f"{where} ({ph}): no {key}")
        need(isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int),
             f"{where}: pid and tid are integers")
        need(isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, f"{where}: ts a number")
        if ph == "C":
            args = e.get("args")
            need(isinstance(args, dict) and args and
                 all(isinstance(v, (int, float)) for v in args.values()),
                 f"{where}: a counter's args are numbers")
            track = (e["pid"], e["name"])
            need(e["ts"] >= last_ts.get(track, 0), f"{where}: counter {track} goes back in time")
            last_ts[track] = e["ts"]
            for k, v in args.items():
                kinds_max[(e["name"], k)] = max(kinds_max.get((e["name"], k), 0), v)
            if "device" in args:
                pass
        elif ph in ("b", "e"):
            need("id" in e and "cat" in e, f"{where}: async slice without id or cat")
            key = (e.get("cat"), e.get("id"))
            if ph == "b":
                need(key not in open_slices, f"{where}: slice {key} begun twice")
                open_slices[key] = e["ts"]
                if e.get("cat") in ("allocation", "tensor"):
                    need(isinstance(e.get("args", {}).get("bytes"), int), f"{where}: bytes arg")
            else:
                need(key in open_slices, f"{where}: slice {key} ended without a begin")
                need(e["ts"] >= open_slices.pop(key, 0), f"{where}: slice ends before it begins")
        elif ph == "i":
            need(e.get("s") in ("g", "p", "t"), f"{where}: instant scope")
            instants.append(e)
        elif ph == "M":
            need(isinstance(e.get("args", {}).get("name"), str), f"{where}: metadata name")
    need(not open_slices, f"slices never ended: {list(open_slices)[:3]}")
    # figures: the device counters reach each device's peak of its kinds; OOM instants match
    for d in report["devices"]:
        if d["dev"] < 0 or not d["peak_live_bytes"]:
            continue
        name = f"GPU {d['dev']} memory"
        need(any(n == name for (n, _k) in kinds_max), f"no counter track for {name}")
    if oom is not None:
        want = [(round(ep["t_ns"] / 1000, 3), ep["verdict"]) for ep in oom["episodes"]]
        got = [(round(e["ts"], 3), e["args"]["verdict"]) for e in instants]
        need(sorted(want) == sorted(got), f"OOM instants {got} != episodes {want}")


def check_collapsed(path, report, weight):
    total = 0
    with open(path, encoding="utf-8", errors="surrogateescape") as f:  # frames pass bytes on
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            stack, sep, w = line.rpartition(" ")
            if not need(sep and w.isdigit(), f"line {n}: no weight after the last space"):
                continue
            frames = stack.split(";")
            need(all(frames), f"line {n}: an empty frame")
            need(int(w) > 0, f"line {n}: a zero weight")
            total += int(w)
    if weight == "peak":
        want = report["peak_live_bytes"]
    elif weight == "leaked":
        want = report["live_bytes_at_end"]
    else:
        want = sum(d["alloc_calls"] - d["failures"] for d in report["devices"])
    need(total == want, f"weights sum to {total}, report says {want}")


def check_memory_viz(path, report):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    need(isinstance(snap, dict), "top level is a dict")
    for key, typ in (("segments", list), ("device_traces", list),
                     ("allocator_settings", dict), ("external_annotations", list)):
        need(isinstance(snap.get(key), typ), f"{key}: a {typ.__name__}")
    frame_keys = {"filename": str, "line": int, "name": str}

    def frames_ok(frames, where):
        if not need(isinstance(frames, list), f"{where}: frames a list"):
            return
        for fr in frames:
            need(isinstance(fr, dict) and all(isinstance(fr.get(k), t)
                                              for k, t in frame_keys.items()),
                 f"{where}: frame {fr!r}")

    seg_keys = {"device": int, "address": int, "total_size": int, "allocated_size": int,
                "active_size": int, "requested_size": int, "stream": int, "segment_type": str,
                "segment_pool_id": tuple, "is_expandable": bool, "frames": list, "blocks": list}
    total = 0
    for i, s in enumerate(snap["segments"]):
        for k, t in seg_keys.items():
            need(isinstance(s.get(k), t), f"segment {i}: {k} a {t.__name__}")
        need(s.get("segment_type") in ("large", "small"), f"segment {i}: segment_type")
        blocks = s.get("blocks", [])
        need(sum(b["size"] for b in blocks) <= s["total_size"], f"segment {i}: blocks overflow")
        for b in blocks:
            need(b.get("state") in ("active_allocated", "active_pending_free", "inactive"),
                 f"segment {i}: block state")
            need(isinstance(b.get("address"), int) and isinstance(b.get("size"), int),
                 f"segment {i}: block address and size")
            frames_ok(b.get("frames"), f"segment {i} block")
        total += s["total_size"]
    need(total == report["live_bytes_at_end"],
         f"segments hold {total}, report says {report['live_bytes_at_end']} live at the end")
    actions = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
               "segment_map", "segment_unmap", "snapshot", "oom"}
    live, mapped = {}, 0
    for dev, trace in enumerate(snap["device_traces"]):
        if not need(isinstance(trace, list), f"device_traces[{dev}]: a list"):
            continue
        last = 0
        for i, e in enumerate(trace):
            where = f"device {dev} entry {i}"
            need(e.get("action") in actions, f"{where}: action {e.get('action')!r}")
            need(isinstance(e.get("size"), int) and isinstance(e.get("stream"), int),
                 f"{where}: size and stream")
            need(isinstance(e.get("time_us"), int) and e["time_us"] >= last, f"{where}: time_us")
            last = e.get("time_us", last)
            if e.get("action") != "snapshot" or "frames" in e:  # c10 gives a snapshot none
                frames_ok(e.get("frames"), where)
            if e.get("action") == "oom":
                need(isinstance(e.get("device_free"), int), f"{where}: oom without device_free")
                continue
            need(isinstance(e.get("addr"), int), f"{where}: addr")
            if e["action"] == "segment_alloc":
                live[(dev, e["addr"])] = e["size"]
            elif e["action"] == "segment_free":
                live.pop((dev, e["addr"]), None)
            elif e["action"] in ("segment_map", "segment_unmap"):
                mapped += e["size"] if e["action"] == "segment_map" else -e["size"]
    need(sum(live.values()) + mapped == report["live_bytes_at_end"],
         f"the trace entries leave {sum(live.values()) + mapped} live, the report "
         f"{report['live_bytes_at_end']}")


def check_perfetto_window(path, lo_us, hi_us, dev):
    """Every event but the metadata lies in [lo_us, hi_us]; with dev >= 0, every counter track
    and slice is that device's."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    for i, e in enumerate(events):
        if e["ph"] == "M":
            continue
        need(lo_us <= e["ts"] <= hi_us, f"event {i} at {e['ts']} outside [{lo_us}, {hi_us}]")
        if e["ph"] == "X":
            need(e["ts"] + e["dur"] <= hi_us, f"event {i} ends after {hi_us}")
        if dev >= 0 and e["ph"] == "C":
            need(e["name"].startswith(f"GPU {dev} "), f"event {i}: track {e['name']}")
        if dev >= 0 and e["ph"] == "b" and e.get("cat") in ("allocation", "tensor"):
            need(e["args"]["dev"] == dev, f"event {i}: slice of device {e['args']['dev']}")


def check_perfetto_allocator(path, report):
    """The allocator's counters reach report --json's allocator peak and end at its bytes at
    the end; every tensor slice is ended."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    alloc = report.get("allocator")
    if not need(alloc, "report --json has no allocator figures"):
        return
    track = f"GPU {alloc['dev']} allocator"
    counters = [e["args"] for e in events if e["ph"] == "C" and e["name"] == track]
    if not need(counters, f"no counter track {track}"):
        return
    need(all("inactive_split" in c for c in counters), "a counter without inactive_split")
    peak = max(c["allocated"] for c in counters)
    need(peak == alloc["peak_allocated_bytes"],
         f"allocated peaks at {peak}, report says {alloc['peak_allocated_bytes']}")
    need(counters[-1]["allocated"] == alloc["allocated_bytes_at_end"],
         f"allocated ends at {counters[-1]['allocated']}, report says "
         f"{alloc['allocated_bytes_at_end']}")
    need(counters[-1]["reserved"] == alloc["reserved_bytes_at_end"],
         f"reserved ends at {counters[-1]['reserved']}, report says "
         f"{alloc['reserved_bytes_at_end']}")
    begun = sum(1 for e in events if e["ph"] == "b" and e.get("cat") == "tensor")
    ended = sum(1 for e in events if e["ph"] == "e" and e.get("cat") == "tensor")
    need(begun and begun == ended, f"tensor slices: {begun} begun, {ended} ended")


def main():
    fmt = sys.argv[1]
    if fmt == "perfetto-window":  # EXPORT FROM_US TO_US DEV
        check_perfetto_window(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]),
                              int(sys.argv[5]))
        for p in problems[:20]:
            print(f"check_export {fmt}: {p}")
        sys.exit(1 if problems else 0)
    if fmt == "memory-viz-entries":  # PICKLE EXPECTED_JSON: device_traces' actions and addrs
        with open(sys.argv[2], "rb") as f:
            snap = pickle.load(f)
        with open(sys.argv[3]) as f:
            expect = json.load(f)
        got = [[[e["action"], e.get("addr", 0)] for e in t] for t in snap["device_traces"]]
        need(got == expect["traces"], f"device_traces {got} != {expect['traces']}")
        live = sum(s["total_size"] for s in snap["segments"])
        need(live == expect["segment_bytes"], f"segments hold {live}, not "
             f"{expect['segment_bytes']}")
        for p in problems[:20]:
            print(f"check_export {fmt}: {p}")
        sys.exit(1 if problems else 0)
    fmt, path, report_path = sys.argv[1:4]
    with open(report_path) as f:
        report = json.load(f)
    oom = None
    if len(sys.argv) > 4 and fmt == "perfetto":
        with open(sys.argv[4]) as f:
            oom = json.load(f)
    if fmt == "perfetto":
        check_perfetto(path, report, oom)
    elif fmt == "perfetto-allocator":
        check_perfetto(path, report, None)
        check_perfetto_allocator(path, report)
    elif fmt.startswith("collapsed:"):
        check_collapsed(path, report, fmt.split(":", 1)[1])
    elif fmt == "memory-viz":
        check_memory_viz(path, report)
    elif fmt == "memory-viz-expect":  # and the segments, blocks and actions of EXPECTED_JSON
        check_memory_viz(path, report)
        with open(sys.argv[4]) as f:
            expect = json.load(f)
        with open(path, "rb") as f:
            snap = pickle.load(f)
        got = [{"address": s["address"], "total_size": s["total_size"],
                "allocated_size": s["allocated_size"], "active_size": s["active_size"],
                "segment_type": s["segment_type"],
                "blocks": [[b["address"] - s["address"], b["size"], b["state"]]
                           for b in s["blocks"]]} for s in snap["segments"]]
        need(got == expect["segments"], f"segments {got} != {expect['segments']}")
        actions = [e["action"] for e in snap["device_traces"][0]]
        need(actions == expect["actions"], f"actions {actions} != {expect['actions']}")
        if "sizes" in expect:
            sizes = [e["size"] for e in snap["device_traces"][0]]
            need(sizes == expect["sizes"], f"sizes {sizes} != {expect['sizes']}")
        if "unframed" in expect:
            unframed = [e["action"] for e in snap["device_traces"][0] if "frames" not in e]
            need(unframed == expect["unframed"], f"without frames {unframed}")
        conf = snap["allocator_settings"].get("PYTORCH_CUDA_ALLOC_CONF")
        need(conf == expect["conf"], f"allocator_settings {conf!r}")
    else:
        problems.append(f"unknown format {fmt}")
    for p in problems[:20]:
        print(f"check_export {fmt}: {p}")
    sys.exit(1 if problems else 0)


main()
