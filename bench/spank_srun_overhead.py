#!/usr/bin/python3
"""What the SPANK plugin adds to a step launch: `srun -n1 true`, with and without the plugin,
in the same run on the real test cluster (test/cluster/cluster.py).

One cluster with our plugins. Allocations are held by jobs that sleep, so that only step
launches are timed (no scheduling, no job accounting):
  plain     a normal job on n2:                   the plugin only registers its options
  managed   a standby GPU job on n1 (gres gpu:1): the step inherits the checkpoint promise,
                                                  the plugin exports it and starts the sentinel
Each sample is `srun --jobid=J --overlap -n1 true` as alice, timed from fork to exit. The
plugin is switched on and off by replacing the cluster's plugstack.conf (rename, so no reader
sees half a file), which srun and every slurmstepd read afresh at each launch. Four modes:
no plugin; a no-op SPANK plugin (compiled here from NOOP_PLUGIN: what Slurm itself spends on
having any SPANK plugin); ours as etc/plugstack.conf.in names it (by its absolute path); ours
named by file name alone (spank_checkpoint.so, looked up in PluginDir).

Each exited slurmstepd is reaped after every round (unreaped, thousands of them slowed launches
from 35 to 140 ms); step launches also get slower as a job accumulates steps, so each holder
job serves --per-holder rounds and is then replaced. Each sample is paired
with its neighbours of the other modes in the same round (the order rotates). Printed per
kind: the median without a plugin, the medians of the paired differences against it (the
estimates), and their 95 % bootstrap intervals (what the noise of this machine allows one to
claim).
Issue goal: <= 0.5 ms added to the median.

    /usr/bin/python3 bench/spank_srun_overhead.py [--rounds 400] [--per-holder 50] [--port-offset N]
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import Cluster, _write_atomically, poll, qos_sync, reap_orphans  # noqa: E402

NOOP_PLUGIN = r"""
#include <slurm/spank.h>
SPANK_PLUGIN(noop, 1);
int slurm_spank_init(spank_t sp, int ac, char **av) { return 0; }
int slurm_spank_task_init(spank_t sp, int ac, char **av) { return 0; }
"""

HOLDERS = {
    "plain": ["-w", "n2"],
    "managed": ["-w", "n1", "--qos=standby", "-p", "standby", "--gres=gpu:1"],
}


def hold(cluster, args):
    """A job that keeps an allocation while the steps are timed; returns its id."""
    jobid = cluster.sbatch(["-n1", *args], "sleep 3600\n", user="alice")
    poll(lambda: cluster.job_state(jobid) == "RUNNING", 60, f"job {jobid} to run")
    return jobid


def timed(cluster, jobid):
    argv = ["runuser", "-u", "alice", "--", "srun", f"--jobid={jobid}", "--overlap", "-n1", "true"]
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=cluster.env, cwd=cluster.jobs, capture_output=True, text=True)
    took = (time.perf_counter() - t0) * 1000.0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr.strip()}")
    return took


def bootstrap_interval(diffs, rounds=2000, seed=1):
    """95 % interval of the median of the paired differences."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
    return meds[int(0.025 * rounds)], meds[int(0.975 * rounds) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=400, help="rounds of the four modes per kind")
    ap.add_argument("--per-holder", type=int, default=50, help="rounds per holder job")
    ap.add_argument("--port-offset", type=int,
                    default=int(os.environ.get("SLURM_PREEMPT_PORT_OFFSET", "0")))
    args = ap.parse_args()
    cluster = Cluster(with_plugins=True, port_offset=args.port_offset)
    cluster.start()
    plugstack = cluster.dir / "etc" / "plugstack.conf"
    noop = cluster.dir / "noop_spank.so"
    src = cluster.dir / "noop_spank.c"
    src.write_text(NOOP_PLUGIN)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(noop), str(src)], check=True)
    text = {"off": "", "noop": f"required {noop}\n", "on": plugstack.read_text(),
            "name": "required spank_checkpoint.so\n"}
    modes = list(text)

    def switch(mode):
        _write_atomically(plugstack, text[mode])

    samples = {(k, m): [] for k in HOLDERS for m in text}
    try:
        qos_sync(cluster)
        for i in range(args.rounds):
            if i % args.per_holder == 0:
                switch("on")
                if i:
                    cluster.run(["scancel", *map(str, jobs.values())])
                jobs = {kind: hold(cluster, a) for kind, a in HOLDERS.items()}
                for kind, jobid in jobs.items():  # warm caches (binaries, munge)
                    for mode in modes:
                        switch(mode)
                        timed(cluster, jobid)
            order = modes[i % len(modes):] + modes[:i % len(modes)]
            if (i // len(modes)) % 2:
                order.reverse()
            for kind, jobid in jobs.items():
                for mode in order:
                    switch(mode)
                    samples[(kind, mode)].append(timed(cluster, jobid))
            # Every step leaves an exited slurmstepd, reparented to this process (the cluster
            # makes it a subreaper): unreaped, they slow every /proc scan and every launch.
            reap_orphans()
        switch("on")
    finally:
        cluster.stop()
    print(f"srun --overlap -n1 true inside a held allocation, {args.rounds} rounds per kind, "
          f"{args.per_holder} rounds per holder job, same cluster, same run (ms; added = median "
          "of paired differences against no plugin, [95% interval]):")
    for kind in HOLDERS:
        off = samples[(kind, "off")]
        cols = []
        for mode, label in (("noop", "a no-op plugin"), ("on", "ours by absolute path (etc/plugstack.conf.in)"),
                            ("name", "ours by file name")):
            diffs = [a - b for a, b in zip(samples[(kind, mode)], off)]
            lo, hi = bootstrap_interval(diffs)
            cols.append(f"{label} {statistics.median(diffs):+5.2f} [{lo:+.2f} .. {hi:+.2f}]")
        print(f"  {kind:8s} no plugin {statistics.median(off):6.2f}; added by " + "; ".join(cols))
    print("  goal: spank/checkpoint adds <= 0.5 ms")


if __name__ == "__main__":
    main()
