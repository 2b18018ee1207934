#!/usr/bin/env python3
"""check_trace.py LABEL DUMP CHECK... — checks one trace's `cumemtrace dump --stacks --all`.

Prints one "PASS LABEL: ..." or "FAIL LABEL: ..." line per CHECK; exits 1 if any failed.
API sets are written A|B|C (any of those exact entry points). CHECKs:

  ok:APIS            a call of APIS returned CUDA_SUCCESS (0)
  order:A,B,C        calls of A, B, C (each an API set) succeeded in this order
  oom:APIS           a call of APIS failed with CUDA_ERROR_OUT_OF_MEMORY (2) and a MEMINFO
                     record with reason "oom" carries that event's seq
  episode:ALLOC:FREE a failed (2) call of ALLOC, later a successful FREE, later another failed
                     (2) ALLOC: the caching allocator's fail -> free cache -> retry -> fail
  device             a DEVICE record (first use of a device: name, total, baseline)
  frames:NAME        some event's symbolized stack names a function containing NAME
"""
import json
import sys

OOM = 2


def load(path):
    events, records = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise SystemExit(f"check_trace: {path}:{n}: not JSON ({e})")
            (records if "record" in obj else events).append(obj)
    return events, records


def apis(spec):
    return set(spec.split("|"))


def calls(events, spec, result=None):
    want = apis(spec)
    return [e for e in events if e.get("api") in want and (result is None or e.get("result") == result)]


def check(kind, arg, events, records):
    """@return (passed, detail)"""
    if kind == "ok":
        hits = calls(events, arg, 0)
        return bool(hits), f"{len(hits)} successful call(s) of {arg}"
    if kind == "order":
        steps, seen, at = arg.split(","), [], -1
        for step in steps:
            nxt = [e["seq"] for e in calls(events, step, 0) if e["seq"] > at]
            if not nxt:
                return False, f"no successful {step} after {' -> '.join(seen) or 'the start'}"
            at = min(nxt)
            seen.append(f"{step}@{at}")
        return True, " -> ".join(seen)
    if kind == "oom":
        failed = calls(events, arg, OOM)
        if not failed:
            return False, f"no call of {arg} failed with result 2"
        oom_seqs = {r.get("seq") for r in records if r.get("record") == "meminfo" and r.get("reason") == "oom"}
        for e in failed:
            if e["seq"] in oom_seqs:
                m = next(r for r in records if r.get("record") == "meminfo" and r.get("seq") == e["seq"]
                         and r.get("reason") == "oom")
                return True, (f"{e['api']} seq {e['seq']} size {e.get('size', '?')} -> 2, "
                              f"meminfo free {m.get('free')} / total {m.get('total')}")
        return False, f"{len(failed)} failed call(s) of {arg}, none followed by a meminfo oom record"
    if kind == "episode":
        alloc, free = arg.split(":", 1)
        fails = sorted(e["seq"] for e in calls(events, alloc, OOM))
        frees = sorted(e["seq"] for e in calls(events, free, 0))
        for i, first in enumerate(fails):
            for second in fails[i + 1:]:
                between = [s for s in frees if first < s < second]
                if between:
                    return True, (f"{alloc} failed at seq {first}, {len(between)} successful {free} "
                                  f"call(s), failed again at seq {second}")
        return False, f"{len(fails)} failed {alloc} call(s), no fail -> {free} -> fail sequence"
    if kind == "device":
        devs = [r for r in records if r.get("record") == "device"]
        return bool(devs), ", ".join(f"dev {d.get('dev')} {d.get('name')!r} total {d.get('total')}"
                                     for d in devs) or "no device record"
    if kind == "frames":
        for e in events:
            for fr in e.get("frames") or []:
                if arg in fr:
                    return True, f"{e['api']} seq {e['seq']}: {fr}"
        return False, f"no stack frame names {arg}"
    raise SystemExit(f"check_trace: unknown check '{kind}'")


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    label, path, specs = argv[1], argv[2], argv[3:]
    events, records = load(path)
    failed = 0
    for spec in specs:
        kind, _, arg = spec.partition(":")
        ok, detail = check(kind, arg, events, records)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {label}: {spec} ({detail})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
