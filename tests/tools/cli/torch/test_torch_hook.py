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
__version__ = os.environ.get("FAKE_TORCH_VERSION", "2.6.0+fake")
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
import ctypes, time
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

def now_us():
    return int(time.time() * 1e6)

def init():
    global _initialized
    lib = ctypes.CDLL("libcuda.so.1")
    ctx, ptr, other = ctypes.c_void_p(), ctypes.c_uint64(), ctypes.c_uint64()
    lib.cuInit(0)
    lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    lib.cuCtxSetCurrent(ctx)
    lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(20 << 20))
    # what the caching allocator would record inside that segment (memory.history), with
    # gaps so that the driver calls fall between its entries by any clock
    time.sleep(0.05)
    memory.segment = ptr.value
    memory.record("segment_alloc", ptr.value, 20 << 20, now_us())
    memory.record("alloc", ptr.value, 2000000, now_us())
    time.sleep(0.05)
    lib.cuMemAlloc_v2(ctypes.byref(other), ctypes.c_size_t(4 << 20))  # a library of its own
    time.sleep(0.05)
    memory.record("alloc", ptr.value + (2 << 20), 1 << 20, now_us())
    memory.record("free_requested", ptr.value + (2 << 20), 1 << 20, now_us())
    memory.record("free_completed", ptr.value + (2 << 20), 1 << 20, now_us())
    time.sleep(0.05)
    lib.cuMemFree_v2(other)
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
CORRUPT = b"\\x80\\x04\\x95garbage, not a pickle"
dumps = 0
API = os.environ.get("FAKE_TORCH_API", "2.6")

history, segment = [], 0
FRAMES = [{"filename": "train.py", "line": 5, "name": "step"}]

def record(action, addr, size, time_us):
    history.append({"action": action, "addr": addr, "size": size, "stream": 0,
                    "time_us": time_us, "frames": FRAMES})

def _snapshot():
    # PyTorch's format (2.1+): the dump-time segments, and the trace entries per device
    global dumps
    dumps += 1
    segments = []
    if segment:
        blocks = [{"address": segment, "size": 2 << 20, "requested_size": 2000000,
                   "state": "active_allocated", "frames": FRAMES},
                  {"address": segment + (2 << 20), "size": 18 << 20, "requested_size": 0,
                   "state": "inactive", "frames": []}]
        segments.append({"device": 0, "address": segment, "total_size": 20 << 20,
                         "allocated_size": 2 << 20, "active_size": 2 << 20,
                         "requested_size": 2000000, "stream": 0, "segment_type": "large",
                         "blocks": blocks, "frames": FRAMES})
    return {"segments": segments, "device_traces": [list(history)], "fake_dump": dumps,
            "pid": os.getpid()}

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
            if os.environ.get("FAKE_TORCH_CORRUPT"):
                f.write(CORRUPT)
            else:
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
    import os, torch
    if not os.environ.get("FAKE_TORCH_NO_INIT"):
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


def lines_of(args):
    p = subprocess.run([CLI] + args, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "%s: %d %s" % (args, p.returncode, p.stderr))
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def check_merged(trace):
    """The exit snapshot's entries, in the trace between the driver calls they came between."""
    recs = lines_of(["dump", "--stacks", trace])
    kinds = [r.get("api") or r.get("action") or r.get("record") for r in recs]
    alloc = [r for r in recs if r.get("record") == "alloc_event"]
    timed = [r["t_ns"] for r in recs if "t_ns" in r]
    check(timed == sorted(timed), "times in file order: %s" % timed)
    want = ["cuMemAlloc_v2", "segment_alloc", "alloc", "cuMemAlloc_v2", "alloc",
            "free_requested", "free_completed", "cuMemFree_v2"]
    got = [k for k in kinds if k in want]
    check(got == want, "driver and allocator events interleaved by time: %s" % got)
    seqs = {r["seq"] for r in recs if r.get("api")}
    check(alloc and all(a.get("seq") in seqs for a in alloc), "SEQ names a driver event: %s" % alloc)
    if len(alloc) == 5:
        driver = [r for r in recs if r.get("api") in ("cuMemAlloc_v2", "cuMemFree_v2")]
        check(alloc[0]["seq"] == driver[0]["seq"] and alloc[2]["seq"] == driver[1]["seq"],
              "SEQ is the driver call before: %s %s" % (alloc, driver))
    check(alloc and alloc[1].get("frames", [""])[0].startswith("step"),
          "the Python frame: %s" % alloc[1:2])
    driver_frames = [f for r in recs if r.get("api") for f in r.get("frames", [])]
    check(driver_frames and not [f for f in driver_frames if "train.py" in f],
          "the driver stacks are their own (ids do not collide): %s" % driver_frames[:3])
    report = subprocess.run([CLI, "report", "--json", trace], capture_output=True, text=True,
                            timeout=60)
    check(report.returncode == 0, "report --json: " + report.stderr)
    flat = {}

    def walk(v, key=""):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, key + "." + k if key else k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        else:
            flat.setdefault(key, v)
    walk(json.loads(report.stdout or "{}"))
    figures = {k.split("allocator.", 1)[1]: v for k, v in flat.items() if "allocator." in k}
    check(figures.get("allocated_bytes_at_end") == 2 << 20 and
          figures.get("reserved_bytes_at_end") == 20 << 20 and
          figures.get("peak_allocated_bytes") == 3 << 20 and
          figures.get("segments_at_end") == 1, "the allocator figures: %s" % figures)


def check_version(trace, version, style):
    """torch.__version__ in the merged ALLOCATOR record, and whatif's OOM wording chosen by it."""
    recs = lines_of(["dump", trace])
    allocators = [r for r in recs if r.get("record") == "allocator"]
    check([a.get("version") for a in allocators] == [version],
          "the ALLOCATOR record names torch.__version__: %s" % allocators)
    p = subprocess.run([CLI, "whatif", "--json", trace], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, "whatif --json: " + p.stderr)
    w = json.loads(p.stdout or "{}")
    check(w.get("pytorch_version") == version and
          w.get("pytorch_version_source") == "the ALLOCATOR record" and
          w.get("oom_message_style") == style,
          "whatif takes the version from it: %s" % {k: v for k, v in w.items()
                                                    if k.startswith(("pytorch", "oom_message"))})


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
    check(not os.path.exists(last), "the merged snapshot is removed: %s" % os.listdir(root))
    check(os.path.exists(earlier), "the OOM dump is kept: %s" % os.listdir(root))
    if os.path.exists(earlier):
        with open(earlier, "rb") as f:
            check(pickle.load(f)["fake_dump"] == 1, "the OOM dump is the first")
    check("cumemtrace: %s: PyTorch's memory snapshot merged" % os.path.basename(traces[0])
          in p.stderr, "record says the snapshot is merged: " + p.stderr)
    check_merged(traces[0])
    check_version(traces[0], "2.6.0+fake", "2.x")
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


def no_snapshot_lines(stderr):
    return [l for l in stderr.splitlines()
            if l.startswith("cumemtrace record: --torch: no PyTorch memory snapshot")]


def case_no_torch_no_snapshot(root):
    p, calls = run(root, ["notorch"])
    check(p.returncode == 0 and "torch hook" not in p.stderr, "no hook failure: " + p.stderr)
    check(not glob.glob(os.path.join(root, "*.pickle")), "no snapshot without torch")
    check(named(calls, "user_sitecustomize"), "the user's sitecustomize ran")
    lines = no_snapshot_lines(p.stderr)
    check(len(lines) == 1 and "never imported torch" in lines[0],
          "one line says no snapshot was taken and why: " + p.stderr)


def case_torch_absent_says_why(root):
    """torch cannot be imported (absent here: the fake package is off the path)."""
    p, calls = run(root, [], env_extra={"PYTHONPATH": os.path.join(root, "usersite")})
    check(p.returncode != 0, "the program's own import error stays its own")
    lines = no_snapshot_lines(p.stderr)
    check(len(lines) == 1 and "import torch failed" in lines[0] and
          "ModuleNotFoundError" in lines[0], "one line says torch failed to import: " + p.stderr)
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_torch_without_cuda_says_why(root):
    p, calls = run(root, [], env_extra={"FAKE_TORCH_NO_INIT": "1"})
    lines = no_snapshot_lines(p.stderr)
    check(len(lines) == 1 and "never initialised CUDA" in lines[0],
          "one line says CUDA was never initialised: " + p.stderr)
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_a_failure_inside_is_one_line(root):
    p, calls = run(root, ["oom"], env_extra={"FAKE_TORCH_BROKEN": "1"})
    lines = [l for l in p.stderr.splitlines() if l.startswith("cumemtrace: torch hook:")]
    check(len(lines) == 1 and "broken on purpose" in lines[0], "one line: " + p.stderr)
    check(p.returncode == 0 and "trained\ncaught oom\n" in p.stdout, "the program runs on")
    check(not named(calls, "dump_snapshot"), "nothing dumped after the failure")
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_torch_2_0_api(root):
    p, calls = run(root, [], env_extra={"FAKE_TORCH_API": "2.0",
                                        "FAKE_TORCH_VERSION": "2.0.1+fake"})
    legacy = named(calls, "record_memory_history_legacy")
    check(len(legacy) == 1 and legacy[0]["args"] == [True] and
          legacy[0]["kwargs"] == {"trace_alloc_max_entries": 100000,
                                  "trace_alloc_record_context": True},
          "2.0's signature: %s" % calls)
    traces = glob.glob(os.path.join(root, "cumemtrace.*.cmt"))
    check(len(traces) == 1 and "PyTorch's memory snapshot merged" in p.stderr,
          "2.0: _snapshot() pickled by the hook and merged: %s" % p.stderr)
    check(not glob.glob(os.path.join(root, "cumemtrace.*.pickle")), "nothing kept")
    if len(traces) == 1:
        check_merged(traces[0])
        check_version(traces[0], "2.0.1+fake", "1.x")  # 2.0 prints the older OOM message
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


def case_a_corrupt_snapshot_leaves_the_trace(root):
    p, _ = run(root, [], env_extra={"FAKE_TORCH_CORRUPT": "1"})
    check(p.returncode == 0, "status 0: %d %s" % (p.returncode, p.stderr))
    lines = [l for l in p.stderr.splitlines() if "snapshot" in l]
    check(len(lines) == 1 and "not merged" in lines[0], "one line: " + p.stderr)
    traces = glob.glob(os.path.join(root, "cumemtrace.*.cmt"))
    check(len(traces) == 1, "one trace: %s" % traces)
    check(not glob.glob(os.path.join(root, "*.merge.*")), "no temporary file left")
    if len(traces) == 1:
        kept = traces[0][:-4] + ".torch.pickle"
        check(os.path.exists(kept), "the snapshot is kept: %s" % os.listdir(root))
        if os.path.exists(kept):
            with open(kept, "rb") as f:
                check(f.read().startswith(b"\x80\x04\x95garbage"), "as the hook wrote it")
        recs = lines_of(["dump", traces[0]])
        check(not [r for r in recs if r.get("record") == "alloc_event"] and
              [r for r in recs if r.get("api") == "cuMemAlloc_v2"], "the trace as recorded")
    for f in glob.glob(os.path.join(root, "cumemtrace.*")):
        os.unlink(f)


root = tempfile.mkdtemp(prefix="cmt-torch-hook.")
try:
    setup(root)
    for case in (case_training_with_a_survived_oom, case_sys_path_and_status_unchanged,
                 case_no_torch_no_snapshot, case_torch_absent_says_why,
                 case_torch_without_cuda_says_why, case_a_failure_inside_is_one_line,
                 case_torch_2_0_api, case_a_corrupt_snapshot_leaves_the_trace):
        before = len(failures)
        case(root)
        print("%s %s" % ("ok  " if len(failures) == before else "FAIL", case.__name__))
finally:
    shutil.rmtree(root, ignore_errors=True)
sys.exit(1 if failures else 0)
