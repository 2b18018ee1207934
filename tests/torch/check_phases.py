"""The program's own phases in a real torch run (phases_prog.py under `record --torch`):
torch.cuda.nvtx ranges reach the trace through NVTX's injection (torch's libnvToolsExt.so.1
loads NVTX_INJECTION64_PATH, which `record` sets to the shim), record_function ranges through
the snapshot's external_annotations. Checks: every range is a phase of `report --json` and the
bytes torch allocated inside each are attributed to it; `oom --json` names the phase of the
OOM; the ledger's rows at the OOM and at the end sum to mem_get_info()'s total with residual 0,
and its free row at the OOM is what torch measured just before it."""
import json
import os
import sys

import torchcheck as tc

PROG = os.path.join(tc.HERE, "phases_prog.py")
GPU = "2GiB"


def ledger_sums(f, what, m, total):
    rows = sum(r["bytes"] for r in m["rows"])
    f.check("%s: the ledger's total is mem_get_info's" % what, m["total_bytes"] == total,
            "ledger %d, torch %d" % (m["total_bytes"], total))
    f.check("%s: the rows sum to mem_get_info's total" % what, rows == total,
            "rows %d, total %d: %s" % (rows, total, m["rows"]))
    f.check("%s: residual 0" % what, m["residual_bytes"] == 0, str(m["residual_bytes"]))
    print("%s: ledger %s, total %d" % (what, ", ".join(
        "%s %d" % (r["row"], r["bytes"]) for r in m["rows"]), m["total_bytes"]), flush=True)


def main():
    f = tc.Failures("torch_phases")
    os.makedirs("out", exist_ok=True)
    result, trace = os.path.abspath("out/phases.json"), os.path.abspath("out/phases.cmt")
    for p in (result, trace):
        if os.path.exists(p):
            os.unlink(p)
    env = {k: v for k, v in os.environ.items() if k not in tc.TORCH_VARS and
           not k.startswith("SIMCUDA_") and k != "NVTX_INJECTION64_PATH"}
    env.update(SIMCUDA_MEMORY=GPU, SIMCUDA_DEVICES="1", SIMCUDA_REUSE_ADDRESSES="0")
    tc.run([tc.CLI, "record", "--torch", "-q", "-o", trace, "--", sys.executable, "-B", PROG,
            result], env=env)
    with open(result) as fh:
        res = json.load(fh)
    total = res["mem_get_info_start"][1]

    rep = tc.cli_json("report", "--json", trace)
    phases = {p["name"]: p for p in rep["phases"] if p["name"]}
    kinds = {r["name"]: r["kind"] for r in rep["ranges"]}
    print("phases seen: %s" % ", ".join("%s (%s)" % (n, kinds.get(n)) for n in phases), flush=True)
    for name in ("load_weights", "train_step", "forward", "tight", "huge_request"):
        f.check("NVTX range is a phase", name in phases and kinds.get(name) == "push",
                "%s: %s" % (name, kinds.get(name)))
    f.check("record_function range is a phase (external_annotations)",
            "optimizer_state" in phases and kinds.get("optimizer_state") == "start",
            str(kinds.get("optimizer_state")))
    for name, nbytes in res["inside"].items():
        got = phases.get(name, {}).get("alloc_bytes")
        f.check("bytes allocated inside a range are its phase's", got == nbytes,
                "%s: report %s, torch %s" % (name, tc.fmt(got), tc.fmt(nbytes)))
    f.check("the allocations before any range are in no phase",
            rep["phases"][0]["alloc_count"] == 0, str(rep["phases"][0]))

    f.check("torch raised OutOfMemoryError", bool(res["oom"]))
    oom = tc.cli_json("oom", "--json", trace)
    eps = oom.get("episodes") or []
    if f.check("oom finds the episode", len(eps) >= 1):
        e = eps[0]
        f.check("the OOM's phase", e.get("phase") == "huge_request" and
                e.get("phase_path") == "huge_request", "%s / %s" % (e.get("phase"),
                                                                    e.get("phase_path")))
        ledger_sums(f, "at the OOM", e["ledger"], total)
        free_row = [r["bytes"] for r in e["ledger"]["rows"] if r["row"] == "free"]
        f.check("the free row at the OOM is what torch measured before it",
                free_row == [res["mem_get_info_oom"][0]], "%s vs %d" % (
                    free_row, res["mem_get_info_oom"][0]))
    for m in rep["ledger"]["end"]:
        ledger_sums(f, "at the end", m, total)
    f.check("a ledger at the end", len(rep["ledger"]["end"]) == 1)
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
