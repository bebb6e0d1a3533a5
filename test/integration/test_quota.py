"""Issue 13, project quotas and priority classes (the Run:ai seed), on the real cluster with
PreemptType=preempt/quota.

The node pool is partition `pool` (n1-n2, 2 nodes x 4 GPUs). Projects are Slurm accounts:
project-a (user erin, quota 4), project-b (user frank, quota 4, limit 8), project-c (user gina,
quota 8 counted in pool only). Classes are QOS of the same name, created by preemptctl
qos-sync with their priority, PreemptMode=requeue and grace (5 s here). The module installs the
policy below and syncs it; at the end the site policy is put back. Jobs run until released
(cluster.release) or until they get the checkpoint signal, which they answer by saving and
exiting; every test cancels its jobs.
"""

import re
import time

import pytest

from cluster import (RUNAI_POLICY, RUNAI_WALLTIMES, SITE_POLICY, UNTIL_RELEASED, apply_policy, build_dir,
                     cancel_all, expand_nodes, hold_steady, job_info, poll, policy_installed,
                     release, try_sbatch)

GRACE = 5  # s: every preemptible class' grace in this policy

QUOTA_POLICY = RUNAI_POLICY
WALLTIMES = RUNAI_WALLTIMES

# Saves (a line in its output) and exits 0 on the checkpoint signal; else runs until released.
CHECKPOINTS = """\
trap 'echo "checkpoint $(date +%s.%N)"; exit 0' USR1
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.2; done
"""
A = {"user": "erin", "args": ["-A", "project-a", "-p", "pool"]}
B = {"user": "frank", "args": ["-A", "project-b", "-p", "pool"]}
NODE4 = ["-N1", "--gres=gpu:4"]
GANG8 = ["-N2", "--gres=gpu:4"]


@pytest.fixture(scope="module")
def quota_cluster(cluster):
    with policy_installed(cluster, QUOTA_POLICY, WALLTIMES):
        yield cluster


@pytest.fixture
def qc(quota_cluster):
    cancel_all(quota_cluster)
    yield quota_cluster
    cancel_all(quota_cluster)


def submit(cluster, who, extra, script=CHECKPOINTS):
    return cluster.sbatch([*who["args"], "--requeue", "--open-mode=append", *extra], script,
                          user=who["user"])


def running_since(cluster, jobid, timeout):
    """Waits for RUNNING; returns the monotonic time it was first seen."""
    cluster.wait_job_state(jobid, {"RUNNING"}, timeout=timeout)
    return time.monotonic()


def requeued(cluster, jobid, timeout=5):
    """A victim that saved and exited during its grace is COMPLETED for up to a second before
    the watcher requeues it: wait for PENDING with one more restart."""
    poll(lambda: cluster.job_state(jobid) == "PENDING", timeout, f"job {jobid} to be requeued")
    return job_info(cluster, jobid)


def output(cluster, jobid):
    path = cluster.jobs / f"{jobid}.out"
    return path.read_text() if path.exists() else ""


def gpus(cluster, jobid):
    info = job_info(cluster, jobid)
    tres = info.get("AllocTRES") or info.get("TRES", "")
    m = re.search(r"gres/gpu=(\d+)", tres)
    return int(m.group(1)) if m else 0


def quotas(cluster):
    r = cluster.run([str(build_dir() / "tools" / "preemptctl" / "preemptctl"), "quotas", "--parsable",
                     "--policy", str(cluster.dir / "etc" / "preempt.yaml")])
    lines = r.stdout.splitlines()
    header = lines[0].split("|")
    return {row["project"]: row for row in (dict(zip(header, line.split("|"))) for line in lines[1:])}


def test_qos_sync_creates_the_class_qos_and_quota_licenses(quota_cluster):
    out = quota_cluster.run(["sacctmgr", "-nP", "show", "qos", "format=Name,Priority,PreemptMode,GraceTime"]).stdout
    qos = {line.split("|")[0]: line.split("|") for line in out.splitlines()}
    assert qos["train"][1:] == ["50", "requeue", "00:00:05"], qos["train"]
    assert qos["interactive"][1:] == ["75", "requeue", "00:00:05"], qos["interactive"]
    assert qos["inference"][1] == "125"
    lic = quota_cluster.run(["scontrol", "show", "licenses"]).stdout
    assert re.search(r"LicenseName=quota_project-a@slurm-preempt\s+Total=4 ", lic), lic
    assert re.search(r"LicenseName=quota_project-c@slurm-preempt\s+Total=8 ", lic), lic


def test_a_project_job_without_qos_gets_the_default_class(qc):
    job = submit(qc, A, NODE4, UNTIL_RELEASED)
    assert job_info(qc, job)["QOS"] == "train"
    assert qc.run(["squeue", "-h", "-j", str(job), "-o", "%q"]).stdout.strip() == "train"
    poll(lambda: [r["QOS"] for r in qc.sacct(job, ["QOS"])][:1] == ["train"], 20, "sacct to show the class")
    release(qc, job)


def test_sprio_shows_the_class_in_the_qos_factor(qc):
    # project-c's non-preemptible job fills the pool, so project-a's jobs wait, eligible.
    blocker = qc.sbatch(["-A", "project-c", "-p", "pool", "--qos=inference", *GANG8], UNTIL_RELEASED, user="gina")
    running_since(qc, blocker, 30)
    jobs = {c: submit(qc, A, [f"--qos={c}", *NODE4], UNTIL_RELEASED) for c in ("train", "interactive")}
    out = qc.run(["sprio", "-h", "-j", ",".join(str(j) for j in jobs.values()), "-o", "%i %Q"]).stdout
    factor = {int(f[0]): int(f[-1]) for f in (line.split() for line in out.splitlines())}
    assert factor[jobs["interactive"]] > factor[jobs["train"]] > 0, out


def story(cluster, jobid):
    """The job's AdminComment (its story), from scontrol's one-line form."""
    shown = cluster.run(["scontrol", "-o", "show", "job", str(jobid)]).stdout
    m = re.search(r" AdminComment=(.*;)", shown)
    return m.group(1) if m else ""


def test_borrowing_then_reclaim_then_return(qc):
    """Steps 1-5 of the seed: project-a's 8-GPU gang borrows the idle pool; project-b's 4-GPU
    interactive job within its quota reclaims it (checkpoint signal, requeue) and runs within
    grace + 2 s; when it ends, project-a's job runs again by itself with 8 GPUs within 10 s."""
    a = submit(qc, A, ["--qos=train", *GANG8])
    running_since(qc, a, 30)
    assert gpus(qc, a) == 8
    row = quotas(qc)["project-a"]
    assert (row["used"], row["borrowed"]) == ("8", "4"), row

    submitted = time.monotonic()
    b = submit(qc, B, ["--qos=interactive", *NODE4], UNTIL_RELEASED)
    started = running_since(qc, b, GRACE + 10)
    assert started - submitted <= GRACE + 2, f"project-b's job ran {started - submitted:.1f} s after submission"
    poll(lambda: "checkpoint" in output(qc, a), 10, f"job {a} to save at the checkpoint signal")
    info = requeued(qc, a)
    assert int(info["Restarts"]) == 1, info

    time.sleep(12)  # a requeued job may start again only cred_expire (10 s) after its requeue
    release(qc, b)
    qc.wait_job_state(b, {"COMPLETED"}, timeout=20)
    ended = time.monotonic()
    back = running_since(qc, a, 30)
    assert back - ended <= 10, f"project-a's job ran again {back - ended:.1f} s after project-b's ended"
    assert gpus(qc, a) == 8
    poll(lambda: "restart=1" in output(qc, a), 10, "the resumed run's first line")  # RUNNING first


def test_reclaim_takes_exactly_the_youngest_borrowing_job(qc):
    old = submit(qc, A, ["--qos=train", *NODE4])
    running_since(qc, old, 30)
    young = submit(qc, A, ["--qos=train", *NODE4])
    running_since(qc, young, 30)
    b = submit(qc, B, ["--qos=train", *NODE4], UNTIL_RELEASED)
    running_since(qc, b, GRACE + 10)
    requeued(qc, young)
    # Its story says why: project-b took back what project-a borrowed.
    assert "preempted at " in story(qc, young) and \
        f" by JobId={b} (qos train, account project-b, quota reclaim): " in story(qc, young), story(qc, young)
    hold_steady(qc, {old: "RUNNING", b: "RUNNING", young: "PENDING"}, 3)
    q = quotas(qc)
    assert (q["project-a"]["used"], q["project-b"]["used"]) == ("4", "4"), q


def test_no_reclaim_when_the_preemptor_would_exceed_its_quota(qc):
    a = submit(qc, A, ["--qos=train", *GANG8])
    running_since(qc, a, 30)
    b = submit(qc, B, ["--qos=train", *GANG8], UNTIL_RELEASED)  # 8 GPUs, quota 4
    hold_steady(qc, {a: "RUNNING", b: "PENDING"}, 2 * GRACE)
    assert "checkpoint" not in output(qc, a)


def test_non_preemptible_classes_run_only_within_quota(qc):
    first = submit(qc, A, ["--qos=inference", *NODE4], UNTIL_RELEASED)
    running_since(qc, first, 30)
    second = submit(qc, A, ["--qos=inference", *NODE4], UNTIL_RELEASED)
    # 4 GPUs idle on the other node, but project-a's quota is full: it waits, saying why.
    poll(lambda: job_info(qc, second).get("Reason") == "Licenses", 15, "the second inference job to wait on its quota")
    assert "quota_project-a@slurm-preempt:4" in job_info(qc, second)["Licenses"]
    hold_steady(qc, {first: "RUNNING", second: "PENDING"}, 3)

    big = try_sbatch(qc, ["-A", "project-a", "-p", "pool", "--qos=inference", *GANG8], user="erin")
    assert big.returncode != 0
    assert "8 GPUs" in big.stderr and "quota of 4 GPUs" in big.stderr, big.stderr


def test_a_non_preemptible_job_is_never_a_victim(qc):
    # The train job comes first, so by age alone the younger inference job would be the one
    # over the quota: only the classes' fill order (non-preemptible first) makes the train job
    # the borrower.
    train = submit(qc, A, ["--qos=train", *NODE4])
    running_since(qc, train, 30)
    inference = submit(qc, A, ["--qos=inference", *NODE4], UNTIL_RELEASED)
    running_since(qc, inference, 30)  # project-a at 8/4: the train job borrows
    b = submit(qc, B, ["--qos=interactive", *NODE4], UNTIL_RELEASED)
    running_since(qc, b, GRACE + 10)
    requeued(qc, train)
    assert qc.job_state(inference) == "RUNNING"


def test_inference_needs_a_quota(qc):
    r = try_sbatch(qc, ["--qos=inference", "-p", "public", "--gres=gpu:1"], user="alice")
    assert r.returncode != 0
    assert "quota" in r.stderr, r.stderr


def test_a_higher_class_preempts_a_lower_one_inside_its_project_only(qc):
    a_train = submit(qc, A, ["--qos=train", *NODE4])
    running_since(qc, a_train, 30)
    b_train = submit(qc, B, ["--qos=train", *NODE4], UNTIL_RELEASED)
    running_since(qc, b_train, 30)
    a_interactive = submit(qc, A, ["--qos=interactive", *NODE4], UNTIL_RELEASED)
    running_since(qc, a_interactive, GRACE + 10)
    requeued(qc, a_train)
    assert qc.job_state(b_train) == "RUNNING"
    # Its story says why: a higher class of its own project.
    assert f" by JobId={a_interactive} (qos interactive, account project-a, class): " in story(qc, a_train), \
        story(qc, a_train)


IGNORES_SIGNALS = """\
trap '' TERM USR1 USR2
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
while true; do sleep 1; done
"""


def test_preemptors_arriving_together_each_take_their_own_victim(qc):
    """Two owner jobs submitted together on chem's two nodes, each held by a standby job that
    ignores its signal: with preempt/qos the second picks the victim already in the first's
    grace and waits two graces; with preempt/quota both run within grace + 2 s."""
    victims = [qc.sbatch(["-p", "standby", "--qos=standby", "--requeue", "--exclusive", "-N1", "-w", node],
                         IGNORES_SIGNALS, user="alice") for node in ("n3", "n4")]
    for v in victims:
        running_since(qc, v, 30)
    # Slurm's main scheduler runs at most every sched_min_interval (2 s): the pass that just
    # started the victims would otherwise delay the owners' first pass, whatever the plugin.
    time.sleep(2.5)
    submitted = time.monotonic()
    owners = [qc.sbatch(["-A", "chem", "--exclusive", "-N1"], UNTIL_RELEASED, user="carol") for _ in range(2)]
    late = max(running_since(qc, o, 3 * GRACE + 10) for o in owners)
    assert late - submitted <= GRACE + 2, \
        f"the second owner job ran {late - submitted:.1f} s after submission (grace {GRACE} s)"
    assert sorted(expand_nodes(job_info(qc, o)["NodeList"])[0] for o in owners) == ["n3", "n4"]


BAD_QUOTAS = {  # case -> (quotas: section, what the refusal must name)
    "unknown project": ("quotas:\n  project-x: {gpus: 4}\n",
                        r"quotas\.project-x names account project-x, which slurmdbd does not know"),
    "quota above the pool": ("quotas:\n  project-c: {gpus: 9, partitions: [pool]}\n",
                             r"quotas\.project-c guarantees 9 GPUs but partitions pool have only 8"),
}


@pytest.mark.parametrize("case", list(BAD_QUOTAS))
def test_a_policy_naming_what_slurm_lacks_stops_slurmctld(cluster, case):
    section, named = BAD_QUOTAS[case]
    status, text = cluster.start_refused(SITE_POLICY.read_text() + section)
    assert status != 0, text[-2000:]
    lines = [line for line in text.splitlines() if "cannot load policy" in line]
    assert any(re.search(named, line) for line in lines), lines or text[-2000:]


def test_preemptctl_quotas_parsable_header(qc):
    r = qc.run([str(build_dir() / "tools" / "preemptctl" / "preemptctl"), "quotas", "--parsable",
                "--policy", str(qc.dir / "etc" / "preempt.yaml")])
    lines = r.stdout.splitlines()
    assert lines[0] == "project|pool|quota|limit|used|nonpreemptible|borrowed|pending"
    assert [line.split("|")[:4] for line in lines[1:]] == [
        ["project-a", "*", "4", "-"], ["project-b", "*", "4", "8"], ["project-c", "pool", "8", "-"]]


def test_an_update_cannot_move_a_job_around_its_quota(qc):
    train = submit(qc, A, ["--qos=train", *NODE4, "--begin=now+1hour"], UNTIL_RELEASED)
    r = qc.run(["scontrol", "update", f"JobId={train}", "QOS=inference"], user="erin", check=False)
    assert r.returncode != 0 and job_info(qc, train)["QOS"] == "train", r.stderr
    inference = submit(qc, A, ["--qos=inference", *NODE4, "--begin=now+1hour"], UNTIL_RELEASED)
    assert "quota_project-a@slurm-preempt:4" in job_info(qc, inference)["Licenses"]
    r = qc.run(["scontrol", "update", f"JobId={inference}", "Licenses="], user="erin", check=False)
    assert r.returncode != 0, r.stdout
    assert "quota_project-a@slurm-preempt:4" in job_info(qc, inference)["Licenses"]
    log = qc.log("slurmctld")
    assert f"refused an update of JobId={inference} by uid" in log and "cannot be changed" in log


# Fair division of idle GPUs: projects a and b with 2 GPUs of quota each and over-quota weights
# 3 and 1; no fair-share or age term, so that earlier tests' usage cannot reorder their jobs.
FAIR_POLICY = QUOTA_POLICY.replace(
    "project-a: {gpus: 4}", "project-a: {gpus: 2, over_quota_weight: 3}").replace(
    "project-b: {gpus: 4, limit: 8}", "project-b: {gpus: 2, limit: 8, over_quota_weight: 1}") + \
    "priority:\n  weights: {fairshare: 0, age: 0}\n"
SLOT = ["-N1", "--gres=gpu:2"]  # the pool holds four (2 nodes x 2 CPUs x 4 GPUs)


@pytest.fixture
def fair(quota_cluster):
    assert FAIR_POLICY.count("over_quota_weight") == 2
    cancel_all(quota_cluster)
    apply_policy(quota_cluster, FAIR_POLICY, WALLTIMES)
    try:
        yield quota_cluster
    finally:
        quota_cluster.run(["scontrol", "update", "PartitionName=pool", "State=UP"], check=False)
        cancel_all(quota_cluster)
        apply_policy(quota_cluster, QUOTA_POLICY, WALLTIMES)


def test_idle_gpus_are_divided_by_over_quota_weight(fair):
    """Both projects want the whole pool: each gets its quota (one slot), and the surplus (two
    slots) goes 3:1 in key order, so project-a runs three jobs and project-b one. Equal weights
    would give 2/2, and the queue's submission order 4/0."""
    qc = fair
    qc.run(["scontrol", "update", "PartitionName=pool", "State=DOWN"])  # nothing starts yet
    a = [submit(qc, A, ["--qos=train", *SLOT], UNTIL_RELEASED) for _ in range(4)]
    b = [submit(qc, B, ["--qos=train", *SLOT], UNTIL_RELEASED) for _ in range(4)]
    first_four = {a[0], a[1], a[2], b[0]}

    def ranked():
        out = qc.run(["sprio", "-h", "-j", ",".join(map(str, a + b)), "-o", "%i %Y %S"]).stdout
        prio = {int(f[0]): int(f[1]) for f in (line.split() for line in out.splitlines()) if f}
        return sorted(prio, key=lambda j: (-prio[j], j)) if len(prio) == 8 else None

    order = poll(lambda: (r := ranked()) and set(r[:4]) == first_four and r, 10,
                 f"sprio to rank {sorted(first_four)} first: {ranked()}")
    assert order.index(a[3]) > order.index(a[2]) and order.index(b[1]) > order.index(b[0])
    qc.run(["scontrol", "update", "PartitionName=pool", "State=UP"])

    def running():
        return {j for j in a + b if qc.job_state(j) == "RUNNING"}

    poll(lambda: len(running()) == 4, 60, "the pool's four slots to fill")
    assert running() == first_four, f"a={a} b={b} running={sorted(running())}"
    hold_steady(qc, {**{j: "RUNNING" for j in first_four}, a[3]: "PENDING", b[1]: "PENDING"}, 3)


# One variant of the policy for the limit and min_runtime tests: installed once for both.
VARIANT_POLICY = QUOTA_POLICY.replace(
    "project-b: {gpus: 4, limit: 8}", "project-b: {gpus: 2, limit: 4}").replace(
    "train:       {priority: 50,  preemptible: true, grace: 5s}",
    "train:       {priority: 50,  preemptible: true, grace: 5s, min_runtime: 12s}")
MIN_RUNTIME = 12


@pytest.fixture(scope="module")
def variant_cluster(quota_cluster):
    assert VARIANT_POLICY.count("min_runtime: 12s") == 1 and "limit: 4" in VARIANT_POLICY
    cancel_all(quota_cluster)
    apply_policy(quota_cluster, VARIANT_POLICY, WALLTIMES)
    yield quota_cluster
    cancel_all(quota_cluster)
    apply_policy(quota_cluster, QUOTA_POLICY, WALLTIMES)


@pytest.fixture
def vc(variant_cluster):
    cancel_all(variant_cluster)
    yield variant_cluster
    cancel_all(variant_cluster)


def test_limit_caps_a_project_borrowing_included(vc):
    qc = vc
    first = submit(qc, B, ["--qos=train", *NODE4], UNTIL_RELEASED)
    running_since(qc, first, 30)
    second = submit(qc, B, ["--qos=train", *NODE4], UNTIL_RELEASED)  # 4 GPUs idle on n2
    poll(lambda: job_info(qc, second).get("Reason") == "AssocGrpGRES", 15,
         "project-b's second job to wait on its limit")
    hold_steady(qc, {first: "RUNNING", second: "PENDING"}, 3)


def test_min_runtime_protects_a_young_victim_while_another_exists(vc):
    qc = vc
    old = submit(qc, A, ["--qos=train", *NODE4])
    running_since(qc, old, 30)
    started = time.monotonic()
    poll(lambda: time.monotonic() - started >= MIN_RUNTIME + 1, 30, "the first train job to outgrow min_runtime")
    young = submit(qc, A, ["--qos=train", *NODE4])
    running_since(qc, young, 30)
    interactive = submit(qc, A, ["--qos=interactive", *NODE4], UNTIL_RELEASED)
    running_since(qc, interactive, GRACE + 10)
    requeued(qc, old)  # the youngest would go first, but it is under min_runtime
    assert qc.job_state(young) == "RUNNING"
