"""`cumemtrace record --torch` with a fake `torch` package (no PyTorch here): the hook makes the
calls PyTorch documents, with the right arguments, writes the snapshots where record expects
them, runs the user's own sitecustomize, leaves sys.path, output and exit status as they were,
and turns a failure inside it into one stderr line.

usage: test_torch_hook.py CUMEMTRACE SIMCUDA_LIB_DIR"""
import glob
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap

CLI, SIMCUDA = sys.argv[1], sys.argv[2]

FAKE_INIT = """
import os
from . import _C, cuda
__version__ = "2.6.0+fake"
"""

# _C: what the hook calls directly; every call is logged as a JSON line.
FAKE_C = """
import json, os
observers = []

def log(call, *args, **kwargs):
    with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
        f.write(json.dumps({"call": call, "args": list(args), "kwargs": kwargs}) + "\\n")

def _cuda_attach_out_of_memory_observer(fn):
    log("attach_oom", callable(fn))
    observers.append(fn)
"""

# torch.cuda: lazy initialisation with queued calls, as torch.cuda._lazy_init runs them. The
# device work goes through the driver (simcuda, via ctypes) so the process has a trace.
FAKE_CUDA = """
import ctypes
from . import memory
from .. import _C
_initialized = False
_queued = []

def is_initialized():
    return _initialized

def _lazy_call(fn):
    if _initialized:
        fn()
    else:
        _queued.append(fn)

def init():
    global _initialized
    lib = ctypes.CDLL("libcuda.so.1")
    ctx, ptr = ctypes.c_void_p(), ctypes.c_uint64()
    lib.cuInit(0)
    lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    lib.cuCtxSetCurrent(ctx)
    lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(20 << 20))
    _initialized = True
    for fn in _queued:
        fn()

def fake_oom():
    for fn in _C.observers:
        fn(0, 6 << 30, 17 << 30, 3 << 30)
    raise RuntimeError("CUDA out of memory (fake)")
"""

FAKE_MEMORY = """
import os, pickle
from .. import _C
dumps = 0
API = os.environ.get("FAKE_TORCH_API", "2.6")

def _snapshot():
    global dumps
    dumps += 1
    return {"segments": [], "device_traces": [[]], "fake_dump": dumps, "pid": os.getpid()}

if API == "2.6":
    def _record_memory_history(enabled="all", context="all", stacks="all",
                               max_entries=1 << 62, device=None):
        if os.environ.get("FAKE_TORCH_BROKEN"):
            raise ValueError("broken on purpose")
        _C.log("record_memory_history", enabled=enabled, context=context, stacks=stacks,
               max_entries=max_entries)

    def _dump_snapshot(filename="dump_snapshot.pickle"):
        _C.log("dump_snapshot", os.path.basename(filename))
        with open(filename, "wb") as f:
            pickle.dump(_snapshot(), f)
else:  # 2.0: the legacy signature only, no _dump_snapshot
    def _record_memory_history(enabled, record_context=True, trace_alloc_max_entries=1,
                               trace_alloc_record_context=False, device=None,
                               record_context_cpp=False):
        _C.log("record_memory_history_legacy", enabled,
               trace_alloc_max_entries=trace_alloc_max_entries,
               trace_alloc_record_context=trace_alloc_record_context)
"""

TRAIN = """
import json, sys
if "notorch" not in sys.argv:
    import torch
    torch.cuda.init()
    print("trained")
    if "oom" in sys.argv:
        try:
            torch.cuda.fake_oom()
        except RuntimeError:
            print("caught oom")
print("path " + json.dumps(sys.path))
sys.exit(3 if "fail" in sys.argv else 0)
"""

USER_SITE = """
import os
with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
    f.write('{"call": "user_sitecustomize", "args": [], "kwargs": {}}\\n')
"""

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


def setup(root):
    write(os.path.join(root, "fake", "torch", "__init__.py"), FAKE_INIT)
    write(os.path.join(root, "fake", "torch", "_C.py"), FAKE_C)
    write(os.path.join(root, "fake", "torch", "cuda", "__init__.py"), FAKE_CUDA)
    write(os.path.join(root, "fake", "torch", "cuda", "memory.py"), FAKE_MEMORY)
    write(os.path.join(root, "usersite", "sitecustomize.py"), USER_SITE)
    write(os.path.join(root, "train.py"), TRAIN)


def run(root, args, record=True, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(root, "fake") + ":" + os.path.join(root, "usersite")
    env["FAKE_TORCH_LOG"] = os.path.join(root, "log.jsonl")
    env["LD_LIBRARY_PATH"] = SIMCUDA
    env.pop("CUMEMTRACE_TORCH_MAX_ENTRIES", None)
    env.update(env_extra or {})
    if os.path.exists(env["FAKE_TORCH_LOG"]):
        os.unlink(env["FAKE_TORCH_LOG"])
    cmd = [sys.executable, os.path.join(root, "train.py")] + args
    if record:
        cmd = [CLI, "record", "--torch", "--no-symbolize", "--"] + cmd
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    calls = []
    if os.path.exists(env["FAKE_TORCH_LOG"]):
        with open(env["FAKE_TORCH_LOG"]) as f:
            calls = [json.loads(line) for line in f]
    return p, calls


def named(calls, name):
    return [c for c in calls if c["call"] == name]


def path_line(out):
    return [l for l in out.splitlines() if l.startswith("path ")]


def case_training_with_a_survived_oom(root):
    p, calls = run(root, ["oom"], env_extra={"CUMEMTRACE_TORCH_MAX_ENTRIES": "4321"})
    check(p.returncode == 0, "status 0: %d %s" % (p.returncode, p.stderr))
    check("trained\ncaught oom\n" in p.stdout, "the program's output: " + p.stdout)
    history = named(calls, "record_memory_history")
    check(len(history) == 1, "history turned on once: %s" % calls)
    if history:
        want = {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 4321}
        check(history[0]["kwargs"] == want, "history arguments %s" % history[0]["kwargs"])
    check(named(calls, "attach_oom") == [{"call": "attach_oom", "args": [True], "kwargs": {}}],
          "one OOM observer attached: %s" % calls)
    check(len(named(calls, "user_sitecustomize")) == 1, "the user's sitecustomize ran once")
    dumps = named(calls, "dump_snapshot")
    check(len(dumps) == 2, "dumped at the OOM and at exit: %s" % dumps)
    traces = glob.glob(os.path.join(root, "cumemtrace.*.cmt"))
    check(len(traces) == 1, "one trace: %s %s" % (traces, p.stderr))
    if len(traces) != 1:
        return
    stem = traces[0][:-4]
    pid = int(stem.rsplit(".", 1)[1])
    check(dumps and dumps[0]["args"][0] == "torch-%d-1-oom.pickle.partial" % pid,
          "the OOM dump's name: %s" % dumps)
    last, earlier = stem + ".torch.pickle", stem + ".torch-1.pickle"
    check(os.path.exists(last) and os.path.exists(earlier), "both kept: %s" % os.listdir(root))
    if os.path.exists(last) and os.path.exists(earlier):
        with open(last, "rb") as f:
            snap = pickle.load(f)
        check(snap["fake_dump"] == 2 and snap["pid"] == pid, "the exit dump is the last: %s" % snap)
        with open(earlier, "rb") as f:
            check(pickle.load(f)["fake_dump"] == 1, "the OOM dump is kept too")
    check("cumemtrace: %s: PyTorch's memory snapshot kept as %s (not merged into the trace: "
          "this build has no snapshot importer)" % (os.path.basename(traces[0]),
                                                     os.path.basename(last)) in p.stderr,
          "record names the trace and says the snapshot is not merged: " + p.stderr)
    check("torch hook" not in p.stderr, "no hook complaint: " + p.stderr)
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_sys_path_and_status_unchanged(root):
    bare, _ = run(root, ["fail"], record=False)
    traced, calls = run(root, ["fail"])
    check(bare.returncode == 3 and traced.returncode == 3,
          "exit status passes through: %d %d" % (bare.returncode, traced.returncode))
    check(path_line(bare.stdout) == path_line(traced.stdout),
          "sys.path as without the hook:\n%s\n%s" % (path_line(bare.stdout),
                                                     path_line(traced.stdout)))
    check(len(named(calls, "user_sitecustomize")) == 1, "the user's sitecustomize ran")
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_no_torch_no_snapshot(root):
    p, calls = run(root, ["notorch"])
    check(p.returncode == 0 and "torch hook" not in p.stderr, "quiet without torch: " + p.stderr)
    check(not glob.glob(os.path.join(root, "*.pickle")), "no snapshot without torch")
    check(named(calls, "user_sitecustomize"), "the user's sitecustomize ran")


def case_a_failure_inside_is_one_line(root):
    p, calls = run(root, ["oom"], env_extra={"FAKE_TORCH_BROKEN": "1"})
    lines = [l for l in p.stderr.splitlines() if l.startswith("cumemtrace: torch hook:")]
    check(len(lines) == 1 and "broken on purpose" in lines[0], "one line: " + p.stderr)
    check(p.returncode == 0 and "trained\ncaught oom\n" in p.stdout, "the program runs on")
    check(not named(calls, "dump_snapshot"), "nothing dumped after the failure")
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_torch_2_0_api(root):
    p, calls = run(root, [], env_extra={"FAKE_TORCH_API": "2.0"})
    legacy = named(calls, "record_memory_history_legacy")
    check(len(legacy) == 1 and legacy[0]["args"] == [True] and
          legacy[0]["kwargs"] == {"trace_alloc_max_entries": 100000,
                                  "trace_alloc_record_context": True},
          "2.0's signature: %s" % calls)
    kept = glob.glob(os.path.join(root, "cumemtrace.*.torch.pickle"))
    check(len(kept) == 1, "2.0: _snapshot() pickled by the hook: %s" % p.stderr)
    if kept:
        with open(kept[0], "rb") as f:
            check(pickle.load(f)["fake_dump"] == 1, "the one dump")
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


root = tempfile.mkdtemp(prefix="cmt-torch-hook.")
try:
    setup(root)
    for case in (case_training_with_a_survived_oom, case_sys_path_and_status_unchanged,
                 case_no_torch_no_snapshot, case_a_failure_inside_is_one_line,
                 case_torch_2_0_api):
        before = len(failures)
        case(root)
        print("%s %s" % ("ok  " if len(failures) == before else "FAIL", case.__name__))
finally:
    shutil.rmtree(root, ignore_errors=True)
sys.exit(1 if failures else 0)
