#!/usr/bin/python3
"""What the SPANK plugin costs each sbatch in CPU: held submissions with and without the
plugin, in the same run on the real test cluster (test/cluster/cluster.py).

bench/submit_rate.py's two clusters share this 2-vCPU machine with their submitters, whose
sbatch processes take the larger part of its CPU (3.9-4.6 s per 1000 jobs at 20k jobs, against
slurmctld's 2-4.6): whatever each sbatch pays for the plugin is paid out of the throughput
that bench measures. This one measures it alone. One cluster with our plugins; each sample is
`sbatch -H --qos=standby --requeue -p public,standby` of one job (held: nothing runs, the queue
only grows), its CPU (user + system) from wait4's rusage, not its wall time, which waits for
slurmctld. Three modes, switched by replacing the cluster's plugstack.conf (rename,
so no reader sees half a file), which every sbatch reads afresh:
  off     no SPANK plugin;
  options a C plugin that registers two options with the same names and texts as ours and
          does nothing else (compiled here from OPTIONS_PLUGIN): what Slurm itself spends on
          any SPANK plugin with options;
  ours    etc/plugstack.conf.in's line (spank_checkpoint.so by its absolute path).
Each round takes one sample of each mode, in an order shuffled per round (seeded; --order
rotate rotates it instead: what runs just before a sample moves it by about as much as the
figures measured here, and a fixed rotation turns that into a bias); a sample is paired with
those of its round. Printed: the median without a plugin, the medians of the paired
differences against it and their 95 % bootstrap intervals.

--usage samples `sbatch --usage` instead of a submission: Slurm reads slurm.conf and
plugstack.conf, loads the plugin, registers its options and prints the usage, with no request
to slurmctld: what loading the plugin costs sbatch, without the submission's round trip, whose
samples spread more.

    /usr/bin/python3 bench/spank_sbatch_overhead.py [--rounds 400] [--usage] [--order shuffle|rotate]
        [--seed N] [--port-offset N]

Exit 2 with no figure when the cluster cannot start or a submission fails.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import Cluster, ClusterError, _write_atomically, cancel_all  # noqa: E402
from spank_srun_overhead import bootstrap_interval  # noqa: E402

OPTIONS_PLUGIN = r"""
#include <stddef.h>
#include <slurm/spank.h>
SPANK_PLUGIN(checkpoint, 1);
static int ok(int val, const char *optarg, int remote) { return 0; }
static struct spank_option opts[] = {
  {"checkpoint-signal", "SIG[@SECONDS]", "Signal that asks the job to checkpoint before it is "
   "preempted or reaches its time limit, SECONDS before the kill (default: the site's, USR1 "
   "and the QOS grace)", 1, 0, ok},
  {"checkpoint-dir", "PATH", "Checkpoint directory: created for the job if missing, exported to "
   "every task as SLURM_CHECKPOINT_DIR; the preemption notice is written there", 1, 0, ok},
};
int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR) {
    spank_option_register(sp, &opts[0]);
    spank_option_register(sp, &opts[1]);
  }
  return 0;
}
"""

SUBMISSION = ["-H", "--qos=standby", "--requeue", "-p", "public,standby", "--time=60", "-o", "/dev/null"]


def sbatch_cpu_ms(cluster, script, usage_only=False):
    """One held submission (or `sbatch --usage`); the sbatch process' CPU in ms."""
    argv = ["sbatch", "--usage"] if usage_only else ["sbatch", "--parsable", *SUBMISSION, str(script)]
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cluster.jobs)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.execvpe(argv[0], argv, cluster.env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        r = subprocess.run(argv, env=cluster.env, cwd=cluster.jobs, capture_output=True, text=True)
        raise ClusterError(f"{' '.join(argv)} failed: {(r.stderr or r.stdout).strip()}")
    return (usage.ru_utime + usage.ru_stime) * 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=400, help="rounds of the three modes")
    ap.add_argument("--usage", action="store_true",
                    help="sample `sbatch --usage` (plugin load and options, no submission)")
    ap.add_argument("--order", choices=("shuffle", "rotate"), default="shuffle",
                    help="the modes' order in each round")
    ap.add_argument("--seed", type=int, default=1, help="seed of the shuffled orders")
    ap.add_argument("--port-offset", type=int,
                    default=int(os.environ.get("SLURM_PREEMPT_PORT_OFFSET", "0")))
    args = ap.parse_args()
    cluster = Cluster(with_plugins=True, port_offset=args.port_offset)
    samples = {}
    try:
        cluster.start()
        plugstack = cluster.dir / "etc" / "plugstack.conf"
        options = cluster.dir / "options_spank.so"
        src = cluster.dir / "options_spank.c"
        src.write_text(OPTIONS_PLUGIN)
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(options), str(src)], check=True)
        text = {"off": "", "options": f"required {options}\n", "ours": plugstack.read_text()}
        modes = list(text)
        samples = {m: [] for m in modes}
        script = cluster.jobs / "held.sh"
        script.write_text("#!/bin/bash\ntrue\n")
        script.chmod(0o755)

        def switch(mode):
            _write_atomically(plugstack, text[mode])

        for mode in modes:  # warm caches (binaries, munge, the plugins)
            switch(mode)
            for _ in range(5):
                sbatch_cpu_ms(cluster, script, args.usage)
        rng = random.Random(args.seed)
        for i in range(args.rounds):
            order = modes[i % len(modes):] + modes[:i % len(modes)]
            if args.order == "shuffle":
                rng.shuffle(order)
            for mode in order:
                switch(mode)
                samples[mode].append(sbatch_cpu_ms(cluster, script, args.usage))
        switch("ours")
        cancel_all(cluster, timeout=120)
    except (ClusterError, subprocess.CalledProcessError) as e:
        print(f"spank_sbatch_overhead: {getattr(e, 'cause', e)}", file=sys.stderr)
        return 2
    finally:
        cluster.stop()
    off = samples["off"]
    what = "sbatch --usage" if args.usage else "sbatch -H of one standby job"
    print(f"{what}, CPU of the sbatch process (ms), {args.rounds} rounds ({args.order}d order), "
          "same cluster, same run; added = median of paired differences against no plugin, [95% interval]:")
    cols = []
    for mode, label in (("options", "a C plugin with the same two options"),
                        ("ours", "ours (etc/plugstack.conf.in)")):
        diffs = [a - b for a, b in zip(samples[mode], off)]
        lo, hi = bootstrap_interval(diffs)
        cols.append(f"{label} {statistics.median(diffs):+.3f} [{lo:+.3f} .. {hi:+.3f}]")
    print(f"  no plugin {statistics.median(off):.3f}; added by " + "; ".join(cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
