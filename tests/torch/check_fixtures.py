"""Every build: `cumemtrace report --json` on each snapshot real torch wrote (fixtures/, made
by make_fixtures.py) gives the figures torch.cuda.memory_stats() gave beside it.

    python3 check_fixtures.py   (CUMEMTRACE_BUILD names the build tree)
"""
import glob
import json
import os
import sys

import snapshot_figures
import torchcheck as tc


def check_selfcheck(f, snap, figures):
    """whatif's self-check replays the run's own settings: every segment torch allocated and
    freed in the file's window, its OOMs, and the window's peak reserved (torch's own peak when
    the file holds the whole run) must come out of the model as they came out of torch."""
    sc = tc.cli_json("whatif", "--json", snap)["self_check"]
    name = os.path.basename(snap)
    if not f.check("whatif self-check ran", sc["ran"], "%s: %s" % (name, sc.get("error"))):
        return
    if sc["expandable_segments"]:
        return  # segments are not compared there
    for what, key in (("segment allocations", "segments"), ("segment frees", "segment_frees")):
        rec, mod, agree = (sc.get("recorded_" + key, 0), sc.get("model_" + key, 0),
                          sc.get("agreeing_" + key, 0))
        f.check("whatif self-check: " + what, agree == rec == mod,
                "%s: %d of %d agree, the model made %d" % (name, agree, rec, mod))
    f.check("whatif self-check: OOMs", sc["model_ooms"] == sc["recorded_ooms"],
            "%s: model %d, run %d" % (name, sc["model_ooms"], sc["recorded_ooms"]))
    f.check("whatif self-check: peak reserved",
            sc["model_peak_reserved_bytes"] == sc["recorded_peak_reserved_bytes"],
            "%s: model %s, run %s" % (name, tc.fmt(sc["model_peak_reserved_bytes"]),
                                      tc.fmt(sc["recorded_peak_reserved_bytes"])))
    f.check("whatif self-check: reserved at the end",
            sc["model_end_reserved_bytes"] == sc["recorded_end_reserved_bytes"],
            "%s: model %s, run %s" % (name, tc.fmt(sc["model_end_reserved_bytes"]),
                                      tc.fmt(sc["recorded_end_reserved_bytes"])))
    if figures["devices"] == 1 and not figures["oom"] and \
            figures["kind"] not in snapshot_figures.PEAKS_NOT_IN_WINDOW:  # torch's own peak
        peak = figures["stats"][0]["reserved_bytes.all.peak"]
        f.check("whatif self-check: torch's peak reserved", sc["model_peak_reserved_bytes"] ==
                peak, "%s: model %s, torch %s" % (name, tc.fmt(sc["model_peak_reserved_bytes"]),
                                                  tc.fmt(peak)))


def main():
    f = tc.Failures("snapshot_fixtures")
    for figures_path in sorted(glob.glob(os.path.join(tc.HERE, "fixtures", "*.json"))):
        with open(figures_path) as fp:
            figures = json.load(fp)
        snap = figures_path[: -len(".json")] + ".pickle"
        report = json.loads(tc.run([tc.CLI, "report", "--json", snap]).stdout)
        snapshot_figures.compare(f, os.path.basename(snap), report, figures["stats"],
                                 figures["kind"])
        check_selfcheck(f, snap, figures)
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
