# sitecustomize.py written by `cumemtrace record --torch` (tools/cli/torch/torch_capture.c embeds
# this file): the Python start-up hook that makes PyTorch keep its own allocator history.
#
# In a process that imports torch and initialises CUDA it turns on memory history with Python
# stacks, attaches an out-of-memory observer that dumps the snapshot at once, and dumps it at
# exit, as CUMEMTRACE_TORCH_DIR/torch-PID-N-WHY.pickle (N counts this process's dumps, WHY is
# oom or exit; each file appears whole, by rename), with torch.__version__ beside them in
# CUMEMTRACE_TORCH_DIR/torch-PID.version (a snapshot does not say it). `record` merges each
# process's last snapshot into its trace, the version into its ALLOCATOR record.
# Then it runs the sitecustomize the user had, as Python's site.py would have.
#
# It never changes the program's behaviour: nothing is imported or done until the program
# imports torch itself, CUDA is never initialised by it, and anything that goes wrong inside
# it is one line on stderr ("cumemtrace: torch hook: ...") after which it does nothing more.
# Docs: docs/capture.md ("PyTorch: record --torch").
import os
import sys


def _cumemtrace_torch_hook():
    import importlib.abc
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = os.environ.get("CUMEMTRACE_TORCH_DIR", "")
    try:
        max_entries = int(os.environ.get("CUMEMTRACE_TORCH_MAX_ENTRIES", "100000"))
    except ValueError:
        max_entries = 100000
    state = {"off": False, "dumps": 0, "armed": False, "version_pid": 0}

    def note(text):
        """CUMEMTRACE_TORCH_DIR/torch-PID.note: why this process has no snapshot yet (the last
        word wins); `record` says it in one line when no process left a snapshot."""
        if not out_dir:
            return
        try:
            final = os.path.join(out_dir, "torch-%d.note" % os.getpid())
            with open(final + ".partial", "w") as f:
                f.write(" ".join(str(text).split())[:300])
            os.replace(final + ".partial", final)
        except Exception:
            pass

    def warn(what, err=None):
        if state["off"]:
            return
        state["off"] = True
        try:
            detail = ": %s: %s" % (type(err).__name__, err) if err is not None else ""
            sys.stderr.write("cumemtrace: torch hook: %s%s\n" % (what, detail))
            note("the hook failed: %s%s" % (what, detail))
        except Exception:
            pass

    note("Python ran but never imported torch")

    def note_version(torch):
        """torch-PID.version, once per process (a forked child dumps under its own pid)."""
        if state["version_pid"] == os.getpid():
            return
        state["version_pid"] = os.getpid()
        final = os.path.join(out_dir, "torch-%d.version" % os.getpid())
        with open(final + ".partial", "w") as f:
            f.write(str(getattr(torch, "__version__", "")))
        os.replace(final + ".partial", final)

    def dump(torch, why):
        """Writes the snapshot now (why: "oom", "exit"). Never raises."""
        if state["off"] or not out_dir:
            return
        try:
            note_version(torch)
            state["dumps"] += 1
            name = "torch-%d-%d-%s.pickle" % (os.getpid(), state["dumps"], why)
            final = os.path.join(out_dir, name)
            partial = final + ".partial"
            memory = torch.cuda.memory
            if hasattr(memory, "_dump_snapshot"):  # 2.1 onward
                memory._dump_snapshot(partial)
            else:  # 2.0: what _dump_snapshot does later
                import pickle

                with open(partial, "wb") as f:
                    pickle.dump(memory._snapshot(), f)
            os.replace(partial, final)
        except Exception as err:
            warn("cannot dump the memory snapshot (%s)" % why, err)

    def arm(torch):
        """CUDA is initialised: history on, OOM observer, dump at exit."""
        if state["armed"] or state["off"]:
            return
        state["armed"] = True
        note("memory history was on, but the process ended before its snapshot was dumped at "
             "exit (killed, or os._exit)")
        try:
            record = torch.cuda.memory._record_memory_history
            try:  # 2.1 onward: per-event history with Python stacks
                record(enabled="all", context="all", stacks="python", max_entries=max_entries)
            except TypeError:  # 2.0's signature
                record(True, trace_alloc_max_entries=max_entries, trace_alloc_record_context=True)

            def on_oom(device, alloc, device_allocated, device_free):
                dump(torch, "oom")

            # called before PyTorch raises OutOfMemoryError; needs an initialised allocator
            torch._C._cuda_attach_out_of_memory_observer(on_oom)
            import atexit

            atexit.register(dump, torch, "exit")
        except Exception as err:
            warn("cannot turn on PyTorch's memory history", err)

    def torch_imported(torch):
        note("torch %s was imported but the program never initialised CUDA"
             % getattr(torch, "__version__", ""))
        try:
            cuda = getattr(torch, "cuda", None)
            if cuda is None:
                return
            if cuda.is_initialized():
                arm(torch)
            elif hasattr(cuda, "_lazy_call"):  # runs right after CUDA's lazy initialisation
                cuda._lazy_call(lambda: arm(torch))
            else:
                warn("this torch has no torch.cuda._lazy_call; memory history stays off")
        except Exception as err:
            warn("cannot watch for CUDA initialisation", err)

    class TorchWatcher(importlib.abc.MetaPathFinder):
        """Finds nothing itself: wraps torch's loader so that torch_imported runs after it."""

        busy = False

        def find_spec(self, name, path=None, target=None):
            if name != "torch" or self.busy:
                return None
            self.busy = True
            try:
                spec = importlib.util.find_spec(name)
            except Exception:
                spec = None
            finally:
                self.busy = False
            if spec is None:
                note("import torch failed: ModuleNotFoundError: No module named 'torch' (on "
                     "this Python, %s)" % sys.executable)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            loader = spec.loader
            run = loader.exec_module

            def exec_module(module):
                try:
                    run(module)  # torch's own errors are the program's
                except BaseException as err:
                    note("import torch failed: %s: %s" % (type(err).__name__, err))
                    raise
                try:
                    sys.meta_path.remove(watcher)
                except ValueError:
                    pass
                torch_imported(module)

            try:
                loader.exec_module = exec_module
            except Exception as err:
                warn("cannot watch the torch import", err)
            return spec

    watcher = TorchWatcher()
    if "torch" in sys.modules:
        torch_imported(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, watcher)

    # The program's sys.path is as it would be without us (children still get PYTHONPATH).
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    sys.path[:] = rest
    return rest


def _cumemtrace_user_sitecustomize(path):
    """The sitecustomize the user had, found on the rest of sys.path; errors as site.py
    reports them (the program goes on)."""
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write(
                "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                "%s: %s\n" % (err.__class__.__name__, err)
            )


try:
    _cumemtrace_rest = _cumemtrace_torch_hook()
except Exception as _cumemtrace_err:  # never the program's problem
    sys.stderr.write("cumemtrace: torch hook: %s: %s\n" % (type(_cumemtrace_err).__name__,
                                                           _cumemtrace_err))
    _cumemtrace_rest = sys.path
_cumemtrace_user_sitecustomize(_cumemtrace_rest)
