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

--preemptions N: once both hold --jobs, the two clusters run scale.py's owner stream at the
same time (N owner jobs, --exclusive on owned nodes, each preempting their standby jobs; both
slurmctlds running, nodes Slurm drained resumed every 30 s) until every owner job has ended;
then --after-jobs more jobs alternate in blocks as before (settled first), and their figures
are printed apart: sbatch throughput at --jobs after owner traffic, where bench/scale.py's two
windows, minutes apart, found ours slower. Each block records whether a backfill cycle ran in
it (sdiag just before and after it, outside its time). A cycle (every bf_interval, 30 s; about
3 s of slurmctld's CPU at 20k jobs) lands in whichever block it falls in, and the alternation
makes that a pattern (one pair's stock block, the next pair's ours); --between-backfill starts
each block once a cycle of its cluster ended, so that none holds one (up to 30 s more a block;
90 s at most when no cycle comes, as before the first block, whose jobs start one).
--pair stock,stock (or ours,ours) runs two clusters of one configuration against each other
(an A/A run): what the method itself reads as a difference. On this 2-vCPU virtual machine
two stock clusters read 1.022 before and 1.078 after owner traffic at 20k jobs (README): a
cluster keeps a speed of its own through a run, in all its processes alike.
--pair ours,stock starts ours first, on the lower ports (the ratios are then stock/ours): whether
the order in which the two clusters started moves the figures.
--conf KEY=VALUE (repeatable) adds that slurm.conf line to both clusters, as scale.py's --conf
(a diagnosis: e.g. PlugStackConfig=EMPTY_FILE, so that no sbatch loads ours' SPANK plugin).
--midway-conf KEY=VALUE (repeatable; KEY= leaves the key out) splits the blocks after the owner
traffic in two halves: after the first, that slurm.conf line is set in the second cluster
(ours by default), both clusters are reconfigured (`scontrol reconfigure`; the first's file
unchanged) and settled, and the second half runs; each half is reported apart. A diagnosis:
with JobSubmitPlugins= ours' job_submit/preempt is unloaded (its watcher thread stops, its
job_submit is no longer called) while every job record keeps what it added; so the second
half tells whether the gap after the owner traffic is in the records or in the live plugin.
The reconfigure itself rebuilds parts of every job record in both clusters (read_config.c
_sync_jobs_to_conf, e.g. each multi-partition job's partition list): the control is a run whose line changes nothing (JobSubmitPlugins=preempt).
With --perf each half has its own profile (DIR/<config>-blocks-half1 and -half2).
--layout prints where each slurmctld's job records and job_list nodes sit (bench/heap_layout.py:
pages, page-table lines and malloc arenas a victim search's walk touches) after the first blocks,
after the owner traffic and at the end, each slurmctld stopped: whether the two configurations'
walks of the same number of jobs touch the same memory.
--perf DIR records both slurmctlds (scale.py's perf record and reports) over the blocks after
the owner traffic, or over all blocks without --preemptions: a stopped slurmctld takes no
samples, so each profile is its own blocks (and the sdiag calls around them).

Why blocks and not one fresh cluster per round: on this 2-CPU machine a round's throughput is
bound by the whole machine's CPU (the sbatch processes take over half of it, slurmctld about
a fifth), and rounds minutes apart varied 15 %, more than the difference to measure. Blocks
seconds apart see the same machine, and both clusters hold the same number of jobs at each
block.

Prints each block pair and, per configuration, jobs/s (block jobs over block seconds, all
blocks), slurmctld CPU s per 1000 jobs, the machine's busy CPU s per 1000 jobs (all
processes: sbatch, munged, the daemons) and the main scheduler's cycles per 1000 jobs (sdiag
around each block: the passes run besides the submissions) with what sdiag says slurmctld spent
in wall time per 1000 jobs on those cycles (their mean times their count) and on the submission
RPCs (REQUEST_SUBMIT_BATCH_JOB's total time, lock waits included), the runs that started and
ended during the blocks (sdiag: work besides the submissions, such as requeued jobs starting
again, which the two configurations do at different times), then the ratios of the second
configuration over the first (ours/stock by default): overall and the median of the pairs.
Exit 2, no figures, when a cluster cannot start or a block cannot submit its jobs.

The work dirs are removed only at the end: on an ext4 without a journal (this machine's root
file system) a new inode is not taken from those deleted in the last 30 s or so
(find_inode_bit, recently_deleted), and slurmctld creates two files per job.

  /usr/bin/python3 bench/submit_rate.py [--nodes 20] [--accounts 30] [--jobs 6000] [--block 1000]
      [--preemptions N [--after-jobs 4000] [--after-block 500]] [--between-backfill]
      [--midway-conf KEY=VALUE ...] [--layout] [--pair stock,ours] [--perf DIR] [--conf KEY=VALUE ...]
      [--port-offset 14000]
"""
import argparse
import collections
import contextlib
import math
import os
import shutil
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heap_layout  # noqa: E402
import scale  # noqa: E402
from cluster import PORTS, ClusterError, poll, reconfigure  # noqa: E402

CONFIGS = ("stock", "ours")


def labels_of(pair):
    """The two clusters' names for --pair A,B: A and B, or A-a and A-b when they are alike
    (an A/A run: how far apart two clusters of one configuration come out)."""
    a, b = pair
    return (a, b) if a != b else (f"{a}-a", f"{a}-b")


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


def by_group(before, after, busy, submitters):
    """CPU seconds by group between two process_cpu() snapshots; what the machine was busy with
    beyond the live processes is that of processes that ended in between: the submitters' sbatch
    (`submitters`: this process' waited-for children's CPU) and any other."""
    groups = collections.Counter()
    for key, (comm, cpu) in after.items():
        old = before.get(key)
        groups[group_of(comm)] += cpu - (old[1] if old is not None else 0.0)
    groups["ended: other processes"] = busy - sum(groups.values()) - submitters
    groups["ended: sbatch (the submitters)"] = submitters
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


def start_stopped(runs, tool):
    """Start each cluster of `runs` (by label), stop its slurmctld (SIGSTOP), then settle each
    in turn. False, with the reason printed as `tool: label: ...`, when one cannot start."""
    for label, run in runs.items():
        try:
            run.start()
        except (scale.HarnessError, ClusterError) as e:
            print(f"{tool}: {label}: {getattr(e, 'cause', e)}", file=sys.stderr)
            return False
        os.kill(run.pid(), signal.SIGSTOP)
    for run in runs.values():
        settle(run)
    return True


def stop_and_remove(runs):
    """Stop every cluster of `runs` (their slurmctlds continued first), then remove their work
    dirs: only now, see the docstring."""
    for run in runs.values():
        if run.cluster is not None and run.cluster.procs.get("slurmctld") is not None:
            try:
                os.kill(run.pid(), signal.SIGCONT)
            except OSError:
                pass
        run.stop()
    for run in runs.values():
        if run.cluster is not None:
            shutil.rmtree(run.cluster.dir, ignore_errors=True)


def block(run, first, last, between_backfill=False):
    """Submit bulk jobs [first, last) to `run` with its slurmctld running; the block's figures,
    and whether a backfill cycle ran in it (sdiag just before and after: outside its time).
    between_backfill: the block starts once a backfill cycle of its cluster ended (at most 90
    s): a block shorter than bf_interval (30 s) then holds none."""
    pid = run.pid()
    os.kill(pid, signal.SIGCONT)
    try:
        if between_backfill:
            run.after_backfill()
        sd0 = run.sdiag()
        p0, c0, b0, k0 = process_cpu(), scale.ctld_cpu(pid), scale.machine_busy(), scale.children_cpu()
        t0 = time.monotonic()
        run.submit(first, last)
        seconds, cpu, busy = time.monotonic() - t0, scale.ctld_cpu(pid) - c0, scale.machine_busy() - b0
        groups = by_group(p0, process_cpu(), busy, scale.children_cpu() - k0)
        sd1 = run.sdiag()
        backfill = scale.bf_overlaps([sd0, sd1])[0]
    finally:
        os.kill(pid, signal.SIGSTOP)
    counters = {"main_cycles": "main_cycles", "main_us": "main_total_us", "submit_rpc_us": "submit_rpc_us",
                # work the cluster did in the block besides the submissions (a requeue ends a run)
                "started": "jobs_started", "ended": "jobs_ended"}
    moved = {k: (sd1[key] or 0) - (sd0[key] or 0) for k, key in counters.items()}
    # sdiag's counters restart at midnight: a block across it counts none of them, and says so
    reset = any(v < 0 for v in moved.values())
    return {"jobs": last - first, "seconds": seconds, "ctld_cpu": cpu, "busy_cpu": busy, "groups": groups,
            "backfill": backfill, "counters_reset": reset,
            **{k: 0 if reset else v for k, v in moved.items()}}


def alternate(runs, first, last, size, between_backfill):
    """Blocks of `size` jobs from `first` to `last`, the two clusters (`runs`, by label, the
    reference first) taking turns (A, B, B, A, ...); each pair printed as it ends. Raises what
    a block raises."""
    labels = tuple(runs)
    blocks = {c: [] for c in labels}
    for n, lo in enumerate(range(first, last, size)):
        hi = min(lo + size, last)
        for label in (labels if n % 2 == 0 else labels[::-1]):
            blocks[label].append(block(runs[label], lo, hi, between_backfill))
        s, o = blocks[labels[0]][-1], blocks[labels[1]][-1]
        bf = " and ".join(c for c in labels if blocks[c][-1]["backfill"])
        print(f"jobs {lo:6}-{hi:<6} jobs/s {labels[0]} {s['jobs'] / s['seconds']:6.1f} {labels[1]} "
              f"{o['jobs'] / o['seconds']:6.1f} ({s['seconds'] / o['seconds']:.2f})  "
              f"ctld CPU s/1000 {1000 * s['ctld_cpu'] / s['jobs']:5.2f} {1000 * o['ctld_cpu'] / o['jobs']:5.2f}  "
              f"machine CPU s/1000 {1000 * s['busy_cpu'] / s['jobs']:5.2f} "
              f"{1000 * o['busy_cpu'] / o['jobs']:5.2f}{'  backfill in ' + bf if bf else ''}", flush=True)
    return blocks


# Student's t, two-sided 95 %, by degrees of freedom 1..30 (beyond: 1.96 is within 2 %).
T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
       2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04)


def paired_interval(pairs):
    """The geometric mean of the pairs' ratios and its 95 % confidence interval (t on the log
    ratios: a block pair shares the machine of its seconds, and the pairs vary by the minute);
    None with fewer than two pairs."""
    if len(pairs) < 2:
        return None
    logs = [math.log(r) for r in pairs]
    mean, half = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    t = T95[len(logs) - 2] if len(logs) - 1 <= len(T95) else 1.96
    return math.exp(mean), math.exp(mean - t * half), math.exp(mean + t * half)


def interval_text(pairs):
    iv = paired_interval(pairs)
    return "no interval from one pair" if iv is None else \
        f"geometric mean of the pairs {iv[0]:.3f}, 95 % interval {iv[1]:.3f}-{iv[2]:.3f}"


def report(blocks, what):
    """The figures of one phase's blocks: per cluster, by process, and the ratios B/A."""
    a, b = labels = tuple(blocks)

    def total(config, key):
        return sum(x[key] for x in blocks[config])
    figures = {c: {"jobs_per_s": total(c, "jobs") / total(c, "seconds"),
                   "ctld_per_1000": 1000 * total(c, "ctld_cpu") / total(c, "jobs"),
                   "busy_per_1000": 1000 * total(c, "busy_cpu") / total(c, "jobs")} for c in labels}
    pairs = [s["seconds"] / o["seconds"] for s, o in zip(blocks[a], blocks[b])]
    clean = [s["seconds"] / o["seconds"] for s, o in zip(blocks[a], blocks[b])
             if not s["backfill"] and not o["backfill"]]
    print()
    for c in labels:
        f = figures[c]
        print(f"{c:7}  {f['jobs_per_s']:6.1f} jobs/s  slurmctld {f['ctld_per_1000']:5.2f} CPU s/1000 jobs  "
              f"machine {f['busy_per_1000']:5.2f} CPU s/1000 jobs  "
              f"blocks with a backfill cycle {sum(b['backfill'] for b in blocks[c])} of {len(blocks[c])}  "
              f"main scheduler cycles {1000 * total(c, 'main_cycles') / total(c, 'jobs'):.1f}/1000 jobs")
    print("\nslurmctld's wall time per 1000 jobs (sdiag): the main scheduler's cycles and the submission RPCs "
          "(each RPC's time, its lock waits included)")
    for c in labels:
        cycles = total(c, "main_cycles")
        print(f"  {c:7} main scheduler {total(c, 'main_us') / total(c, 'jobs') / 1000:5.2f} s "
              f"({total(c, 'main_us') / cycles / 1000 if cycles else 0:.0f} ms a cycle)  "
              f"submissions {total(c, 'submit_rpc_us') / total(c, 'jobs') / 1000:5.2f} s")
    print("jobs that started and ended during the blocks (sdiag; runs, not submissions), per 1000 jobs submitted")
    for c in labels:
        print(f"  {c:7} started {1000 * total(c, 'started') / total(c, 'jobs'):6.1f}  "
              f"ended {1000 * total(c, 'ended') / total(c, 'jobs'):6.1f}  "
              f"(blocks across sdiag's midnight restart, counted as none: {total(c, 'counters_reset')})")
    groups = {c: sum((x["groups"] for x in blocks[c]), collections.Counter()) for c in labels}
    print(f"\nmachine CPU s per 1000 jobs, by process  {a:>7} {b:>7}")
    for g in sorted(set(groups[a]) | set(groups[b]), key=lambda g: -groups[a][g]):
        print(f"  {g:38} {1000 * groups[a][g] / total(a, 'jobs'):6.2f}  "
              f"{1000 * groups[b][g] / total(b, 'jobs'):6.2f}")
    s, o = figures[a], figures[b]
    goal = "; goal >= 0.97" if labels == CONFIGS else ""
    print(f"\n{what}: {b}/{a} jobs/s {o['jobs_per_s'] / s['jobs_per_s']:.3f} (median of {len(pairs)} pairs "
          f"{statistics.median(pairs):.3f}, range {min(pairs):.2f}-{max(pairs):.2f}; of the "
          f"{len(clean)} pairs with no backfill cycle in either block "
          f"{statistics.median(clean) if clean else float('nan'):.3f}; {interval_text(pairs)}{goal}), "
          f"slurmctld CPU per job {o['ctld_per_1000'] / s['ctld_per_1000']:.2f}, "
          f"machine CPU per job {o['busy_per_1000'] / s['busy_per_1000']:.2f}", flush=True)


def perf_phase(label, pair):
    """--perf's file name part (DIR/<config>-<phase>...): the cluster's letter in an A/A run."""
    return "blocks" if pair[0] != pair[1] else f"blocks-{label[-1]}"


def midway(runs, lines):
    """--midway-conf: `lines` (KEY=VALUE; an empty value leaves the key out) set in the second
    cluster's slurm.conf, then both clusters reconfigured, their slurmctlds running, and
    settled. A HarnessError if a reconfigure fails."""
    second = list(runs.values())[1]
    second.cluster.set_conf(**{k: (v or None) for k, _, v in (line.partition("=") for line in lines)})
    for label, run in runs.items():
        os.kill(run.pid(), signal.SIGCONT)
        try:
            reconfigure(run.cluster)
        except ClusterError as e:
            raise scale.HarnessError(f"{label}: scontrol reconfigure: {e.cause}") from None
        finally:
            os.kill(run.pid(), signal.SIGSTOP)
    for run in runs.values():
        settle(run)
    os.kill(second.pid(), signal.SIGCONT)
    try:
        config = second.slurm_config()
    finally:
        os.kill(second.pid(), signal.SIGSTOP)
    for key, _, value in (line.partition("=") for line in lines):
        if config.get(key, "(null)") != (value or "(null)"):
            raise scale.HarnessError(f"--midway-conf: {key} is {config.get(key)!r} after the reconfigure, "
                                     f"not {value or '(null)'!r}")


def layouts(runs, when, seen):
    """heap_layout of each (stopped) slurmctld; the lines are printed now and again at the end."""
    for label, run in runs.items():
        try:
            line = heap_layout.text(f"{when}, {label}", heap_layout.probe(run.pid()))
        except (heap_layout.LayoutError, OSError) as e:
            line = f"{when}, {label}: no layout ({e})"
        print(f"layout {line}", file=sys.stderr, flush=True)
        seen.append(line)


def owner_traffic(runs):
    """Both clusters' owner streams at once, their slurmctlds running, until every owner job
    has ended (scale.OWNER_STALL s at most per job); then the preemptions each counted. A
    HarnessError if either stream failed or a job was lost."""
    threads = []
    for run in runs.values():
        os.kill(run.pid(), signal.SIGCONT)
        run.stop_owner.clear()
        threads += [threading.Thread(target=run.owner_thread, daemon=True),
                    threading.Thread(target=run.resume_nodes, daemon=True)]
    for t in threads:
        t.start()
    try:
        for run in runs.values():
            run.owner_done.wait()
        for label, run in runs.items():
            if run.owner_error:
                raise scale.HarnessError(f"{label}: owner traffic failed: {run.owner_error[0]}")
            try:
                poll(lambda: not run.slurm(["squeue", "-h", "-n", "o", "-o", "%i"]).stdout.split(),
                     scale.OWNER_STALL, "every owner job to end", interval=5)
            except ClusterError as e:
                raise scale.HarnessError(f"{label}: {e.cause}") from None
            run.final_counts()
    finally:
        for run in runs.values():
            run.stop_owner.set()
        for t in threads:  # a resume_nodes in a call to sinfo: before its slurmctld stops
            t.join(timeout=150)
        for run in runs.values():
            os.kill(run.pid(), signal.SIGSTOP)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--accounts", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=6000)
    ap.add_argument("--block", type=int, default=1000)
    ap.add_argument("--preemptions", type=int, default=0,
                    help="owner jobs both clusters run at once after --jobs (0: no owner traffic)")
    ap.add_argument("--after-jobs", type=int, default=4000, help="jobs in blocks after the owner traffic")
    ap.add_argument("--after-block", type=int, default=500)
    ap.add_argument("--between-backfill", action="store_true",
                    help="start each block once a backfill cycle of its cluster ended (up to 30 s more a block)")
    ap.add_argument("--perf", metavar="DIR",
                    help="perf record both slurmctlds over the blocks after the owner traffic (over all blocks "
                         "with no --preemptions): DIR/<config>-blocks.perf.data and its report .txt")
    ap.add_argument("--pair", default="stock,ours",
                    help="the two configurations, reference first: stock,ours; stock,stock or ours,ours for an "
                         "A/A run (two clusters of one configuration); ours,stock starts ours first")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a slurm.conf line for both clusters (repeatable; scale.py's --conf: a diagnosis)")
    ap.add_argument("--midway-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="after half the blocks after the owner traffic: this slurm.conf line (KEY= leaves it "
                         "out) in the second cluster, both reconfigured, the halves reported apart (repeatable)")
    ap.add_argument("--layout", action="store_true",
                    help="print where the job records sit in each slurmctld (bench/heap_layout.py)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port-offset", type=int, default=14000)
    args = ap.parse_args(argv)
    if args.port_offset < 9000 or PORTS["slurmd"] + ours_offset(args) + args.nodes > ephemeral_low():
        ap.error(f"--port-offset must be >= 9000 (the tests use the ports below) and leave two clusters' "
                 f"ports below {ephemeral_low()} (Linux's first port for outgoing connections)")
    if args.block < 100 or args.jobs < args.block:
        ap.error("--block must be >= 100 and --jobs >= --block")
    pair = tuple(args.pair.split(","))
    if len(pair) != 2 or not set(pair) <= set(CONFIGS):
        ap.error("--pair takes two of stock and ours: stock,ours, stock,stock, ours,ours or ours,stock")
    if args.preemptions < 0:
        ap.error("--preemptions must be >= 0")
    if args.midway_conf and not args.preemptions:
        ap.error("--midway-conf splits the blocks after the owner traffic: it needs --preemptions")
    if any(not line.partition("=")[0] or not line.partition("=")[1] for line in args.midway_conf):
        ap.error("--midway-conf takes KEY=VALUE (KEY= leaves the key out)")
    if args.perf and shutil.which("perf") is None:
        ap.error("--perf needs perf (apt-get install linux-perf)")
    after = args.after_jobs if args.preemptions else 0
    if args.preemptions and (args.after_block < 100 or args.after_jobs < 2 * args.after_block):
        ap.error("--after-block must be >= 100 and --after-jobs at least two blocks")
    if args.midway_conf and args.after_jobs % (4 * args.after_block):
        ap.error("--midway-conf needs --after-jobs a multiple of four --after-block (two pairs a half)")
    layout = scale.Layout(args.nodes, args.accounts)
    if args.preemptions and len(layout.owner_nodes) < 1:
        ap.error("--preemptions needs owned nodes besides the probe nodes: more --nodes")
    bulk = scale.bulk_stream(layout, args.jobs + after, args.seed)
    owners = scale.owner_stream(layout, args.preemptions)
    runs, seen = {}, []
    for slot, (label, config) in enumerate(zip(labels_of(pair), pair)):
        sargs = scale.parse_args(["--nodes", str(args.nodes), "--jobs", str(args.jobs), "--scales",
                                  str(args.jobs), "--accounts", str(args.accounts), "--quiet-jobs", str(after),
                                  "--preemptions", str(args.preemptions), "--port-offset",
                                  str(ours_offset(args) if slot else args.port_offset), "--keep",
                                  *(["--perf", args.perf] if args.perf else []),
                                  *(f"--conf={line}" for line in args.conf)])
        runs[label] = scale.Run(config, sargs, layout, bulk, owners)
    try:
        if not start_stopped(runs, "submit_rate"):
            return 2
        try:
            with contextlib.ExitStack() as perf:
                if not args.preemptions:
                    for label, run in runs.items():
                        perf.enter_context(run.perf(perf_phase(label, pair)))
                before = alternate(runs, 0, args.jobs, args.block, args.between_backfill)
            if args.layout:
                layouts(runs, f"after {args.jobs} jobs", seen)
            if args.preemptions:
                print(f"owner traffic: {args.preemptions} owner jobs in each cluster at once", file=sys.stderr,
                      flush=True)
                owner_traffic(runs)
                for run in runs.values():
                    settle(run)
                if args.layout:
                    layouts(runs, "after the owner traffic", seen)
                halves = [(args.jobs, args.jobs + after)]
                if args.midway_conf:
                    halves = [(args.jobs, args.jobs + after // 2), (args.jobs + after // 2, args.jobs + after)]
                afterwards = []
                for n, (lo, hi) in enumerate(halves):
                    if n:
                        print(f"midway: {' '.join(args.midway_conf)} in {list(runs)[1]}, both reconfigured",
                              file=sys.stderr, flush=True)
                        midway(runs, args.midway_conf)
                    with contextlib.ExitStack() as perf:
                        for label, run in runs.items():
                            perf.enter_context(run.perf(perf_phase(label, pair) + (f"-half{n + 1}" if len(halves) > 1 else "")))
                        afterwards.append(alternate(runs, lo, hi, args.after_block, args.between_backfill))
                    if args.layout:
                        layouts(runs, f"after {hi} jobs", seen)
        except (scale.HarnessError, ClusterError) as e:
            print(f"submit_rate: {getattr(e, 'cause', e)}", file=sys.stderr)
            return 2
    finally:
        stop_and_remove(runs)
    report(before, f"{args.jobs} jobs a cluster in blocks of {args.block}, {args.nodes} nodes, "
                   f"{args.accounts} accounts")
    if args.preemptions:
        (a, s), (b, o) = ((label, run.result) for label, run in runs.items())
        print(f"\nowner traffic (both clusters at once): {args.preemptions} owner jobs each, preemptions {a} "
              f"{s['preemptions']} {b} {o['preemptions']}; owner submit->RUNNING p50 {a} "
              f"{s['owner_stream']['p50_s']:.1f} s {b} {o['owner_stream']['p50_s']:.1f} s; bulk jobs running "
              f"{a} {s['running_at_end']} {b} {o['running_at_end']}")
        if len(afterwards) == 1:
            report(afterwards[0], f"{after} more jobs after the owner traffic in blocks of {args.after_block}")
        else:
            report(afterwards[0], f"first half: {after // 2} more jobs after the owner traffic in blocks of "
                                  f"{args.after_block}")
            report(afterwards[1], f"second half: {after // 2} more jobs after {' '.join(args.midway_conf)} in "
                                  f"{list(runs)[1]} and both reconfigured")
    if seen:
        print("\nwhere the job records sit (bench/heap_layout.py):")
        for line in seen:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
