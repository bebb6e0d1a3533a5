"""Issue 14, pause and resume with a checkpoint (the Determined seed), on the real cluster:
`preemptctl pause` gives a running job its checkpoint signal and grace and requeues it held;
`preemptctl resume` releases it and it resumes from its checkpoint. slurmctld decides who may
(job_submit/preempt's job_modify); preemptctl is run as the users themselves."""

import os
import re
import signal
import subprocess
import time

import pytest

from cluster import (PREEMPTCTL, cancel_all, hold_steady, job_info, log_mark, poll, policy_installed,
                     release, wait_log_after)
from test_owners import IGNORES_SIGNALS, owner_policy, wait_start

GRACE = 10  # s: the standby grace of this module's policy
NODE = "n3"

# Counts steps; on the checkpoint signal saves the count and exits; a new run starts from the
# saved count.
COUNTER = r"""
ck="$SLURM_CHECKPOINT_DIR/step"
step=0; [ -f "$ck" ] && step=$(cat "$ck")
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} from=$step"
trap 'echo "$step" > "$ck"; echo "saved $step at $(date +%s.%N)"; cat "$SLURM_CHECKPOINT_NOTICE"; exit 0' USR1
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do step=$((step+1)); sleep 0.2; done
"""


@pytest.fixture(scope="module")
def pc(cluster):
    with policy_installed(cluster, *owner_policy(GRACE)):
        cancel_all(cluster)
        yield cluster
        cancel_all(cluster)


@pytest.fixture
def c(pc):
    cancel_all(pc)
    yield pc
    cancel_all(pc)


def submit(cluster, script=COUNTER, *extra, user="alice"):
    ckdir = cluster.jobs / f"ckpt-{time.time_ns()}"
    return cluster.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", NODE, "-N1",
                           "--exclusive", "--time=30", "--open-mode=append", f"--checkpoint-dir={ckdir}",
                           *extra],
                          script, user=user)


def preemptctl(cluster, *args, user="alice"):
    return cluster.run([str(PREEMPTCTL), *args], user=user, check=False, timeout=120)


def output(cluster, jobid):
    path = cluster.jobs / f"{jobid}.out"
    return path.read_text() if path.exists() else ""


def state_reason(cluster, jobid):
    info = job_info(cluster, jobid)
    return info.get("JobState"), info.get("Reason")


def admin_comment(cluster, jobid):
    return job_info(cluster, jobid).get("AdminComment", "")


def node_idle(cluster, node):
    return cluster.node_states().get(node, "").startswith("idle")


def test_pause_requeues_held_and_resume_continues_from_the_checkpoint(c):
    job = submit(c)
    wait_start(c, job, 0, 30)
    poll(lambda: "start" in output(c, job), 20, "the job's first line")
    time.sleep(1)  # a few steps to save  # noqa: the count only needs to be above 0
    r = preemptctl(c, "pause", str(job))
    assert r.returncode == 0, r.stderr
    assert f"job {job}: paused" in r.stdout
    assert state_reason(c, job) == ("PENDING", "JobHeldUser")
    out = output(c, job)
    saved = int(re.search(r"saved (\d+) at", out).group(1))
    assert saved > 0, out
    assert "SLURM_CHECKPOINT_REASON=pause" in out  # the notice file says why, and who asked
    assert "SLURM_CHECKPOINT_PAUSED_BY=alice" in out and "PAUSED_BY_ADMIN" not in out
    poll(lambda: node_idle(c, NODE), 5, f"{NODE} to be free after the pause")
    hold_steady(c, {job: "PENDING"}, 3)  # never starts by itself, on an idle node
    assert re.search(r"slurm-preempt: paused by alice at \S+, grace \d+ s;", admin_comment(c, job))
    assert "requeued held as restart 1 (paused)" in admin_comment(c, job)

    asked = time.monotonic()
    r = preemptctl(c, "resume", str(job))
    assert r.returncode == 0, r.stderr
    wait_start(c, job, 1, 10)
    assert time.monotonic() - asked <= 5, "resume -> RUNNING"
    poll(lambda: "restart=1" in output(c, job), 10, "the second run's first line")
    resumed_from = int(re.search(r"restart=1 from=(\d+)", output(c, job)).group(1))
    assert resumed_from == saved
    assert "resumed by alice at" in admin_comment(c, job)
    release(c, job)
    poll(lambda: c.job_state(job) == "COMPLETED", 30, "the resumed job to complete")
    rows = poll(lambda: (r := c.sacct(job, ["JobID", "State", "AdminComment"], ["-D"])) and
                len([x for x in r if x["JobID"] == str(job)]) == 2 and r, 60, "sacct to list both runs")
    runs = [x for x in rows if x["JobID"] == str(job)]
    assert runs[-1]["State"] == "COMPLETED"
    assert "paused by alice" in runs[-1]["AdminComment"] and "resumed by alice" in runs[-1]["AdminComment"]


def test_a_job_that_ignores_the_signal_is_killed_at_the_grace_end_and_still_held(c):
    job = submit(c, IGNORES_SIGNALS)
    wait_start(c, job, 0, 30)
    poll(lambda: "start" in output(c, job), 20, "the job's first line")
    asked = time.monotonic()
    r = preemptctl(c, "pause", str(job), "--grace", "3")
    assert r.returncode == 0, r.stderr
    took = time.monotonic() - asked
    assert 2 <= took <= 3 + 5, took  # the grace ends on a whole second: 2-3 s after the ask
    assert state_reason(c, job) == ("PENDING", "JobHeldUser")
    assert "killed at grace end" in admin_comment(c, job)
    assert "requeued held as restart 1 (paused)" in admin_comment(c, job)


def test_the_notice_gives_the_deadline_of_a_shorter_pause_grace(c):
    job = submit(c)
    wait_start(c, job, 0, 30)
    poll(lambda: "start" in output(c, job), 20, "the job's first line")
    r = preemptctl(c, "pause", str(job), "--grace", "4")
    assert r.returncode == 0, r.stderr
    out = output(c, job)
    saved_at = float(re.search(r"saved \d+ at ([\d.]+)", out).group(1))
    deadline = int(re.search(r"SLURM_CHECKPOINT_DEADLINE=(\d+)", out).group(1))
    grace = int(re.search(r"SLURM_CHECKPOINT_GRACE=(\d+)", out).group(1))
    # The pause's 4 s, not the job's own 10 s grace (GRACE), counted from the signal.
    assert 2 <= deadline - saved_at <= 4 + 1, (deadline, saved_at)
    assert grace <= 4, out
    assert "SLURM_CHECKPOINT_PAUSED_BY=alice" in out


def test_a_pending_job_is_just_held_and_pausing_twice_says_so(c):
    job = submit(c, COUNTER, "--begin=now+1hour")
    r = preemptctl(c, "pause", str(job))
    assert r.returncode == 0, r.stderr
    assert state_reason(c, job) == ("PENDING", "JobHeldUser")
    mark = log_mark(c)
    again = preemptctl(c, "pause", str(job))
    assert again.returncode == 0 and f"job {job}: paused" in again.stdout, again.stderr
    wait_log_after(c, mark, rf"job_submit/preempt: JobId={job} is paused already \(asked again by alice\)")
    assert admin_comment(c, job).count("paused by alice") == 1, admin_comment(c, job)
    assert state_reason(c, job) == ("PENDING", "JobHeldUser")
    r = preemptctl(c, "resume", str(job))
    assert r.returncode == 0, r.stderr
    poll(lambda: state_reason(c, job) == ("PENDING", "BeginTime"), 10,
         "the released job to wait for its --begin again")


def test_a_pause_slurmctld_refuses_until_slurmdbd_has_the_job_is_sent_again(c):
    """Until slurmdbd has sent a job's database index back (after a slurmctld restart, or while
    slurmdbd is slow), slurmctld refuses every update of the job, having waited 5 s itself ("the
    DB index is being set, try again in a bit"): preemptctl says so in one line, sends the
    request again, and the pause goes through once slurmdbd answers. slurmdbd is stopped
    (SIGSTOP) meanwhile, so the job's index cannot come back before the test lets it."""
    dbd = c.running_pid("slurmdbd")
    assert dbd is not None
    err = c.jobs / f"pause-dbd-{time.time_ns()}.err"
    os.kill(dbd, signal.SIGSTOP)
    try:
        job = submit(c, COUNTER, "--begin=now+1hour")

        # slurmctld asks slurmdbd for new jobs' indexes every 5 s; from then until the answer,
        # every update of the job is refused (this one, root's Nice=0, would change nothing).
        def refused():
            r = c.run(["scontrol", "update", f"JobId={job}", "Nice=0"], check=False)
            assert r.returncode == 0 or "the DB index is being set" in r.stderr, r.stderr
            return r.returncode != 0
        poll(refused, 40, "slurmctld to refuse updates of a job slurmdbd has not recorded")
        with open(err, "w") as f:
            proc = subprocess.Popen(["runuser", "-u", "alice", "--", str(PREEMPTCTL), "pause", str(job)],
                                    env=c.env, cwd=c.jobs, stdout=subprocess.PIPE, stderr=f, text=True)
        poll(lambda: "sending the request again" in err.read_text(), 30,
             "preemptctl to say it sends the refused request again")
    finally:
        os.kill(dbd, signal.SIGCONT)
    out, _ = proc.communicate(timeout=120)
    said = err.read_text()
    assert proc.returncode == 0, said
    assert f"job {job}: paused" in out
    assert said.count("\n") == 1 and said.startswith(f"preemptctl: job {job}: slurmctld cannot change it "
                                                      "until slurmdbd has recorded it"), said
    assert state_reason(c, job) == ("PENDING", "JobHeldUser")


def test_another_user_can_neither_pause_nor_resume(c):
    job = submit(c)
    wait_start(c, job, 0, 30)
    r = preemptctl(c, "pause", str(job), user="bob")
    assert r.returncode == 1
    assert r.stderr.strip() == (f"preemptctl: job {job}: only its owner, a coordinator of its "
                                "account or an administrator may pause or resume it")
    hold_steady(c, {job: "RUNNING"}, 2)
    assert "saved" not in output(c, job)


def test_a_users_pause_an_administrator_has_held_since_stays_held_on_the_users_resume(c):
    """The user's pause mark is still the job's last one, but the hold is an administrator's now
    (scontrol hold by root: JobHeldAdmin). Slurm lets only an operator release that, and a resume
    is no way around it: refused with why, the hold untouched; an operator's resume releases it."""
    job = submit(c, COUNTER, "--begin=now+1hour")
    r = preemptctl(c, "pause", str(job))
    assert r.returncode == 0, r.stderr
    assert state_reason(c, job) == ("PENDING", "JobHeldUser")
    c.run(["scontrol", "hold", str(job)], user=None)
    assert state_reason(c, job) == ("PENDING", "JobHeldAdmin")
    r = preemptctl(c, "resume", str(job))
    assert r.returncode == 1, r
    assert f"job {job} is held by an administrator (JobHeldAdmin, or another hold than its user's): " \
           "ask one to release it" in r.stderr, r.stderr
    assert state_reason(c, job) == ("PENDING", "JobHeldAdmin")
    assert "resumed by" not in admin_comment(c, job)
    r = preemptctl(c, "resume", str(job), user=None)
    assert r.returncode == 0, r.stderr
    poll(lambda: state_reason(c, job) == ("PENDING", "BeginTime"), 10,
         "the operator's resume to release the job to its --begin")


def test_an_administrators_pause_is_released_only_by_an_administrator(c):
    job = submit(c)
    wait_start(c, job, 0, 30)
    poll(lambda: "start" in output(c, job), 20, "the job's first line")
    r = preemptctl(c, "pause", str(job), user=None)  # root
    assert r.returncode == 0, r.stderr
    assert state_reason(c, job) == ("PENDING", "JobHeldAdmin")
    assert "SLURM_CHECKPOINT_PAUSED_BY=root\nSLURM_CHECKPOINT_PAUSED_BY_ADMIN=1" in output(c, job)
    r = preemptctl(c, "resume", str(job))
    assert r.returncode == 1
    assert "was paused by an administrator: ask one to resume it" in r.stderr
    assert state_reason(c, job) == ("PENDING", "JobHeldAdmin")
    r = preemptctl(c, "resume", str(job), user=None)
    assert r.returncode == 0, r.stderr
    wait_start(c, job, 1, 10)


def test_a_coordinator_pauses_an_accounts_jobs_as_a_user_and_an_operator_as_an_administrator(c):
    """A coordinator of the job's account may pause it (--account: every job of the account), and
    holds it as the user would; an operator's pause is an administrator's. Neither is the job's
    owner: the note names them from slurmdbd's users (job_modify looks up no passwd entry)."""
    jobs = [submit(c, COUNTER, "--begin=now+1hour") for _ in range(2)]
    try:
        c.sacctmgr("add", "coordinator", "account=public", "names=carol")
        c.sacctmgr("modify", "user", "where", "name=dave", "set", "adminlevel=operator")

        # slurmctld hears of the coordinator from slurmdbd a moment later: refused until then
        # (pausing a paused job again succeeds, so a retry after a partial refusal is whole).
        def carol_pauses():
            r = preemptctl(c, "pause", "--account", "public", user="carol")
            if r.returncode != 0:
                assert "only its owner, a coordinator of its account or an administrator" in r.stderr, r
            return r.returncode == 0
        poll(carol_pauses, 30, "carol's pause as coordinator of public")
        for j in jobs:
            assert state_reason(c, j) == ("PENDING", "JobHeldUser"), j
            assert re.search(r"slurm-preempt: paused by carol at \S+, held while pending", admin_comment(c, j)), admin_comment(c, j)
        r = preemptctl(c, "resume", str(jobs[0]))  # the owner releases a user hold
        assert r.returncode == 0, r.stderr
        poll(lambda: state_reason(c, jobs[0]) == ("PENDING", "BeginTime"), 10, "the released job")

        def dave_pauses():
            r = preemptctl(c, "pause", str(jobs[0]), user="dave")
            if r.returncode != 0:
                assert "only its owner, a coordinator of its account or an administrator" in r.stderr, r
                assert state_reason(c, jobs[0]) == ("PENDING", "BeginTime")  # refused: untouched
            return r.returncode == 0
        poll(dave_pauses, 30, "dave's pause as operator")
        assert state_reason(c, jobs[0]) == ("PENDING", "JobHeldAdmin")
        assert re.search(r"slurm-preempt: paused by dave \(admin\) at \S+, held while pending", admin_comment(c, jobs[0]))
        r = preemptctl(c, "resume", str(jobs[0]))
        assert r.returncode == 1 and "was paused by an administrator: ask one to resume it" in r.stderr, r
        r = preemptctl(c, "resume", str(jobs[0]), user="dave")
        assert r.returncode == 0, r.stderr
        poll(lambda: state_reason(c, jobs[0]) == ("PENDING", "BeginTime"), 10, "the job dave released")
    finally:
        c.sacctmgr("remove", "coordinator", "account=public", "names=carol")
        c.sacctmgr("modify", "user", "where", "name=dave", "set", "adminlevel=none")


def test_a_heterogeneous_job_is_refused_and_runs_on_untouched(c):
    """Slurm ends a het job's grace for all its components at once, and a grace on one
    component alone crashed slurmctld within 30 s (its time-limit pass): a pause is refused for
    every component, and the job runs on."""
    ckdir = c.jobs / f"ckpt-het-{time.time_ns()}"
    job = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-N1", "--time=10", f"--checkpoint-dir={ckdir}",
                    ":", "--qos=standby", "-p", "standby", "-N1", "--time=10"], "sleep 600", user="alice")
    poll(lambda: c.job_state(job) == "RUNNING", 30, "the het job to run")
    r = preemptctl(c, "pause", str(job))  # preemptctl names each component (squeue's JOB+N)
    assert r.returncode == 1, r
    assert r.stderr.splitlines() == [f"preemptctl: job {job}+{n} is part of a heterogeneous job, which pause "
                                     "does not take: have it save its work, then end or requeue it yourself"
                                     for n in (0, 1)], r.stderr
    # The whole job named in `scontrol update` (Slurm runs job_modify for each component, the
    # request taken out at the first): refused too. Accepted, this crashed slurmctld (SIGSEGV
    # in its time-limit pass, preempt.c _job_check_grace_internal with no preemptor).
    r = c.run(["scontrol", "update", f"JobId={job}", "Comment=slurm-preempt:pause"], user="alice", check=False)
    assert r.returncode != 0 and "component of heterogeneous job" in r.stderr, r
    hold_steady(c, {job: "RUNNING"}, 2)
    components = c.run(["scontrol", "-o", "show", "job", str(job)]).stdout.splitlines()
    assert len(components) == 2, components
    for line in components:  # no grace started on any component, no note
        assert "PreemptTime=None" in line and "paused by" not in line, line


def qos_preempt_mode(cluster, qos):
    """The PreemptMode slurmctld holds for a QOS (its assoc_mgr, as slurmdbd last told it)."""
    out = cluster.run(["scontrol", "-o", "show", "assoc_mgr", "flags=qos", f"qos={qos}"]).stdout
    m = re.search(r"PreemptMode=(\S+)", out)
    return m.group(1) if m else None


def test_a_running_job_whose_preemption_would_cancel_it_is_not_paused(c):
    """Slurm's own pass may end a pause's grace before the watcher does, and then preempts the
    job as its QOS' PreemptMode says: under CANCEL a pause could end it for good, so it is
    refused and the job runs on untouched."""
    job = submit(c)
    wait_start(c, job, 0, 30)
    try:
        c.sacctmgr("modify", "qos", "standby", "set", "PreemptMode=cancel")
        poll(lambda: qos_preempt_mode(c, "standby") == "CANCEL", 30, "slurmctld to hold standby's CANCEL")
        r = preemptctl(c, "pause", str(job))
        assert r.returncode == 1, r
        assert r.stderr.strip() == (f"preemptctl: job {job}: Slurm's preemption mode for it is not REQUEUE (its "
                                    "QOS' PreemptMode, else slurm.conf's; off under PreemptType=preempt/none), "
                                    "so Slurm could end the pause's grace by killing it; ask an administrator "
                                    "for PreemptMode=requeue"), r.stderr
        hold_steady(c, {job: "RUNNING"}, 2)
        assert "saved" not in output(c, job)
        assert "paused by" not in admin_comment(c, job)
    finally:
        c.sacctmgr("modify", "qos", "standby", "set", "PreemptMode=requeue")
        poll(lambda: qos_preempt_mode(c, "standby") == "REQUEUE", 30, "slurmctld to hold standby's REQUEUE")


def test_what_cannot_be_paused_is_refused_and_untouched(c):
    norequeue = c.sbatch(["--qos=standby", "--no-requeue", "-p", "standby", "-w", NODE, "-N1",
                          "--time=30"], COUNTER, user="alice")
    wait_start(c, norequeue, 0, 30)
    r = preemptctl(c, "pause", str(norequeue))
    assert r.returncode == 1
    assert f"job {norequeue} was submitted with --no-requeue" in r.stderr
    r = preemptctl(c, "pause", str(norequeue) + "_x")
    assert r.returncode == 2 and "is not a job id" in r.stderr
    r = preemptctl(c, "resume", str(norequeue))
    assert r.returncode == 1 and f"job {norequeue} is not paused" in r.stderr
    hold_steady(c, {norequeue: "RUNNING"}, 2)
    assert "saved" not in output(c, norequeue)

    alloc = c.run(["salloc", "--no-shell", "--qos=standby", "-p", "standby", "-w", "n4", "-N1",
                   "--time=5"], user="alice")
    interactive = int(re.search(r"Granted job allocation (\d+)", alloc.stderr).group(1))
    r = preemptctl(c, "pause", str(interactive))
    assert r.returncode == 1
    assert f"job {interactive} is an interactive allocation" in r.stderr
    assert c.job_state(interactive) == "RUNNING"

    r = preemptctl(c, "pause", "999999")
    assert r.returncode == 1 and "job 999999: no such job" in r.stderr


def test_grace_above_the_promise_is_refused(c):
    job = submit(c)
    wait_start(c, job, 0, 30)
    r = preemptctl(c, "pause", str(job), "--grace", str(GRACE + 1))
    assert r.returncode == 1
    assert "--grace is above the grace it was promised" in r.stderr
    hold_steady(c, {job: "RUNNING"}, 2)


def test_an_array_task_or_the_whole_array(c):
    """123_2 pauses that task only; 123 pauses every task (an experiment's trials); resume 123
    releases them all."""
    ckdir = c.jobs / f"ckpt-array-{time.time_ns()}"
    array = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "--array=1-3", "-N1",
                      "--exclusive", "--time=30", "--open-mode=append",
                      f"--checkpoint-dir={ckdir}", f"--output={c.jobs}/%A_%a.out"], COUNTER, user="alice")
    tasks = [f"{array}_{i}" for i in (1, 2, 3)]
    poll(lambda: all(c.job_state(t) == "RUNNING" for t in tasks), 30, "the three tasks to run")
    r = preemptctl(c, "pause", tasks[1])
    assert r.returncode == 0, r.stderr
    assert state_reason(c, tasks[1]) == ("PENDING", "JobHeldUser")
    assert [c.job_state(t) for t in (tasks[0], tasks[2])] == ["RUNNING", "RUNNING"]
    # Not even asked to pause: no pause note and no signal to save (a pause's grace would
    # still show RUNNING).
    assert not [t for t in (tasks[0], tasks[2]) if "paused" in admin_comment(c, t)]
    assert "paused" in admin_comment(c, tasks[1])
    r = preemptctl(c, "pause", str(array))
    assert r.returncode == 0, r.stderr
    assert all(state_reason(c, t) == ("PENDING", "JobHeldUser") for t in tasks)
    r = preemptctl(c, "resume", str(array))
    assert r.returncode == 0, r.stderr
    poll(lambda: all(c.job_state(t) == "RUNNING" for t in tasks), 15, "the three tasks to run again")


def test_pause_every_job_of_a_user(c):
    jobs = [submit(c), c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n4", "-N1",
                                 "--exclusive", "--time=30", "--open-mode=append"], COUNTER, user="alice")]
    for j in jobs:
        wait_start(c, j, 0, 30)
    r = preemptctl(c, "pause", "--user", "alice")
    assert r.returncode == 0, r.stderr
    assert all(state_reason(c, j) == ("PENDING", "JobHeldUser") for j in jobs)


def test_a_pause_request_cannot_carry_a_change_the_policy_forbids(c):
    """The request rides on `scontrol update`: anything else in that update is judged by the
    policy first, and a refused update pauses nothing."""
    job = submit(c, COUNTER, "--begin=now+1hour")
    r = c.run(["scontrol", "update", f"JobId={job}", "Comment=slurm-preempt:pause", "Partition=chem"],
              user="alice", check=False)
    assert r.returncode != 0
    info = job_info(c, job)
    assert (info["JobState"], info["Reason"], info["Partition"]) == ("PENDING", "BeginTime", "standby")
    assert "paused" not in info.get("AdminComment", "")


def test_a_suspended_job_is_refused(c):
    job = submit(c)
    wait_start(c, job, 0, 30)
    c.run(["scontrol", "suspend", str(job)])
    try:
        r = preemptctl(c, "pause", str(job))
        assert r.returncode == 1
        assert f"job {job} is suspended: resume it first" in r.stderr
        assert c.job_state(job) == "SUSPENDED"
    finally:
        c.run(["scontrol", "resume", str(job)], check=False)

