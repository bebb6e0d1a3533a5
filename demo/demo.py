#!/usr/bin/python3
"""slurm-preempt demo: a real six-node Slurm cluster on this machine with the plugins loaded.

Run through scripts/demo (which installs and builds first). Prints what happened in a readable
form and tears everything down, also after a failure.
"""

import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "cluster"))
from cluster import (OWNED_NODES, PUBLIC_NODES, RUNAI_POLICY, RUNAI_WALLTIMES, SITE_POLICY,  # noqa: E402
                     UNTIL_RELEASED, Cluster, ClusterError, apply_policy, build_dir, cancel_all,
                     expand_nodes, job_table, poll, release)

PREEMPTCTL = build_dir() / "tools" / "preemptctl" / "preemptctl"
# Where the pictures go (the cluster's own directory is removed at the end).
OUT_DIR = Path(os.environ.get("SLURM_PREEMPT_DEMO_OUT", Path(__file__).resolve().parent / "out"))

LOAD_LINE = re.compile(
    r"((?:job_submit/preempt|priority/fairshare|preempt/quota|spank/checkpoint): loaded .*)")


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


DEMO_GRACE_LINE = "    grace: 0               # the demo's standby jobs are preempted at once\n"


def install_demo_policy(cluster):
    """The site policy, with standby's grace 0 so that timestep 3 takes seconds, not a minute."""
    site = SITE_POLICY.read_text().splitlines(keepends=True)
    qos_at = site.index("qos:\n")
    standby_at = site.index("  standby:\n", qos_at)
    grace_at = next(i for i in range(standby_at, len(site)) if site[i].startswith("    grace: "))
    site[grace_at] = DEMO_GRACE_LINE
    apply_policy(cluster, "".join(site))
    poll(lambda: cluster.run(["sacctmgr", "-nP", "show", "qos", "standby", "format=GraceTime"]).stdout.strip()
         == "00:00:00", 20, "qos standby to have grace 0")


def placement(cluster):
    """(node -> job label, queued job labels, census) of the jobs slurmctld holds now."""
    on_node, waiting = {}, []
    counts = {"public on public": 0, "public on owned": 0, "owner on owned": 0, "queued": 0, "other": 0}
    for jobid, job in sorted(job_table(cluster).items()):
        label = job["name"]
        restarts = cluster.run(["scontrol", "-o", "show", "job", str(jobid)]).stdout
        if re.search(r"\bRestarts=[1-9]", restarts):
            label += " (requeued)"
        if job["state"] == "PENDING":
            waiting.append(label)
            counts["queued"] += 1
        elif job["state"] == "RUNNING":
            nodes = expand_nodes(job["nodes"])
            for node in nodes:
                on_node[node] = label
            owned = set(nodes) <= set(OWNED_NODES)
            kind = "owner" if job["user"] == "carol" else "public"
            key = f"{kind} on {'owned' if owned else 'public'}"
            counts[key if key in counts else "other"] += 1
        else:
            counts["other"] += 1
    return on_node, waiting, counts


def show_timestep(cluster, title, expected, timeout):
    """Wait until the cluster settles into the seed's counts, then print its table."""
    want = {"public on public": 0, "public on owned": 0, "owner on owned": 0, "queued": 0, "other": 0,
            **expected}
    try:
        on_node, waiting, _ = poll(lambda: (lambda r: r if r[2] == want else None)(placement(cluster)),
                                   timeout, f"{title}: {expected}", interval=0.5)
    except ClusterError:
        on_node, waiting, counts = placement(cluster)
        print(f"  (did not settle within {timeout} s: expected {want}, have {counts})")
    section(title)
    rows = max(len(OWNED_NODES), len(PUBLIC_NODES), len(waiting))
    private = [f"{n}: {on_node.get(n, 'Idle')}" for n in OWNED_NODES]
    public = [f"{n}: {on_node.get(n, 'Idle')}" for n in PUBLIC_NODES]
    width = max(len(x) for x in ["Private", "Public", *private, *public]) + 3
    print(f"  {'Private':{width}}{'Public':{width}}Queued")
    for i in range(rows):
        cells = [private[i] if i < len(private) else "", public[i] if i < len(public) else "",
                 waiting[i] if i < len(waiting) else ""]
        print(f"  {cells[0]:{width}}{cells[1]:{width}}{cells[2]}".rstrip())


def run_timesteps(cluster):
    """The seed's example (shared/seeds/cac-owner-public-preemption.txt): 2 public nodes
    (n1-n2) and 4 private ones (n3-n6; chem owns n3-n4). Every job takes a whole node and runs
    until the demo releases it. Public jobs: alice, sbatch --qos=standby --requeue --exclusive
    -N1, no partition (job_submit/preempt sends them to public,standby). Private jobs: carol
    (account chem), sbatch --exclusive -N1, no partition and no QOS (sent to chem, QOS owner)."""
    section("owner and public nodes: the seed's four timesteps (standby grace 0 for the demo)")
    install_demo_policy(cluster)
    since = moment()
    public_args = ["--qos=standby", "--requeue", "--exclusive", "-N1", "--time=30"]
    public = {i: None for i in range(1, 9)}

    def submit_public(*numbers):
        for i in numbers:
            public[i] = cluster.sbatch([*public_args, "-J", f"PublicJob{i}"], UNTIL_RELEASED, user="alice")

    submit_public(1, 2)
    show_timestep(cluster, "timestep 1: 2 public jobs are submitted; the public nodes have room",
                  {"public on public": 2}, 30)
    submit_public(*range(3, 9))
    show_timestep(cluster, "timestep 2: 6 more public jobs; 4 spill onto the idle private nodes, 2 wait",
                  {"public on public": 2, "public on owned": 4, "queued": 2}, 30)
    private = [cluster.sbatch(["--exclusive", "-N1", "--time=30", "-J", f"PrivateJob{i}"], UNTIL_RELEASED,
                              user="carol") for i in (1, 2)]
    show_timestep(cluster, "timestep 3: chem submits 2 private jobs; the public jobs on n3-n4 are "
                  "requeued", {"public on public": 2, "public on owned": 2, "owner on owned": 2, "queued": 4}, 45)
    release(cluster, *private, public[1], public[2])
    show_timestep(cluster, "timestep 4: the private jobs and PublicJob1-2 end; the queued public jobs "
                  "take the public nodes, then the free private ones",
                  {"public on public": 2, "public on owned": 4}, 60)
    release(cluster, *(j for j in public.values() if j))
    return since, moment(1)


# A training job that saves on the checkpoint signal and exits (it is requeued and resumes).
TRAINING = """\
trap 'echo "checkpoint saved $(date +%s)"; exit 0' USR1
echo "training on $SLURM_JOB_NODELIST, restart ${SLURM_RESTART_COUNT:-0}"
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.2; done
"""


def show_runai_step(cluster, title, settled, timeout=30):
    """Waits until `settled()` holds, then prints the jobs and `preemptctl quotas`."""
    try:
        poll(settled, timeout, title, interval=0.5)
    except ClusterError:
        print(f"  (did not settle within {timeout} s)")
    section(title)
    out = cluster.run(["squeue", "-h", "-o", "%j|%a|%q|%T|%b|%D|%N|%r"]).stdout
    fmt = "  {:<20}{:<11}{:<13}{:<9}{:<16}{:<7}{}"
    print(fmt.format("job", "project", "class (QOS)", "state", "GPUs per node", "nodes", "nodelist/reason"))
    for line in sorted(out.splitlines()):
        name, account, qos, state, tres, nodes, nodelist, reason = line.split("|")
        where = nodelist if state == "RUNNING" else reason
        print(fmt.format(name, account, qos, state, tres.replace("gres:gpu:", ""), nodes, where))
    quotas = cluster.run([str(build_dir() / "tools" / "preemptctl" / "preemptctl"), "quotas",
                          "--policy", str(cluster.dir / "etc" / "preempt.yaml")]).stdout
    print("  preemptctl quotas:\n    " + quotas.rstrip().replace("\n", "\n    "))


def run_runai_steps(cluster):
    """The Run:ai seed (shared/seeds/runai-preemption-exercise.txt) with PreemptType=preempt/quota:
    the node pool is partition pool (n1-n2, 2 nodes x 4 GPUs); project-a (user erin) and
    project-b (user frank) are Slurm accounts with a 4-GPU quota each; classes are QOS."""
    section("quotas and priority classes: the Run:ai seed's steps (grace 5 s for the demo)")
    cancel_all(cluster)
    apply_policy(cluster, RUNAI_POLICY, RUNAI_WALLTIMES)
    since = moment(1)  # after the owner/public scenario's last job was cancelled
    state = lambda j: cluster.job_state(j)  # noqa: E731
    train = cluster.sbatch(["-A", "project-a", "-p", "pool", "--qos=train", "-N2", "--gres=gpu:4",
                            "--requeue", "--open-mode=append", "-J", "large-training-job"], TRAINING,
                           user="erin")
    show_runai_step(cluster, "step 1: project-a's 8-GPU training job (quota 4) runs on the idle pool: "
                    "8/4, over quota", lambda: state(train) == "RUNNING")
    jupyter = cluster.sbatch(["-A", "project-b", "-p", "pool", "--qos=interactive", "-N1", "--gres=gpu:4",
                              "-J", "jupyter-workspace"], UNTIL_RELEASED, user="frank")
    show_runai_step(cluster, "step 3: project-b asks for 4 GPUs within its quota: the training job "
                    "gets the checkpoint signal, saves and is requeued; the workspace runs",
                    lambda: state(jupyter) == "RUNNING" and state(train) == "PENDING")
    saved = [line for line in (cluster.jobs / f"{train}.out").read_text().splitlines() if "checkpoint" in line]
    print(f"  large-training-job's output: {saved[0] if saved else '(no checkpoint line)'}")
    # Let the workspace run a while: a requeued job may start again only cred_expire (10 s
    # on this cluster) after its requeue.
    time.sleep(11)
    release(cluster, jupyter)
    show_runai_step(cluster, "step 5: the workspace ends; the training job resumes by itself with 8 GPUs",
                    lambda: state(train) == "RUNNING")
    release(cluster, train)
    cancel_all(cluster)
    return since, moment(1)


def moment(ahead=0):
    """Now (plus `ahead` seconds), as sacct -S and -E take it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + ahead))


def records_settled(cluster, since, until):
    """Whether slurmdbd holds every run of the range as ended (it records ends asynchronously)."""
    r = cluster.run(["sacct", "-a", "-X", "-D", "-n", "-P", "-S", since, "-E", until, "-o", "State"],
                    check=False)
    states = r.stdout.split()
    return r.returncode == 0 and states and not {"RUNNING", "PENDING", "SUSPENDED"} & set(states)


def draw_report(cluster, name, title, since, until):
    """`preemptctl report --plot` over one scenario's range: its table, and where its pictures are."""
    section(f"preemptctl report --plot: {title}")
    try:
        poll(lambda: records_settled(cluster, since, until), 60, f"slurmdbd's records of {title}")
    except ClusterError:
        print("  (slurmdbd still shows runs going; they are drawn up to now)")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    paths = [OUT_DIR / f"{name}.svg", OUT_DIR / f"{name}.png"]
    for path in paths:
        r = cluster.run([str(PREEMPTCTL), "report", "--since", since, "--until", until, "--plot", str(path)],
                        check=False)
        if r.returncode != 0:
            print(f"  preemptctl report --plot {path} failed: {r.stderr.strip()}")
            return
    print(f"  preemptctl report --since {since} --until {until} --plot {paths[0].name}:")
    print("    " + r.stdout.rstrip().replace("\n", "\n    "))
    for path in paths:
        print(f"  picture: {path}")


def main():
    # SLURM_PREEMPT_PORT_OFFSET=N moves every port by N, as for the integration tests.
    cluster = Cluster(with_plugins=True, port_offset=int(os.environ.get("SLURM_PREEMPT_PORT_OFFSET", "0")))
    try:
        section("starting munge, MariaDB, slurmdbd, slurmctld and six slurmd")
        cluster.start()
        print(f"  up in {cluster.startup_seconds:.1f} s; SLURM_CONF={cluster.conf}")
        print("  " + cluster.run(["sinfo", "-o", "%P %D %t %N %G"]).stdout.rstrip()
              .replace("\n", "\n  "))
        show_load_lines(cluster)
        jobs = run_jobs(cluster)
        show_accounting(cluster, jobs)
        cac = run_timesteps(cluster)
        runai = run_runai_steps(cluster)
        draw_report(cluster, "owner-public", "the owner/public scenario", *cac)
        draw_report(cluster, "runai-quotas", "the Run:ai scenario", *runai)
        print("\ndemo finished: plugins loaded, jobs ran unchanged, accounting recorded them; "
              "public jobs spilled onto idle owned nodes and the owner took them back; a project "
              "over its quota gave its GPUs back to a project under its quota and got them again; "
              f"preemptctl report drew both (pictures in {OUT_DIR}).")
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
