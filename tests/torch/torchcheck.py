"""Helpers of the tests/torch checks: they run inside the torch root (scripts/torch-run.sh
--no-record), with the build tree at its own path; CUMEMTRACE_BUILD names it."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ["CUMEMTRACE_BUILD"]
CLI = os.path.join(BUILD, "bin", "cumemtrace")
LOG_CHECK = os.path.join(BUILD, "tests", "progs", "simcuda_log_check")
WORKLOAD = os.path.join(HERE, "workload.py")
MIB = 1 << 20

# The variables that decide how torch allocates; a run sets only those it names.
TORCH_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING")


class Failures:
    """Counts comparisons, prints each disagreement, and the totals like tests/oracle does."""

    def __init__(self, name):
        self.name = name
        self.counts = {}
        self.failed = 0

    def check(self, what, ok, detail=""):
        agree, total = self.counts.get(what, (0, 0))
        self.counts[what] = (agree + bool(ok), total + 1)
        if not ok:
            self.failed += 1
            print("DIFF %s: %s" % (what, detail), flush=True)
        return ok

    def note(self, what):
        """Something the trace cannot carry, that the product said so about."""
        agree, total = self.counts.get(what, (0, 0))
        self.counts[what] = (agree + 1, total + 1)

    def finish(self):
        for what, (agree, total) in self.counts.items():
            said = "cannot tell" in what or "known" in what  # counted, not compared
            print("%s: %s: %d of %d%s" % (self.name, what, agree, total, "" if said else " agree"))
        if not self.counts:
            print("%s: nothing compared" % self.name)
            return 1
        print("%s: %s" % (self.name, "FAILED (%d)" % self.failed if self.failed else "ok"))
        return 1 if self.failed else 0


def run(cmd, env=None, check=True, quiet=False):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("torchcheck: %s exited %d" % (" ".join(cmd), p.returncode))
    return p


def workload(out_dir, name, scenario, args=(), conf=None, no_caching=False, record=None,
             gpu="2GiB", devices=1, log=False, fraction=None, extra_env=None):
    """Runs workload.py SCENARIO once: record None (as is), "plain" or "torch" (record --torch).
    Returns (result dict, trace path or None, SIMCUDA_LOG path or None)."""
    os.makedirs(out_dir, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in TORCH_VARS and
           not k.startswith("SIMCUDA_")}
    env["SIMCUDA_MEMORY"] = gpu
    env["SIMCUDA_DEVICES"] = str(devices)
    env["SIMCUDA_REUSE_ADDRESSES"] = "0"  # what the model assumes (simcuda README)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    if no_caching:
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    env.update(extra_env or {})
    result = os.path.join(out_dir, name + ".json")
    trace = os.path.join(out_dir, name + ".cmt") if record else None
    logf = os.path.join(out_dir, name + ".log") if log else None
    for f in (result, trace, logf):
        if f and os.path.exists(f):
            os.unlink(f)
    if logf:
        env["SIMCUDA_LOG"] = logf
    cmd = [sys.executable, WORKLOAD, scenario, result] + list(args)
    if fraction is not None:
        cmd += ["--fraction", str(fraction)]
    if record:
        cmd = [CLI, "record"] + (["--torch"] if record == "torch" else []) + \
            ["-q", "-o", trace, "--"] + cmd
    p = run(cmd, env=env, check=False)
    if p.returncode != 0 or not os.path.exists(result):
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("torchcheck: workload %s (%s) exited %d" % (scenario, name, p.returncode))
    with open(result) as f:
        return json.load(f), trace, logf


def cli_json(*args):
    p = run([CLI] + list(args))
    return json.loads(p.stdout)


def fmt(v):
    return "%.2f MiB" % (v / MIB) if isinstance(v, int) and v >= MIB else str(v)
