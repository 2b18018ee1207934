"""The figures a snapshot must show, against what torch.cuda.memory_stats() said: shared by
check_snapshot.py (real torch, now) and check_fixtures.py (the committed fixtures, every build).
Both compare `cumemtrace report --json SNAPSHOT` per device."""

# (what, memory_stats key, report's allocator key)
FIGURES = [
    ("allocated at the end", "allocated_bytes.all.current", "allocated_bytes_at_end"),
    ("reserved at the end", "reserved_bytes.all.current", "reserved_bytes_at_end"),
    ("active at the end", "active_bytes.all.current", "active_bytes_at_end"),
    ("requested at the end", "requested_bytes.all.current", "requested_bytes_at_end"),
    ("segments at the end", "segment.all.current", "segments_at_end"),
    ("peak allocated", "allocated_bytes.all.peak", "peak_allocated_bytes"),
    ("peak reserved", "reserved_bytes.all.peak", "peak_reserved_bytes"),
    ("peak active", "active_bytes.all.peak", "peak_active_bytes"),
    ("peak requested", "requested_bytes.all.peak", "peak_requested_bytes"),
    ("peak segments", "segment.all.peak", "peak_segments"),
]
# The same, for checks whose stats carry the inactive split (make_corpus.py keeps every key).
INACTIVE_SPLIT_FIGURES = [
    ("inactive split at the end", "inactive_split_bytes.all.current",
     "inactive_split_bytes_at_end"),
    ("peak inactive split", "inactive_split_bytes.all.peak", "peak_inactive_split_bytes"),
]
# Figures a snapshot cannot give exactly, by the fixture's kind: a ring-limited history lost
# the events before its window, so its peaks are those of the window (the state at the end is
# whole); what torch counted before history was turned on is not in any snapshot.
PEAKS_NOT_IN_WINDOW = {"ring", "pending_ring", "ring_emptied"}


def compare(failures, label, report, stats, kind=""):
    """report: `report --json`'s object; stats: per device, the memory_stats() figures."""
    devices = {d["dev"]: d for d in report["devices"]}
    for dev, st in enumerate(stats):
        a = (devices.get(dev) or {}).get("allocator")
        if not failures.check("device %d in the snapshot" % dev if dev else "device in the snapshot",
                              a is not None, "%s: no allocator figures for device %d" % (label, dev)):
            continue
        for what, key, rkey in FIGURES:
            if kind in PEAKS_NOT_IN_WINDOW and what.startswith("peak"):
                continue
            got = a.get(rkey)
            failures.check(what, got == st[key],
                           "%s, device %d: report %s, torch %s" % (label, dev, got, st[key]))
