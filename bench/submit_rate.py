#!/usr/bin/python3
"""sbatch throughput, stock Slurm vs slurm-preempt, interleaved in blocks (issue 15's goal:
ours >= 97 % of stock). Quicker than bench/scale.py and only this figure. Two clusters of
bench/scale.py's layout run side by side (--nodes `slurmd -N`, its partitions, QOS and
policy; stock = priority/multifactor, preempt/qos, no job_submit; ours = the plugins), both
fed scale.py's seeded bulk stream with its 8 parallel submitters, --block jobs at a time,
stock and ours taking turns (stock, ours, ours, stock, ...) until each holds --jobs. While
one cluster is submitted to, the other's slurmctld is stopped (SIGSTOP), so that its
background work (backfill, the plugins' threads) does not land in the other's block. Before
the first block each cluster runs alone until the machine is quiet (settle).

Why blocks and not one fresh cluster per round: on this 2-CPU machine a round's throughput is
bound by the whole machine's CPU (the sbatch processes take over half of it, slurmctld about
a fifth), and rounds minutes apart varied 15 %, more than the difference to measure. Blocks
seconds apart see the same machine, and both clusters hold the same number of jobs at each
block.

Prints each block pair and, per configuration, jobs/s (block jobs over block seconds, all
blocks), slurmctld CPU s per 1000 jobs and the machine's busy CPU s per 1000 jobs (all
processes: sbatch, munged, the daemons), then the ratios ours/stock: overall and the median
of the pairs. Exit 2, no figures, when a cluster cannot start or a block cannot submit its
jobs.

The work dirs are removed only at the end: on an ext4 without a journal (this machine's root
file system) a new inode is not taken from those deleted in the last 30 s or so
(find_inode_bit, recently_deleted), and slurmctld creates two files per job.

  /usr/bin/python3 bench/submit_rate.py [--nodes 20] [--accounts 30] [--jobs 6000] [--block 1000]
      [--port-offset 14000]
"""
import argparse
import collections
import os
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402
from cluster import PORTS, ClusterError  # noqa: E402

CONFIGS = ("stock", "ours")


def ours_offset(args):
    """Ours' port offset: just above stock's cluster, whose ports span its lowest (PORTS +
    offset) to its last slurmd's (PORTS["slurmd"] + offset + nodes)."""
    return args.port_offset + PORTS["slurmd"] - min(PORTS.values()) + args.nodes + 10


def ephemeral_low():
    """The first port Linux hands out for outgoing connections: a daemon's port at or above it
    may be taken by one of the other cluster's connections."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def process_cpu():
    """CPU seconds (user + system) of each live process, by (pid, start time): (command name,
    seconds). A kernel worker's name changes with its work; its start time does not."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        comm, _, rest = stat.partition("(")[2].rpartition(")")
        out[(int(pid), rest.split()[19])] = (comm, scale.stat_cpu(stat))
    return out


def group_of(comm):
    """The row of the machine's CPU table a process' CPU time falls in."""
    if comm in ("slurmctld", "slurmd", "slurmstepd", "slurmdbd", "munged", "python3"):
        return comm
    if comm in ("mysqld", "mariadbd"):
        return "mysqld"
    if comm.startswith(("kworker", "ksoftirq", "rcu_", "kdamond", "migration", "jbd2")):
        return "kernel threads"
    return "other"


def by_group(before, after, busy):
    """CPU seconds by group between two process_cpu() snapshots; what the machine was busy with
    beyond the live processes is that of processes that ended in between (sbatch, mostly)."""
    groups = collections.Counter()
    for key, (comm, cpu) in after.items():
        old = before.get(key)
        groups[group_of(comm)] += cpu - (old[1] if old is not None else 0.0)
    groups["ended (sbatch)"] = busy - sum(groups.values())
    return groups


def settle(run, quiet=0.1, seconds=3, limit=90):
    """Let `run`'s cluster finish the work of its start (its slurmctld running) until the
    machine has been busy less than `quiet` CPU s a second for `seconds` seconds in a row, at
    most `limit` s; then stop its slurmctld again: the first blocks should not pay for the
    clusters' start (QOS and policy applied, associations sent to slurmctld)."""
    pid = run.pid()
    os.kill(pid, signal.SIGCONT)
    try:
        calm, deadline = 0, time.monotonic() + limit
        while calm < seconds and time.monotonic() < deadline:
            b0 = scale.machine_busy()
            time.sleep(1)
            calm = calm + 1 if scale.machine_busy() - b0 < quiet else 0
    finally:
        os.kill(pid, signal.SIGSTOP)


def block(run, first, last):
    """Submit bulk jobs [first, last) to `run` with its slurmctld running; the block's figures."""
    pid = run.pid()
    os.kill(pid, signal.SIGCONT)
    try:
        p0, c0, b0, t0 = process_cpu(), scale.ctld_cpu(pid), scale.machine_busy(), time.monotonic()
        run.submit(first, last)
        seconds, cpu, busy = time.monotonic() - t0, scale.ctld_cpu(pid) - c0, scale.machine_busy() - b0
        groups = by_group(p0, process_cpu(), busy)
    finally:
        os.kill(pid, signal.SIGSTOP)
    return {"jobs": last - first, "seconds": seconds, "ctld_cpu": cpu, "busy_cpu": busy, "groups": groups}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--accounts", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=6000)
    ap.add_argument("--block", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port-offset", type=int, default=14000)
    args = ap.parse_args(argv)
    if args.port_offset < 9000 or PORTS["slurmd"] + ours_offset(args) + args.nodes > ephemeral_low():
        ap.error(f"--port-offset must be >= 9000 (the tests use the ports below) and leave two clusters' "
                 f"ports below {ephemeral_low()} (Linux's first port for outgoing connections)")
    if args.block < 100 or args.jobs < args.block:
        ap.error("--block must be >= 100 and --jobs >= --block")
    layout = scale.Layout(args.nodes, args.accounts)
    bulk = scale.bulk_stream(layout, args.jobs, args.seed)
    runs = {}
    for config in CONFIGS:
        sargs = scale.parse_args(["--nodes", str(args.nodes), "--jobs", str(args.jobs), "--scales",
                                  str(args.jobs), "--accounts", str(args.accounts), "--port-offset",
                                  str(ours_offset(args) if config == "ours" else args.port_offset), "--keep"])
        runs[config] = scale.Run(config, sargs, layout, bulk, [])
    blocks = {c: [] for c in CONFIGS}
    try:
        for config, run in runs.items():
            try:
                run.start()
            except (scale.HarnessError, ClusterError) as e:
                print(f"submit_rate: {config}: {getattr(e, 'cause', e)}", file=sys.stderr)
                return 2
            os.kill(run.pid(), signal.SIGSTOP)
        for run in runs.values():
            settle(run)
        for n, first in enumerate(range(0, args.jobs, args.block)):
            last = min(first + args.block, args.jobs)
            for config in (CONFIGS if n % 2 == 0 else CONFIGS[::-1]):
                try:
                    blocks[config].append(block(runs[config], first, last))
                except (scale.HarnessError, ClusterError) as e:
                    print(f"submit_rate: {config}: {getattr(e, 'cause', e)}", file=sys.stderr)
                    return 2
            s, o = blocks["stock"][-1], blocks["ours"][-1]
            print(f"jobs {first:6}-{last:<6} jobs/s stock {s['jobs'] / s['seconds']:6.1f} ours "
                  f"{o['jobs'] / o['seconds']:6.1f} ({s['seconds'] / o['seconds']:.2f})  "
                  f"ctld CPU s/1000 {1000 * s['ctld_cpu'] / s['jobs']:5.2f} {1000 * o['ctld_cpu'] / o['jobs']:5.2f}  "
                  f"machine CPU s/1000 {1000 * s['busy_cpu'] / s['jobs']:5.2f} "
                  f"{1000 * o['busy_cpu'] / o['jobs']:5.2f}", flush=True)
    finally:
        for run in runs.values():
            if run.cluster is not None and run.cluster.procs.get("slurmctld") is not None:
                try:
                    os.kill(run.pid(), signal.SIGCONT)
                except OSError:
                    pass
            run.stop()
        for run in runs.values():  # only now: see the docstring
            if run.cluster is not None:
                shutil.rmtree(run.cluster.dir, ignore_errors=True)

    def total(config, key):
        return sum(b[key] for b in blocks[config])
    figures = {c: {"jobs_per_s": total(c, "jobs") / total(c, "seconds"),
                   "ctld_per_1000": 1000 * total(c, "ctld_cpu") / total(c, "jobs"),
                   "busy_per_1000": 1000 * total(c, "busy_cpu") / total(c, "jobs")} for c in CONFIGS}
    pairs = [s["seconds"] / o["seconds"] for s, o in zip(blocks["stock"], blocks["ours"])]
    print()
    for c in CONFIGS:
        f = figures[c]
        print(f"{c:5}  {f['jobs_per_s']:6.1f} jobs/s  slurmctld {f['ctld_per_1000']:5.2f} CPU s/1000 jobs  "
              f"machine {f['busy_per_1000']:5.2f} CPU s/1000 jobs")
    groups = {c: sum((b["groups"] for b in blocks[c]), collections.Counter()) for c in CONFIGS}
    print("\nmachine CPU s per 1000 jobs, by process    stock    ours")
    for g in sorted(set(groups["stock"]) | set(groups["ours"]), key=lambda g: -groups["stock"][g]):
        print(f"  {g:38} {1000 * groups['stock'][g] / total('stock', 'jobs'):6.2f}  "
              f"{1000 * groups['ours'][g] / total('ours', 'jobs'):6.2f}")
    s, o = figures["stock"], figures["ours"]
    print(f"\n{args.jobs} jobs a cluster in blocks of {args.block}, {args.nodes} nodes, {args.accounts} accounts: "
          f"ours/stock jobs/s {o['jobs_per_s'] / s['jobs_per_s']:.3f} (median of {len(pairs)} pairs "
          f"{statistics.median(pairs):.3f}, range {min(pairs):.2f}-{max(pairs):.2f}; goal >= 0.97), "
          f"slurmctld CPU per job {o['ctld_per_1000'] / s['ctld_per_1000']:.2f}, "
          f"machine CPU per job {o['busy_per_1000'] / s['busy_per_1000']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
