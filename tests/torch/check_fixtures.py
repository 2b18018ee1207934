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


def main():
    f = tc.Failures("snapshot_fixtures")
    for figures_path in sorted(glob.glob(os.path.join(tc.HERE, "fixtures", "*.json"))):
        with open(figures_path) as fp:
            figures = json.load(fp)
        snap = figures_path[: -len(".json")] + ".pickle"
        report = json.loads(tc.run([tc.CLI, "report", "--json", snap]).stdout)
        snapshot_figures.compare(f, os.path.basename(snap), report, figures["stats"],
                                 figures["kind"])
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
