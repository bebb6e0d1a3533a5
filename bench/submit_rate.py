#!/usr/bin/python3
"""sbatch throughput, stock Slurm vs slurm-preempt, in alternating pairs (issue 15's goal:
ours >= 97 % of stock). Quicker than bench/scale.py and only this figure: each round starts
a fresh cluster of bench/scale.py's layout (--nodes `slurmd -N`, its partitions, QOS and
policy; stock = priority/multifactor, preempt/qos, no job_submit), submits --jobs of
scale.py's seeded bulk stream with its 8 parallel submitters, and stops it. Configurations
alternate (stock, ours, ours, stock, ...) so that load from elsewhere on the machine falls
on both alike. Prints each round and the median ratios ours/stock of jobs/s and of
slurmctld CPU seconds per 1000 jobs. Exit 2, no figures, when a cluster cannot start or a
round cannot submit its jobs.

The rounds' work dirs are removed only at the end. On an ext4 without a journal (this
machine's root file system) a new inode is not taken from those deleted in the last 30 s or
so (find_inode_bit, recently_deleted), and slurmctld creates two files per job: right after
a round's 20k job files were removed, the next round's creat() calls walked the deleted
inodes (27 % of slurmctld's samples in the kernel, against 11 % in a round with none, perf
record, 100 nodes, 9000 jobs).

  /usr/bin/python3 bench/submit_rate.py [--nodes 20] [--jobs 6000] [--pairs 3] [--port-offset 14000]
"""
import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402
from cluster import ClusterError  # noqa: E402


def one_round(config, args, layout, bulk, dirs):
    """One round; the cluster's work dir is appended to `dirs`, for main to remove at the end."""
    sargs = scale.parse_args(["--nodes", str(args.nodes), "--jobs", str(args.jobs), "--scales", str(args.jobs),
                              "--accounts", str(args.accounts), "--port-offset", str(args.port_offset),
                              "--keep"])
    run = scale.Run(config, sargs, layout, bulk, [])
    try:
        run.start()
        dirs.append(run.cluster.dir)
        pid = run.pid()
        c0, t0 = scale.ctld_cpu(pid), time.monotonic()
        latencies = run.submit(0, args.jobs)
        seconds, cpu = time.monotonic() - t0, scale.ctld_cpu(pid) - c0
    finally:
        run.stop()
    latencies.sort()
    return {"config": config, "jobs_per_s": args.jobs / seconds, "cpu_per_1000": cpu / args.jobs * 1000,
            "p50_ms": 1000 * latencies[len(latencies) // 2], "p99_ms": 1000 * scale.pct(latencies, 99),
            "load": os.getloadavg()[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--accounts", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=6000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port-offset", type=int, default=14000)
    args = ap.parse_args(argv)
    if args.port_offset < 9000:
        ap.error("--port-offset must be >= 9000 (the tests use the ports below)")
    layout = scale.Layout(args.nodes, args.accounts)
    bulk = scale.bulk_stream(layout, args.jobs, args.seed)
    order = [c for i in range(args.pairs) for c in (("stock", "ours") if i % 2 == 0 else ("ours", "stock"))]
    rounds, dirs = [], []
    try:
        for config in order:
            try:
                r = one_round(config, args, layout, bulk, dirs)
            except (scale.HarnessError, ClusterError) as e:
                print(f"submit_rate: {config}: {getattr(e, 'cause', e)}", file=sys.stderr)
                return 2
            rounds.append(r)
            print(f"{config:5}  {r['jobs_per_s']:6.1f} jobs/s  ctld {r['cpu_per_1000']:5.2f} CPU s/1000 jobs  "
                  f"sbatch p50 {r['p50_ms']:4.0f} ms p99 {r['p99_ms']:4.0f} ms  load {r['load']:.1f}", flush=True)
    finally:
        for d in dirs:  # only now: see the docstring
            shutil.rmtree(d, ignore_errors=True)

    def med(config, key):
        return statistics.median(r[key] for r in rounds if r["config"] == config)
    print(f"\n{args.jobs} jobs, {args.nodes} nodes, {args.pairs} pairs: ours/stock jobs/s "
          f"{med('ours', 'jobs_per_s') / med('stock', 'jobs_per_s'):.2f} (goal >= 0.97), ctld CPU per 1000 jobs "
          f"{med('ours', 'cpu_per_1000') / med('stock', 'cpu_per_1000'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
