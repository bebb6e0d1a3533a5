#!/usr/bin/python3
"""End-to-end benchmark: `preemptctl pause` of a whole 1000-task array (an experiment's trials),
against Slurm's own `scontrol requeuehold` of an equal array, on the real six-node test
cluster, in one run.

One cluster (test/cluster/cluster.py, with the plugins) gets two arrays of N standby tasks
(default 1000) that run until released and save on their checkpoint signal: the first fills the
nodes (12 tasks run, one per CPU), the rest pend. Measured, wall clock, as the user:
  pause        preemptctl pause ARRAY: every task's request (8 at a time), then the wait
               until every task is held (the running ones after saving on the signal and
               being requeued held; the pending ones at once). The command itself checks
               that each reached the held state (exit 0 only then).
  requeuehold  stock: scontrol requeuehold ARRAY then scontrol hold ARRAY on the second array
               (no checkpoint signal, no grace: the running tasks are requeued at once; hold
               takes the pending ones), then squeue until every task is held.
Reported: seconds for each, tasks per second, the ratio pause / requeuehold.

    /usr/bin/python3 bench/pause_array.py [--tasks 1000] [--port-offset 4500] [--json FILE]
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import PREEMPTCTL, Cluster, poll  # noqa: E402

EXTRA_CONF = "MaxJobCount=20000\nMaxArraySize=5000\n"
SCRIPT = r"""
trap 'exit 0' USR1
while [ ! -e "$SLURM_SUBMIT_DIR/release.all" ]; do sleep 1; done
"""


def held(cluster, array):
    out = cluster.run(["squeue", "-h", "-r", "-j", str(array), "-o", "%T|%r"], check=False).stdout
    rows = [line.split("|") for line in out.splitlines() if line]
    # A stock requeuehold shows its state_desc instead of the reason's name.
    holds = ("JobHeldUser", "JobHeldAdmin", "job requeued in held state")
    return sum(1 for s, r in rows if s == "PENDING" and r in holds), len(rows)


def submit(cluster, tasks):
    return cluster.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-N1", "-n1",
                           f"--array=1-{tasks}", "--time=30", "--output=/dev/null"], SCRIPT,
                          user="alice")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--port-offset", type=int, default=4500)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    cluster = Cluster(with_plugins=True, extra_conf=EXTRA_CONF, port_offset=args.port_offset)
    try:
        cluster.start()
        first = submit(cluster, args.tasks)
        poll(lambda: held(cluster, first)[1] == args.tasks, 60, "squeue to list every task")
        running = lambda a: int(cluster.run(["squeue", "-h", "-r", "-j", str(a), "-t", "R", "-o", "%i"],  # noqa: E731
                                            check=False).stdout.count("\n"))
        poll(lambda: running(first) >= 12, 60, "the first array to fill the nodes")
        ran = running(first)
        t0 = time.monotonic()
        r = cluster.run([str(PREEMPTCTL), "pause", str(first)], user="alice", check=False, timeout=600)
        pause_s = time.monotonic() - t0
        if r.returncode != 0:
            raise SystemExit(f"preemptctl pause failed: {r.stderr[-2000:]}")
        assert held(cluster, first) == (args.tasks, args.tasks)
        print(f"preemptctl pause of {args.tasks} tasks ({ran} running): {pause_s:.2f} s", flush=True)

        second = submit(cluster, args.tasks)
        poll(lambda: running(second) >= 12, 120, "the second array to fill the nodes")
        ran2 = running(second)
        t0 = time.monotonic()
        # requeuehold takes only the running tasks (it refuses pending ones: "Job is pending
        # execution"); hold takes the pending ones.
        cluster.run(["scontrol", "requeuehold", str(second)], user="alice", check=False)
        cluster.run(["scontrol", "hold", str(second)], user="alice", check=False)
        poll(lambda: held(cluster, second) == (args.tasks, args.tasks), 600, "every task held")
        stock_s = time.monotonic() - t0
        res = {"tasks": args.tasks, "running_at_pause": ran, "pause_s": round(pause_s, 2),
               "running_at_requeuehold": ran2, "requeuehold_s": round(stock_s, 2),
               "ratio": round(pause_s / stock_s, 2)}
        print(f"preemptctl pause of {args.tasks} tasks ({ran} running): {pause_s:.2f} s "
              f"({args.tasks / pause_s:.0f} tasks/s); scontrol requeuehold ({ran2} running): "
              f"{stock_s:.2f} s; ratio {res['ratio']}")
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
