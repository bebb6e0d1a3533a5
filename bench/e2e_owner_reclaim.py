#!/usr/bin/python3
"""End-to-end benchmark: how fast an owner gets its node back, stock Slurm 22.05 vs slurm-preempt.

Runs on the real six-node test cluster (test/cluster/cluster.py), twice in one run, one
cluster after the other (never both at once: two cores):
  stock  Cluster(with_plugins=False); QOS made with sacctmgr: standby GraceTime=5 s,
         PreemptMode=requeue; owner Preempt=standby.
  ours   Cluster(with_plugins=True); the same QOS from a policy synced by preemptctl qos-sync.
Both keep Slurm's default cred_expire (120 s), which sets how long a requeued job is held.

One trial, on one owned node: a standby job that ignores its signals (trap '' TERM USR1 USR2)
runs there with --requeue; the owner's job asks for that node (-A <group> --qos=owner
-p <group's partition> -w <node> --exclusive, the same command line in both clusters).
  (a) owner submit -> owner RUNNING: from just before sbatch to the owner job's first line.
  (b) owner end -> requeued job RUNNING: the owner's job is released as soon as it runs; from
      its last line to the first line of the standby job's second run. Stock waits are capped
      (--cap, default 150 s) and then reported as '>= cap'.
Trials run on n3-n6, up to four at a time, started 7 s apart (so that they meet Slurm's
periodic passes at different phases). Timestamps come from the jobs' own output files, so
measuring puts no load on slurmctld.

    /usr/bin/python3 bench/e2e_owner_reclaim.py [--trials 5] [--json results.json]
"""

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import (CLUSTER_POLICY_SHAPE, Cluster, ClusterError, apply_policy, cancel_all, poll,  # noqa: E402
                     release, wait_qos_walltimes)

GRACE = 5             # s, standby's GraceTime in both clusters
CRED_EXPIRE = 120     # s, Slurm's default
STANDBY_WALL_MIN = 305  # a marker: once slurmctld shows it, the QOS change has reached it
GOALS = {"a": GRACE + 2, "b": 10}
NODES = {"n3": ("carol", "chem"), "n4": ("carol", "chem"), "n5": ("dave", "bio"), "n6": ("dave", "bio")}
STAGGER = 7  # s between the first trials of the node threads

POLICY = f"""\
version: 1
qos:
  standby:
    preemptible: true
    grace: {GRACE}s
    requeue: user
    limits:
      max_walltime: {STANDBY_WALL_MIN}m
  normal:
    preempts: [standby]
  owner:
    preempts: [standby]
""" + CLUSTER_POLICY_SHAPE

VICTIM = """\
trap '' TERM USR1 USR2
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
while true; do sleep 1; done
"""
OWNER = """\
echo "start $(date +%s.%N)"
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.2; done
echo "end $(date +%s.%N)"
"""


def stamps(cluster, jobid, word):
    path = cluster.jobs / f"{jobid}.out"
    try:
        text = path.read_text()
    except OSError:
        return []
    return [float(line.split()[1]) for line in text.splitlines() if line.startswith(word + " ")]


def wait_stamp(cluster, jobid, word, index, timeout):
    """The index-th '<word> <epoch>' line of the job's output, or None at the deadline."""
    try:
        poll(lambda: len(stamps(cluster, jobid, word)) > index, timeout,
             f"job {jobid}: line '{word}' #{index}", interval=0.1)
    except ClusterError:
        return None
    return stamps(cluster, jobid, word)[index]


def trial(cluster, node, cap):
    """One trial on node: {"node", "a", "b", "b_capped"} (seconds)."""
    user, group = NODES[node]
    victim = cluster.sbatch(["--qos=standby", "--requeue", "--open-mode=append", "-p", "standby", "-w", node,
                             "--exclusive", "--time=60", "-J", f"victim-{node}"], VICTIM, user="alice")
    if wait_stamp(cluster, victim, "start", 0, 60) is None:
        raise ClusterError(f"standby job {victim} did not start on {node}")
    # Slurm runs the pass a submission asks for at most every batch_sched_delay (3 s) after the
    # previous one, which started the standby job: let the owner arrive after that, as owners do.
    time.sleep(4)
    t0 = time.time()
    owner = cluster.sbatch(["-A", group, "--qos=owner", "-p", group, "-w", node, "--exclusive", "--time=60",
                            "-J", f"owner-{node}"], OWNER, user=user)
    started = wait_stamp(cluster, owner, "start", 0, 300)
    if started is None:
        raise ClusterError(f"owner job {owner} did not start on {node} within 300 s")
    release(cluster, owner)
    ended = wait_stamp(cluster, owner, "end", 0, 30)
    if ended is None:
        raise ClusterError(f"owner job {owner} did not end after its release")
    rerun = wait_stamp(cluster, victim, "start", 1, cap + 5)
    b = cap if rerun is None or rerun - ended > cap else rerun - ended
    cluster.run(["scancel", str(victim)], check=False)
    poll(lambda: cluster.job_state(victim) not in ("RUNNING", "PENDING", "COMPLETING", "REQUEUED"), 60,
         f"job {victim} to end", interval=0.5)
    return {"node": node, "victim": victim, "owner": owner, "a": started - t0, "b": b,
            "b_capped": rerun is None or rerun - ended > cap}


def run_trials(cluster, trials, cap, label):
    results, errors = [], []
    lock = threading.Lock()
    todo = list(range(trials))

    def worker(node, delay):
        time.sleep(delay)
        while True:
            with lock:
                if not todo or errors:
                    return
                number = todo.pop(0)
            try:
                r = trial(cluster, node, cap)
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                with lock:
                    errors.append(f"{label} trial {number} on {node}: {e}")
                return
            r["trial"] = number
            with lock:
                results.append(r)
            b = f">= {r['b']:.0f}" if r["b_capped"] else f"{r['b']:.1f}"
            print(f"  {label} trial {number} on {node}: (a) {r['a']:.1f} s, (b) {b} s", flush=True)

    threads = [threading.Thread(target=worker, args=(node, i * STAGGER), daemon=True)
               for i, node in enumerate(list(NODES)[:min(len(NODES), trials)])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise ClusterError("; ".join(errors))
    return sorted(results, key=lambda r: r["trial"])


def config_line(cluster):
    out = cluster.run(["scontrol", "show", "config"]).stdout
    keep = [line.split("=", 1) for line in out.splitlines() if line.split("=")[0].strip() in
            ("AuthInfo", "KillWait", "PreemptMode", "PreemptType", "JobSubmitPlugins", "SchedulerParameters")]
    return {k.strip(): v.strip() for k, v in keep}


def measure(with_plugins, args):
    label = "ours" if with_plugins else "stock"
    cluster = Cluster(with_plugins=with_plugins, policy=POLICY if with_plugins else None,
                      extra_conf=f"AuthInfo=cred_expire={CRED_EXPIRE}", port_offset=args.port_offset)
    print(f"{label}: starting the cluster", flush=True)
    with cluster:
        if with_plugins:
            apply_policy(cluster, POLICY, {"standby": STANDBY_WALL_MIN})
        else:
            cluster.sacctmgr("modify", "qos", "where", "name=standby", "set", f"GraceTime={GRACE}",
                             "PreemptMode=requeue", f"MaxWall={STANDBY_WALL_MIN}")
            cluster.sacctmgr("modify", "qos", "where", "name=owner", "set", "Preempt=standby")
            wait_qos_walltimes(cluster, {"standby": STANDBY_WALL_MIN})
        qos = cluster.run(["sacctmgr", "-nP", "show", "qos", "format=Name,Preempt,PreemptMode,GraceTime"]).stdout
        config = config_line(cluster)
        print(f"{label}: up in {cluster.startup_seconds:.0f} s; {config}; qos {qos.split()}", flush=True)
        t0 = time.monotonic()
        results = run_trials(cluster, args.trials, args.cap, label)
        cancel_all(cluster)
        print(f"{label}: {len(results)} trials in {time.monotonic() - t0:.0f} s", flush=True)
    return {"config": config, "qos": qos.split(), "trials": results}


def median(rows, key):
    values = [r[key] for r in rows]
    m = statistics.median(values)
    capped = key == "b" and any(r["b_capped"] for r in rows) and \
        m >= min(r["b"] for r in rows if r["b_capped"])
    return m, capped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5, help="trials per cluster (default 5)")
    parser.add_argument("--cap", type=float, default=150, help="longest wait for (b), s (default 150)")
    parser.add_argument("--port-offset", type=int, default=6000, help="cluster port offset (default 6000)")
    parser.add_argument("--json", help="write the results here as JSON")
    parser.add_argument("--only", choices=["stock", "ours"], help="measure one configuration only")
    args = parser.parse_args(argv)

    t0 = time.monotonic()
    runs = {}
    try:
        for label, plugins in (("stock", False), ("ours", True)):
            if args.only in (None, label):
                runs[label] = measure(plugins, args)
    except ClusterError as e:
        print(f"e2e_owner_reclaim: {e}", file=sys.stderr)
        return 1

    metrics = [("a", "owner submit -> owner RUNNING (standby job ignores its signal)", f"<= {GOALS['a']} s (grace {GRACE} s + 2 s)"),
               ("b", "owner end -> requeued job RUNNING", f"<= {GOALS['b']} s")]
    summary = {}
    rows = [("metric", "stock median", "ours median", "stock/ours", "goal", "ours meets goal")]
    for key, name, goal in metrics:
        med = {label: median(run["trials"], key) for label, run in runs.items()}
        text = {label: (">= " if capped else "") + f"{m:.1f} s" for label, (m, capped) in med.items()}
        ratio = ""
        if "stock" in med and "ours" in med and med["ours"][0] > 0:
            ratio = (">= " if med["stock"][1] else "") + f"{med['stock'][0] / med['ours'][0]:.1f}x"
        meets = "" if "ours" not in med else ("yes" if med["ours"][0] <= GOALS[key] else "NO")
        rows.append((name, text.get("stock", "-"), text.get("ours", "-"), ratio or "-", goal, meets or "-"))
        summary[key] = {"metric": name, "goal_s": GOALS[key],
                        **{f"{label}_median_s": round(m, 2) for label, (m, _) in med.items()},
                        **{f"{label}_median_is_lower_bound": capped for label, (_, capped) in med.items()}}
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    print(f"\n{args.trials} trials per configuration; grace {GRACE} s; cred_expire {CRED_EXPIRE} s; "
          f"(b) capped at {args.cap:.0f} s; total {time.monotonic() - t0:.0f} s")

    if args.json:
        Path(args.json).write_text(json.dumps({
            "grace_s": GRACE, "cred_expire_s": CRED_EXPIRE, "trials_per_config": args.trials,
            "cap_s": args.cap, "summary": summary,
            "runs": {label: {"config": run["config"], "qos": run["qos"],
                             "trials": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                                        for r in run["trials"]]}
                     for label, run in runs.items()},
        }, indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
