#!/usr/bin/python3
"""What the SPANK plugin adds to a step launch: `srun -n1 true`, with and without the plugin,
in the same run on the real test cluster (test/cluster/cluster.py).

One cluster with our plugins; the plugin is switched on and off by rewriting the cluster's
plugstack.conf, which srun and every slurmstepd read afresh at each launch. Rounds alternate
the order (on, off / off, on) so drift hits both alike. Two kinds of step:
  plain     srun -n1 -w n1 true                           (a normal job: the plugin only
                                                           registers its options)
  managed   srun -n1 -w n1 --qos=standby -p standby --gres=gpu:1 true
                                                          (a standby GPU job: the plugin
                                                           exports the environment and starts
                                                           the sentinel)
Each srun also allocates its job, so absolute times are dominated by Slurm; the difference of
the medians is the plugin's cost. Issue goal: <= 0.5 ms added to the median.

    /usr/bin/python3 bench/spank_srun_overhead.py [--rounds 10] [--per-round 10]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import Cluster  # noqa: E402

KINDS = {
    "plain": ["srun", "-n1", "-w", "n1", "true"],
    "managed": ["srun", "-n1", "-w", "n1", "--qos=standby", "-p", "standby",
                "--gres=gpu:1", "true"],
}


def timed(cluster, argv):
    t0 = time.perf_counter()
    cluster.run(argv, user="alice")
    return (time.perf_counter() - t0) * 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=10)
    args = ap.parse_args()
    cluster = Cluster(with_plugins=True)
    cluster.start()
    plugstack = cluster.dir / "etc" / "plugstack.conf"
    with_plugin = plugstack.read_text()
    try:
        for argv in KINDS.values():  # warm caches (binaries, munge, the dbd)
            for _ in range(3):
                timed(cluster, argv)
        samples = {(k, m): [] for k in KINDS for m in ("on", "off")}
        for r in range(args.rounds):
            for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                plugstack.write_text(with_plugin if mode == "on" else "")
                for kind, argv in KINDS.items():
                    samples[(kind, mode)] += [timed(cluster, argv) for _ in range(args.per_round)]
        plugstack.write_text(with_plugin)
    finally:
        cluster.stop()
    n = args.rounds * args.per_round
    print(f"srun -n1 true, {n} launches per cell, same cluster, same run (ms):")
    for kind in KINDS:
        on = statistics.median(samples[(kind, "on")])
        off = statistics.median(samples[(kind, "off")])
        print(f"  {kind:8s} median without plugin {off:7.1f}  with plugin {on:7.1f}  "
              f"difference {on - off:+6.2f} ms  (ratio {on / off:.3f}; goal <= +0.5 ms)")


if __name__ == "__main__":
    main()
