"""Issue 12.3: a slurmctld that dies during a preemption grace keeps every promise when it comes
back. Two standby victims on chem's nodes are preempted by one owner job; slurmctld is killed
(-9) a moment into the grace and started again at once:
  - the victim that catches its signal, saves and exits is requeued (never COMPLETED) and
    resumes after the owner;
  - the victim that ignores its signal is killed at the end of its grace, so the owner runs
    on time;
  - both are released from Slurm's requeue hold after the restart too, and run again once the
    owner's job has ended.
The watcher's records live in StateSaveLocation (job_submit_preempt_state) and are rebuilt
from Slurm's own job state for what the file did not see.
A slurmdbd stopped across such a requeue and the next run leaves every run's record ended once
it is back (sacct -D: PREEMPTED, COMPLETED)."""

import os
import re
import signal
import time

import pytest

from cluster import (PREEMPTCTL, UNTIL_RELEASED, Cluster, hold_steady, job_info, log_mark, poll, policy_installed,
                     port_open, release, settled_runs, wait_log_after)
from conftest import PORT_OFFSET
from test_owners import WHOLE_NODE, owner_policy, wait_start

GRACE = 10  # s
# Victims pinned to one owned node each, in the standby partition only: a job queued in public
# too, where -w nX is not, makes Slurm's main scheduler keep nX from the job's standby entry as
# well ("ReqNodeNotAvail"), until a backfill pass (bf_interval, 30 s) starts it.
PINNED = ["--qos=standby", "--requeue", "--open-mode=append", "-p", "standby", *WHOLE_NODE]

SAVES = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
  while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.5; done
  exit 0
fi
trap 'echo "saved at $(date +%s.%N)"; sleep 3; exit 0' USR1
while true; do sleep 0.1; done
"""

IGNORES = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
  while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.5; done
  exit 0
fi
trap '' TERM USR1
while true; do sleep 1; done
"""


@pytest.fixture(scope="module")
def restartable(cluster):
    with policy_installed(cluster, *owner_policy(GRACE)):
        yield cluster


def kill_and_restart_slurmctld(cluster, downtime):
    """SIGKILL slurmctld, leave it down `downtime` seconds (the fault itself), start it again."""
    pid = cluster.running_pid("slurmctld")
    assert pid, "slurmctld is not running"
    os.kill(pid, signal.SIGKILL)
    cluster.procs["slurmctld"].wait(timeout=30)
    poll(lambda: not port_open(cluster.ports["slurmctld"]), 30, "slurmctld's port to close", interval=0.05)
    time.sleep(downtime)
    cluster.start_slurmctld()


def saved_after(cluster, since, timeout=10):
    """Wait until slurmctld has written its job state (StateSaveLocation/job_state) after `since`."""
    path = cluster.dir / "state" / "job_state"
    poll(lambda: path.exists() and path.stat().st_mtime > since, timeout,
         "slurmctld to save its job state", interval=0.1)


def preempt_time(cluster, jobid):
    value = job_info(cluster, jobid).get("PreemptTime", "None")
    return None if value in ("None", "Unknown") else value


@pytest.mark.parametrize("downtime", [1])
def test_promises_survive_a_slurmctld_kill_during_the_grace(restartable, downtime):
    c = restartable
    saver = c.sbatch([*PINNED, "-w", "n3"], SAVES, user="alice")
    ignorer = c.sbatch([*PINNED, "-w", "n4"], IGNORES, user="bob")
    wait_start(c, saver, 0, 30)
    wait_start(c, ignorer, 0, 30)
    # slurmctld saves its job state at most every 5 s: a job submitted less than that before a
    # kill -9 can be lost with everything else since the last save (Slurm's own durability).
    # The owner's job is submitted held and released once Slurm has saved it: the crash then
    # loses what came after (the release, the victims' preemption), not the job.
    submitted = time.time()
    owner = c.sbatch(["-N2", "-w", "n[3-4]", "--exclusive", "--time=30", "--hold"], UNTIL_RELEASED,
                     user="carol")
    saved_after(c, submitted)
    time.sleep(3)  # past batch_sched_delay, as in test_owners: no state to poll for it
    t0 = time.time()
    c.run(["scontrol", "release", str(owner)], user="carol")
    poll(lambda: preempt_time(c, saver) and preempt_time(c, ignorer), 30,
         "both victims to be in their grace", interval=0.1)
    state = c.dir / "state" / "job_submit_preempt_state"
    poll(lambda: state.exists() and state.read_text().count(" t ") == 2, 5,
         "the watcher to record both graces in its state file", interval=0.1)
    time.sleep(1.5)  # into the grace: the fault's timing, not a wait for a state
    kill_and_restart_slurmctld(c, downtime)
    # The restarted slurmctld may have the owner held again (its release came after the last
    # save): released again, as its user would.
    c.update_job(["scontrol", "release", str(owner)], user="carol", check=False)

    started = wait_start(c, owner, 0, GRACE + 30) - t0
    saver_out = (c.jobs / f"{saver}.out").read_text()
    assert "saved at" in saver_out, saver_out
    # The saver exited during its grace: requeued, never COMPLETED.
    c.wait_job_state(saver, ["PENDING", "RUNNING"], timeout=20)
    info = job_info(c, saver)
    assert info["Restarts"] == "1", info
    c.wait_job_state(ignorer, ["PENDING", "RUNNING"], timeout=20)
    assert job_info(c, ignorer)["Restarts"] == "1", job_info(c, ignorer)
    print(f"owner submit -> running with a slurmctld kill mid-grace: {started:.1f} s")
    assert started <= GRACE + 4, f"owner's job started {started:.1f} s after submission, grace {GRACE} s"

    for victim in (saver, ignorer):
        c.wait_log("slurmctld", rf"requeued JobId={victim} is eligible now that its nodes are free", 20)
    release(c, owner)
    t1 = time.time()
    c.wait_job_state(owner, "COMPLETED", timeout=20)
    rerun = max(wait_start(c, saver, 1, 60), wait_start(c, ignorer, 1, 60)) - t1
    print(f"owner end -> both victims running again: {rerun:.1f} s")
    # Both were released from Slurm's requeue hold (the watcher logs it) and resume.
    assert rerun <= 10, f"requeued victims ran again {rerun:.1f} s after the owner ended"
    release(c, saver, ignorer)
    c.wait_job_state(saver, "COMPLETED", timeout=20)
    c.wait_job_state(ignorer, "COMPLETED", timeout=20)
    # slurmctld sends a run's end to slurmdbd from its agent queue, after the state change
    # scontrol shows (CI saw the last run still RUNNING in sacct right after COMPLETED).
    runs = [r["State"].split()[0] for r in settled_runs(c, saver, 2, timeout=60)]
    print("saver's runs:", runs)
    assert runs[-1] == "COMPLETED" and "COMPLETED" not in runs[:-1], runs


def test_a_requeue_during_a_slurmdbd_outage_leaves_every_run_ended_in_sacct(restartable):
    """slurmdbd down while the watcher requeues a preempted job that saved and exited in its
    grace, and while the next run completes: once slurmdbd is back, sacct -D has both runs
    ended (PREEMPTED, then COMPLETED, each with an End). For a few seconds it shows the first
    run RUNNING and the second COMPLETED without an End (Slurm 22.05 writes the job-start
    snapshot before the queued job-end records; stock `scontrol requeue` alike): the check
    waits for the records to settle (cluster.settled_runs), and fails on one stuck RUNNING."""
    c = restartable
    saver = c.sbatch(["--qos=standby", "--requeue", "--open-mode=append", "-w", "n3", *WHOLE_NODE], SAVES,
                     user="alice")
    wait_start(c, saver, 0, 30)
    poll(lambda: [r["State"] for r in c.sacct(saver, ["State"], ["-D"]) if r["JobID"] == str(saver)] == ["RUNNING"],
         30, f"slurmdbd to have job {saver}'s first run")
    c.stop_slurmdbd()
    try:
        owner = c.sbatch(["-w", "n3", "--exclusive", "-N1", "--time=5"], "sleep 1", user="carol")
        poll(lambda: job_info(c, saver)["Restarts"] == "1", GRACE + 60, f"job {saver} to be requeued", interval=0.5)
        c.wait_job_state(owner, "COMPLETED", timeout=30)
        wait_start(c, saver, 1, 60)
        release(c, saver)
        c.wait_job_state(saver, "COMPLETED", timeout=30)
    finally:
        c.start_slurmdbd()
        c.wait_slurmdbd()
    runs = settled_runs(c, saver, 2, timeout=60)
    print("saver's runs after the outage:", runs)
    assert [r["State"] for r in runs] == ["PREEMPTED", "COMPLETED"], runs


def test_a_pause_survives_a_slurmctld_kill_during_its_grace(restartable):
    """A pause (issue 14) whose grace is under way when slurmctld is killed (-9): the job that
    saves and exits while slurmctld is down, and the job that ignores its signal (killed at the
    grace's end), both end requeued *held*, never COMPLETED and never started by themselves;
    resume runs them again."""
    c = restartable
    saver = c.sbatch([*PINNED, "-w", "n3"], SAVES, user="alice")
    ignorer = c.sbatch([*PINNED, "-w", "n4"], IGNORES, user="bob")
    started = max(wait_start(c, saver, 0, 30), wait_start(c, ignorer, 0, 30))
    # Slurm saves its job state at most every 5 s: once it has both runs, the crash loses the
    # pauses (their notes, the jobs' preempt times), not the runs. (A run Slurm itself lost is
    # held by the watcher too: unit-tested, APausedRunSlurmLostInACrashIsHeldNotStartedAgain.)
    saved_after(c, started)
    # The request preemptctl sends (it would wait for the held state; slurmctld decides).
    for job, user in ((saver, "alice"), (ignorer, "bob")):
        c.run(["scontrol", "update", f"JobId={job}", "Comment=slurm-preempt:pause"], user=user)
    state = c.dir / "state" / "job_submit_preempt_state"
    poll(lambda: state.exists() and all(re.search(rf"^run {j} \d+ \d+ tp ", state.read_text(), re.M)
                                        for j in (saver, ignorer)),
         5, "the watcher to record both pauses' graces", interval=0.1)
    time.sleep(1.5)  # into the grace: the fault's timing, not a wait for a state
    kill_and_restart_slurmctld(c, 1)

    for job in (saver, ignorer):
        poll(lambda j=job: (i := job_info(c, j))["JobState"] == "PENDING" and i["Reason"] == "JobHeldUser",
             GRACE + 20, f"paused job {job} to be requeued held after the restart", interval=0.5)
        assert job_info(c, job)["Restarts"] == "1", job_info(c, job)
    assert "saved at" in (c.jobs / f"{saver}.out").read_text()
    hold_steady(c, {saver: "PENDING", ignorer: "PENDING"}, 3)  # idle nodes: still held
    assert "killed at grace end" in job_info(c, ignorer).get("AdminComment", "")

    for job, user in ((saver, "alice"), (ignorer, "bob")):
        r = c.run([str(PREEMPTCTL), "resume", str(job)], user=user, check=False)
        assert r.returncode == 0, r.stderr
        wait_start(c, job, 1, 10)
    release(c, saver, ignorer)
    for job in (saver, ignorer):
        c.wait_job_state(job, "COMPLETED", timeout=20)
        runs = [r["State"] for r in settled_runs(c, job, 2, timeout=60)]
        assert runs[-1] == "COMPLETED" and "COMPLETED" not in runs[:-1], runs


def test_slurmctld_starts_when_a_running_jobs_partition_is_gone():
    """slurm.conf loses a partition while a job runs in it, and slurmctld restarts: Slurm ends
    the job (NODE_FAIL) inside read_slurm_conf, holding its write locks, and with
    AccountingStorageEnforce=limits tells the priority plugin (priority_g_job_end), which Slurm
    loads right there, on first use. priority/fairshare's init must take no slurmctld lock: a
    read lock under the thread's own write lock is EDEADLK, which Slurm's lock macros turn into
    fatal(), so slurmctld could not start at all."""
    gone = "PartitionName=gone Nodes=n6 MaxTime=60 State=UP"
    c = Cluster(with_plugins=True, extra_conf=gone, port_offset=PORT_OFFSET + 1200)
    with c:
        job = c.sbatch(["-p", "gone", "-N1", "--no-requeue"], "sleep 300\n", user="alice")
        c.wait_job_state(job, "RUNNING", timeout=30)
        c.extra_conf = ""
        c.set_conf()
        mark = log_mark(c)
        c.restart_slurmctld(signal.SIGTERM)
        log = c.log("slurmctld")[mark:]
        assert re.search(rf"Invalid partition \(gone\) for JobId={job}", log), log
        # The plugin was loaded there, inside read_slurm_conf: between Slurm's line for the
        # job it ends and the line it logs after its loop (the path this test is about).
        ending = log.find(f"_sync_nodes_to_comp_job: JobId={job} in completing state")
        loaded = log.find("priority/fairshare: loaded slurm-preempt")
        after_loop = log.find("_sync_nodes_to_comp_job: completing 1 jobs")
        assert 0 <= ending < loaded < after_loop, log
        # There, under Slurm's write locks, it parsed no preempt.yaml: it took the policy slurmctld
        # holds (job_submit/preempt read it at start, outside the locks), and its thread read
        # the file again once it ran, outside every lock.
        assert re.search(r"priority/fairshare: loaded slurm-preempt \S+, policy \S+preempt.yaml, weights .*; "
                         r"the policy as slurmctld holds it, read again on the recalculation thread\n",
                         log[loaded:]), log[loaded:]
        wait_log_after(c, mark + loaded, r"priority/fairshare: policy in force at start \(\d+\): \S+preempt.yaml, "
                       r"unchanged\n", 30)
        wait_log_after(c, mark + loaded, r"priority/fairshare: read again at start: policy \S+preempt.yaml, weights", 30)
        assert c.procs["slurmctld"].poll() is None
        poll(lambda: c.job_state(job) == "NODE_FAIL", 30, f"job {job} to end NODE_FAIL")


def test_a_slurmctld_whose_start_waits_for_slurmdbd_keeps_its_watcher_off_slurms_tables(restartable):
    """Until read_slurm_conf has loaded Slurm's state, slurmctld holds an empty job list and no
    job hash yet (controller.c init_job_conf; find_job_record divides by the hash's size, 0
    then), while the job_submit plugin, and with it the watcher, already runs. A slurmctld whose
    start waits for slurmdbd (stopped with SIGSTOP: its port open, no answer) stays in that gap
    for as long as slurmdbd is silent. With a record of a preemption in the watcher's state file,
    the watcher must wait for Slurm's state: slurmctld lives through the gap, and once it has
    loaded its state the watcher reads the record and rebuilds from the jobs Slurm loaded."""
    c = restartable
    victim = c.sbatch([*PINNED, "-w", "n3"], SAVES, user="alice")
    wait_start(c, victim, 0, 30)
    owner = c.sbatch(["-N1", "-w", "n3", "--exclusive", "--time=30"], UNTIL_RELEASED, user="carol")
    wait_start(c, owner, 0, GRACE + 30)
    state = c.dir / "state" / "job_submit_preempt_state"
    poll(lambda: state.exists() and f"\nrun {victim} " in state.read_text(), 10,
         "the watcher to keep the victim's run in its state file", interval=0.1)
    c.stop_daemon("slurmctld")
    poll(lambda: not port_open(c.ports["slurmctld"]), 30, "slurmctld's port to close")
    dbd = c.running_pid("slurmdbd")
    mark = log_mark(c)
    os.kill(dbd, signal.SIGSTOP)
    try:
        c.spawn("slurmctld", ["slurmctld", "-D", "-f", str(c.conf)])
        # The watcher's first tick logs that it waits for this slurmctld to take control: it
        # runs in the gap. Then slurmctld stays up, and still waiting, through three more ticks
        # (one a second): without the wait for control (lib/watch.hpp control_step) and for
        # Slurm's state (slurm_state_loaded), each would have touched the tables.
        wait_log_after(c, mark, r"job_submit/preempt: the watcher waits for this slurmctld to run as the "
                       r"controller in control", 20)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert c.running_pid("slurmctld") is not None, c.log_tails("slurmctld")
            assert not c.slurmctld_answers(), "slurmctld answered before slurmdbd did: no gap was tested"
            time.sleep(0.2)
    finally:
        os.kill(dbd, signal.SIGCONT)
    c.wait_slurmctld(60)
    wait_log_after(c, mark, r"watcher state read from \S+: [1-9]\d* runs", 20)
    assert "part_list is NULL" not in c.log("slurmctld")[mark:], "a policy check ran before Slurm's state"
    release(c, owner)
    c.wait_job_state(owner, "COMPLETED", timeout=30)
    wait_start(c, victim, 1, 60)
    release(c, victim)
    c.wait_job_state(victim, "COMPLETED", timeout=30)
