"""One real six-node cluster for the whole session (test/cluster/cluster.py).

Env: SLURM_PREEMPT_STOCK=1 runs the session cluster without the plugins (stock Slurm);
SLURM_PREEMPT_BUILDDIR points at the plugin build (default the repo root);
SLURM_PREEMPT_KEEP=1 keeps the cluster's work dir. It is kept anyway when a test failed.
SLURM_PREEMPT_PORT_OFFSET=N moves every port by N, so two sessions can run side by side.
Under pytest -n (pytest-xdist; scripts/test-all runs two workers, --dist loadfile) each worker
has its own session cluster, its ports moved by another 3000 per worker (gw0: +0, gw1: +3000;
the modules' own clusters use +100 to +1000 above that).
"""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))

from cluster import Cluster  # noqa: E402

STOCK = os.environ.get("SLURM_PREEMPT_STOCK") == "1"
WORKER_PORT_STRIDE = 3000


def _worker_index():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... under pytest -n
    return int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0


MAX_WORKERS = 4  # ports stay below 27100 (torch_train.py's rendezvous ports start at 28000)
if _worker_index() >= MAX_WORKERS:
    raise pytest.UsageError(f"at most {MAX_WORKERS} pytest workers (-n): each needs its own ports")
PORT_OFFSET = int(os.environ.get("SLURM_PREEMPT_PORT_OFFSET", "0")) + WORKER_PORT_STRIDE * _worker_index()
_summary = []


@pytest.fixture(scope="session")
def cluster(request):
    c = Cluster(with_plugins=not STOCK, port_offset=PORT_OFFSET)
    c.start()  # a failed start has torn itself down and kept its work dir
    try:
        yield c
    finally:
        c.failed = request.session.testsfailed > 0
        c.stop()
        _summary.append(f"cluster ({'stock' if STOCK else 'plugins'}): up in {c.startup_seconds:.1f} s, "
                        f"down in {c.teardown_seconds:.1f} s"
                        + (f"; work dir kept: {c.dir}" if c.dir.exists() else ""))


def pytest_terminal_summary(terminalreporter):
    for line in _summary:
        terminalreporter.write_line(line)
