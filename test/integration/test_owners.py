"""Issue 4, owner and public nodes, on the real six-node cluster.

n1-n2 are public (partition public, PriorityTier=2); n3-n4 belong to chem and n5-n6 to bio
(partitions chem, bio); partition standby spans n1-n6 with PriorityTier=1 and takes only
standby jobs. job_submit/preempt routes jobs that name no partition: owners' jobs to their own
nodes with the owner QOS, preemptible jobs to public,standby (public nodes first, then idle
owned nodes).

The module installs owner_policy() (standby grace 0: a preempted job is requeued or ended at
once) and syncs the QOS; the speed tests use a 5 s grace. At the end the site policy
etc/preempt.yaml is put back. Jobs run until released (cluster.release): every test cancels
its jobs. The cred_expire test starts a second cluster on SLURM_PREEMPT_PORT_OFFSET + 1000; the
bad-policy tests restart this cluster's slurmctld with the bad policy (Cluster.start_refused).
"""

import json
import os
import re
import time

import pytest
from conftest import PORT_OFFSET

from cluster import (CLUSTER_POLICY_SHAPE, PREEMPTCTL, policy_installed, OWNED_NODES, PUBLIC_NODES, SITE_POLICY, UNTIL_RELEASED,
                     Cluster, ClusterError, apply_policy, cancel_all, expand_nodes, hold_steady, job_info, job_table,
                     log_mark, parse_lock_stats, poll, process_start, queued, reconfigure, release, sacctmgr_qos, settled_runs,
                     try_sbatch, wait_log_after)

OWNER_POLICY_TEMPLATE = """\
version: 1
qos:
  standby:
    preemptible: true
    boost: 1000
    grace: {grace}s
    requeue: user
    min_runtime: 0
    limits:
      max_walltime: {standby_wall}m
      max_running_jobs_per_user: 20
      max_cpus_per_user: 64
      max_gpus_per_user: 64
  normal:
    preempts: [standby]
    limits:
      max_walltime: 180m
      max_running_jobs_per_user: 20
      max_cpus_per_user: 64
      max_gpus_per_user: 64
  owner:
    preempts: [standby]
"""


def owner_policy(grace=0):
    """The test policy with the given standby grace (s). The standby walltime (300 + grace
    minutes) tells when slurmctld has the synced QOS: assoc_mgr does not show GraceTime."""
    return OWNER_POLICY_TEMPLATE.format(grace=grace, standby_wall=300 + grace) + CLUSTER_POLICY_SHAPE, \
        {"standby": 300 + grace, "normal": 180}


PARTITION_REJECT = ("sbatch: error: partition chem holds chem's own nodes; other accounts may use "
                    "them only while idle, as preemptible jobs: submit with --qos=standby and "
                    "without --partition")
STANDBY_REJECT = ("sbatch: error: partition standby spans owned nodes and takes only preemptible "
                  "jobs: add --qos=standby, or use --partition=public")
OWNER_STANDBY_REJECT = ("sbatch: error: qos standby jobs are preemptible and cannot run in partition "
                        "chem, which is reserved for chem's jobs that preempt them; submit with "
                        "--partition=standby or without --partition")

WHOLE_NODE = ["--exclusive", "-N1", "--time=30"]
STANDBY = ["--qos=standby", "--requeue", *WHOLE_NODE]
# Ignores the signals a standby job is warned with: only the kill at the end of the grace ends it.
IGNORES_SIGNALS = """\
trap '' TERM USR1 USR2
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
while true; do sleep 1; done
"""
GRACE = 5  # s, for the speed tests


# --- helpers --------------------------------------------------------------------------------

def running_on(cluster, jobid, timeout=30):
    """Wait until the job runs; its node names."""
    cluster.wait_job_state(jobid, "RUNNING", timeout=timeout)
    return expand_nodes(job_info(cluster, jobid)["NodeList"])


def rejected(r):
    """The first stderr line of a refused sbatch; asserts it was refused with nothing else said."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and not r.stdout.strip(), r
    assert all(line.startswith("sbatch: error: Batch job submission failed:") for line in lines[1:]), lines
    return lines[0]


def census(cluster, owners=("carol", "dave")):
    """What the seed's tables count: running public jobs on public nodes, public and owner jobs on
    owned nodes, pending jobs; and jobs in any other state (completing, ...) by id."""
    counts = {"public on public": 0, "public on owned": 0, "owner on owned": 0,
              "owner on public": 0, "queued": 0}
    other = {}
    for jobid, job in job_table(cluster).items():
        if job["state"] == "PENDING":
            counts["queued"] += 1
        elif job["state"] == "RUNNING":
            nodes = set(expand_nodes(job["nodes"]))
            where = "owned" if nodes <= set(OWNED_NODES) else "public" if nodes <= set(PUBLIC_NODES) else "mixed"
            key = f"{'owner' if job['user'] in owners else 'public'} on {where}"
            counts[key] = counts.get(key, 0) + 1
        else:
            other[jobid] = job["state"]
    return counts, other


def wait_census(cluster, expected, timeout, what):
    """Poll until the census is exactly `expected` (other counts 0, no job in another state)."""
    want = {"public on public": 0, "public on owned": 0, "owner on owned": 0, "owner on public": 0,
            "queued": 0, **expected}
    seen = []

    def check():
        counts, other = census(cluster)
        seen.append((counts, other))
        return counts if counts == want and not other else None
    try:
        return poll(check, timeout, what, interval=0.5)
    except ClusterError:
        raise AssertionError(f"{what}: expected {want}, last census {seen[-1]}; jobs "
                             f"{job_table(cluster)}") from None


def starts(cluster, jobid):
    """(epoch, restart) of each run of an UNTIL_RELEASED / IGNORES_SIGNALS job, from its output."""
    text = (cluster.jobs / f"{jobid}.out").read_text() if (cluster.jobs / f"{jobid}.out").exists() else ""
    return [(float(m.group(1)), int(m.group(2))) for m in re.finditer(r"^start (\S+) restart=(\d+)", text, re.M)]


def wait_start(cluster, jobid, run, timeout):
    """Epoch at which run number `run` (0 = first) of the job started."""
    found = poll(lambda: len(starts(cluster, jobid)) > run, timeout,
                 f"job {jobid} to start run {run}", interval=0.2)
    assert found
    return starts(cluster, jobid)[run][0]


def fill_public(cluster, user="bob"):
    """Two whole-node normal jobs from a public user, on n1 and n2."""
    jobs = [cluster.sbatch(WHOLE_NODE, UNTIL_RELEASED, user=user) for _ in PUBLIC_NODES]
    assert sorted(n for j in jobs for n in running_on(cluster, j)) == PUBLIC_NODES
    return jobs


# --- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def owner_cluster(cluster):
    """The session cluster with owner_policy(grace 0) installed and synced; the site policy
    back afterwards."""
    with policy_installed(cluster, *owner_policy()):
        yield cluster


@pytest.fixture
def owners(owner_cluster):
    """owner_cluster with an empty queue before and after the test."""
    cancel_all(owner_cluster)
    yield owner_cluster
    cancel_all(owner_cluster)


# --- 1. routing -----------------------------------------------------------------------------

ROUTES = [  # (user, sbatch options, Partition, QOS, Requeue or None, AdminComment or None)
    ("carol", [], "chem", "owner", None, "slurm-preempt: qos (default)->owner; partition (default)->chem;"),
    ("dave", [], "bio", "owner", None, "slurm-preempt: qos (default)->owner; partition (default)->bio;"),
    ("carol", ["--qos=normal"], "chem", "normal", None, "slurm-preempt: partition (default)->chem;"),
    ("carol", ["-p", "public"], "public", "normal", None, None),
    ("carol", ["-p", "chem"], "chem", "normal", None, None),
    ("alice", ["--qos=standby"], "public,standby", "standby", "0",
     "slurm-preempt: partition (default)->public,standby; requeue off;"),
    ("alice", ["--qos=standby", "--requeue"], "public,standby", "standby", "1",
     "slurm-preempt: partition (default)->public,standby;"),
    ("bob", ["--qos=standby", "--no-requeue"], "public,standby", "standby", "0",
     "slurm-preempt: partition (default)->public,standby;"),
    ("carol", ["--qos=standby"], "public,standby", "standby", "0",
     "slurm-preempt: partition (default)->public,standby; requeue off;"),
    ("alice", [], "public", "normal", None, None),
]


@pytest.mark.parametrize("user,options,partition,qos,requeue,comment", ROUTES,
                         ids=[f"{u} {' '.join(o) or '(no options)'}" for u, o, *_ in ROUTES])
def test_routing_of_a_submission(owners, user, options, partition, qos, requeue, comment):
    jobid = owners.sbatch(["--hold", *options], UNTIL_RELEASED, user=user)
    info = job_info(owners, jobid)
    got = {"Partition": info["Partition"], "QOS": info["QOS"], "AdminComment": info.get("AdminComment") or None}
    want = {"Partition": partition, "QOS": qos, "AdminComment": comment}
    if requeue is not None:
        got["Requeue"], want["Requeue"] = info["Requeue"], requeue
    assert got == want, info


def test_owner_routing_is_logged(owners):
    mark = log_mark(owners)
    owners.sbatch(["--hold", "-J", "routed"], UNTIL_RELEASED, user="carol")
    uid = owners.run(["id", "-u", "carol"]).stdout.strip()
    wait_log_after(owners, mark, rf"job_submit/preempt: changed the submission of uid {uid} \(job name routed\): "
                                 r"qos \(default\)->owner; partition \(default\)->chem;")


@pytest.mark.parametrize("user,options,first_line", [
    ("alice", ["-p", "chem"], PARTITION_REJECT),
    ("alice", ["--qos=normal", "-p", "chem"], PARTITION_REJECT),
    ("dave", ["-p", "chem"], PARTITION_REJECT),
    ("alice", ["-p", "standby"], STANDBY_REJECT),
    ("bob", ["--qos=normal", "-p", "standby"], STANDBY_REJECT),
    ("carol", ["-p", "standby"], STANDBY_REJECT),
    ("alice", ["--qos=standby", "-p", "chem"], OWNER_STANDBY_REJECT),
], ids=["alice -p chem", "alice --qos=normal -p chem", "dave -p chem", "alice -p standby",
        "bob --qos=normal -p standby", "carol -p standby", "alice --qos=standby -p chem"])
def test_refused_submission_says_why_in_one_line(owners, user, options, first_line):
    assert rejected(try_sbatch(owners, options, user=user)) == first_line
    assert queued(owners, user) == []


def test_public_normal_job_pends_rather_than_use_owned_nodes(owners):
    fill_public(owners, user="alice")
    jobid = owners.sbatch(WHOLE_NODE, UNTIL_RELEASED, user="alice")
    hold_steady(owners, {jobid: "PENDING"}, 8)
    states = owners.node_states()
    assert all(states[n] == "idle" for n in OWNED_NODES), states
    assert job_info(owners, jobid)["Partition"] == "public"


# --- 2. spill onto idle owned nodes -----------------------------------------------------------

def test_standby_jobs_spill_onto_idle_owned_nodes_when_public_nodes_are_full(owners):
    fill_public(owners)
    jobs = [owners.sbatch(STANDBY, UNTIL_RELEASED, user="alice") for _ in OWNED_NODES]
    nodes = [n for j in jobs for n in running_on(owners, j)]
    assert sorted(nodes) == OWNED_NODES, {j: job_info(owners, j)["NodeList"] for j in jobs}
    for j in jobs:
        assert job_info(owners, j)["Partition"] == "standby"


# --- 3. owners reclaim their nodes ------------------------------------------------------------

def test_owner_jobs_preempt_standby_jobs_requeued_or_ended_as_asked(owners):
    fill_public(owners)
    flags = {"requeue": ["--requeue"], "no-requeue": ["--no-requeue"], "unset": [], "requeue-2": ["--requeue"]}
    victims = {name: owners.sbatch(["--qos=standby", *flag, *WHOLE_NODE], UNTIL_RELEASED, user="alice")
               for name, flag in flags.items()}
    placed = {name: running_on(owners, j) for name, j in victims.items()}
    assert sorted(n for nodes in placed.values() for n in nodes) == OWNED_NODES, placed

    reclaim = {user: [owners.sbatch(WHOLE_NODE, UNTIL_RELEASED, user=user) for _ in range(2)]
               for user in ("carol", "dave")}
    home = {"carol": ["n3", "n4"], "dave": ["n5", "n6"]}
    for user, jobs in reclaim.items():
        nodes = sorted(n for j in jobs for n in running_on(owners, j, timeout=60))
        assert nodes == home[user], (user, nodes)
        for j in jobs:
            info = job_info(owners, j)
            assert (info["Partition"], info["QOS"]) == ({"carol": "chem", "dave": "bio"}[user], "owner"), info

    for name in ("requeue", "requeue-2"):
        assert owners.wait_job_state(victims[name], "PENDING", timeout=30)
        poll(lambda n=name: job_info(owners, victims[n])["Restarts"] == "1", 20,
             f"job {victims[name]} ({name}) to count one restart")
    for name in ("no-requeue", "unset"):
        assert owners.wait_job_state(victims[name], "PREEMPTED", timeout=30) == "PREEMPTED"

    # Owner jobs are never preempted: public jobs of either kind wait, the owners keep running.
    assert not any("owner" in row["Preempt"].split(",") for row in sacctmgr_qos(owners).values())
    later = [owners.sbatch(STANDBY, UNTIL_RELEASED, user="bob"),
             owners.sbatch(WHOLE_NODE, UNTIL_RELEASED, user="alice")]
    steady = {j: "RUNNING" for jobs in reclaim.values() for j in jobs}
    steady.update({j: "PENDING" for j in later})
    steady.update({victims["requeue"]: "PENDING", victims["requeue-2"]: "PENDING"})
    hold_steady(owners, steady, 12)


def test_a_preemption_with_grace_0_is_noted_once_with_how_the_run_ended(owners):
    # Grace 0: Slurm requeues the standby job in the very call that preempts it; the watcher
    # never sees it in a grace, and is told by preempt/quota's grace-start event.
    since_epoch = int(time.time()) + 1
    poll(lambda: time.time() >= since_epoch, 3, "the next second", interval=0.05)
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since_epoch))
    victim = owners.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n3", "--exclusive", "-N1",
                            "--time=30", "--open-mode=append"], UNTIL_RELEASED, user="alice")
    started = wait_start(owners, victim, 0, 30)
    poll(lambda: time.time() >= started + 3, 5, "the victim's run to have lasted 3 s", interval=0.1)
    owner = owners.sbatch(["-w", "n3", *WHOLE_NODE], UNTIL_RELEASED, user="carol")
    owners.wait_job_state(owner, "RUNNING", timeout=60)
    poll(lambda: job_info(owners, victim).get("Restarts") == "1", 20, f"job {victim} to be requeued")

    def story():  # job_info would cut the notes at their " by JobId=N"
        shown = owners.run(["scontrol", "-o", "show", "job", str(victim)]).stdout
        m = re.search(r" AdminComment=(.*;)", shown)
        return m.group(1) if m else ""

    ended = r"(killed at grace end [^;]*|exited in time [^;]*|requeued by the job itself [^;]*)"
    poll(lambda: re.search(ended, story()), 15, f"job {victim}'s note of how its run ended")
    release(owners, victim, owner)
    owners.wait_job_state(owner, "COMPLETED", timeout=30)
    owners.wait_job_state(victim, "COMPLETED", timeout=60)
    settled_runs(owners, victim, 2)
    notes = story()
    assert re.findall(r"preempted at \S+ by JobId=(\d+) \(qos owner, account chem, owner reclaim\): "
                      r"signal TERM, grace 0 s;", notes) == [str(owner)], notes
    assert notes.count("preempted at") == 1, notes
    assert re.findall(ended, notes) == [re.search(r"killed at grace end \S+, requeued as restart 1", notes)[0]], notes
    # Its work was lost: priority/fairshare gave its usage back (lost_work_charge 0), once,
    # though Slurm reported the run's end before any of these notes existed. 2 CPUs billed for
    # at least the 3 s it ran.
    refunds = [int(b) for b in re.findall(r"fair-share usage refunded at \S+: (\d+) billing-s of a run lost "
                                          r"at its grace end \(lost_work_charge 0\)", notes)]
    assert len(refunds) == 1 and refunds[0] >= 6, notes
    # slurmdbd's records have them: the preempted run's (the watcher logs its end again when it
    # comes before Slurm's requeue has finished; a clean-clone run saw it come after), else the
    # next run's.
    rows = [r for r in owners.sacct(victim, ["State", "AdminComment"], ["-D"]) if "." not in r["JobID"]]
    assert [r["State"] for r in rows] == ["PREEMPTED", "COMPLETED"], rows
    assert any("grace 0 s;" in r["AdminComment"] for r in rows), rows

    r = owners.run([str(PREEMPTCTL), "events", str(victim)], user="alice", check=False, timeout=60)
    assert r.returncode == 0 and not r.stderr, r
    print(r.stdout)
    assert re.search(rf"^\S+\s+run 0\s+preempted\s+by JobId={owner} of carol", r.stdout, re.M), r.stdout
    assert re.search(r"^\S+\s+run 0\s+killed\s+at the grace's end, requeued as restart 1$", r.stdout, re.M), r.stdout
    assert re.search(rf"^\S+\s+run 0\s+refunded\s+{refunds[0]} billing-s of fair-share usage given back",
                     r.stdout, re.M), r.stdout

    r = owners.run([str(PREEMPTCTL), "report", "--since", since, "--user", "alice", "--format", "json"],
                   check=False, timeout=60)
    assert r.returncode == 0 and not r.stderr, r
    doc = json.loads(r.stdout)
    alice = {u["name"]: u for u in doc["users"]}["alice"]
    assert (alice["jobs"], alice["jobs_preempted"], alice["preemptions"]) == (1, 1, 1), doc
    assert doc["reasons"] == [{"reason": "owner reclaim", "count": 1}], doc
    assert abs(alice["refunded_billing_hours"] - refunds[0] / 3600) <= 0.006, (doc, refunds)


# --- 4. public nodes first --------------------------------------------------------------------

def test_pending_standby_jobs_take_public_nodes_before_owned_ones(owners):
    # Node weights make the node selection itself prefer owned nodes: only the partitions'
    # order (public before standby) can send the jobs to public nodes first.
    blockers = fill_public(owners)
    blockers += [owners.sbatch(WHOLE_NODE, UNTIL_RELEASED, user=u) for u in ("carol", "carol", "dave", "dave")]
    for j in blockers:
        owners.wait_job_state(j, "RUNNING", timeout=30)
    waiting = [owners.sbatch(STANDBY, UNTIL_RELEASED, user="alice") for _ in range(3)]
    hold_steady(owners, {j: "PENDING" for j in waiting}, 3)

    owners.run(["scontrol", "update", "NodeName=n[1-2]", "Weight=100"])
    owners.run(["scontrol", "update", "NodeName=n[3-6]", "Weight=1"])
    try:
        ids = ",".join(map(str, waiting))
        owners.run(["scontrol", "hold", ids])  # so that every node is free when they are placed
        release(owners, *blockers)
        poll(lambda: all(s == "idle" for s in owners.node_states().values()), 30, "all nodes to be idle")
        owners.run(["scontrol", "release", ids])
        placed = {j: running_on(owners, j) for j in waiting}
    finally:
        owners.run(["scontrol", "update", "NodeName=n[1-6]", "Weight=1"])
    on_public = [j for j, nodes in placed.items() if set(nodes) <= set(PUBLIC_NODES)]
    on_owned = [j for j, nodes in placed.items() if set(nodes) <= set(OWNED_NODES)]
    assert (len(on_public), len(on_owned)) == (2, 1), placed
    assert sorted(n for j in on_public for n in placed[j]) == PUBLIC_NODES, placed


# --- 5. the seed's four timesteps -------------------------------------------------------------

def test_seed_timesteps(owners):
    public = {}

    def submit_public(i):
        public[i] = owners.sbatch([*STANDBY, "-J", f"PublicJob{i}"], UNTIL_RELEASED, user="alice")

    # T1: two public jobs run on the public nodes.
    for i in (1, 2):
        submit_public(i)
    wait_census(owners, {"public on public": 2}, 30, "timestep 1")

    # T2: six more: four spill onto the owned nodes, two wait.
    for i in range(3, 9):
        submit_public(i)
    wait_census(owners, {"public on public": 2, "public on owned": 4, "queued": 2}, 30, "timestep 2")
    on_chem = sorted(j for j in public.values() if set(expand_nodes(job_info(owners, j)["NodeList"])) <= {"n3", "n4"}
                     and job_info(owners, j)["JobState"] == "RUNNING")
    assert len(on_chem) == 2, {j: job_info(owners, j)["NodeList"] for j in public.values()}

    # T3: chem submits two jobs (no partition, no QOS): they take n3 and n4 back at once; the
    # two public jobs there are requeued.
    private = [owners.sbatch([*WHOLE_NODE, "-J", f"PrivateJob{i}"], UNTIL_RELEASED, user="carol") for i in (1, 2)]
    wait_census(owners, {"public on public": 2, "public on owned": 2, "owner on owned": 2, "queued": 4}, 45,
                "timestep 3")
    assert sorted(n for j in private for n in expand_nodes(job_info(owners, j)["NodeList"])) == ["n3", "n4"]
    for j in on_chem:
        info = job_info(owners, j)
        assert (info["JobState"], info["Restarts"]) == ("PENDING", "1"), info

    # T4: the two private jobs and PublicJob1-2 end: the four queued public jobs fill the public
    # nodes and the freed owned nodes.
    release(owners, *private, public[1], public[2])
    wait_census(owners, {"public on public": 2, "public on owned": 4}, 60, "timestep 4")
    for j in (*private, public[1], public[2]):
        assert owners.job_state(j) == "COMPLETED", (j, owners.job_state(j))


# --- 6. speed for owners ----------------------------------------------------------------------

def owner_reclaim_timings(cluster, node="n3"):
    """A standby job that ignores its signals runs on node; an owner's job (no partition, no
    QOS) asks for that node; the owner's job is released as soon as it runs. Returns
    (submit -> owner's first line, submit -> RUNNING seen by polling, release -> standby job's
    second start)."""
    victim = cluster.sbatch(["--qos=standby", "--requeue", "--open-mode=append", "-p", "standby", "-w", node,
                             "--exclusive", "--time=30"], IGNORES_SIGNALS, user="alice")
    wait_start(cluster, victim, 0, 30)
    # Slurm runs the scheduling pass that a submission asks for at most every batch_sched_delay
    # (3 s) after the previous pass, which here started the standby job: the owner arrives
    # later, as in the seed, where public jobs have been running when owners submit.
    time.sleep(4)
    t0 = time.time()
    owner = cluster.sbatch(["-w", node, *WHOLE_NODE], UNTIL_RELEASED, user="carol")
    poll(lambda: cluster.job_state(owner) == "RUNNING", 60, f"owner job {owner} to run", interval=0.2)
    seen = time.time() - t0
    started = wait_start(cluster, owner, 0, 10) - t0
    assert job_info(cluster, owner)["QOS"] == "owner"
    cluster.wait_job_state(victim, "PENDING", timeout=10)
    release(cluster, owner)
    t1 = time.time()
    cluster.wait_job_state(owner, "COMPLETED", timeout=20)
    rerun = wait_start(cluster, victim, 1, 150) - t1
    info = job_info(cluster, victim)
    assert info["Restarts"] == "1", info
    return started, seen, rerun


def test_owner_runs_within_grace_plus_2s_though_the_standby_job_ignores_its_signal(owners):
    apply_policy(owners, *owner_policy(GRACE))
    try:
        started, seen, rerun = owner_reclaim_timings(owners)
    finally:
        cancel_all(owners)
        apply_policy(owners, *owner_policy())
    print(f"owner submit -> running: {started:.1f} s (seen by polling {seen:.1f} s); "
          f"owner end -> requeued job running: {rerun:.1f} s")
    assert started <= GRACE + 2, f"owner's job started {started:.1f} s after submission, goal {GRACE + 2} s"
    assert rerun <= 10, f"requeued job restarted {rerun:.1f} s after the owner's job ended, goal 10 s"


def two_victims_killed_at_grace_end(owners, cleanup=lambda: None):
    """With standby's grace GRACE: two standby jobs on n3 that ignore their signals, preempted
    at once by one owner job: each requeued once, and each noted killed at its grace's end once
    (the note written in the kill's hold, before Slurm's requeue). Then the queue emptied,
    `cleanup` called and the policy put back. Their ids, and slurmctld.log since the policy."""
    mark = len(owners.log("slurmctld"))
    try:
        apply_policy(owners, *owner_policy(GRACE))
        victims = [owners.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n3", "-n1",
                                  "--time=30"], IGNORES_SIGNALS, user="alice") for _ in range(2)]
        for v in victims:
            wait_start(owners, v, 0, 30)
        owner = owners.sbatch(["-w", "n3", *WHOLE_NODE], UNTIL_RELEASED, user="carol")
        wait_start(owners, owner, 0, 60)
        for v in victims:
            owners.wait_job_state(v, "PENDING", timeout=10)
            assert job_info(owners, v)["Restarts"] == "1", job_info(owners, v)
            shown = owners.run(["scontrol", "-o", "show", "job", str(v)]).stdout
            assert len(re.findall(r"killed at grace end \S+, requeued as restart 1;", shown)) == 1, shown
    finally:
        cancel_all(owners)
        cleanup()
        apply_policy(owners, *owner_policy())
    return victims, owners.log("slurmctld")[mark:]


def test_each_grace_end_gets_a_visit_hold_and_then_a_hold_for_slurms_kill_and_requeue(owners):
    # StateSaveLocation/slurm_preempt_lock_stats (written every 10 s; bench/scale.py reads
    # it). At a grace's end the watcher's visit decides the kill in a hold of its own ("watcher
    # visit at a grace's end": one job visited per hold), and the next hold ("watcher kill at a
    # grace's end") writes the kill's note and runs Slurm's own work, the kill and requeue
    # (recorded inside it as "watcher visit, Slurm's kill and requeue"), as stock Slurm does
    # them in a hold of their own: neither adds to the other, nor to a hold's budget of other
    # visits. Two standby jobs share the owned node and ignore their signals: one owner job
    # preempts both at once, their graces end in the same second, and each is visited in the
    # second its grace ended ("ended 0 s ago") and killed in the hold right after: the
    # watcher's tick then does not miss it by the second time() may trail the precise clock
    # (which would leave Slurm's own grace check a second in which to end the job first).
    path = owners.dir / "state" / "slurm_preempt_lock_stats"
    call, at_end, kill = ("watcher visit, Slurm's kill and requeue", "watcher visit at a grace's end",
                          "watcher kill at a grace's end")

    def sites():
        try:
            return parse_lock_stats(path.read_text())
        except OSError:
            return {}

    def counted(site, key="count"):
        return sites().get(site, {key: 0})[key]
    names = (call, at_end, kill)
    before = {(site, key): counted(site, key) for site in names for key in ("count", "units")}
    victims, log = two_victims_killed_at_grace_end(owners)
    for v in victims:
        assert re.search(rf"grace of JobId={v} ended 0 s ago: killing", log), \
            re.findall(rf".*JobId={v}\b.*(?:grace|requeued).*", log)
        assert not re.search(rf"JobId={v}'s run ended before the watcher's kill", log), log
    poll(lambda: counted(call) >= before[call, "count"] + 2, 30,
         "the lock stats to count both kills at the graces' end", interval=1)
    got = sites()
    delta = {(site, key): got[site][key] - before[site, key] for site in names for key in ("count", "units")}
    assert (got[call]["kind"], got[at_end]["kind"], got[kill]["kind"]) == ("none", "write", "write"), got
    assert delta[call, "count"] == 2 and delta[at_end, "count"] == 2 and delta[kill, "count"] == 2, (delta, got)
    assert delta[at_end, "units"] == 2, f"a hold with a kill visited more than its own job: {delta}"
    # Slurm's calls are inside the kill's holds, which hold nothing else of the visits'.
    assert got[kill]["max_us"] >= got[call]["max_us"] and got[kill]["cpu_max_us"] >= got[call]["cpu_max_us"], got
    # The hold with the longest CPU time names when it ended (to find it in slurmctld.log) and
    # what the kernel counted in it; the site, the page faults of all its holds and the longest
    # CPU time of a hold never switched out.
    ctld_started = process_start(owners.procs["slurmctld"].pid)  # the statistics' start
    for site in names:
        d = got[site]["cpu_max_detail"]
        assert ctld_started - 1 <= d["at"] <= time.time() + 1, (site, got[site])
        assert got[site]["faults"] >= d["faults"], (site, got[site])
        assert got[site]["cpu_max_unswitched_us"] <= got[site]["cpu_max_us"], (site, got[site])


def test_a_kill_that_failed_in_its_hold_is_decided_again_by_the_next_visit_and_noted_once(owners):
    # The kill at a grace's end runs in the hold after its visit's. An allocation that fails
    # there (injected: every 2nd "watcher kill" fault point of this slurmctld throws) leaves the
    # job running past its grace with its record settled by the visit; the next tick puts the
    # record back and visits the job again, which kills it then: one note of the kill and one
    # requeue, with no lock left held.
    owners.env["SLURM_PREEMPT_FAULT_EVERY"] = "2"
    owners.env["SLURM_PREEMPT_FAULT_ONLY"] = "watcher kill"

    def unarmed():
        del owners.env["SLURM_PREEMPT_FAULT_EVERY"], owners.env["SLURM_PREEMPT_FAULT_ONLY"]
        owners.restart_slurmctld()
    try:
        owners.restart_slurmctld()
    except Exception:
        unarmed()
        raise
    victims, log = two_victims_killed_at_grace_end(owners, unarmed)
    assert log.count("injected allocation failure at watcher kill") == 1, \
        re.findall(r".*(?:injected|grace of JobId).*", log)
    # The job whose kill failed was visited at its grace's end again and killed then; or, in
    # the second between the two ticks, a scheduling pass for the owner job reached Slurm's own
    # grace check first (slurm_job_preempt), which the visit then noted as the watcher's kill.
    visits = {v: len(re.findall(rf"grace of JobId={v} ended \d+ s ago: killing", log)) for v in victims}
    by_slurm = [v for v in victims if re.search(rf"JobId={v} .*Slurm's own grace check requeued it", log)]
    assert sorted(visits.values()) == ([1, 1] if by_slurm else [1, 2]) and len(by_slurm) <= 1, \
        (visits, by_slurm, re.findall(r".*(?:injected|grace of JobId|grace check).*", log))


def test_lock_stats_show_the_watchers_policy_check_under_read_locks_of_its_own(owners):
    # Once per slurmctld start the watcher checks the policy against slurm.conf and slurmdbd
    # (every owner group's nodes, the association list): only reads, so it takes read locks
    # of its own, not the first visit's write locks.
    path = owners.dir / "state" / "slurm_preempt_lock_stats"

    def check():
        try:
            return parse_lock_stats(path.read_text()).get("watcher policy check")
        except OSError:
            return None
    poll(lambda: check() is not None, 30, "the lock stats to show the watcher's policy check", interval=1)
    got = check()
    assert got["kind"] == "read" and got["count"] == 1, got


def lock_stats_written(cluster):
    """(when, watcher ticks) of one StateSaveLocation/slurm_preempt_lock_stats, None before the
    first: the file is replaced whole (rename) at each write, every 10 s."""
    try:
        with open(cluster.dir / "state" / "slurm_preempt_lock_stats") as f:
            when = os.fstat(f.fileno()).st_mtime_ns
            return when, parse_lock_stats(f.read()).get("watcher tick", {"count": 0})["count"]
    except OSError:
        return None


def next_lock_stats_write(cluster, after=None):
    """The first lock-stats write (lock_stats_written) after the one written at `after`, by
    default after the one there is now."""
    if after is None:
        after = (lock_stats_written(cluster) or (None,))[0]
    return poll(lambda: (w := lock_stats_written(cluster)) and w[0] != after and w, 25,
                "the next write of the lock stats", interval=0.2)


def test_an_idle_watcher_sleeps_until_its_scan_or_lock_stats_write_not_a_tick_a_second(owners):
    # With PreemptType=preempt/quota grace starts come as events, and with priority/fairshare
    # each reconfigure comes as a call: a watcher with no job in a grace, a requeue hold or
    # draining has nothing to do before its scan (every 30 s), a time-limit trigger or its next
    # lock-stats write (every 10 s), and sleeps until then (lib/watch.hpp idle_until). Counted
    # between two writes of the lock stats 10 s apart on an empty queue: a watcher ticking
    # every second counts about ten ticks there.
    first = next_lock_stats_write(owners)  # the first after the queue was emptied (the fixture)
    counted = next_lock_stats_write(owners, first[0])[1] - first[1]
    # The write's own tick, the scan's if it fell in the window, a time-limit timer of an earlier
    # test's job whose end the scan has not seen yet: at most 4.
    assert 1 <= counted <= 4, f"{counted} watcher ticks between two lock-stats writes on an idle cluster"


def test_an_idle_watcher_reads_preempt_yaml_again_within_3_s_of_each_reconfigure(owners):
    # The idle watcher sleeps until its next scan, up to 30 s away: priority/fairshare's
    # priority_p_reconfig tells it of each reconfigure and wakes it. Twice, each time from a
    # sleeping watcher (just after a lock-stats write); waiting for its scan instead, both
    # would take 3 s only if each scan fell within 3 s of its reconfigure.
    for _ in range(2):
        next_lock_stats_write(owners)
        t0 = time.monotonic()
        reconfigure(owners)  # returns once each plugin logged "policy in force after reconfigure"
        took = time.monotonic() - t0
        print(f"scontrol reconfigure -> preempt.yaml in force in every plugin: {took:.2f} s")
        assert took <= 3, f"the plugins had preempt.yaml in force {took:.1f} s after scontrol reconfigure"


def test_the_scan_keeps_a_settled_preemptions_record_without_a_write_locked_visit(owners):
    # The watcher keeps a record of each settled preemption while Slurm keeps the job (a
    # tombstone: the run is never noted twice) and persists it. Its scan of the job list every
    # 30 s decides under its job read lock what a visit of such a record would do
    # (lib/watch.hpp kept_fate): nothing while the job pends, so no hold of the write locks
    # ("watcher visit"); the record goes once the job runs again. Grace 0: the standby job is
    # requeued in the call that preempts it.
    path = owners.dir / "state" / "slurm_preempt_lock_stats"
    state = owners.dir / "state" / "job_submit_preempt_state"

    def counted(site):
        try:
            return parse_lock_stats(path.read_text()).get(site, {"count": 0})["count"]
        except OSError:
            return 0

    def record(jobid):
        try:
            lines = state.read_text().splitlines()
        except OSError:
            return None
        return next((line.split() for line in lines if line.startswith(f"run {jobid} ")), None)
    try:
        victim = owners.sbatch(["-p", "standby", "-w", "n3", "--open-mode=append", *STANDBY], UNTIL_RELEASED,
                               user="alice")
        wait_start(owners, victim, 0, 30)
        owner = owners.sbatch(["-w", "n3", *WHOLE_NODE], UNTIL_RELEASED, user="carol")
        wait_start(owners, owner, 0, 60)
        owners.wait_job_state(victim, "PENDING", timeout=10)
        poll(lambda: "s" in (record(victim) or ["", "", "", "", ""])[4], 30,
             f"the watcher's state file to keep job {victim}'s settled preemption", interval=0.5)
        # Out of Slurm's requeue hold (the watcher releases it once the run's epilog is done):
        # from then on nothing about the job needs the watcher until it runs again.
        poll(lambda: job_info(owners, victim)["Reason"] not in ("BeginTime", "None"), 30,
             f"job {victim} out of the requeue hold", interval=0.5)
        scans = counted("watcher scan")
        poll(lambda: counted("watcher scan") > scans, 45, "a scan of the job list", interval=1)
        visits = counted("watcher visit")
        poll(lambda: counted("watcher scan") > scans + 1, 45, "a second scan of the job list", interval=1)
        assert counted("watcher visit") == visits, "a scan visited the settled preemption's record"
        assert "s" in record(victim)[4], state.read_text()
        release(owners, owner)
        wait_start(owners, victim, 1, 60)
        poll(lambda: record(victim) is None, 45,
             f"the next scan to forget job {victim}'s record of its earlier run", interval=1)
    finally:
        cancel_all(owners)


def test_owner_submitted_right_after_a_scheduling_pass_gets_its_pass_at_once(owners):
    # A batch submission only queues a scheduling pass, run batch_sched_delay after the
    # previous one at the soonest, and only a pass starts a victim's grace. preempt/quota asks
    # for a pass when a job seen with a victim (the test Slurm makes of each submission) is
    # not tested by Slurm's own scheduling within 500 ms. With batch_sched_delay=20 and the
    # owner submitted as soon as the standby job runs (the pass that started it is the
    # previous one), usually none does: the plugin asks, the grace starts within a second and
    # the owner runs within grace + 2 s; with the plugin's call commented out the owner ran
    # 8.5 s after submission (once measured: some other event asked for a pass before 20 s).
    # The premise fails when backfill started the standby job (the main scheduler's last pass
    # is then old, and the owner's submission gets one at once: a CI run at 5010f0b failed so)
    # or when a periodic pass comes within the 500 ms: the plugin then rightly asks nothing and
    # logs that Slurm tested the owner. So backfill waits 300 s here (bf_interval, read at the
    # reconfigure before its next cycle), n4 is idle before each standby job (not completing,
    # which kept the main scheduler from starting it), and the scenario is played again, at
    # most `attempts` times, until the plugin's ask ran.
    params = "bf_min_age_reserve=60,partition_job_depth=20,batch_sched_delay=20,bf_interval=300"
    asked = r"asked for a scheduling pass \(none tested it within 500 ms\)"
    settled = r"tested by Slurm's scheduling within 500 ms: no pass asked"
    attempts = 3
    apply_policy(owners, *owner_policy(GRACE))
    owners.set_conf(SchedulerParameters=params)
    reconfigure(owners)
    runs = []
    try:
        shown = re.search(r"^SchedulerParameters\s*=\s*(\S+)", owners.run(["scontrol", "show", "config"]).stdout, re.M)
        assert shown and shown.group(1) == params, shown
        for _ in range(attempts):
            poll(lambda: owners.node_states().get("n4") == "idle", 60, "n4 to be idle")
            victim = owners.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n4", "--exclusive",
                                    "--time=30"], IGNORES_SIGNALS, user="alice")
            wait_start(owners, victim, 0, 60)
            mark = log_mark(owners)
            t0 = time.time()
            owner = owners.sbatch(["-w", "n4", *WHOLE_NODE], UNTIL_RELEASED, user="carol")
            started = wait_start(owners, owner, 0, 60) - t0
            line = wait_log_after(owners, mark, rf"preempt/quota: JobId={owner} may preempt JobId={victim} "
                                                rf"\(qos\): (?:{asked}|{settled})", timeout=5)
            runs.append((started, re.search(asked, line.group(0)) is not None))
            if runs[-1][1]:
                break
            cancel_all(owners)
    finally:
        cancel_all(owners)
        owners.reset_conf()
        reconfigure(owners)
        apply_policy(owners, *owner_policy())
    for started, plugin_asked in runs:
        print(f"batch_sched_delay=20, owner submitted as the standby job started: owner running after "
              f"{started:.1f} s ({'the plugin asked for the pass' if plugin_asked else 'Slurm tested it first'})")
    assert runs[-1][1], f"Slurm's own scheduling tested the owner within 500 ms in all {attempts} attempts"
    assert all(started <= GRACE + 2 for started, _ in runs), \
        f"owner's job started {[round(s, 1) for s, _ in runs]} s after submission, goal {GRACE + 2} s"


def test_owner_and_requeued_job_are_as_fast_behind_a_deep_queue_of_higher_tier_jobs(owners):
    # A scheduling pass triggered by an event tests at most default_queue_depth (100) entries,
    # PriorityTier first, and each counts even in a full partition: 120 pending public jobs
    # (tier 2) would hide the requeued standby job (tier 1) from every such pass until the
    # periodic one or backfill. The fragment's partition_job_depth=20 lets each partition's
    # first entries be tested in every pass. Without it, measured here: the owner's job started
    # 56 s after submission and the requeued job 30 s after the owner's end.
    apply_policy(owners, *owner_policy(GRACE))
    try:
        blocker = owners.sbatch(["-p", "public", "-N", "2", "--exclusive", "--time=30"], UNTIL_RELEASED,
                                user="bob")
        # Running before the queue fills: while it pends, backfill may start public jobs around
        # it (bf_min_age_reserve) and the queue would not stay deep.
        owners.wait_job_state(blocker, "RUNNING", timeout=60)
        owners.run(["bash", "-c", "for i in $(seq 120); do sbatch -Q -o /dev/null -p public -n1 --time=30 "
                    "--wrap 'sleep 1' || exit 1; done"], user="alice", timeout=300)
        poll(lambda: len(owners.run(["squeue", "-h", "-u", "alice", "-p", "public", "-t", "PD", "-o", "%i"])
                         .stdout.split()) == 120, 30, "120 public jobs pending behind the blocker")
        started, seen, rerun = owner_reclaim_timings(owners)
        still = owners.run(["squeue", "-h", "-u", "alice", "-p", "public", "-t", "PD", "-o", "%i"]).stdout.split()
    finally:
        cancel_all(owners)
        apply_policy(owners, *owner_policy())
    print(f"behind 120 pending public jobs: owner submit -> running {started:.1f} s (polling {seen:.1f} s); "
          f"owner end -> requeued job running {rerun:.1f} s")
    assert len(still) == 120, f"the public queue changed during the test: {len(still)} pending"
    assert started <= GRACE + 2, f"owner's job started {started:.1f} s after submission, goal {GRACE + 2} s"
    assert rerun <= 10, f"requeued job restarted {rerun:.1f} s after the owner's job ended, goal 10 s"


def test_requeued_job_restarts_within_10s_with_default_cred_expire(cluster):
    # The session cluster shortens cred_expire to 10 s; Slurm's default (120 s) holds a
    # requeued job for 121 s. A cluster of its own, with the default, shows the real gap.
    policy, walltimes = owner_policy(GRACE)
    second = Cluster(with_plugins=True, policy=policy, extra_conf="AuthInfo=cred_expire=120",
                     port_offset=PORT_OFFSET + 1000)
    with second:
        assert "cred_expire=120" in second.run(["scontrol", "show", "config"]).stdout
        apply_policy(second, policy, walltimes)
        started, seen, rerun = owner_reclaim_timings(second)
    print(f"cred_expire=120: owner submit -> running {started:.1f} s (polling {seen:.1f} s); "
          f"owner end -> requeued job running {rerun:.1f} s")
    assert rerun <= 10, f"requeued job restarted {rerun:.1f} s after the owner's job ended, goal 10 s"


# --- bad input ------------------------------------------------------------------------------

BAD_POLICIES = {  # case -> (text in the site policy, replacement, the bad name)
    "unknown partition": ("  chem:\n    partitions: [chem]\n", "  chem:\n    partitions: [chemm]\n", "chemm"),
    "unknown node": ("    nodes: n[5-6]\n", "    nodes: n[5-7]\n", "n7"),
    "unknown account": ("  chem:\n    partitions: [chem]\n", "  chemx:\n    partitions: [chem]\n", "chemx"),
    "unknown owner qos": ("  chem:\n    partitions: [chem]\n", "  chem:\n    qos: ownerx\n    partitions: [chem]\n",
                          "ownerx"),
}


@pytest.mark.parametrize("case", list(BAD_POLICIES))
def test_policy_naming_what_slurm_does_not_know_stops_slurmctld(cluster, case):
    old, new, name = BAD_POLICIES[case]
    site = SITE_POLICY.read_text()
    assert old in site, f"the site policy no longer has {old!r}"
    status, text = cluster.start_refused(site.replace(old, new, 1))
    assert status != 0, text[-2000:]
    lines = [line for line in text.splitlines() if "cannot load policy" in line]
    assert lines, f"no 'cannot load policy' line; slurmctld said:\n{text[-2000:]}"
    named = [line for line in lines if name in line and re.search(r"not define|unknown|does not know|no such", line)]
    assert named, lines
    print(named[0])
