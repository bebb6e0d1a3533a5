#!/usr/bin/python3
"""slurm-preempt demo: a real six-node Slurm cluster on this machine with the plugins loaded.

Run through scripts/demo (which installs and builds first). Prints what happened in a readable
form and tears everything down, also after a failure.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import Cluster, ClusterError, poll  # noqa: E402

LOAD_LINE = re.compile(r"((?:job_submit/preempt|priority/fairshare|spank/checkpoint): loaded .*)")


def section(title):
    print(f"\n== {title}")


def show_load_lines(cluster):
    section("plugins loaded by the daemons")
    for log in ["slurmctld"] + [f"slurmd-n{i}" for i in range(1, 7)]:
        for line in sorted(set(LOAD_LINE.findall(cluster.log(log)))):
            print(f"  {log:10} {line}")


def run_jobs(cluster):
    section("a batch job and a two-node GPU step, submitted by alice")
    batch = cluster.sbatch(["-N1", "-J", "hello"], "hostname\necho CUDA_VISIBLE_DEVICES=none\n",
                           user="alice")
    gpu = cluster.sbatch(["-N2", "-n2", "--gres=gpu:2", "-J", "gpu-step"],
                         "srun -l bash -c 'echo $(hostname -s) $SLURMD_NODENAME "
                         "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES'\n", user="alice")
    print(f"  sbatch -N1 hello.sh                 -> job {batch}")
    print(f"  sbatch -N2 -n2 --gres=gpu:2 gpu.sh  -> job {gpu}")
    for job in (batch, gpu):
        cluster.wait_job_state(job, "COMPLETED", timeout=60)
    section(f"output of job {gpu}")
    for line in (cluster.jobs / f"{gpu}.out").read_text().splitlines():
        print(f"  {line}")
    return batch, gpu


def show_accounting(cluster, jobs):
    section("sacct (through slurmdbd)")
    fields = ["JobID", "JobName", "User", "Account", "QOS", "Partition", "NodeList",
              "AllocTRES", "State", "ExitCode"]

    def visible(job):
        # slurmctld sends records to slurmdbd asynchronously: for a moment after a short job,
        # slurmdbd may hold a stand-in built from the steps (JobName "allocation", QOS
        # "Unknown") until the job's own start record lands. Wait for the complete record.
        rows = cluster.sacct(job, fields)
        done = rows and all(r["State"] == "COMPLETED" for r in rows)
        complete = rows and rows[0]["QOS"] not in ("", "Unknown")
        return rows if done and complete else None

    rows = []
    for job in jobs:
        rows += poll(lambda j=job: visible(j), 30, f"job {job} in sacct")
    widths = [max(len(f), *(len(r[f]) for r in rows)) for f in fields]
    fmt = "  " + "  ".join(f"{{:{w}}}" for w in widths)
    print(fmt.format(*fields))
    for r in rows:
        print(fmt.format(*(r[f] for f in fields)))


def main():
    cluster = Cluster(with_plugins=True)
    try:
        section("starting munge, MariaDB, slurmdbd, slurmctld and six slurmd")
        cluster.start()
        print(f"  up in {cluster.startup_seconds:.1f} s; SLURM_CONF={cluster.conf}")
        print("  " + cluster.run(["sinfo", "-o", "%P %D %t %N %G"]).stdout.rstrip()
              .replace("\n", "\n  "))
        show_load_lines(cluster)
        jobs = run_jobs(cluster)
        show_accounting(cluster, jobs)
        print("\ndemo finished: plugins loaded, jobs ran unchanged, accounting recorded them.")
        return 0
    except ClusterError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1
    finally:
        section("tearing down")
        cluster.stop()
        print(f"  down in {cluster.teardown_seconds:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
