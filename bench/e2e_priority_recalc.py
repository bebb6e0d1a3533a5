#!/usr/bin/python3
"""End-to-end benchmark: the periodic recalculation pass of priority/fairshare against
priority/multifactor's, on the real six-node test cluster, in one run, on the same jobs.

One cluster (test/cluster/cluster.py, with the plugins) gets a blocker job on every node and
then N pending jobs (default 3000) that cannot start: eligible, with a priority, behind the
blocker, so both plugins recalculate all of them every pass. (Not `sbatch --hold`: a held job
has priority 0, and both plugins skip it, so a pass over held jobs would measure nothing but
the walk of the job list.) Then slurmctld is run twice on the
same saved state, one plugin after the other (a restart in between; the jobs and usage are
recovered from StateSaveLocation):
  fairshare    PriorityType=priority/fairshare (the fragment's)
  multifactor  PriorityType=priority/multifactor
Both with the same slurm.conf otherwise: PriorityCalcPeriod=1 (a pass a minute, Slurm's
minimum), PriorityWeight{Age,Fairshare,QOS,Partition} set explicitly, PriorityFlags=NO_FAIR_TREE
(classic fair share in both).

What is measured, and why it is honest: the CPU time the recalculation thread spends in one
pass. Each plugin does its pass in a thread of its own (multifactor's is named "decay", ours
"sp_fairshare") that sleeps between passes, and each writes a state file at the end of a pass
(priority_last_decay_ran, priority_fairshare_state). The script polls that file's mtime; at
each change it reads the thread's run time from /proc/PID/task/TID/schedstat (nanoseconds of
CPU, kernel-maintained). The difference between two consecutive pass ends is the CPU time of
one whole pass: usage decay and accrual over the associations plus the priority of every
pending job, exactly what each plugin does per PriorityCalcPeriod. The first pass after a start
is skipped (it also catches up on start-up work). Time spent waiting for locks is not CPU time
and is not counted, for either plugin. The script reports the median over --passes passes and
the ratio fairshare / multifactor (below 1: ours is faster).

    /usr/bin/python3 bench/e2e_priority_recalc.py [--jobs 3000] [--passes 3] [--port-offset 4000]
        [--partitions standby|public,standby] [--json FILE]
"""

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import NODES, REPO, Cluster, ClusterError, poll, port_open  # noqa: E402

EXTRA_CONF = """\
PriorityCalcPeriod=1
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightQOS=1000
PriorityWeightPartition=1000
MaxJobCount=20000
"""
PLUGINS = {  # name -> (PriorityType, pass thread name, state file written at each pass end)
    "fairshare": ("priority/fairshare", "sp_fairshare", "priority_fairshare_state"),
    "multifactor": ("priority/multifactor", "decay", "priority_last_decay_ran"),
}
USERS = [("alice", "public"), ("bob", "public"), ("carol", "chem"), ("dave", "bio")]


def submit_pending(cluster, n, partitions="standby"):
    """n jobs that stay pending: every node is held by a blocker job of root's. `partitions`:
    their -p (bench/scale.py submits standby jobs to "public,standby": one priority per
    partition, priority_array, in both plugins)."""
    blocker = cluster.run(["sbatch", "--parsable", "-o", "/dev/null", "-A", "public", "-p", "standby",
                           "--qos=standby", "-N", str(len(NODES)), "--exclusive", "--wrap",
                           "sleep 100000"]).stdout.strip()
    poll(lambda: cluster.run(["squeue", "-h", "-j", blocker, "-o", "%T"]).stdout.strip() == "RUNNING",
         60, "the blocker to run")
    errors = []

    def worker(k):
        for i in range(k, n, 4):
            user, _ = USERS[i % len(USERS)]
            r = cluster.run(["sbatch", "--parsable", "-o", "/dev/null", "-p", partitions,
                             "--qos=standby", "--wrap", "true"], user=user, check=False)
            if r.returncode != 0:
                errors.append(r.stderr.strip())
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise ClusterError(f"{len(errors)} submissions failed, first: {errors[0]}")
    return blocker


def pending_count(cluster):
    return len(cluster.run(["squeue", "-h", "-t", "PD", "-o", "%i"], check=False).stdout.split())


def use_plugin(cluster, priority_type):
    """Restart slurmctld with PriorityType=priority_type (the jobs come back from state)."""
    proc = cluster.procs.get("slurmctld")
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    poll(lambda: not port_open(cluster.ports["slurmctld"]), 30, "slurmctld's port to close")
    fragment = cluster.dir / "etc" / "fragment.conf"
    text = (REPO / "etc" / "slurm.conf.fragment").read_text()
    fragment.write_text(text.replace("PriorityType=priority/fairshare", f"PriorityType={priority_type}"))
    conf = cluster.conf.read_text()
    conf = conf.replace(f"Include {REPO / 'etc' / 'slurm.conf.fragment'}", f"Include {fragment}")
    cluster.conf.write_text(conf)
    cluster.start_slurmctld()


def thread_of(pid, name, timeout=120):
    def find():
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                if (task / "comm").read_text().strip() == name:
                    return task
            except OSError:
                continue
        return None
    return poll(find, timeout, f"slurmctld's thread {name}")


def cpu_ns(task):
    return int((task / "schedstat").read_text().split()[0])


def measure_passes(cluster, name, passes):
    priority_type, thread_name, state_name = PLUGINS[name]
    use_plugin(cluster, priority_type)
    pid = cluster.procs["slurmctld"].pid
    started = time.time()
    state = cluster.dir / "state" / state_name
    task = thread_of(pid, thread_name)

    def mtime():
        try:
            return os.stat(state).st_mtime_ns
        except OSError:
            return 0
    last = mtime()
    ends = []  # (cpu_ns) at each pass end
    deadline = time.monotonic() + (passes + 2) * 60 + 60
    while len(ends) < passes + 2:  # the first end closes the skipped first pass
        if time.monotonic() > deadline:
            raise ClusterError(f"{name}: only {len(ends)} passes in time")
        now = mtime()
        if now != last and now / 1e9 >= started:
            ends.append(cpu_ns(task))
            last = now
        time.sleep(0.02)
    per_pass = [(b - a) / 1e6 for a, b in zip(ends[1:], ends[2:])]
    return per_pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--port-offset", type=int, default=4000)
    parser.add_argument("--partitions", default="standby",
                        help="the pending jobs' -p (public,standby: two partitions each, as in "
                             "bench/scale.py)")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)

    cluster = Cluster(with_plugins=True, extra_conf=EXTRA_CONF, port_offset=args.port_offset)
    try:
        cluster.start()
        t0 = time.monotonic()
        submit_pending(cluster, args.jobs, args.partitions)
        pending = pending_count(cluster)
        print(f"{pending} pending jobs submitted in {time.monotonic() - t0:.0f} s", flush=True)
        results = {}
        for name in ("fairshare", "multifactor"):
            results[name] = measure_passes(cluster, name, args.passes)
            still = pending_count(cluster)
            if still != pending:
                raise ClusterError(f"{name}: {still} pending jobs, expected {pending}")
            print(f"{name:12} CPU ms per pass: " + ", ".join(f"{v:.2f}" for v in results[name]),
                  flush=True)
        med = {k: statistics.median(v) for k, v in results.items()}
        ratio = med["fairshare"] / med["multifactor"]
        print(f"recalculation pass over {pending} pending jobs, median CPU time: "
              f"fairshare {med['fairshare']:.2f} ms, multifactor {med['multifactor']:.2f} ms, "
              f"ratio fairshare/multifactor {ratio:.2f}")
        if args.json:
            Path(args.json).write_text(json.dumps({"pending": pending, "partitions": args.partitions,
                                                   "per_pass_ms": results,
                                                   "median_ms": med, "ratio": ratio}, indent=2))
        return 0 if ratio <= 1.0 else 1
    except ClusterError as e:
        print(f"e2e_priority_recalc: {e}", file=sys.stderr)
        cluster.failed = True
        return 2
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
