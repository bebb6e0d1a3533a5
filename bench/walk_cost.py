#!/usr/bin/python3
"""How long one of Slurm's victim searches takes, stock Slurm vs slurm-preempt, at --jobs jobs.

Slurm walks its whole job list at every submission (slurm_find_preemptable_jobs, from
select_nodes' test of the new job), and again for each job its main scheduler and backfill
test. bench/submit_rate.py's profiles put ours' submissions' walks at 1.1-1.2 times stock's
samples after owner traffic, with the same number of walks (one per submission, uprobes) and
the same records: whether a walk itself costs more is the question, and sampling cannot say
where a stalled walk's time lands. This measures each walk's duration directly: a uprobe at
the entry and one at the return of slurm_find_preemptable_jobs in each slurmctld (perf probe
on the binary /proc/PID/exe names), timestamps from perf record.

Two clusters of bench/scale.py's layout (as bench/submit_rate.py: stock = priority/multifactor,
preempt/qos, no job_submit; ours = the plugins) are filled with scale.py's seeded bulk stream
to --jobs in alternating blocks (each slurmctld stopped while the other takes its block). Then
--rounds rounds: in each, each cluster in turn (the order alternating) takes --probe-jobs
submissions one sbatch at a time, its slurmctld alone running, after one of its backfill cycles
ended, while perf records the probes (with call stacks). Prints, for each kind of walk (a
submission's, the main scheduler's, backfill's: from the entry's call stack), per configuration
the walks seen, their p10, p50 and p90 durations (us), and the ratios of the second
configuration over the first. A submission's walk comes after an sbatch process ran, with the
records out of the caches; backfill's come in runs, the later ones with the records cached: their
p10 and p50 mix the two, so that the submissions' walks are the figure to compare.

--preemptions N adds a second phase: after the first phase's rounds both clusters run N owner
jobs at once (submit_rate.py's owner traffic: up to two standby victims each), settle, and take
--rounds more rounds; each phase is reported apart. bench/submit_rate.py reads ours' slurmctld at
1.09-1.11 of stock's CPU per submission after such traffic and 1.00-1.04 before it, with 8
parallel submitters: this asks whether one walk, with no other submission beside it, costs
ours more after the owner traffic than before it.

--conf KEY=VALUE (repeatable) adds that slurm.conf line to both clusters, --ours-conf to ours
alone (e.g. JobSubmitPlugins= : ours without job_submit/preempt, whose records are then
created as stock's are). --pair as in submit_rate.py.

Needs root, perf with uprobes (`perf probe`). Exit 2 with no figures when a cluster cannot
start, the job count is not reached, or the probes cannot be placed.

  /usr/bin/python3 bench/walk_cost.py [--nodes 200] [--accounts 200] [--jobs 20000] [--block 2000]
      [--rounds 4] [--probe-jobs 50] [--preemptions N] [--pair stock,ours] [--conf K=V ...]
      [--ours-conf K=V ...]
"""
import argparse
import collections
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402
import submit_rate  # noqa: E402
from cluster import ClusterError  # noqa: E402

PROBE = "slurm_find_preemptable_jobs"
CALLERS = ("submission", "scheduler", "backfill")
GROUP = "sp_walk"


class ProbeError(Exception):
    pass


def perf_probe(binary, spec):
    r = subprocess.run(["perf", "probe", "-q", "-x", binary, "-a", spec], capture_output=True, text=True)
    if r.returncode != 0:
        raise ProbeError(f"perf probe {spec} on {binary}: {r.stderr.strip() or r.returncode}")


def add_probes(binary):
    remove_probes()
    perf_probe(binary, f"{GROUP}:enter={PROBE}")
    perf_probe(binary, f"{GROUP}:leave={PROBE}%return")


def remove_probes():
    subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)


def caller_of(frames):
    """Which of Slurm's walks a call stack (perf script's frame lines) is: a submission's test
    (job_allocate), backfill's (sched_backfill.so) or the main scheduler's (the rest)."""
    text = "\n".join(frames)
    if "job_allocate" in text:
        return "submission"
    if "sched_backfill" in text:
        return "backfill"
    return "scheduler"


def walks(data):
    """(pid, caller, duration s) of each walk perf recorded in `data` (entry and return per
    thread; the caller from the entry's call stack)."""
    r = subprocess.run(["perf", "script", "-i", data, "-F", "pid,tid,time,event,ip,sym,dso"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ProbeError(f"perf script: {r.stderr.strip()}")
    open_at, out, head, frames = {}, [], None, []

    def close():
        if head is None:
            return
        pid, tid, t, what = head
        if what == "enter":
            open_at[tid] = (t, caller_of(frames))
        elif tid in open_at:
            t0, caller = open_at.pop(tid)
            out.append((pid, caller, t - t0))
    for line in r.stdout.splitlines() + [""]:
        m = re.match(r"\s*(\d+)/(\d+)\s+([\d.]+):\s+\S+:(enter|leave)", line)
        if m:
            close()
            head, frames = (int(m.group(1)), m.group(2), float(m.group(3)), m.group(4)), []
        elif line.strip():
            frames.append(line.strip())
        else:
            close()
            head, frames = None, []
    return out


def thread_cpu(pid):
    """{thread name: (CPU s, voluntary switches, involuntary switches)} of a process' threads,
    threads of one name summed (Slurm's RPC threads are all "srvcn")."""
    out = collections.defaultdict(lambda: [0.0, 0, 0])
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            status = (task / "status").read_text()
        except OSError:
            continue  # ended meanwhile
        name = stat.partition("(")[2].rpartition(")")[0]
        row = out[name]
        row[0] += scale.stat_cpu(stat)
        switches = dict(line.split(":", 1) for line in status.splitlines() if "ctxt_switches" in line)
        row[1] += int(switches.get("voluntary_ctxt_switches", 0))
        row[2] += int(switches.get("nonvoluntary_ctxt_switches", 0))
    return out


def serial_block(run, first, last, threads=None):
    """Submit bulk jobs [first, last) one sbatch at a time, `run`'s slurmctld alone running,
    after a backfill cycle of it ended. `threads`: a Counter-like dict the block adds each
    slurmctld thread name's CPU s and switches to (thread_cpu before and after)."""
    pid = run.pid()
    os.kill(pid, signal.SIGCONT)
    try:
        run.after_backfill()
        before, total0 = thread_cpu(pid), scale.ctld_cpu(pid)
        for i in range(first, last):
            r = run.slurm(["sbatch", "--parsable", *run.bulk[i]], check=False, timeout=300)
            if r.returncode != 0:
                raise scale.HarnessError(f"{run.config}: sbatch failed: {r.stderr.strip()}")
            run.bulk_ids.append(int(r.stdout.strip().split(";")[0]))
        if threads is not None:
            after, live = thread_cpu(pid), 0.0
            for name, (cpu, vol, invol) in after.items():
                b = before.get(name, (0.0, 0, 0))
                row = threads.setdefault(name, [0.0, 0, 0])
                row[0] += cpu - b[0]
                row[1] += vol - b[1]
                row[2] += invol - b[2]
                live += cpu - b[0]
            # Slurm serves each RPC on a thread of its own that has ended by now: the process'
            # CPU keeps what they took (their switches are gone with them)
            threads.setdefault("(ended threads)", [0.0, 0, 0])[0] += scale.ctld_cpu(pid) - total0 - live
    finally:
        os.kill(pid, signal.SIGSTOP)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def probe_rounds(runs, pids, first, rounds, probe_jobs):
    """`rounds` rounds of `probe_jobs` serial submissions per cluster from bulk job `first` on
    (the order alternating), perf recording the probes: each walk's duration (us) by
    (label, caller)."""
    durations = {(label, c): [] for label in runs for c in CALLERS}
    durations["threads"] = {label: {} for label in runs}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "walks.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-g", "-e", f"{GROUP}:*", "-p",
                                 ",".join(str(p) for p in pids), "-o", data],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(2)
        try:
            labels = list(runs)
            for n in range(rounds):
                lo = first + n * probe_jobs
                for label in (labels if n % 2 == 0 else labels[::-1]):
                    serial_block(runs[label], lo, lo + probe_jobs, durations["threads"][label])
        finally:
            for run in runs.values():
                os.kill(run.pid(), signal.SIGCONT)
            time.sleep(1)
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
            for run in runs.values():
                os.kill(run.pid(), signal.SIGSTOP)
        for pid, caller, seconds in walks(data):
            if pid in pids:
                durations[(pids[pid], caller)].append(seconds * 1e6)
    a, b = runs
    if not durations[(a, "submission")] or not durations[(b, "submission")]:
        raise ProbeError("no submission's walk recorded")
    return durations


def print_phase(runs, durations, when):
    a, b = runs
    print(when, flush=True)
    for caller in CALLERS:
        figures = {}
        for label in runs:
            d = durations[(label, caller)]
            if d:
                figures[label] = {p: pct(d, p) for p in (10, 50, 90)}
                print(f"  {caller:10} {label}: {len(d):5} walks, us p10 {figures[label][10]:6.0f} p50 "
                      f"{figures[label][50]:6.0f} p90 {figures[label][90]:6.0f} (mean {statistics.mean(d):.0f})",
                      flush=True)
        if len(figures) == 2:
            fa, fb = figures[a], figures[b]
            print(f"  {caller:10} {b}/{a}: p10 {fb[10] / fa[10]:.3f} p50 {fb[50] / fa[50]:.3f} "
                  f"p90 {fb[90] / fa[90]:.3f}", flush=True)
    # Which of slurmctld's threads ran during the serial submissions: CPU ms per submission
    # and context switches (voluntary/involuntary) per submission, by thread name.
    n = len(durations[(a, "submission")]) or 1
    threads = durations["threads"]
    names = sorted(set(threads[a]) | set(threads[b]), key=lambda t: -max(threads[a].get(t, [0])[0],
                                                                       threads[b].get(t, [0])[0]))
    print(f"  slurmctld's threads in the blocks, per submission: CPU ms, switches vol/invol ({a} | {b})")
    for t in names:
        ra, rb = threads[a].get(t, [0.0, 0, 0]), threads[b].get(t, [0.0, 0, 0])
        if ra[0] or rb[0] or ra[1] or rb[1]:
            print(f"    {t:16} {1000 * ra[0] / n:7.3f} {ra[1] / n:6.2f}/{ra[2] / n:5.2f} | "
                  f"{1000 * rb[0] / n:7.3f} {rb[1] / n:6.2f}/{rb[2] / n:5.2f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--accounts", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--block", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--probe-jobs", type=int, default=50)
    ap.add_argument("--preemptions", type=int, default=0,
                    help="owner jobs both clusters run at once after the first rounds, then as many rounds again")
    ap.add_argument("--pair", default="stock,ours")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--ours-conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port-offset", type=int, default=14000)
    args = ap.parse_args(argv)
    pair = tuple(args.pair.split(","))
    if len(pair) != 2 or any(c not in submit_rate.CONFIGS for c in pair):
        ap.error("--pair takes two of stock,ours")
    if args.jobs < 100 or args.block < 100 or args.rounds < 1 or args.probe_jobs < 1:
        ap.error("--jobs and --block must be >= 100, --rounds and --probe-jobs >= 1")
    if args.preemptions < 0:
        ap.error("--preemptions must be >= 0")
    if os.geteuid() != 0:
        ap.error("needs root (slurmd, perf probe)")
    layout = scale.Layout(args.nodes, args.accounts)
    if args.preemptions and len(layout.owner_nodes) < 1:
        ap.error("--preemptions needs owned nodes besides the probe nodes: more --nodes")
    phase_jobs = args.rounds * args.probe_jobs
    extra = phase_jobs * (2 if args.preemptions else 1)
    bulk = scale.bulk_stream(layout, args.jobs + extra, args.seed)
    owners = scale.owner_stream(layout, args.preemptions)
    # scale.Run counts the bulk jobs at the owner traffic's end against its --jobs: the first
    # phase's probe jobs are there by then
    at_owners = args.jobs + (phase_jobs if args.preemptions else 0)
    runs = {}
    for slot, (label, config) in enumerate(zip(submit_rate.labels_of(pair), pair)):
        conf = args.conf + (args.ours_conf if config == "ours" else [])
        sargs = scale.parse_args(["--nodes", str(args.nodes), "--jobs", str(at_owners), "--scales",
                                  str(at_owners), "--accounts", str(args.accounts),
                                  "--quiet-jobs", str(args.jobs + extra - at_owners),
                                  "--preemptions", str(args.preemptions), "--port-offset",
                                  str(submit_rate.ours_offset(args) if slot else args.port_offset), "--keep",
                                  *(f"--conf={line}" for line in conf)])
        runs[label] = scale.Run(config, sargs, layout, bulk, owners)
    try:
        if not submit_rate.start_stopped(runs, "walk_cost"):
            return 2
        submit_rate.alternate(runs, 0, args.jobs, args.block, False)
        for label, run in runs.items():
            os.kill(run.pid(), signal.SIGCONT)
            try:
                run.wait_bulk_count(args.jobs)
            finally:
                os.kill(run.pid(), signal.SIGSTOP)
        binaries = {os.path.realpath(f"/proc/{run.pid()}/exe") for run in runs.values()}
        if len(binaries) != 1:
            raise ProbeError(f"the two slurmctlds run different binaries: {sorted(binaries)}")
        add_probes(binaries.pop())
        pids = {run.pid(): label for label, run in runs.items()}
        before = probe_rounds(runs, pids, args.jobs, args.rounds, args.probe_jobs)
        after = None
        if args.preemptions:
            print(f"owner traffic: {args.preemptions} owner jobs in each cluster at once", file=sys.stderr,
                  flush=True)
            submit_rate.owner_traffic(runs)
            for run in runs.values():
                submit_rate.settle(run)
            after = probe_rounds(runs, pids, args.jobs + phase_jobs, args.rounds, args.probe_jobs)
    except (scale.HarnessError, ProbeError, ClusterError) as e:
        print(f"walk_cost: {getattr(e, 'cause', e)}", file=sys.stderr)
        return 2
    finally:
        remove_probes()
        submit_rate.stop_and_remove(runs)
    print_phase(runs, before, f"at {args.jobs} jobs{', before the owner traffic' if after else ''}:")
    if after is not None:
        (a, s), (b, o) = ((label, run.result) for label, run in runs.items())
        print(f"owner traffic (both clusters at once): {args.preemptions} owner jobs each, preemptions {a} "
              f"{s['preemptions']} {b} {o['preemptions']}; bulk jobs running {a} {s['running_at_end']} "
              f"{b} {o['running_at_end']}", flush=True)
        print_phase(runs, after, f"at {args.jobs + phase_jobs} jobs, after the owner traffic:")
    return 0


if __name__ == "__main__":
    sys.exit(main())
