#!/usr/bin/python3
"""Scale harness (issue 15): stock Slurm 22.05 vs slurm-preempt on one large cluster of real
daemons, the same seeded job stream, one configuration after the other in one invocation.

Each configuration gets its own cluster (test/cluster/cluster.py's Cluster with --nodes nodes:
munge, MariaDB, slurmdbd, slurmctld, one `slurmd -N` per node, 2 CPUs and 4 GPUs each):
  stock  PriorityType=priority/multifactor, PreemptType=preempt/qos, no JobSubmitPlugins
         (cluster.py's stock mode) plus PriorityFlags=NO_FAIR_TREE; QOS made with sacctmgr.
  ours   the plugins (etc/slurm.conf.fragment); the same QOS from POLICY by preemptctl qos-sync.
Both: the same weights, the fragment's SchedulerParameters, PriorityCalcPeriod=1, MaxJobCount
for the stream, MessageTimeout=60, SlurmdTimeout=600, Slurm's default cred_expire (120 s),
standby grace GRACE s.

The cluster: the first half of the nodes is public (partition public); the other half is
owned by owner groups of about ten nodes (partition ownNN, account ownNN, PriorityJobFactor
1000); partition standby spans every node. Two owned nodes are probe nodes: they lack the
feature "bulk" that every stream job asks for, so only the probes run there.

The job stream (seeded, identical for both): --jobs bulk jobs of --accounts accounts (80 %
standby on public,standby with --requeue, 20 % normal on public; 1 CPU and 2 GPUs; every job
ignores TERM/USR1/USR2 and sleeps, so a preempted job is requeued, never lost); and owner
traffic: one owner job (--exclusive on one owned node, 10 s) every --owner-revisit/#nodes s,
round-robin over the owned nodes, until --preemptions owner jobs were submitted (each takes
the node's standby jobs, up to two: 1974 preemptions in each configuration of the 2026-11-25 run). A
node's next owner job waits, and the stream with it, until its previous one runs: no owner
queues a second job on a node before the first started, and a backlog past the fragment's
partition_job_depth=20 would hide owner jobs from the main scheduler (owner_held_back counts
the waits). Every 30 s a node Slurm set DOWN or DRAIN is resumed, as a site's admin would, and
recorded with Slurm's reason (nodes_resumed). The count of bulk jobs rises through --scales; at each scale
point (once every job is in slurmctld) the harness measures:
  sbatch throughput      jobs/s of the step's submissions, 8 parallel submitters (and the
                         latency of one sbatch, p50/p99)
  slurmctld CPU          utime+stime (/proc/PID/stat) during the step's submissions, per 1000
                         jobs; and over --quiet-seconds of steady state (owner traffic only)
  queries                squeue, sprio, scontrol show job <random job>: latency p50/p99 over
                         --query-samples each (100), interleaved, spread over --query-span
                         seconds (60), and the three slowest samples with their start times
                         as slurmctld.log writes them (JSON only)
  scheduling             sdiag main and backfill cycle mean/max (reset at the step's start),
                         and the jobs sdiag counts started and ended in the step (per minute):
                         the work besides the submissions that the step's figures include
  lock holds (ours)      StateSaveLocation/slurm_preempt_lock_stats: the per-site histograms
                         between two writes of the file around the steady phase: count, p99
                         and max bound of "watcher visit" (write) and "watcher scan" (read) per
                         tick, "watcher visit at a grace's end" (write: the hold of its own of
                         a visit that decides a kill at a grace's end), "watcher kill at a
                         grace's end" (write: the hold right after it, the kill's note and
                         Slurm's kill and requeue, as stock Slurm does them in a hold of their
                         own), "watcher visit, Slurm's kill and requeue" (Slurm's own calls in
                         that hold), and "watcher lock wait" (its waits for the locks);
                         at the end the longest hold of every site since the start
  owner traffic          owner submit -> RUNNING of the stream's owner jobs of the step
At the largest scale point also: two probe trials (bench/e2e_owner_reclaim.py's, on the probe
nodes, victim with the highest priority of its partition by --nice): owner submit -> RUNNING
and owner end -> requeued job RUNNING (capped at --cap s), the owner's wait split from
slurmdbd's times (victim's run ended, owner allocated, script ran) and the victim's end from
slurmctld.log (ours: the grace's start and the watcher's lines at its start and at its kill;
both: Slurm's "preempted ... has been requeued"); and the priority recalculation pass
by bench/e2e_priority_recalc.py's method (CPU time of the pass thread per pass, between two
writes of the plugin's state file), --passes passes. At the end, once every owner job is done:
preemptions = the sum of the bulk jobs' restart counts; where the owner jobs' waits went
(owner_path, from slurmctld.log's info lines, alike in both: submission -> the last victim on
its node requeued at its grace's end -> their epilogs complete, the node free -> the owner
allocated -> its script ran; p50/p90/max); then --idle-seconds with no owner
traffic at all (every bulk job still in slurmctld, no job in a grace): slurmctld's CPU % and
(ours) the watcher's ticks, all ("watcher tick") and those with no job in a grace ("watcher
tick, no grace"), and its holds;
then the queries again, --query-samples each, with no owner traffic, and sdiag over them
(queries_sdiag, JSON only). A backfill cycle holds the job write lock for up to
bf_yield_interval, 2 s, and a p99 of 100 samples is their second slowest, so the harness asks
sdiag between two rounds whether a cycle ran in the round, and reports how many rounds had one
and p50/p99 over the rounds that had none (the queries' own cost): under owner traffic the
two configurations do not do the same work (ours' owner jobs start and end sooner, and Slurm
runs a scheduling pass, holding the job write lock, for every job that ends), so the query
latencies of the scale points mix that work with the plugins' cost. Last, --quiet-jobs more
bulk jobs (the seeded stream's next ones), still with no owner traffic, started right after a
backfill cycle ends (sdiag polled, at most 90 s), so that their window holds none: sbatch throughput,
latency and slurmctld's CPU per 1000 jobs at the largest scale where both do the same work
(with the submitters' CPU per 1000 jobs and the machine's busy % and steal %: they share its
cores, and the machine may be a virtual one),
and, before them, how many pending jobs tie at the queue's highest priority, of how many
accounts; after them, the reason each of those jobs pends with (Priority: Slurm's job_allocate
found a pending job of higher priority in a walk of the job list and did not try to start it;
any other: the walk found none, all the way to the list's end, and Slurm tried to place the
job at once, which failed).

Nothing is printed from a configuration before the whole invocation succeeded: a run that
cannot start the daemons, reach a job count, or finish its owner traffic says so in one line,
which names the configuration's work dir (kept: its daemons' logs), and exits 2, whatever an
earlier configuration measured; bad arguments exit 2 (argparse). On success: a table
ours/stock per scale point, --json FILE (every figure), --plot FILE.png|svg (cost vs jobs).

    /usr/bin/python3 bench/scale.py [--nodes 200] [--jobs 20000] [--accounts 200]
        [--scales 1000,10000,20000] [--quiet-jobs 2000] [--json FILE] [--plot FILE.png]
        [--port-offset 12000]
        [--scheduler-parameters VALUE] [--conf KEY=VALUE ...] [--perf DIR]
        [--lost-work-charge C] [--first ours]

--scheduler-parameters VALUE gives both configurations SchedulerParameters=VALUE instead of the
fragment's (an experiment with Slurm's scheduler settings; the JSON's slurm_config shows it).
--conf KEY=VALUE (repeatable) adds that slurm.conf line to both configurations, in place of the
base's or the fragment's KEY (for a diagnosis: log levels, DebugFlags; the JSON's meta lists them).
--lost-work-charge C sets ours' priority.lost_work_charge (the policy's default 0 refunds a
preempted run's usage; stock charges it, as C=1 does).
--first ours runs ours before stock (stock runs first by default): the second runs on the
machine the first leaves (its work dirs are removed only at the end).
--perf DIR profiles slurmctld (perf record -F 499 -g, every thread) during the largest point's
submissions and the --quiet-jobs ones: DIR/<config>-<phase>.perf.data and its report .txt.
"""

import argparse
import calendar
import collections
import contextlib
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import (HOSTNAME, Cluster, ClusterError, apply_policy, conf_keys, expand_nodes,  # noqa: E402
                     parse_lock_stats, poll, reap_orphans, wait_qos_walltimes)
from e2e_owner_reclaim import OWNER, VICTIM, stamps, wait_stamp  # noqa: E402

FRAGMENT = Path(__file__).resolve().parents[1] / "etc" / "slurm.conf.fragment"
GRACE = 5               # s, standby's GraceTime in both
CRED_EXPIRE = 120       # s, Slurm's default, as bench/e2e_owner_reclaim.py
STANDBY_WALL_MIN = 305  # marker: once slurmctld shows it, the QOS change has reached it
OWNER_RUNTIME = 10      # s an owner job of the stream runs
BULK_MIN_MINUTES = 150  # shortest time limit of a bulk job (a configuration's run takes 20-45 min)
OWNER_STALL = 900       # s an owner job may stay pending before the run fails
SUBMITTERS = 8
GROUP_SIZE = 10         # owned nodes per owner group
PROBE_NODES = 2
BULK_SCRIPT = "trap '' TERM USR1 USR2; exec sleep 100000"
OWNER_SCRIPT = f'echo "start $(date +%s.%N)"; sleep {OWNER_RUNTIME}'
# Recalculation pass: PriorityType -> (thread name, state file written at each pass end).
RECALC = {"stock": ("decay", "priority_last_decay_ran"),
          "ours": ("sp_fairshare", "priority_fairshare_state")}
SITES_WRITE = ["watcher visit", "watcher visit at a grace's end", "watcher kill at a grace's end",
               "priority recalculation",
               "priority usage, assoc_mgr write", "job_submit, write locks", "job_modify", "priority_p_set"]


def ctld_log_size(cluster):
    try:
        return (cluster.dir / "log" / "slurmctld.log").stat().st_size
    except OSError:
        return 0


LOG_STAMP = r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\] "


def log_epoch(stamp):
    """Epoch seconds of a slurmctld log stamp (local time, LogTimeFormat iso8601_ms)."""
    whole, _, frac = stamp.partition(".")
    return time.mktime(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + (float("0." + frac) if frac else 0.0)


def grace_split(cluster, victim, t0, log_from):
    """Where a probe victim's end went, from slurmctld.log past log_from, in s after the
    owner's submission (t0): ours' watcher line at the grace's start (grace_start_s: the
    preemption time it names, whole seconds; grace_seen_s: when the watcher wrote it) and at
    its end (kill_s: "grace of JobId=V ended ... killing"); both configurations: Slurm's
    "preempted JobId=V has been requeued" (requeue_s). A line not found is left out."""
    try:
        with open(cluster.dir / "log" / "slurmctld.log", "rb") as f:
            f.seek(log_from)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return {}
    out = {}
    patterns = {
        "grace_seen_s": LOG_STAMP + rf"\S+: JobId={victim} preempted at (\S+)Z .*; -?\d+ s left$",
        "kill_s": LOG_STAMP + rf"\S+: grace of JobId={victim} ended ",
        "requeue_s": LOG_STAMP + rf"preempted JobId={victim} has been requeued",
    }
    for key, pattern in patterns.items():
        m = re.search(pattern, text, re.M)
        if m is None:
            continue
        out[key] = round(log_epoch(m.group(1)) - t0, 2)
        if key == "grace_seen_s":
            start = calendar.timegm(time.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S"))
            out["grace_start_s"] = round(start - t0, 2)
    return out


PATH_LINES = {  # slurmctld.log lines at info level, in both configurations
    "alloc": re.compile(LOG_STAMP + r"(?:sched: Allocate JobId=(\d+) NodeList=(\S+) "
                        r"|sched/backfill: _start_job: Started JobId=(\d+) in \S+ on (\S+)$)"),
    "requeue": re.compile(LOG_STAMP + r"preempted JobId=(\d+) has been requeued"),  # at the grace's end
    "epilog": re.compile(LOG_STAMP + r"Requeuing JobId=(\d+)$"),  # a requeued job's epilog complete
}
PATH_STEPS = ("submit_to_requeue_s", "requeue_to_epilog_s", "epilog_to_alloc_s", "alloc_to_script_s")


def owner_path(log_text, owners):
    """Where each owner job's wait went, from slurmctld.log (ms stamps): its submission -> the
    last of its node's victims requeued at the grace's end (Slurm's choice, the grace, the
    kill) -> the last of their epilogs complete ("Requeuing JobId=V": slurmd and slurmstepd
    ending the job, Slurm's own path) -> the owner's allocation (a scheduling pass) -> its
    script ran. owners: dicts with node, id, submitted (epoch s) and started (epoch s). An
    owner job whose node had no victim requeued in its wait, or a victim with no epilog
    complete logged, is counted in no_victim."""
    node_of, alloc, requeues, epilogs = {}, {}, collections.defaultdict(list), collections.defaultdict(list)
    for line in log_text.splitlines():
        if m := PATH_LINES["alloc"].match(line):
            job, nodes = (m.group(2), m.group(3)) if m.group(2) else (m.group(4), m.group(5))
            node_of[job] = expand_nodes(nodes)
            alloc.setdefault(job, []).append(log_epoch(m.group(1)))
        elif m := PATH_LINES["requeue"].match(line):
            for node in node_of.get(m.group(2), []):
                requeues[node].append((log_epoch(m.group(1)), m.group(2)))
        elif m := PATH_LINES["epilog"].match(line):
            epilogs[m.group(2)].append(log_epoch(m.group(1)))
    steps, no_victim = {k: [] for k in PATH_STEPS}, 0
    for o in owners:
        ta = next((t for t in alloc.get(str(o["id"]), []) if t >= o["submitted"] - 1), None)
        if ta is None:
            continue
        victims = [(t, v) for t, v in requeues[o["node"]] if o["submitted"] - 1 <= t <= ta]
        ends = [next((e for e in epilogs[v] if e >= t), None) for t, v in victims]
        if not victims or None in ends:
            no_victim += 1
            continue
        kill, epi = max(t for t, _ in victims), max(ends)
        for key, value in zip(PATH_STEPS, (kill - o["submitted"], epi - kill, ta - epi, o["started"] - ta)):
            steps[key].append(value)
    out = {"n": len(steps[PATH_STEPS[0]]), "no_victim": no_victim}
    for key, values in steps.items():
        out[key] = {"p50": pct(values, 50), "p90": pct(values, 90), "max": max(values) if values else None}
    return out


class HarnessError(RuntimeError):
    """One line: what failed."""


# --- the cluster ----------------------------------------------------------------------------

def hostlist(names):
    """["n3", "n4", "n5", "n9"] -> "n[3-5,9]"."""
    nums = sorted(int(n[1:]) for n in names)
    parts, start = [], None
    for i, v in enumerate(nums):
        if start is None:
            start = v
        if i + 1 == len(nums) or nums[i + 1] != v + 1:
            parts.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return f"n[{','.join(parts)}]"


class Layout:
    """Which node is public, owned by which group, or a probe node; the accounts."""

    def __init__(self, nodes, accounts):
        names = [f"n{i}" for i in range(1, nodes + 1)]
        half = nodes // 2
        self.nodes = names
        self.public = names[:half]
        owned = names[half:]
        groups = max(1, round(len(owned) / GROUP_SIZE))
        self.groups = {}  # account -> nodes
        for g in range(groups):
            self.groups[f"own{g + 1:02d}"] = owned[g * len(owned) // groups:(g + 1) * len(owned) // groups]
        self.group_of = {n: g for g, ns in self.groups.items() for n in ns}
        self.probes = owned[-PROBE_NODES:]
        self.owner_nodes = [n for n in owned if n not in self.probes]
        self.bulk_accounts = [f"acct{i:03d}" for i in range(1, accounts - groups + 1)]
        self.accounts = list(self.groups) + self.bulk_accounts


class ScaleCluster(Cluster):
    announces_kept = False  # main() names a failed configuration's kept work dir in its error line

    def __init__(self, layout, **kw):
        super().__init__(nodes=len(layout.nodes), **kw)
        self.layout = layout

    def node_conf_lines(self):
        lines, base = [], self.slurmd_ports[0]
        groups = [(n, n not in self.layout.probes) for n in self.layout.nodes]
        run = []
        for i, (name, bulk) in enumerate(groups):  # contiguous runs of nodes alike
            run.append(name)
            if i + 1 == len(groups) or groups[i + 1][1] != bulk:
                first, last = int(run[0][1:]), int(run[-1][1:])
                lines.append(f"NodeName={hostlist(run)} NodeHostname={HOSTNAME} NodeAddr=127.0.0.1 "
                             f"Port=[{base + first - 1}-{base + last - 1}] CPUs=2 RealMemory=1000 "
                             f"Gres=gpu:4 {'Features=bulk ' if bulk else ''}State=UNKNOWN")
                run = []
        return lines

    def partition_conf_lines(self):
        lay = self.layout
        lines = [f"PartitionName=public Nodes={hostlist(lay.public)} Default=YES PriorityTier=2 "
                 "MaxTime=INFINITE State=UP"]
        for group, nodes in lay.groups.items():
            lines.append(f"PartitionName={group} Nodes={hostlist(nodes)} AllowAccounts={group} "
                         "PriorityTier=2 PriorityJobFactor=1000 MaxTime=INFINITE State=UP")
        lines.append(f"PartitionName=standby Nodes={hostlist(lay.nodes)} PriorityTier=1 AllowQos=standby "
                     "MaxTime=INFINITE State=UP")
        return lines

    def setup_accounting(self):
        self.sacctmgr("add", "cluster", "preempt")
        accounts = self.layout.accounts
        for i in range(0, len(accounts), 50):
            self.sacctmgr("add", "account", ",".join(accounts[i:i + 50]))
            self.sacctmgr("add", "user", "root", f"account={','.join(accounts[i:i + 50])}")
        self.sacctmgr("add", "qos", "standby", "PreemptMode=requeue")
        self.sacctmgr("add", "qos", "owner", "Preempt=standby")
        self.sacctmgr("modify", "user", "where", "name=root", "set", "qos+=standby,owner")


def policy_text(layout, lost_work_charge=None):
    """Ours' policy: the QOS and owners of the layout; lost_work_charge (--lost-work-charge)
    only when given, else the policy's default (0: a run killed at its grace end is refunded)."""
    charge = "" if lost_work_charge is None else f"priority:\n  lost_work_charge: {lost_work_charge:g}\n"
    owners = "".join(f"  {g}:\n    partitions: [{g}]\n    nodes: {hostlist(ns)}\n"
                     for g, ns in layout.groups.items())
    return f"""\
version: 1
qos:
  standby:
    preemptible: true
    grace: {GRACE}s
    requeue: user
    limits:
      max_walltime: {STANDBY_WALL_MIN}m
  owner:
    preempts: [standby]
partitions:
  public: [public]
  standby: standby
owners:
{owners}{charge}"""


def fragment_line(key):
    """etc/slurm.conf.fragment's `key=value` line: the scheduler settings a site takes with the
    plugins are given to stock too, so that the ratios compare the plugins, not the settings."""
    for line in FRAGMENT.read_text().splitlines():
        if line.startswith(key + "="):
            return line
    raise HarnessError(f"etc/slurm.conf.fragment has no {key}= line")


def extra_conf(config, max_jobs, scheduler_parameters=None, conf=()):
    # jobacct_gather/none: jobacct_gather/linux makes every slurmstepd scan all of /proc every
    # 30 s for its job's processes. On a real cluster that is one node's processes; here the
    # ~800 slurmstepds of 400 running jobs share one machine of ~3000 processes, and the
    # scans took most of its 2 cores (load average 60-90, 70-88 % system time, measured in a
    # first 200-node run) away from the slurmctld under measurement. Alike in both.
    lines = [f"MaxJobCount={max_jobs}", "MessageTimeout=60", "SlurmdTimeout=600",
             "JobAcctGatherType=jobacct_gather/none",
             f"AuthInfo=cred_expire={CRED_EXPIRE}", "PriorityCalcPeriod=1",
             "PriorityWeightAge=1000", "PriorityWeightFairshare=10000", "PriorityWeightQOS=1000",
             "PriorityWeightPartition=20000"]
    if config == "stock":  # the fragment sets them for ours: alike in both
        lines.append("PriorityFlags=NO_FAIR_TREE")
        if scheduler_parameters is None:
            lines.append(fragment_line("SchedulerParameters"))
    if scheduler_parameters is not None:  # --scheduler-parameters: in both, for ours instead of the fragment's
        lines.append(f"SchedulerParameters={scheduler_parameters}")
    lines += [line for line in conf if line.partition("=")[2]]  # --conf: in both; KEY= leaves KEY out
    return "\n".join(lines) + "\n"


# --- the job stream ---------------------------------------------------------------------------

def bulk_stream(layout, n, seed):
    """The argv (after sbatch --parsable) of each bulk job, from the seed alone."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        acct = rng.choice(layout.bulk_accounts)
        # Within the standby QOS' MaxWall, and long enough that no job reaches its time limit
        # while a configuration runs (a stock run of 41 min lost 8 jobs of 30-32 min, never
        # preempted, to TIMEOUT: the harness counts them lost and reports nothing).
        minutes = rng.randint(BULK_MIN_MINUTES, STANDBY_WALL_MIN)
        if rng.random() < 0.8:
            kind = ["-p", "public,standby", "--qos=standby", "--requeue"]
        else:
            kind = ["-p", "public", "--qos=normal"]
        out.append(["-o", "/dev/null", "-J", "b", "-A", acct, "-t", str(minutes), "--gres=gpu:2",
                    "--constraint=bulk", *kind, "--wrap", BULK_SCRIPT])
    return out


def owner_stream(layout, n):
    """(node, argv) of each owner job: round-robin over the owned nodes but the probes."""
    out = []
    for i in range(n):
        node = layout.owner_nodes[i % len(layout.owner_nodes)]
        group = layout.group_of[node]
        out.append((node, ["-J", "o", "-A", group, "-p", group, "--qos=owner", "-w", node, "--exclusive",
                           "-t", "5", "--wrap", OWNER_SCRIPT]))
    return out


# --- measuring ----------------------------------------------------------------------------------

def stat_cpu(stat):
    """CPU seconds (utime + stime of all threads) in the text of a /proc/PID/stat."""
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ctld_cpu(pid):
    """slurmctld's CPU seconds (utime + stime of all its threads)."""
    return stat_cpu(Path(f"/proc/{pid}/stat").read_text())


def children_cpu():
    """CPU seconds of this process' waited-for children (the sbatch, squeue, ... it ran)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def proc_stat_cpu():
    """/proc/stat's all-CPU line in seconds: user nice system idle iowait irq softirq steal ..."""
    tick = os.sysconf("SC_CLK_TCK")
    return [int(x) / tick for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]


def machine_busy():
    """CPU seconds the machine spent not idle (all CPUs)."""
    v = proc_stat_cpu()
    return sum(v) - v[3] - v[4]


def machine_steal():
    """CPU seconds the hypervisor gave to others while this guest had work (steal time)."""
    return proc_stat_cpu()[7]


def log_time(epoch):
    """A wall-clock time as slurmctld.log writes it (local time, ms)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch)) + f".{int(epoch % 1 * 1000):03d}"


def pct(values, p):
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)] if s else None


def parse_sdiag(text):
    main, _, bf = text.partition("Backfilling stats")

    def grab(part, key):
        m = re.search(rf"^\s*{key}:\s+(\d+)", part, re.M)
        return int(m.group(1)) if m else None
    def rpc_total_us(name):
        m = re.search(rf"^\s*{name}\s+\(\s*\d+\)\s+count:\d+\s+ave_time:\d+\s+total_time:(\d+)", text, re.M)
        return int(m.group(1)) if m else 0
    return {"main_mean_us": grab(main, "Mean cycle"), "main_max_us": grab(main, "Max cycle"),
            "main_cycles": grab(main, "Total cycles"),
            # The main scheduler's time since the reset (its cycles' wall time, sdiag's mean
            # times its count) and the submissions' (the RPC's total time, its lock waits
            # included): how a block's slurmctld time splits between them.
            "main_total_us": (grab(main, "Mean cycle") or 0) * (grab(main, "Total cycles") or 0),
            "submit_rpc_us": rpc_total_us("REQUEST_SUBMIT_BATCH_JOB"),
            # Since the reset: the work slurmctld did besides the submissions (each requeue
            # ends a run: Slurm counts it with the jobs that ended).
            "jobs_started": grab(main, "Jobs started"),
            "jobs_ended": sum(grab(main, k) or 0 for k in ("Jobs completed", "Jobs canceled", "Jobs failed")),
            "bf_mean_us": grab(bf, "Mean cycle"), "bf_max_us": grab(bf, "Max cycle"),
            "bf_cycles": grab(bf, "Total cycles"),
            # A backfill cycle is running (or waiting for its locks: Slurm sets the flag first),
            # and when the last one ended (epoch s).
            "bf_active": "WARNING: data obtained" in bf.partition("\n")[0],
            "bf_last_epoch": int(m.group(1)) if (m := re.search(r"Last cycle when:.*\((\d+)\)", bf)) else None}


def bf_overlaps(states):
    """For each round between two successive sdiag states: whether a backfill cycle ran during
    it (running at either end, or one ended in between)."""
    def moved(a, b):
        return (a["bf_cycles"], a["bf_last_epoch"]) != (b["bf_cycles"], b["bf_last_epoch"])
    return [a["bf_active"] or b["bf_active"] or moved(a, b) for a, b in zip(states, states[1:])]


# The sites a scale point reports (ours): the watcher's, the recalculation's, and the entry points.
POINT_SITES = ("watcher visit", "watcher visit at a grace's end", "watcher kill at a grace's end",
               "watcher visit, Slurm's kill and requeue",
               "watcher scan", "watcher tick",
               "watcher tick, no grace", "priority recalculation", "priority usage pass",
               "priority usage, assoc_mgr read", "priority usage, assoc_mgr write",
               "job_submit", "priority_p_set", "watcher lock wait")


def hist_stats(before, after):
    """count, p50/p99 and max as bucket upper bounds (us: a histogram's keys, LockStats'
    bucket_upper_us, four buckets to each power of two) of the holds between two snapshots of
    one histogram."""
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    total = sum(delta.values())
    out = {"count": total, "p50_us_le": None, "p99_us_le": None, "max_us_le": None}
    seen = 0
    for k in sorted(delta):
        if delta[k] <= 0:
            continue
        upper = k
        seen += delta[k]
        if out["p50_us_le"] is None and seen * 2 >= total:
            out["p50_us_le"] = upper
        if out["p99_us_le"] is None and seen * 100 >= total * 99:
            out["p99_us_le"] = upper
        out["max_us_le"] = upper
    return out


def window_stats(before, after, site):
    """Holds of `site` between two lock-stats snapshots: wall time as hist_stats, "cpu" the same
    for the thread's CPU time, and the CPU us per unit of work (per job visited or recalculated)."""
    empty = {"hist": {}, "cpu_hist": {}, "units": 0, "cpu_sum_us": 0}
    a, b = after.get(site, empty), before.get(site, empty)
    out = hist_stats(b["hist"], a["hist"])
    out["cpu"] = hist_stats(b["cpu_hist"], a["cpu_hist"])
    units = a["units"] - b["units"]
    out["units"] = units
    out["cpu_us_per_unit"] = (a["cpu_sum_us"] - b["cpu_sum_us"]) / units if units > 0 else None
    return out


class Run:
    """One configuration's cluster and everything measured on it."""

    def __init__(self, config, args, layout, bulk, owners):
        self.config, self.args, self.layout = config, args, layout
        self.bulk, self.owners = bulk, owners
        self.cluster = None
        self.bulk_ids = []
        self.owner_jobs = []   # dicts: node, id, submitted (epoch)
        self.owner_done = threading.Event()
        self.stop_owner = threading.Event()
        self.owner_error = []
        self.owner_held_back = []  # s each held-back owner job waited for its node's previous one
        self.nodes_resumed = []    # nodes Slurm set DOWN or DRAIN, resumed (resume_nodes)
        self.recalc = None
        self.result = {"config": config, "points": []}

    # -- helpers
    def slurm(self, argv, timeout=300, check=True):
        return self.cluster.run(argv, check=check, timeout=timeout)

    def pid(self):
        return self.cluster.procs["slurmctld"].pid

    def slurm_config(self):
        """`scontrol show config` as a dict: key -> value as shown ("(null)" for an unset one)."""
        text = self.slurm(["scontrol", "show", "config"]).stdout
        return {k.strip(): v.strip() for k, v in (line.split("=", 1) for line in text.splitlines() if "=" in line)}

    def lock_stats_file(self):
        return self.cluster.dir / "state" / "slurm_preempt_lock_stats"

    def next_lock_stats(self, timeout=30):
        """The lock statistics as written next after now (ours; {} for stock)."""
        if self.config != "ours":
            return {}
        path = self.lock_stats_file()

        def mtime():
            try:
                return path.stat().st_mtime_ns
            except OSError:
                return 0
        start = mtime()
        poll(lambda: mtime() != start and mtime() >= time.time_ns() - 5e9, timeout,
             "the watcher to write slurm_preempt_lock_stats", interval=0.2)
        return parse_lock_stats(path.read_text())

    def bulk_count(self):
        out = self.slurm(["squeue", "-h", "-n", "b", "-o", "%i"]).stdout
        return len(out.split())

    def wait_bulk_count(self, target):
        """Until slurmctld holds `target` bulk jobs (2 min at most): else a HarnessError."""
        try:
            poll(lambda: self.bulk_count() == target, 120, f"{target} bulk jobs in slurmctld", interval=2)
        except ClusterError:
            raise HarnessError(f"{self.config}: cannot reach {target} jobs: slurmctld holds "
                               f"{self.bulk_count()} of the {target} submitted") from None

    # -- start
    def start(self):
        a = self.args
        max_jobs = a.jobs + a.quiet_jobs + len(self.owners) + 2 * a.probe_trials + 1000
        ours = self.config == "ours"
        policy = policy_text(self.layout, a.lost_work_charge) if ours else None
        self.cluster = ScaleCluster(self.layout, with_plugins=ours, policy=policy,
                                    extra_conf=extra_conf(self.config, max_jobs, a.scheduler_parameters, a.conf),
                                    port_offset=a.port_offset, keep=True)  # main removes it
        if ours and a.scheduler_parameters is not None:
            # The fragment's SchedulerParameters left out, so that extra_conf's is the only one.
            self.cluster.conf_overrides["SchedulerParameters"] = None
        if ours:  # a --conf key the fragment sets too: the --conf line alone
            fragment = conf_keys(FRAGMENT.read_text())
            self.cluster.conf_overrides.update({k: None for k in conf_keys("\n".join(a.conf)) & fragment})
        try:
            self.cluster.start()
            if ours:
                apply_policy(self.cluster, policy, {"standby": STANDBY_WALL_MIN})
            else:
                self.cluster.sacctmgr("modify", "qos", "where", "name=standby", "set", f"GraceTime={GRACE}",
                                      "PreemptMode=requeue", f"MaxWall={STANDBY_WALL_MIN}")
                self.cluster.sacctmgr("modify", "qos", "where", "name=owner", "set", "Preempt=standby")
                wait_qos_walltimes(self.cluster, {"standby": STANDBY_WALL_MIN})
        except ClusterError as e:
            raise HarnessError(f"{self.config}: cannot start the daemons: {e.cause}") from None
        qos = self.slurm(["sacctmgr", "-nP", "show", "qos", "format=Name,Preempt,PreemptMode,GraceTime,MaxWall"])
        keep = ("PriorityType", "PreemptType", "PreemptMode", "JobSubmitPlugins", "SchedulerParameters",
                "PriorityFlags", "AuthInfo", "MaxJobCount")
        self.result["slurm_config"] = {k: v for k, v in self.slurm_config().items() if k in keep}
        self.result["qos"] = qos.stdout.split()
        self.result["startup_s"] = round(self.cluster.startup_seconds, 1)

    # -- owner traffic
    def owner_thread(self):
        """The owner stream. A node's next owner job waits until its previous one runs (the
        stream pauses meanwhile): no owner queues a second exclusive job on a node before the
        first started, and a backlog of owner jobs past the fragment's partition_job_depth (20)
        would hide them from the main scheduler, in either configuration. The waits are
        counted (owner_held_back)."""
        interval = max(0.5, self.args.owner_revisit / len(self.layout.owner_nodes))
        last_on = {}  # node -> its last owner job
        try:
            for node, argv in self.owners:
                if self.stop_owner.wait(interval):
                    return
                prev = last_on.get(node)
                if prev is not None and not stamps(self.cluster, prev, "start"):
                    w0 = time.time()
                    while not stamps(self.cluster, prev, "start"):
                        if self.stop_owner.wait(1):
                            return
                        if time.time() - w0 > OWNER_STALL:
                            self.owner_error.append(f"owner job {prev} on {node} still pending after "
                                                    f"{OWNER_STALL} s")
                            return
                    self.owner_held_back.append(time.time() - w0)
                t0 = time.time()
                r = self.slurm(["sbatch", "--parsable", f"--output={self.cluster.jobs}/%j.out", *argv],
                               check=False, timeout=120)
                if r.returncode != 0:
                    self.owner_error.append(f"owner job on {node}: {r.stderr.strip()}")
                    return
                self.owner_jobs.append({"node": node, "id": int(r.stdout.strip().split(";")[0]),
                                        "submitted": t0})
                last_on[node] = self.owner_jobs[-1]["id"]
        except ClusterError as e:
            self.owner_error.append(e.cause)
        finally:
            self.owner_done.set()

    def owner_latencies(self, t_from, t_to):
        """submit -> RUNNING (s) of the owner jobs submitted in [t_from, t_to) that started."""
        out = []
        for j in list(self.owner_jobs):
            if t_from <= j["submitted"] < t_to:
                s = stamps(self.cluster, j["id"], "start")
                if s:
                    out.append(s[0] - j["submitted"])
        return out

    # -- submission
    def submit(self, first, last):
        """Submit bulk jobs [first, last) with SUBMITTERS parallel sbatch; latencies (s)."""
        lock = threading.Lock()
        todo = iter(range(first, last))
        latencies, errors = [], []
        ids = {}

        def worker():
            while True:
                with lock:
                    if errors:
                        return
                    i = next(todo, None)
                if i is None:
                    return
                for attempt in range(3):
                    t0 = time.monotonic()
                    r = self.slurm(["sbatch", "--parsable", *self.bulk[i]], check=False, timeout=300)
                    if r.returncode == 0:
                        with lock:
                            latencies.append(time.monotonic() - t0)
                            ids[i] = int(r.stdout.strip().split(";")[0])
                        break
                    time.sleep(1 + attempt)
                else:
                    with lock:
                        errors.append((r.stderr.strip().splitlines() or [""])[-1])
        threads = [threading.Thread(target=worker) for _ in range(SUBMITTERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise HarnessError(f"{self.config}: cannot reach {last} jobs: sbatch failed 3 times: {errors[0]}")
        self.bulk_ids += [ids[i] for i in range(first, last)]
        return latencies

    # -- measurements at a scale point
    def queries(self, samples):
        """`samples` rounds of the three queries, spread evenly over --query-span s: a p99 of
        back-to-back samples would be a few seconds' worth, whatever Slurm did then (a backfill
        cycle holding its locks, say)."""
        rng = random.Random(self.args.seed + len(self.bulk_ids))
        times = {"squeue": [], "sprio": [], "scontrol": []}
        env = self.cluster.env
        states = [self.sdiag()]  # around each round: did a backfill cycle run in it
        start = time.monotonic()
        for i in range(samples):
            wait = start + i * self.args.query_span / samples - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            for name in times:
                argv = {"squeue": ["squeue"], "sprio": ["sprio"],
                        "scontrol": ["scontrol", "show", "job", str(rng.choice(self.bulk_ids))]}[name]
                at, t0 = time.time(), time.monotonic()
                r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
                took = time.monotonic() - t0
                if r.returncode != 0:
                    raise HarnessError(f"{self.config}: {' '.join(argv)} failed: {r.stderr.decode().strip()}")
                times[name].append((took, at))
            states.append(self.sdiag())
        in_bf = bf_overlaps(states)
        out = {}
        for name, samples in times.items():
            took = [t for t, _ in samples]
            # The slowest samples' start times, to find in slurmctld.log what held them up, and
            # whether a backfill cycle ran in their round.
            slowest = [[round(samples[i][0], 3), log_time(samples[i][1]), in_bf[i]]
                       for i in sorted(range(len(samples)), key=lambda i: samples[i][0], reverse=True)[:3]]
            # A backfill cycle holds the job write lock for up to bf_yield_interval (2 s) at a
            # time, and a query waits for the read lock: with 100 samples over 60 s (two cycles)
            # the p99 is the second slowest, one that such a hold caught, in either
            # configuration. The samples of the rounds with no cycle show the queries' own cost.
            outside = [t for t, b in zip(took, in_bf) if not b]
            out[name] = {"p50_s": pct(took, 50), "p99_s": pct(took, 99), "slowest": slowest,
                         "rounds_in_backfill": sum(in_bf), "p50_outside_backfill_s": pct(outside, 50),
                         "p99_outside_backfill_s": pct(outside, 99)}
        return out

    def after_backfill(self, timeout=90):
        """Wait until a backfill cycle ends (polling sdiag), so that a window shorter than
        bf_interval (30 s) that starts now holds none: Slurm starts the next cycle no sooner
        than bf_interval after the last one ended. The seconds waited, or None when no cycle
        ended within `timeout` (backfill runs only when jobs, nodes or partitions changed)."""
        t0 = time.monotonic()
        first = self.sdiag()
        while time.monotonic() - t0 < timeout:
            time.sleep(0.5)
            now = self.sdiag()
            if not now["bf_active"] and bf_overlaps([first, now])[0]:
                return round(time.monotonic() - t0, 1)
        return None

    def sdiag(self):
        return parse_sdiag(self.slurm(["sdiag"]).stdout)

    def point(self, target, first):
        """Raise the bulk job count from `first` to `target` and measure."""
        a = self.args
        self.slurm(["sdiag", "--reset"])
        step_start = time.time()
        with self.perf(f"submit-{target}") if target == a.jobs else contextlib.nullcontext():
            cpu0 = ctld_cpu(self.pid())
            t0 = time.monotonic()
            latencies = self.submit(first, target)
            wall = time.monotonic() - t0
            cpu1 = ctld_cpu(self.pid())
        self.wait_bulk_count(target)
        if target == a.jobs and a.passes > 0:
            self.start_recalc()
        locks0 = self.next_lock_stats()
        steady0 = time.time()
        q = self.queries(a.query_samples)
        cpu_q0 = ctld_cpu(self.pid())
        time.sleep(a.quiet_seconds)  # steady state: nothing but the owner traffic
        quiet_cpu = ctld_cpu(self.pid()) - cpu_q0
        probes = self.probes() if target == a.jobs else None
        sd = self.sdiag()
        locks1 = self.next_lock_stats()
        point = {
            "jobs": target,
            "submitted": target - first,
            "sbatch_jobs_per_s": (target - first) / wall,
            "sbatch_latency_p50_s": pct(latencies, 50), "sbatch_latency_p99_s": pct(latencies, 99),
            "ctld_cpu_s_per_1000_jobs": (cpu1 - cpu0) / ((target - first) / 1000),
            "ctld_cpu_steady_pct": 100 * quiet_cpu / a.quiet_seconds,
            "queries": q,
            "sdiag": sd,
            "step_s": round(time.time() - step_start, 1),
            "steady_s": round(time.time() - steady0, 1),
        }
        point["window"] = (step_start, time.time())  # owner jobs submitted then: final_counts()
        if self.config == "ours":
            point["locks"] = {site: window_stats(locks0, locks1, site) for site in POINT_SITES}
        if probes is not None:
            point["probes"] = probes
        self.result["points"].append(point)

    # -- probes at the largest scale point
    def probe_trial(self, node):
        cl, group = self.cluster, self.layout.group_of[node]
        acct = self.layout.bulk_accounts[0]
        victim = cl.sbatch(["--qos=standby", "--requeue", "--open-mode=append", "-A", acct, "-p", "standby",
                            "-w", node, "--exclusive", "--nice=-10000", "--time=60", "-J", "pv"], VICTIM)
        if wait_stamp(cl, victim, "start", 0, 120) is None:
            raise HarnessError(f"{self.config}: probe victim {victim} did not start on {node}")
        time.sleep(4)  # past batch_sched_delay after the victim's start, as e2e_owner_reclaim
        log_from = ctld_log_size(cl)
        t0 = time.time()
        owner = cl.sbatch(["-A", group, "--qos=owner", "-p", group, "-w", node, "--exclusive", "--time=60",
                           "-J", "po"], OWNER)
        started = wait_stamp(cl, owner, "start", 0, 300)
        if started is None:
            raise HarnessError(f"{self.config}: probe owner job {owner} did not start on {node} within 300 s")
        split = self.probe_split(victim, owner, t0, started)
        if split is not None:
            split.update(grace_split(cl, victim, t0, log_from))
        (cl.jobs / f"release.{owner}").touch()
        ended = wait_stamp(cl, owner, "end", 0, 30)
        if ended is None:
            raise HarnessError(f"{self.config}: probe owner job {owner} did not end after its release")
        rerun = wait_stamp(cl, victim, "start", 1, self.args.cap + 5)
        capped = rerun is None or rerun - ended > self.args.cap
        self.slurm(["scancel", str(victim)], check=False)
        return {"node": node, "a_s": started - t0, "b_s": self.args.cap if capped else rerun - ended,
                "b_capped": capped, "a_split": split}

    def probe_split(self, victim, owner, t0, started):
        """Where the owner's wait went, from slurmdbd's times (whole seconds): submit -> the
        victim's first run ended (the scheduler's choice, then the grace), -> the owner's
        allocation (the node freed, then a scheduling pass), -> its script ran (the launch)."""
        def epoch(text):
            try:
                return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
            except ValueError:
                return None
        cl, out = self.cluster, {}

        def read():
            runs = [r for r in cl.sacct(victim, ["End"], extra=["-D", "-X"]) if r["JobID"] == str(victim)]
            own = [r for r in cl.sacct(owner, ["Start"], extra=["-X"]) if r["JobID"] == str(owner)]
            end = epoch(runs[0]["End"]) if runs else None
            start = epoch(own[0]["Start"]) if own else None
            if end is None or start is None:
                return False
            out.update({"victim_end_s": round(end - t0, 1), "owner_alloc_s": round(start - end, 1),
                        "launch_s": round(started - start, 1)})
            return True
        try:
            poll(read, 30, f"slurmdbd's times of probe jobs {victim} and {owner}", interval=1)
        except ClusterError:
            return None  # the wait itself was measured; only its split is missing
        return out

    def probes(self):
        results, errors = [], []
        nodes = self.layout.probes

        def worker(k):
            for trial in range(k, self.args.probe_trials, len(nodes)):
                try:
                    results.append(self.probe_trial(nodes[k]))
                except (HarnessError, ClusterError) as e:
                    errors.append(str(e).splitlines()[0])
                    return
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(min(len(nodes), self.args.probe_trials))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise HarnessError(errors[0])
        a = [r["a_s"] for r in results]
        b = [r["b_s"] for r in results]
        return {"trials": results, "a_median_s": statistics.median(a), "b_median_s": statistics.median(b),
                "b_capped": any(r["b_capped"] for r in results),
                "a_splits": [r["a_split"] for r in results]}

    # -- priority recalculation pass (bench/e2e_priority_recalc.py's method)
    def start_recalc(self):
        thread_name, state = RECALC[self.config]
        pid = self.pid()
        task = None
        for t in Path(f"/proc/{pid}/task").iterdir():
            try:
                if (t / "comm").read_text().strip() == thread_name:
                    task = t
            except OSError:
                pass
        if task is None:
            raise HarnessError(f"{self.config}: slurmctld has no thread {thread_name}")
        path = self.cluster.dir / "state" / state
        ends, stop = [], threading.Event()

        def mtime():
            try:
                return path.stat().st_mtime_ns
            except OSError:
                return 0

        def watch():
            last = mtime()
            while not stop.is_set() and len(ends) < self.args.passes + 1:
                now = mtime()
                if now != last:
                    try:
                        ends.append(int((task / "schedstat").read_text().split()[0]))
                    except OSError:
                        return
                    last = now
                time.sleep(0.02)
        th = threading.Thread(target=watch, daemon=True)
        th.start()
        self.recalc = (th, ends, stop)

    def finish_recalc(self):
        th, ends, stop = self.recalc
        th.join(timeout=(self.args.passes + 2) * 60 + 30)
        stop.set()
        if len(ends) < self.args.passes + 1:
            raise HarnessError(f"{self.config}: only {max(0, len(ends) - 1)} priority recalculation passes "
                               f"seen at {self.args.jobs} jobs")
        per_pass = [(b - a) / 1e6 for a, b in zip(ends, ends[1:])]
        return {"cpu_ms_per_pass": per_pass, "median_ms": statistics.median(per_pass)}

    # -- the whole run
    def resume_nodes(self):
        """Every 30 s: a node Slurm set DOWN or DRAIN (sinfo -R) is resumed, as a site's admin or
        health check would, and recorded (nodes_resumed, with Slurm's reason). On this loaded
        machine a slurmd or slurmstepd can miss a deadline (stock's first full runs drained
        owned nodes); left alone, its owner jobs would never run, in either configuration."""
        while not self.stop_owner.wait(30):
            try:
                r = self.slurm(["sinfo", "-h", "-R", "-N", "-o", "%N|%T|%E"], check=False, timeout=120)
                seen = set()  # sinfo -N lists a node once per partition: resume and count it once
                for line in r.stdout.splitlines():
                    parts = line.split("|", 2)
                    if len(parts) != 3 or parts[0] in seen:
                        continue
                    node, state, reason = parts
                    seen.add(node)
                    self.nodes_resumed.append({"at": round(time.time(), 1), "node": node, "state": state,
                                               "reason": reason})
                    self.slurm(["scontrol", "update", f"NodeName={node}", "State=RESUME"], check=False,
                               timeout=120)
            except ClusterError:
                pass  # slurmctld busy past the timeout: the next round tries again

    def sample_load(self, samples):
        """The machine's 1-minute load average every 10 s: the other work on the machine is not
        the same for both configurations, and it inflates wall-time figures (lock holds too)."""
        while not self.stop_owner.wait(10):
            samples.append(os.getloadavg()[0])
            # Every preemption leaves the victim's slurmstepds to us (the subreaper) to reap:
            # thousands of zombies in a run, each one more /proc entry for every scan.
            reap_orphans()

    def go(self):
        print(f"{self.config}: starting {len(self.layout.nodes)} nodes", file=sys.stderr, flush=True)
        load = []
        threading.Thread(target=self.sample_load, args=(load,), daemon=True).start()
        self.start()
        threading.Thread(target=self.resume_nodes, daemon=True).start()
        owner = threading.Thread(target=self.owner_thread, daemon=True)
        owner.start()
        try:
            first = 0
            for target in self.args.scale_list:
                print(f"{self.config}: raising the job count to {target}", file=sys.stderr, flush=True)
                self.point(target, first)
                first = target
                if self.owner_error:
                    raise HarnessError(f"{self.config}: owner traffic failed: {self.owner_error[0]}")
            self.result["recalc"] = self.finish_recalc() if self.args.passes > 0 else None
            print(f"{self.config}: waiting for the owner traffic to finish", file=sys.stderr, flush=True)
            # owner_thread ends by itself: each owner job waits at most OWNER_STALL s for its
            # node's previous one, each sbatch at most 120 s.
            self.owner_done.wait()
            if self.owner_error:
                self.tell_pending_owners()
                raise HarnessError(f"{self.config}: owner traffic failed: {self.owner_error[0]}")
            self.result["owner_held_back"] = {"n": len(self.owner_held_back),
                                              "total_s": round(sum(self.owner_held_back), 1)}
            try:
                poll(lambda: not self.slurm(["squeue", "-h", "-n", "o", "-o", "%i"]).stdout.split(), OWNER_STALL,
                     "every owner job to end", interval=5)
            except ClusterError as e:
                self.tell_pending_owners()
                raise HarnessError(f"{self.config}: {e.cause}") from None
            self.final_counts()
            self.result["idle"] = self.idle()
            self.result["quiet_submit"] = self.quiet_submit()
            if self.config == "ours":
                final = parse_lock_stats(self.lock_stats_file().read_text())
                self.result["lock_max_us"] = {s: v["max_us"] for s, v in final.items()}
                self.result["lock_cpu_max_us"] = {s: v["cpu_max_us"] for s, v in final.items()}
                self.result["lock_counts"] = {s: v["count"] for s, v in final.items()}
                self.result["lock_cpu_max_detail"] = {s: v["cpu_max_detail"] for s, v in final.items()}
                self.result["lock_faults"] = {s: v["faults"] for s, v in final.items()}
                self.result["lock_cpu_max_unswitched_us"] = {s: v["cpu_max_unswitched_us"]
                                                             for s, v in final.items()}
        finally:
            self.stop_owner.set()
            self.result["loadavg_1min"] = {"mean": statistics.mean(load) if load else None,
                                           "max": max(load) if load else None}

    def idle(self):
        """--idle-seconds after the owner traffic: slurmctld's CPU %, and (ours) what the
        watcher costs when no job is in a grace (the goal's 50 us tick) and its holds."""
        a = self.args
        locks0 = self.next_lock_stats() if self.config == "ours" else None
        cpu0, t0 = ctld_cpu(self.pid()), time.monotonic()
        time.sleep(a.idle_seconds)
        locks1 = self.next_lock_stats() if self.config == "ours" else None
        out = {"seconds": round(time.monotonic() - t0, 1),
               "ctld_cpu_pct": 100 * (ctld_cpu(self.pid()) - cpu0) / (time.monotonic() - t0)}
        if locks0 is not None:
            out["locks"] = {site: window_stats(locks0, locks1, site) for site in POINT_SITES}
        self.slurm(["sdiag", "--reset"])
        out["queries"] = self.queries(a.query_samples)  # after the CPU window, not in it
        out["queries_sdiag"] = self.sdiag()  # what the scheduler did while they ran
        return out

    def quiet_submit(self):
        """--quiet-jobs more bulk jobs, after the owner traffic and idle(): sbatch throughput
        at the largest scale with no owner traffic, where the two configurations do the same
        work (under owner traffic ours' owner jobs start within seconds and stock's wait about
        a minute, so a step's submissions compete with more starts, requeues and ends in ours:
        the points' jobs_started and jobs_ended show how many)."""
        a = self.args
        if a.quiet_jobs == 0:
            return None
        print(f"{self.config}: {a.quiet_jobs} more jobs with no owner traffic", file=sys.stderr, flush=True)
        top = self.queue_top()
        # Start right after a backfill cycle: the window (12-16 s at 20k jobs here) then holds
        # none, in either configuration; without this, which window a cycle (about 3 s of
        # slurmctld's CPU at 20k jobs) fell in was chance, and it moved the ratio by up to 0.1.
        waited = self.after_backfill()
        self.slurm(["sdiag", "--reset"])
        with self.perf("quiet"):
            cpu0, t0 = ctld_cpu(self.pid()), time.monotonic()
            clients0, busy0, steal0 = children_cpu(), machine_busy(), machine_steal()
            latencies = self.submit(a.jobs, a.jobs + a.quiet_jobs)
            wall = time.monotonic() - t0
            cpu1 = ctld_cpu(self.pid())
            clients1, busy1, steal1 = children_cpu(), machine_busy(), machine_steal()
        sd = self.sdiag()
        target = a.jobs + a.quiet_jobs
        self.wait_bulk_count(target)
        return {"from_jobs": a.jobs, "jobs": target, "seconds": round(wall, 1),
                "reasons": self.pending_reasons(set(self.bulk_ids[a.jobs:target])),
                "sbatch_jobs_per_s": a.quiet_jobs / wall,
                "sbatch_latency_p50_s": pct(latencies, 50), "sbatch_latency_p99_s": pct(latencies, 99),
                "ctld_cpu_s_per_1000_jobs": (cpu1 - cpu0) / (a.quiet_jobs / 1000), "sdiag": sd,
                # The submitters share this machine's cores with slurmctld (a site's sbatch runs
                # on login nodes): their CPU (sbatch loads the SPANK plugins of plugstack.conf)
                # and the machine's busy share during the window.
                "client_cpu_s_per_1000_jobs": (clients1 - clients0) / (a.quiet_jobs / 1000),
                "machine_busy_pct": 100 * (busy1 - busy0) / (wall * os.cpu_count()),
                # This machine is a KVM guest: time its vCPUs waited for the host (in busy %).
                "machine_steal_pct": 100 * (steal1 - steal0) / (wall * os.cpu_count()),
                "queue_top_before": top, "after_backfill_s": waited}

    @contextlib.contextmanager
    def perf(self, phase):
        """perf record of slurmctld (every thread, call graphs) over the with-block when --perf
        asks for it, stopped even if the block raises; then two reports in
        DIR/<config>-<phase>.txt: self time, and time with callees (which Slurm path pays), by
        shared object and symbol."""
        if not self.args.perf:
            yield
            return
        out = Path(self.args.perf)
        out.mkdir(parents=True, exist_ok=True)
        data = out / f"{self.config}-{phase}.perf.data"
        data.unlink(missing_ok=True)
        proc = subprocess.Popen(["perf", "record", "-q", "-F", "499", "-g", "-p", str(self.pid()), "-o", str(data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            # perf creates its output before it attaches, and writes the header once it has opened
            # its events on every thread (strace of perf 6.1); enabling them follows in milliseconds.
            deadline = time.monotonic() + 30
            while not (data.exists() and data.stat().st_size > 0):
                if proc.poll() is not None:
                    raise HarnessError(f"{self.config}: perf record exited {proc.returncode}: {proc.stderr.read().strip()}")
                if time.monotonic() > deadline:
                    raise HarnessError(f"{self.config}: perf record did not start within 30 s")
                time.sleep(0.05)
            yield
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise HarnessError(f"{self.config}: perf record did not stop") from None
        text = ""
        for mode, limit in (("--no-children", "0.3"), ("--children", "3")):
            report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", mode, "--sort", "dso,symbol",
                                     "-g", "none", "--percent-limit", limit],
                                    capture_output=True, text=True, check=False)
            text += report.stdout + report.stderr
        (out / f"{self.config}-{phase}.txt").write_text(text)
        print(f"{self.config}: perf report in {out}/{self.config}-{phase}.txt", file=sys.stderr, flush=True)

    def pending_reasons(self, ids):
        """How many of the jobs `ids` pend with each reason (squeue %r); "started" for those
        no longer pending."""
        out = self.slurm(["squeue", "-h", "-n", "b", "-t", "PD", "-o", "%i|%r"]).stdout
        counts = collections.Counter()
        for line in out.splitlines():
            jid, _, reason = line.partition("|")
            if jid.isdigit() and int(jid) in ids:
                counts[reason] += 1
        started = len(ids) - sum(counts.values())
        if started:
            counts["started"] = started
        return dict(counts)

    def queue_top(self):
        """The pending bulk jobs tied at the queue's highest priority, and their accounts: a
        submission that ties with or tops them makes Slurm's _top_priority walk the job list
        further (README, Performance)."""
        out = self.slurm(["squeue", "-h", "-n", "b", "-t", "PD", "-o", "%Q|%a"]).stdout
        rows = [line.split("|") for line in out.splitlines() if "|" in line]
        if not rows:
            return {"priority": None, "jobs": 0, "accounts": 0}
        top = max(int(r[0]) for r in rows)
        tied = [r[1] for r in rows if int(r[0]) == top]
        return {"priority": top, "jobs": len(tied), "accounts": len(set(tied))}

    def tell_pending_owners(self):
        """Before a failure's one line: the pending owner jobs and why (stderr), for the record."""
        r = self.slurm(["squeue", "-h", "-n", "o", "-t", "PD", "-O", "JobID:12,Partition:10,ReqNodes:8,Reason:30"],
                       check=False)
        lines = r.stdout.splitlines()
        print(f"{self.config}: {len(lines)} owner jobs pending:", *lines[:20], sep="\n  ", file=sys.stderr)
        print(f"{self.config}: nodes resumed so far: {len(self.nodes_resumed)}",
              *[f"{n['node']} {n['state']} {n['reason']}" for n in self.nodes_resumed[-20:]],
              sep="\n  ", file=sys.stderr)

    def final_counts(self):
        out = self.slurm(["squeue", "-h", "-n", "b", "-O", "JobID:20,RestartCnt:10,State:20"]).stdout
        rows = [line.split() for line in out.splitlines() if line.strip()]
        if len(rows) != self.args.jobs:
            raise HarnessError(f"{self.config}: {len(rows)} bulk jobs left of {self.args.jobs}: jobs were lost")
        self.result["preemptions"] = sum(int(r[1]) for r in rows)
        self.result["running_at_end"] = sum(1 for r in rows if r[2] == "RUNNING")
        self.result["owner_jobs"] = len(self.owner_jobs)
        for point in self.result["points"]:  # every owner job has ended: each one's start is known
            own = self.owner_latencies(*point.pop("window"))
            point["owner_stream"] = {"n": len(own), "p50_s": pct(own, 50), "max_s": max(own) if own else None}
        own = [s[0] - j["submitted"] for j in self.owner_jobs if (s := stamps(self.cluster, j["id"], "start"))]
        if len(own) != len(self.owner_jobs):
            raise HarnessError(f"{self.config}: {len(self.owner_jobs) - len(own)} owner jobs never ran")
        self.result["owner_stream"] = {"n": len(own), "p50_s": pct(own, 50), "p90_s": pct(own, 90),
                                       "max_s": max(own) if own else None}
        log = self.cluster.log("slurmctld")
        self.result["owner_path"] = owner_path(log, [dict(j, started=stamps(self.cluster, j["id"], "start")[0])
                                                     for j in self.owner_jobs])
        self.result["nodes_not_responding_events"] = log.count("not responding")
        self.result["nodes_resumed"] = list(self.nodes_resumed)

    def stop(self):
        if self.cluster is not None:
            try:
                self.cluster.stop()
            except ClusterError:
                pass


# --- report -------------------------------------------------------------------------------------

def fmt(v, digits=2):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}f}"


def ratio(o, s):
    if o is None or s is None or s == 0:
        return "n/a"
    return f"{o / s:.2f}"


def lock_rows(point):
    """(label, value) per site of one scale point's lock window (ours)."""
    def u(v):
        return "n/a" if v is None else str(v)
    rows = []
    for site in POINT_SITES:
        w = point["locks"].get(site)
        if w is None:  # a site recorded after the run that wrote this JSON
            continue
        c = w["cpu"]
        what = {"watcher tick, no grace": "per tick", "watcher tick": "per tick", "watcher lock wait": "waits",
                "watcher visit, Slurm's kill and requeue": "calls"}.get(site, "holds")
        rows.append((f"{site} {what} (count; wall p50/p99/max<=; CPU p50/p99/max<= us; CPU us/unit)",
                     f"{w['count']}; {u(w['p50_us_le'])}/{u(w['p99_us_le'])}/{u(w['max_us_le'])}; "
                     f"{u(c['p50_us_le'])}/{u(c['p99_us_le'])}/{u(c['max_us_le'])}; "
                     f"{fmt(w['cpu_us_per_unit'], 1)}"))
    return rows


def table(results):
    stock, ours = results["stock"], results["ours"]
    rows = [("metric", "jobs", "stock", "ours", "ours/stock")]

    def add(name, jobs, s, o):
        rows.append((name, str(jobs), fmt(s), fmt(o), ratio(o, s)))
    for ps, po in zip(stock["points"], ours["points"]):
        n = ps["jobs"]
        add("sbatch throughput (jobs/s, 8 submitters)", n, ps["sbatch_jobs_per_s"], po["sbatch_jobs_per_s"])
        add("sbatch latency p99 (s)", n, ps["sbatch_latency_p99_s"], po["sbatch_latency_p99_s"])
        add("slurmctld CPU s per 1000 jobs submitted", n, ps["ctld_cpu_s_per_1000_jobs"], po["ctld_cpu_s_per_1000_jobs"])
        add("slurmctld CPU % in steady state", n, ps["ctld_cpu_steady_pct"], po["ctld_cpu_steady_pct"])
        for k, label in (("jobs_started", "started"), ("jobs_ended", "ended (requeues included)")):
            if ps["sdiag"].get(k) is not None and po["sdiag"].get(k) is not None:
                add(f"jobs {label} per minute of the step (sdiag)", n, 60 * ps["sdiag"][k] / ps["step_s"],
                    60 * po["sdiag"][k] / po["step_s"])
        for q in ("squeue", "sprio", "scontrol"):
            add(f"{q} p50 (s)", n, ps["queries"][q]["p50_s"], po["queries"][q]["p50_s"])
            add(f"{q} p99 (s)", n, ps["queries"][q]["p99_s"], po["queries"][q]["p99_s"])
        for k, label in (("main_mean_us", "main sched cycle mean (us)"), ("main_max_us", "main sched cycle max (us)"),
                         ("bf_mean_us", "backfill cycle mean (us)"), ("bf_max_us", "backfill cycle max (us)")):
            add(label, n, ps["sdiag"][k], po["sdiag"][k])
        add("owner submit->RUNNING, stream p50 (s)", n, ps["owner_stream"]["p50_s"], po["owner_stream"]["p50_s"])
        add("owner submit->RUNNING, stream max (s)", n, ps["owner_stream"]["max_s"], po["owner_stream"]["max_s"])
        for row in lock_rows(po):
            rows.append((row[0], str(n), "n/a", row[1], "n/a"))
        if "probes" in ps:
            pr_s, pr_o = ps["probes"], po["probes"]
            add(f"probe owner submit->RUNNING median (s; grace {GRACE})", n, pr_s["a_median_s"], pr_o["a_median_s"])
            def split(pr):
                keys = ("victim_end_s", "owner_alloc_s", "launch_s")
                return "; ".join("/".join(fmt(x[k], 1) for k in keys) if x else "n/a" for x in pr["a_splits"])
            rows.append(("probe owner wait: submit->victim's end / ->owner allocated / ->script ran (s, each trial)",
                         str(n), split(pr_s), split(pr_o), "n/a"))

            def grace(pr):
                keys = ("grace_start_s", "grace_seen_s", "kill_s", "requeue_s")
                return "; ".join("/".join(fmt(x.get(k), 1) for k in keys) if x else "n/a" for x in pr["a_splits"])
            rows.append(("probe victim after submit: grace start / seen by watcher / killed / requeued by Slurm "
                         "(s, slurmctld.log, each trial)", str(n), grace(pr_s), grace(pr_o), "n/a"))
            rows.append(("probe requeued job->RUNNING median (s)", str(n),
                         (">= " if pr_s["b_capped"] else "") + fmt(pr_s["b_median_s"]),
                         (">= " if pr_o["b_capped"] else "") + fmt(pr_o["b_median_s"]),
                         ratio(pr_o["b_median_s"], pr_s["b_median_s"])))
    n = stock["points"][-1]["jobs"]
    if stock["recalc"] is not None and ours["recalc"] is not None:
        add("priority recalc pass, CPU ms (median)", n, stock["recalc"]["median_ms"],
            ours["recalc"]["median_ms"])
    add("preemptions (sum of restart counts)", "all", stock["preemptions"], ours["preemptions"])
    add("owner jobs", "all", stock["owner_jobs"], ours["owner_jobs"])
    add("owner jobs held back (the node's previous one still pending)", "all",
        stock["owner_held_back"]["n"], ours["owner_held_back"]["n"])
    add("nodes Slurm set DOWN or DRAIN, resumed by the harness", "all",
        len(stock["nodes_resumed"]), len(ours["nodes_resumed"]))
    add("owner submit->RUNNING, all stream p50 (s)", "all", stock["owner_stream"]["p50_s"], ours["owner_stream"]["p50_s"])
    add("owner submit->RUNNING, all stream p90 (s)", "all", stock["owner_stream"]["p90_s"], ours["owner_stream"]["p90_s"])
    if "owner_path" in stock and "owner_path" in ours:  # older result files lack it
        add("owner jobs with a victim requeued on their node (owner_path)", "all", stock["owner_path"]["n"],
            ours["owner_path"]["n"])
        labels = ("submit->its node's victims requeued", "->their epilogs complete", "->owner allocated",
                  "->script ran")
        for key, label in zip(PATH_STEPS, labels):
            for q in ("p50", "p90"):
                add(f"owner wait, all stream: {label} {q} (s)", "all", stock["owner_path"][key][q],
                    ours["owner_path"][key][q])
    add("slurmctld CPU % with no owner traffic", n, stock["idle"]["ctld_cpu_pct"], ours["idle"]["ctld_cpu_pct"])
    qs, qo = stock.get("quiet_submit"), ours.get("quiet_submit")
    if qs and qo:
        span = f"{qs['from_jobs']}->{qs['jobs']}"
        add("sbatch throughput (jobs/s, 8 submitters), no owner traffic", span, qs["sbatch_jobs_per_s"],
            qo["sbatch_jobs_per_s"])
        add("sbatch latency p50 (s), no owner traffic", span, qs["sbatch_latency_p50_s"], qo["sbatch_latency_p50_s"])
        add("sbatch latency p99 (s), no owner traffic", span, qs["sbatch_latency_p99_s"], qo["sbatch_latency_p99_s"])
        add("slurmctld CPU s per 1000 jobs submitted, no owner traffic", span, qs["ctld_cpu_s_per_1000_jobs"],
            qo["ctld_cpu_s_per_1000_jobs"])
        if "client_cpu_s_per_1000_jobs" in qs and "client_cpu_s_per_1000_jobs" in qo:
            add("submitters' CPU s per 1000 jobs (sbatch, on slurmctld's cores)", span,
                qs["client_cpu_s_per_1000_jobs"], qo["client_cpu_s_per_1000_jobs"])
            add("machine busy % during those submissions", span, qs["machine_busy_pct"], qo["machine_busy_pct"])
        if "machine_steal_pct" in qs and "machine_steal_pct" in qo:
            add("of it, steal % (the hypervisor's)", span, qs["machine_steal_pct"], qo["machine_steal_pct"])
        add("jobs started during those submissions (sdiag)", span, qs["sdiag"]["jobs_started"],
            qo["sdiag"]["jobs_started"])
        add("backfill cycles during those submissions (sdiag)", span, qs["sdiag"]["bf_cycles"],
            qo["sdiag"]["bf_cycles"])
        add("pending jobs tied at the queue's highest priority, before them", span,
            qs["queue_top_before"]["jobs"], qo["queue_top_before"]["jobs"])
        add("accounts of those jobs", span, qs["queue_top_before"]["accounts"],
            qo["queue_top_before"]["accounts"])
        if "reasons" in qs and "reasons" in qo:
            add("of those submitted, pending for Priority (Slurm did not try them)", span,
                qs["reasons"].get("Priority", 0), qo["reasons"].get("Priority", 0))
            add("of those submitted, tried at once (any other reason, or started)", span,
                sum(v for k, v in qs["reasons"].items() if k != "Priority"),
                sum(v for k, v in qo["reasons"].items() if k != "Priority"))
    for q in ("squeue", "sprio", "scontrol"):
        for k in ("p50", "p99"):
            add(f"{q} {k} (s), no owner traffic", n, stock["idle"]["queries"][q][f"{k}_s"],
                ours["idle"]["queries"][q][f"{k}_s"])
        sq, oq = stock["idle"]["queries"][q], ours["idle"]["queries"][q]
        if "rounds_in_backfill" in sq and "rounds_in_backfill" in oq:
            add(f"{q}: rounds with a backfill cycle running, no owner traffic", n, sq["rounds_in_backfill"],
                oq["rounds_in_backfill"])
            for k in ("p50", "p99"):
                add(f"{q} {k} (s), no owner traffic, rounds with no backfill cycle", n,
                    sq[f"{k}_outside_backfill_s"], oq[f"{k}_outside_backfill_s"])
    for row in lock_rows(ours["idle"]):
        rows.append((f"no owner traffic: {row[0]}", str(n), "n/a", row[1], "n/a"))
    # job_submit runs under Slurm's read locks (validate_job_create_req) but for het jobs and
    # enable_rpc_queue ("job_submit, write locks"): with the read holds
    for site in SITES_WRITE + ["job_submit", "watcher visit, Slurm's kill and requeue", "watcher scan",
                               "watcher policy check",
                               "priority usage pass", "sprio factors", "watcher tick, no grace",
                               "watcher lock wait"]:
        if site in ours.get("lock_max_us", {}):
            what = {"watcher lock wait": "wait", "watcher visit, Slurm's kill and requeue": "call",
                    "watcher tick, no grace": "tick"}.get(site, "hold")
            rows.append((f"longest {what} since start, {site} (us wall; CPU)", "all", "n/a",
                         f"{ours['lock_max_us'][site]}; {ours['lock_cpu_max_us'][site]}", "n/a"))
            d = ours.get("lock_cpu_max_detail", {}).get(site)
            if d and what != "wait":  # a wait reads no kernel counters
                when = time.strftime("%H:%M:%S", time.localtime(d["at"])) if d["at"] else "-"
                rows.append((f"  its longest CPU: ended at, page faults, switches vol/invol; "
                             f"faults of all {ours['lock_counts'][site]}", "all", "n/a",
                             f"{when}, {d['faults']}, {d['vcsw']}/{d['ivcsw']}; {ours['lock_faults'][site]}",
                             "n/a"))
                rows.append(("  its longest CPU in a hold never switched out (us)", "all", "n/a",
                             str(ours["lock_cpu_max_unswitched_us"][site]), "n/a"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    stock, ours = results["stock"]["points"], results["ours"]["points"]
    jobs = [p["jobs"] for p in ours]

    def nan(v):
        return float("nan") if v is None else v
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    a = ax[0][0]
    for site, color in (("watcher visit", "tab:red"), ("watcher visit at a grace's end", "tab:orange"),
                        ("watcher scan", "tab:blue"), ("priority recalculation", "tab:green")):
        a.plot(jobs, [nan(p["locks"][site]["max_us_le"]) for p in ours], "o-", color=color, label=f"{site}: max")
        a.plot(jobs, [nan(p["locks"][site]["p99_us_le"]) for p in ours], "x:", color=color, label=f"{site}: p99")
        a.plot(jobs, [nan(p["locks"][site]["cpu"]["p99_us_le"]) for p in ours], "s--", color=color,
               label=f"{site}: CPU p99")
    a.set_yscale("log")
    a.set_title("ours: lock hold per tick or pass (us wall, and thread CPU; bucket upper bound)")
    a.legend(fontsize=7)

    def stock_vs_ours(a, key, title):
        a.plot(jobs, [p[key] for p in stock], "o--", label="stock")
        a.plot(jobs, [p[key] for p in ours], "o-", label="ours")
        a.set_title(title)
        a.legend(fontsize=7)
    stock_vs_ours(ax[0][1], "ctld_cpu_s_per_1000_jobs", "slurmctld CPU s per 1000 jobs submitted")
    a = ax[1][0]
    for q in ("squeue", "sprio", "scontrol"):
        line, = a.plot(jobs, [p["queries"][q]["p99_s"] for p in ours], "o-", label=f"{q} ours")
        a.plot(jobs, [p["queries"][q]["p99_s"] for p in stock], "o--", color=line.get_color(), label=f"{q} stock")
    a.set_title("query latency p99 (s)")
    a.legend(fontsize=7)
    stock_vs_ours(ax[1][1], "ctld_cpu_steady_pct", "slurmctld CPU in steady state (% of a core)")
    for a in ax.flat:
        a.set_xlabel("jobs (pending + running)")
        a.grid(alpha=0.3)
    meta = results["meta"]
    fig.suptitle(f"bench/scale.py: {meta['nodes']} nodes, {meta['accounts']} accounts, stock vs ours, same job stream")
    fig.tight_layout()
    fig.savefig(path)


# --- main ---------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--jobs", type=int, default=20000, help="bulk jobs at the last scale point")
    p.add_argument("--accounts", type=int, default=200)
    p.add_argument("--scales", default="1000,10000,20000",
                   help="job counts to measure at, ascending (the last is --jobs; larger ones are left out)")
    p.add_argument("--preemptions", type=int,
                   help="owner jobs, each preempting up to two standby jobs (default jobs/20)")
    p.add_argument("--owner-revisit", type=float, default=90, help="s between two owner jobs on one node")
    p.add_argument("--query-samples", type=int, default=100)
    p.add_argument("--query-span", type=float, default=60,
                   help="s over which each measurement's --query-samples are spread")
    p.add_argument("--quiet-seconds", type=float, default=30)
    # 150 s: about 130 ticks with no job in a grace (the scans' and the lock-stats file's ticks
    # are not counted), so that the tick's p99 is not simply its longest one.
    p.add_argument("--idle-seconds", type=float, default=150,
                   help="s measured after the owner traffic, with no job in a grace")
    p.add_argument("--quiet-jobs", type=int, default=2000,
                   help="bulk jobs submitted after the owner traffic, past --jobs (0: none)")
    p.add_argument("--probe-trials", type=int, default=2)
    p.add_argument("--passes", type=int, default=2,
                   help="recalculation passes measured (0: none, no recalculation figure; "
                        "each pass is a minute, PriorityCalcPeriod=1)")
    p.add_argument("--cap", type=float, default=150, help="longest wait for a requeued probe job, s")
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--port-offset", type=int, default=12000)
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--plot", help="write the cost-vs-jobs plot here (.png or .svg)")
    p.add_argument("--only", choices=["stock", "ours"], help="one configuration (no ratios)")
    p.add_argument("--lost-work-charge", type=float, metavar="C",
                   help="ours' priority.lost_work_charge (default the policy's, 0: a preempted run's "
                        "usage is refunded; stock charges it, as C=1 does)")
    p.add_argument("--first", choices=["stock", "ours"], default="stock",
                   help="the configuration that runs first (the other runs on the machine it leaves)")
    p.add_argument("--scheduler-parameters", metavar="VALUE",
                   help="SchedulerParameters of both configurations instead of the fragment's (an experiment)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a slurm.conf line for both configurations (repeatable; a diagnosis; KEY= leaves "
                        "the key out, the fragment's too)")
    p.add_argument("--keep", action="store_true", help="keep the clusters' work dirs")
    p.add_argument("--perf", metavar="DIR",
                   help="profile slurmctld with perf during the last scale point's submissions (under owner "
                        "traffic) and the --quiet-jobs ones: DIR/<config>-<phase>.perf.data and its report "
                        "DIR/<config>-<phase>.txt")
    a = p.parse_args(argv)
    if not 8 <= a.nodes <= 1000:
        p.error("--nodes must be 8..1000")
    if a.accounts < len(Layout(a.nodes, a.accounts + 1000).groups) + 1:
        p.error("--accounts must exceed the number of owner groups")
    try:
        scales = sorted({int(s) for s in a.scales.split(",") if s.strip()})
    except ValueError:
        p.error("--scales takes job counts separated by commas")
    if a.jobs < 100 or any(s < 1 for s in scales):
        p.error("--jobs must be >= 100 and --scales positive")
    a.scale_list = [s for s in scales if s < a.jobs] + [a.jobs]
    if a.preemptions is None:
        a.preemptions = max(10, a.jobs // 20)
    if a.port_offset < 9000 or 17001 + a.port_offset + a.nodes > 65535:
        p.error("--port-offset must be >= 9000 (other clusters use 0..8000) and leave room for the nodes' ports")
    if a.plot and not a.plot.endswith((".png", ".svg")):
        p.error("--plot takes a .png or .svg file")
    if a.idle_seconds < 20:
        p.error("--idle-seconds must be >= 20 (the lock-stats file is written every 10 s)")
    if a.quiet_jobs < 0:
        p.error("--quiet-jobs must be >= 0")
    if a.perf and shutil.which("perf") is None:
        p.error("--perf needs perf (apt-get install linux-perf)")
    if a.probe_trials < 1 or a.query_samples < 1:
        p.error("--probe-trials and --query-samples must be >= 1")
    if a.passes < 0:
        p.error("--passes must be >= 0")
    if a.query_span < 0:
        p.error("--query-span must be >= 0")
    if a.lost_work_charge is not None and not 0 <= a.lost_work_charge <= 1:
        p.error("--lost-work-charge takes a fraction from 0 to 1 (the policy's priority.lost_work_charge)")
    for line in a.conf:
        if not re.fullmatch(r"[A-Za-z]+=(\S.*)?", line):
            p.error(f"--conf takes KEY=VALUE, not {line!r}")
    return a


def main(argv=None):
    args = parse_args(argv)
    layout = Layout(args.nodes, args.accounts)
    bulk = bulk_stream(layout, args.jobs + args.quiet_jobs, args.seed)  # the same first --jobs
    owners = owner_stream(layout, args.preemptions)
    t0 = time.monotonic()
    results = {"meta": {"nodes": args.nodes, "accounts": args.accounts, "jobs": args.jobs,
                        "quiet_jobs": args.quiet_jobs, "first": args.first,
                        "lost_work_charge": args.lost_work_charge,
                        "scales": args.scale_list, "seed": args.seed, "owner_jobs": len(owners),
                        "owner_revisit_s": args.owner_revisit, "grace_s": GRACE, "cred_expire_s": CRED_EXPIRE,
                        "public_nodes": len(layout.public), "owner_groups": len(layout.groups),
                        "probe_nodes": layout.probes, "conf": args.conf, "machine": f"{os.cpu_count()} CPUs, {HOSTNAME}"}}
    order = ("stock", "ours") if args.first == "stock" else ("ours", "stock")
    configs = [c for c in order if args.only in (None, c)]
    dirs = []
    failed_dir = None  # a failed configuration's work dir: its daemons' logs say what went wrong
    try:
        for config in configs:
            run = Run(config, args, layout, bulk, owners)
            t_config = time.monotonic()
            try:
                run.go()
            except (HarnessError, ClusterError) as e:
                failed_dir = run.cluster.dir if run.cluster is not None else None
                cause = str(e) if isinstance(e, HarnessError) else f"{config}: {e.cause}"
                kept = f" (its work dir, with the daemons' logs, is kept: {failed_dir})" if failed_dir else ""
                print(f"scale: {cause}{kept}", file=sys.stderr)
                return 2
            except KeyboardInterrupt:
                print(f"scale: {config}: interrupted", file=sys.stderr)
                return 130
            finally:
                run.stop()
                if run.cluster is not None:
                    dirs.append(run.cluster.dir)
            run.result["seconds"] = round(time.monotonic() - t_config, 1)  # this configuration's own
            results[config] = run.result
    finally:
        # Removed only now, not between the configurations: on an ext4 without a journal (this
        # machine's) new inodes skip those deleted in the last ~30 s (find_inode_bit,
        # recently_deleted), and slurmctld creates two files per job it is given: ours, started
        # right after stock's 20k job files were removed, would pay for walking them.
        for d in dirs:
            if d == failed_dir:
                continue  # named in the error line
            if args.keep:
                print(f"cluster work dir kept: {d}", file=sys.stderr)
            else:
                shutil.rmtree(d, ignore_errors=True)
    results["meta"]["total_s"] = round(time.monotonic() - t0, 1)
    if args.json:  # first: a table or plot that fails must not lose the run's figures
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
        print(f"results written to {args.json}")
    if len(configs) == 2:
        print(table(results))
        print("\nmachine load average (1 min) during each configuration: " + ", ".join(
            f"{c} mean {fmt(results[c]['loadavg_1min']['mean'], 1)} max {fmt(results[c]['loadavg_1min']['max'], 1)}"
            for c in configs))
    else:
        print(json.dumps(results[configs[0]], indent=2, default=str))
        if configs[0] == "ours":
            for point in results["ours"]["points"]:
                for label, value in lock_rows(point):
                    print(f"{point['jobs']:>6} jobs  {label}: {value}")
            for label, value in lock_rows(results["ours"]["idle"]):
                print(f"no owner traffic  {label}: {value}")
    print(f"\n{args.nodes} nodes, {args.accounts} accounts, scales {args.scale_list}, "
          f"{len(owners)} owner jobs, grace {GRACE} s, seed {args.seed}; total {results['meta']['total_s']:.0f} s")
    if args.plot and len(configs) == 2:
        plot(results, args.plot)
        print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
