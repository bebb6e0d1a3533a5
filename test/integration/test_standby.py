"""Issue 3, the standby QOS, on the real six-node cluster.

The module installs a test policy (TEST_POLICY) beside slurm.conf, where job_submit/preempt
and priority/fairshare read it after `scontrol reconfigure`, and syncs the QOS in slurmdbd
from it with `preemptctl qos-sync`: standby has grace 0 (in stock 22.05 a job that exits
during the grace ends COMPLETED and is not requeued) and small limits. At the end the site
policy etc/preempt.yaml is put back and synced. Every test cancels its jobs.
"""

import re
import time

import pytest

from cluster import (CLUSTER_POLICY_SHAPE, machine_lock, policy_installed, SITE_POLICY, ClusterError, cancel_all, hold_steady, job_info, log_mark, parse_lock_stats, poll,
                     qos_sync, queued, reconfigure, sacctmgr_qos, try_sbatch,
                     ts, wait_log_after, wait_qos_walltimes)
from cluster import apply_policy as cluster_apply_policy

TEST_POLICY_TEMPLATE = """\
version: 1
qos:
  standby:
    preemptible: true
    boost: 1000
    grace: 0
    requeue: {requeue}
    min_runtime: {min_runtime}
    limits:
      max_walltime: 4h
      max_running_jobs_per_user: 3
      max_cpus_per_user: 12
      max_gpus_per_user: 24
  normal:
    preempts: [standby]
    limits:
      max_walltime: 1h
      max_running_jobs_per_user: 1
      max_cpus_per_user: 4
      max_gpus_per_user: 8
  owner:
    preempts: [standby]
"""


def policy_text(requeue="user", min_runtime="0"):
    return TEST_POLICY_TEMPLATE.format(requeue=requeue, min_runtime=min_runtime) + CLUSTER_POLICY_SHAPE


TEST_POLICY = policy_text()

# MaxWall each policy gives standby and normal, in minutes as `scontrol show assoc_mgr` shows
# them: once slurmctld shows these, the sacctmgr change that carried them has reached it.
TEST_WALL_MIN = {"standby": 240, "normal": 60}

OWNER_REJECT = ("sbatch: error: qos standby jobs are preemptible and cannot run in partition chem, "
                "which is reserved for chem's jobs that preempt them; submit with "
                "--partition=standby or without --partition")
NORMAL_WALL_REJECT = ("sbatch: error: time limit 02:00:00 exceeds qos normal's maximum of 01:00:00; "
                      "ask for --time=01:00:00 or less, or submit with --qos=standby "
                      "(preemptible, up to 04:00:00)")

SLEEPER = "sleep 600\n"


# --- helpers (shared ones live in test/cluster/cluster.py) ---------------------------------------

def apply_policy(cluster, text, walltimes=TEST_WALL_MIN):
    """Install policy text beside slurm.conf, reconfigure, sync the QOS from it."""
    lines = cluster_apply_policy(cluster, text, walltimes)
    assert lines[-1].startswith("preemptctl: "), lines
    return lines


# --- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def standby_policy(cluster):
    """The cluster with TEST_POLICY installed and synced; the site policy back afterwards."""
    with policy_installed(cluster, TEST_POLICY, TEST_WALL_MIN):
        yield cluster


@pytest.fixture
def standby(standby_policy):
    """standby_policy's cluster, with an empty queue before and after the test."""
    cancel_all(standby_policy)
    yield standby_policy
    cancel_all(standby_policy)


# --- 1. preemptor or preemptee, never both ----------------------------------------------------

def test_standby_in_owner_partition_is_rejected_with_one_line(standby):
    r = try_sbatch(standby, ["--qos=standby", "-p", "chem"])
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and not r.stdout.strip(), r
    assert lines[0] == OWNER_REJECT, lines
    assert all(line.startswith("sbatch: error: Batch job submission failed:") for line in lines[1:]), lines

    r = try_sbatch(standby, ["--qos=standby", "-p", "public,chem"])
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and not r.stdout.strip(), r
    assert lines[0].startswith("sbatch: error: qos standby jobs are preemptible and cannot run in "
                               "partition chem, which is reserved for chem's jobs"), lines
    assert lines[0].endswith("submit with --partition=standby or without --partition"), lines
    assert all(line.startswith("sbatch: error: Batch job submission failed:") for line in lines[1:]), lines
    assert queued(standby, "alice") == []

    r = try_sbatch(standby, ["--qos=standby", "-p", "standby"], script=SLEEPER)
    assert r.returncode == 0, r.stderr
    assert queued(standby, "alice") == [r.stdout.strip()]


# --- 2. modest priority boost -------------------------------------------------------------------

def test_standby_priority_exceeds_identical_normal_job_by_boost(standby):
    # bob holds n1; alice's two jobs need all of n1, so both stay pending. The normal one
    # cannot preempt bob's normal job; the standby one preempts nothing.
    blocker = standby.sbatch(["-p", "public", "-w", "n1", "--exclusive", "--time=10"], SLEEPER, user="bob")
    standby.wait_job_state(blocker, "RUNNING", timeout=30)
    same = ["-p", "public", "-w", "n1", "--exclusive", "--time=10"]
    normal = standby.sbatch(["--qos=normal", *same], SLEEPER, user="alice")
    stand = standby.sbatch(["--qos=standby", *same], SLEEPER, user="alice")

    def sprio():
        out = standby.run(["sprio", "-h", "-o", "%i %Y %S", "-j", f"{normal},{stand}"]).stdout
        rows = {int(i): (int(p), int(s)) for i, p, s in (line.split() for line in out.splitlines())}
        return rows if set(rows) == {normal, stand} else None
    rows = poll(sprio, 20, "sprio to list both pending jobs")
    assert rows[stand][1] - rows[normal][1] == 1000, rows
    assert abs(rows[stand][0] - rows[normal][0] - 1000) <= 1, rows

    assert standby.job_state(normal) == standby.job_state(stand) == "PENDING"
    prio = {j: int(job_info(standby, j)["Priority"]) for j in (normal, stand)}
    assert abs(prio[stand] - prio[normal] - 1000) <= 1, prio


# --- 3. raised limits and qos-sync ----------------------------------------------------------------

def test_qos_sync_applies_policy_limits_and_is_idempotent(standby, tmp_path):
    qos_sync(standby, SITE_POLICY)  # a known starting point: the site policy
    policy = tmp_path / "test-policy.yaml"
    policy.write_text(TEST_POLICY)
    first = qos_sync(standby, policy)
    for pattern in [r"qos standby: GraceTime \S+ -> 00:00:00", r"qos standby: MaxWall \S+ -> 04:00:00",
                    r"qos standby: MaxJobsPU \S+ -> 3", r"qos standby: MaxTRESPU \S+ -> cpu=12,gres/gpu=24",
                    r"qos normal: MaxWall \S+ -> 01:00:00", r"qos normal: MaxJobsPU \S+ -> 1",
                    r"qos normal: MaxTRESPU \S+ -> cpu=4,gres/gpu=8", r"qos owner: up to date"]:
        assert any(re.fullmatch(pattern, line) for line in first), (pattern, first)
    assert first[-1] == "preemptctl: 2 of 3 QOS changed", first

    second = qos_sync(standby, policy)
    assert second == ["qos standby: up to date", "qos normal: up to date", "qos owner: up to date",
                      "preemptctl: 0 of 3 QOS changed"], second

    qos = sacctmgr_qos(standby)
    assert {k: qos["standby"][k] for k in ("Preempt", "PreemptMode", "GraceTime", "MaxWall", "MaxJobsPU")} == \
        {"Preempt": "", "PreemptMode": "requeue", "GraceTime": "00:00:00", "MaxWall": "04:00:00", "MaxJobsPU": "3"}
    assert set(qos["standby"]["MaxTRESPU"].split(",")) == {"cpu=12", "gres/gpu=24"}
    assert {k: qos["normal"][k] for k in ("Preempt", "MaxWall", "MaxJobsPU")} == \
        {"Preempt": "standby", "MaxWall": "01:00:00", "MaxJobsPU": "1"}
    assert set(qos["normal"]["MaxTRESPU"].split(",")) == {"cpu=4", "gres/gpu=8"}
    assert qos["owner"]["Preempt"] == "standby"
    wait_qos_walltimes(standby, TEST_WALL_MIN)


def test_normal_job_over_normal_walltime_is_rejected_same_job_as_standby_runs(standby):
    for qos in (["--qos=normal"], []):  # no --qos counts as normal
        r = try_sbatch(standby, [*qos, "-p", "public", "--time=2:00:00"], script=SLEEPER)
        assert r.returncode != 0 and not r.stdout.strip(), r
        lines = r.stderr.strip().splitlines()
        assert lines[0] == NORMAL_WALL_REJECT, lines
        assert all(line.startswith("sbatch: error: Batch job submission failed:") for line in lines[1:]), lines
    assert queued(standby, "alice") == []

    jobid = standby.sbatch(["--qos=standby", "-p", "standby", "--time=2:00:00"], SLEEPER, user="alice")
    standby.wait_job_state(jobid, "RUNNING", timeout=30)
    assert job_info(standby, jobid)["TimeLimit"] == "02:00:00"


def test_three_normal_jobs_one_runs_three_standby_jobs_all_run(standby):
    normal = [standby.sbatch(["--qos=normal", "-p", "public", "-N1", "-n1", "--time=10"], SLEEPER, user="alice")
              for _ in range(3)]

    def settled():
        info = {j: job_info(standby, j) for j in normal}
        running = [j for j in normal if info[j]["JobState"] == "RUNNING"]
        limited = [j for j in normal if info[j]["JobState"] == "PENDING"
                   and info[j]["Reason"] == "QOSMaxJobsPerUserLimit"]
        return (running, limited) if len(running) == 1 and len(limited) == 2 else None
    try:
        poll(settled, 30, "one normal job RUNNING and two PENDING with QOSMaxJobsPerUserLimit")
    except ClusterError:
        raise AssertionError({j: (job_info(standby, j)["JobState"], job_info(standby, j)["Reason"])
                              for j in normal}) from None
    cancel_all(standby)

    stand = [standby.sbatch(["--qos=standby", "-p", "standby", "-N1", "-n1", "--time=10"], SLEEPER, user="alice")
             for _ in range(3)]
    for j in stand:
        standby.wait_job_state(j, "RUNNING", timeout=30)


# --- 4. preempt/cancel -------------------------------------------------------------------------------

def test_preempted_standby_job_without_requeue_ends_and_never_runs_again(standby):
    victim = standby.sbatch(["--qos=standby", "-p", "standby", "-w", "n3", "--exclusive", "--time=10"],
                            SLEEPER, user="alice")
    standby.wait_job_state(victim, "RUNNING", timeout=30)
    owner = standby.sbatch(["-A", "chem", "--qos=owner", "-p", "chem", "-w", "n3", "--exclusive",
                            "--time=5"], "sleep 3\n", user="carol")
    standby.wait_job_state(owner, "RUNNING", timeout=60)
    assert standby.wait_job_state(victim, {"PREEMPTED", "CANCELLED"}, timeout=30)
    standby.wait_job_state(owner, "COMPLETED", timeout=30)

    final = standby.job_state(victim)
    hold_steady(standby, {victim: final}, 10)  # the node is free again: it does not come back
    info = job_info(standby, victim)
    assert (info["Requeue"], info["Restarts"]) == ("0", "0"), info

    def runs():
        rows = [r for r in standby.sacct(victim, ["State"], extra=["-D"]) if r["JobID"] == str(victim)]
        return rows if rows and rows[-1]["State"].split()[0] in ("PREEMPTED", "CANCELLED") else None
    rows = poll(runs, 20, f"sacct to show job {victim} PREEMPTED or CANCELLED")
    assert len(rows) == 1, rows


# --- 5. preempt/requeue --------------------------------------------------------------------------

def test_preempted_standby_job_with_requeue_reruns_with_full_time(standby):
    script = 'echo "run restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"\nsleep 600\n'
    victim = standby.sbatch(["--qos=standby", "--requeue", "--open-mode=append", "-p", "standby", "-w", "n3",
                             "--exclusive", "--time=10"], script, user="alice")
    standby.wait_job_state(victim, "RUNNING", timeout=30)
    before = job_info(standby, victim)
    owner = standby.sbatch(["-A", "chem", "--qos=owner", "-p", "chem", "-w", "n3", "--exclusive",
                            "--time=5"], "sleep 5\n", user="carol")
    standby.wait_job_state(owner, "RUNNING", timeout=60)
    standby.wait_job_state(victim, "PENDING", timeout=30)
    standby.wait_job_state(owner, "COMPLETED", timeout=30)
    owner_end = ts(job_info(standby, owner)["EndTime"])

    standby.wait_job_state(victim, "RUNNING", timeout=90)  # by itself: nobody touches it
    after = job_info(standby, victim)
    assert after["Restarts"] == "1", after
    assert after["TimeLimit"] == before["TimeLimit"] == "00:10:00"
    start, end = ts(after["StartTime"]), ts(after["EndTime"])
    assert start >= owner_end, (after["StartTime"], owner_end)
    assert end - start == 600, (after["StartTime"], after["EndTime"])

    out = standby.jobs / f"{victim}.out"
    poll(lambda: "run restart=1" in out.read_text(), 20, "the rerun's output line")
    runs_seen = [line for line in out.read_text().splitlines() if line.startswith("run ")]
    assert runs_seen == ["run restart=0 node=n3", "run restart=1 node=n3"], out.read_text()

    def runs():
        rows = [r for r in standby.sacct(victim, ["State", "Start", "End"], extra=["-D"])
                if r["JobID"] == str(victim)]
        return rows if len(rows) == 2 and rows[1]["State"] == "RUNNING" else None
    rows = poll(runs, 20, f"sacct -D to list both runs of job {victim}")
    assert rows[0]["State"].split()[0] in ("REQUEUED", "PREEMPTED"), rows
    preempted_at = ts(rows[0]["End"])
    assert ts(after["EligibleTime"]) > preempted_at, (after["EligibleTime"], rows[0])
    assert ts(after["AccrueTime"]) > preempted_at, (after["AccrueTime"], rows[0])
    assert ts(after["AccrueTime"]) > ts(before["AccrueTime"]), (before["AccrueTime"], after["AccrueTime"])


def test_a_job_requeued_by_hand_is_eligible_again_once_its_nodes_are_free(standby):
    """`scontrol requeue` of a running job: priority/fairshare tells the watcher of the run's
    end as a requeue, and the watcher ends Slurm's requeue hold (cred_expire, 10 s here) as soon
    as the nodes are free, not at its scan of the job list (every 30 s). Twice, so that a scan
    falling in the window by chance cannot pass the test alone."""
    job = standby.sbatch(["--requeue", "-p", "standby", "--qos=standby", "-w", "n4", "--time=10"],
                         "sleep 600\n", user="alice")
    for restart in (1, 2):
        standby.wait_job_state(job, "RUNNING", timeout=60)
        mark = log_mark(standby)
        t0 = time.time()
        standby.run(["scontrol", "requeue", str(job)])
        wait_log_after(standby, mark, rf"requeued JobId={job} is eligible now that its nodes are free", 20)
        released = time.time() - t0
        print(f"requeue {restart}: eligible again after {released:.1f} s")
        assert released <= 8, f"requeue {restart}: released from the requeue hold after {released:.1f} s"
        assert job_info(standby, job)["Restarts"] == str(restart)


# --- 6. requeue by policy; a broken policy keeps the last good one --------------------------------

def test_policy_requeue_default_turns_requeue_on(standby):
    try:
        apply_policy(standby, policy_text(requeue="default"))
        mark = log_mark(standby)
        jobid = standby.sbatch(["--qos=standby", "-p", "standby", "--hold"], SLEEPER, user="alice")
        info = job_info(standby, jobid)
        assert info["Requeue"] == "1", info
        assert info.get("AdminComment") == "slurm-preempt: requeue on;", info
        wait_log_after(standby, mark, r"job_submit/preempt: changed the submission of uid \d+ \(job name [^)]*\): requeue on;")
    finally:
        apply_policy(standby, TEST_POLICY)


def test_broken_policy_keeps_last_good_policy(standby):
    path = standby.dir / "etc" / "preempt.yaml"
    good = policy_text(requeue="default")
    broken = good.replace("boost: 1000", "boost: -5")
    line = broken.splitlines().index("    boost: -5") + 1
    try:
        apply_policy(standby, good)
        first = standby.sbatch(["--qos=standby", "-p", "standby", "--hold"], SLEEPER, user="alice")
        assert job_info(standby, first)["Requeue"] == "1"  # the good policy is in force

        mark = log_mark(standby)
        path.write_text(broken)
        reconfigure(standby)
        jobid = standby.sbatch(["--qos=standby", "-p", "standby", "--hold"], SLEEPER, user="alice")
        m = wait_log_after(standby, mark, r"job_submit/preempt: cannot load policy: (\S+):(\d+):(\d+): "
                                          r"[^\n]*; keeping the last good policy\n")
        assert (m.group(1), int(m.group(2))) == (str(path), line), m.group(0)
        info = job_info(standby, jobid)
        assert info["Requeue"] == "1", info  # still requeue: default, not Slurm's or the site's
        assert info.get("AdminComment") == "slurm-preempt: requeue on;", info
    finally:
        apply_policy(standby, TEST_POLICY)


def test_preempt_quota_loaded_at_a_reconfigure_keeps_the_last_good_policy(standby):
    """A reconfigure that changes PreemptType makes Slurm load preempt/quota inside its write
    locks and stop the daemon if the plugin's init fails: a preempt.yaml broken by then must not
    take slurmctld down. preempt/quota starts from the policy the process holds and reads the
    file on its own thread, where it keeps that policy."""
    path = standby.dir / "etc" / "preempt.yaml"
    broken = TEST_POLICY.replace("boost: 1000", "boost: -5")
    line = broken.splitlines().index("    boost: -5") + 1
    overrides = dict(standby.conf_overrides)
    try:
        standby.set_conf(PreemptType="preempt/qos")
        reconfigure(standby)
        mark = log_mark(standby)
        path.write_text(broken)
        standby.set_conf(PreemptType="preempt/quota")
        reconfigure(standby)  # returns once preempt/quota has logged the policy in force
        log = standby.log("slurmctld")[mark:]
        assert re.search(r"preempt/quota: loaded slurm-preempt \S+, policy \S+preempt.yaml", log), log
        m = re.search(r"preempt/quota: cannot load policy: (\S+):(\d+):\d+: [^\n]*; keeping the last good "
                      r"policy\n", log)
        assert m and (m.group(1), int(m.group(2))) == (str(path), line), log
        assert standby.procs["slurmctld"].poll() is None
        assert "PreemptType             = preempt/quota" in standby.run(["scontrol", "show", "config"]).stdout
    finally:
        standby.reset_conf()
        standby.set_conf(**overrides)
        apply_policy(standby, TEST_POLICY)


def test_job_submit_loaded_at_a_reconfigure_starts_from_the_policy_the_controller_holds(standby):
    """A slurmctld started without JobSubmitPlugins, then a reconfigure that adds
    job_submit/preempt: Slurm loads it inside its write locks, where no file may be parsed. It
    starts from the policy preempt/quota and priority/fairshare read at start, and its watcher
    reads preempt.yaml on its own thread: a file broken by then is refused there with its
    file:line:column, and the policy held decides the submissions."""
    path = standby.dir / "etc" / "preempt.yaml"
    good = policy_text(requeue="default")
    broken = good.replace("boost: 1000", "boost: -5")
    line = broken.splitlines().index("    boost: -5") + 1
    overrides = dict(standby.conf_overrides)
    try:
        apply_policy(standby, good)
        standby.set_conf(JobSubmitPlugins=None)
        restarted = log_mark(standby)
        standby.restart_slurmctld()
        assert "job_submit/preempt: loaded" not in standby.log("slurmctld")[restarted:]
        mark = log_mark(standby)
        path.write_text(broken)
        standby.reset_conf()
        standby.set_conf(**overrides)
        reconfigure(standby)  # returns once job_submit/preempt has logged the policy in force
        log = standby.log("slurmctld")[mark:]
        assert re.search(r"job_submit/preempt: loaded slurm-preempt \S+, policy \S+preempt.yaml", log), log
        assert "refusing to start" not in log, log
        m = re.search(r"job_submit/preempt: cannot load policy: (\S+):(\d+):\d+: [^\n]*; keeping the last "
                      r"good policy\n", log)
        assert m and (m.group(1), int(m.group(2))) == (str(path), line), log
        assert standby.procs["slurmctld"].poll() is None
        jobid = standby.sbatch(["--qos=standby", "-p", "standby", "--hold"], SLEEPER, user="alice")
        info = job_info(standby, jobid)
        assert info["Requeue"] == "1", info  # the good policy's requeue: default
        assert info.get("AdminComment") == "slurm-preempt: requeue on;", info
    finally:
        standby.reset_conf()
        standby.set_conf(**overrides)
        apply_policy(standby, TEST_POLICY)


def test_job_submit_holds_count_as_write_locks_under_the_rpc_queue(standby):
    """Slurm calls job_submit under its read locks, but with SlurmctldParameters=enable_rpc_queue
    (read at slurmctld's start) under its job and node write locks: the lock statistics
    (StateSaveLocation/slurm_preempt_lock_stats, counted since slurmctld's start, written every
    10 s) count those holds as "job_submit, write locks", the others as "job_submit"."""
    path = standby.dir / "state" / "slurm_preempt_lock_stats"
    overrides = dict(standby.conf_overrides)
    params = next(line.split("=", 1)[1] for line in (standby.examples / "slurm.conf.fragment")
                  .read_text().splitlines() if line.startswith("SlurmctldParameters="))

    def counted():
        try:
            got = parse_lock_stats(path.read_text())
        except OSError:
            return None
        return {site: got[site]["count"] for site in ("job_submit", "job_submit, write locks")
                if got.get(site, {"count": 0})["count"] > 0}

    def submissions_counted(queue):
        if queue:
            standby.set_conf(SlurmctldParameters=f"{params},enable_rpc_queue")
        standby.restart_slurmctld()
        path.unlink(missing_ok=True)
        for _ in range(3):
            standby.sbatch(["--qos=standby", "-p", "standby", "--hold"], SLEEPER, user="alice")
        return poll(lambda: (c := counted()) and sum(c.values()) >= 3 and c, 30,
                    "the lock statistics to count the three submissions", interval=0.5)

    try:
        assert submissions_counted(queue=False) == {"job_submit": 3}
        assert submissions_counted(queue=True) == {"job_submit, write locks": 3}
    finally:
        standby.reset_conf()
        standby.set_conf(**overrides)
        standby.restart_slurmctld()
        apply_policy(standby, TEST_POLICY)


# --- 7. minimum runtime -------------------------------------------------------------------------

def test_min_runtime_protects_the_younger_standby_job(standby):
    # A is submitted before B (lower job id), so without min_runtime Slurm would pick A as the
    # victim (equal preempt priority: job list order); A starts only after B has run > 30 s.
    try:
        apply_policy(standby, policy_text(min_runtime="30s"))
        assert sacctmgr_qos(standby)["standby"]["PreemptExemptTime"] == "00:00:30"
        blocker = standby.sbatch(["-A", "chem", "--qos=normal", "-p", "chem", "-w", "n3", "--exclusive",
                                  "--time=10"], SLEEPER, user="carol")
        standby.wait_job_state(blocker, "RUNNING", timeout=30)
        young = standby.sbatch(["--qos=standby", "-p", "standby", "-w", "n3", "--exclusive", "--time=10"],
                               SLEEPER, user="alice")
        old = standby.sbatch(["--qos=standby", "-p", "standby", "-w", "n4", "--exclusive", "--time=10"],
                             SLEEPER, user="alice")
        standby.wait_job_state(old, "RUNNING", timeout=30)
        old_start = ts(job_info(standby, old)["StartTime"])
        poll(lambda: time.time() - old_start > 31, 45, "job B to have run more than 30 s", interval=0.5)
        assert standby.job_state(young) == "PENDING"

        standby.run(["scancel", str(blocker)])
        standby.wait_job_state(young, "RUNNING", timeout=30)
        young_start = ts(job_info(standby, young)["StartTime"])
        owner = standby.sbatch(["-A", "chem", "--qos=owner", "-p", "chem", "-N1", "--exclusive", "--time=5"],
                               SLEEPER, user="carol")
        standby.wait_job_state(owner, "RUNNING", timeout=60)
        ended = {"PREEMPTED", "CANCELLED"}

        def one_preempted():
            states = {"A (young, n3)": standby.job_state(young), "B (old, n4)": standby.job_state(old)}
            return states if ended & set(states.values()) else None
        states = poll(one_preempted, 30, "a standby job to be preempted")
        assert states["B (old, n4)"] in ended and states["A (young, n3)"] == "RUNNING", states
        owner_info = job_info(standby, owner)
        assert owner_info["NodeList"] == "n4", owner_info
        assert ts(owner_info["StartTime"]) - young_start < 30, (young_start, owner_info["StartTime"])
    finally:
        cancel_all(standby)
        apply_policy(standby, TEST_POLICY)


# --- 8. a normal job is never preempted ----------------------------------------------------------

def test_owner_job_does_not_preempt_a_normal_job(standby):
    normal = standby.sbatch(["-A", "chem", "--qos=normal", "-p", "chem", "-w", "n3", "--exclusive",
                             "--time=10"], SLEEPER, user="carol")
    standby.wait_job_state(normal, "RUNNING", timeout=30)
    owner = standby.sbatch(["-A", "chem", "--qos=owner", "-p", "chem", "-w", "n3", "--exclusive",
                            "--time=5"], SLEEPER, user="carol")
    hold_steady(standby, {normal: "RUNNING", owner: "PENDING"}, 20)


# --- 9. what the plugin changed is recorded --------------------------------------------------------

def test_requeue_off_is_recorded_in_admin_comment_and_log(standby):
    mark = log_mark(standby)
    jobid = standby.sbatch(["--qos=standby", "-p", "standby"], "true\n", user="alice")
    uid = standby.run(["id", "-u", "alice"]).stdout.strip()
    wait_log_after(standby, mark, rf"job_submit/preempt: changed the submission of uid {uid} \(job name [^)]*\): requeue off;")
    assert job_info(standby, jobid)["Requeue"] == "0"

    def comment():
        rows = [r for r in standby.sacct(jobid, ["AdminComment"]) if r["JobID"] == str(jobid)]
        return rows[0]["AdminComment"] if rows and rows[0]["AdminComment"] else None
    assert poll(comment, 20, f"sacct to show job {jobid}'s AdminComment") == "slurm-preempt: requeue off;"


# --- 10. a job without --qos is judged by its real default QOS (issue 12, item 7) ---------------------

def test_a_job_without_qos_is_judged_by_its_accounts_default_qos(standby):
    """alice's association in account public gets standby as its default QOS: her jobs that
    name no QOS run as standby, and the policy treats them as standby jobs (routing, requeue
    rule, standby's walltime), not by the rule named normal."""
    standby.sacctmgr("modify", "user", "alice", "where", "account=public", "set", "defaultqos=standby")
    try:
        def default_reached():  # slurmctld has the change once a job without --qos gets it
            jobid = standby.sbatch(["-H"], "true\n", user="alice")
            qos = job_info(standby, jobid)["QOS"]
            standby.run(["scancel", str(jobid)])
            return qos == "standby"
        poll(default_reached, 30, "slurmctld to give alice's jobs the default QOS standby")

        # 2 h: over normal's 1 h, within standby's 4 h.
        jobid = standby.sbatch(["-H", "--time=2:00:00"], SLEEPER, user="alice")
        info = job_info(standby, jobid)
        assert (info["QOS"], info["Partition"], info["Requeue"]) == ("standby", "public,standby", "0"), info
        assert info.get("AdminComment") == "slurm-preempt: partition (default)->public,standby; requeue off;", info

        r = try_sbatch(standby, ["-p", "chem"])
        assert r.returncode != 0 and not r.stdout.strip(), r
        assert r.stderr.splitlines()[0] == (
            "sbatch: error: qos standby (your default) jobs are preemptible and cannot run in "
            "partition chem, which is reserved for chem's jobs that preempt them; submit with "
            "--partition=standby or without --partition"), r.stderr
        # An explicit QOS still wins over the default.
        r = try_sbatch(standby, ["--qos=normal", "-p", "public", "--time=2:00:00"])
        assert r.stderr.splitlines()[0] == NORMAL_WALL_REJECT, r.stderr
    finally:
        standby.sacctmgr("modify", "user", "alice", "where", "account=public", "set", "defaultqos=-1")
        cancel_all(standby)

    def default_gone():
        jobid = standby.sbatch(["-H"], "true\n", user="alice")
        qos = job_info(standby, jobid)["QOS"]
        standby.run(["scancel", str(jobid)])
        return qos == "normal"
    poll(default_gone, 30, "alice's default QOS to be Slurm's normal again")


# --- bad input -------------------------------------------------------------------------------------

def test_unknown_qos_is_rejected(standby):
    r = try_sbatch(standby, ["--qos=bogus"])
    assert r.returncode != 0 and not r.stdout.strip(), r
    assert r.stderr.strip().splitlines() == ["sbatch: error: Batch job submission failed: Invalid qos specification"]
    assert queued(standby, "alice") == []


def test_user_without_standby_access_is_rejected(standby):
    with machine_lock("users"):
        if standby.run(["id", "zoe"], check=False).returncode != 0:
            standby.run(["useradd", "--create-home", "--shell", "/bin/bash", "zoe"])
    standby.sacctmgr("add", "user", "zoe", "account=public")
    try:
        poll(lambda: "UserName=zoe(" in standby.run(
            ["scontrol", "show", "assoc_mgr", "users=zoe", "flags=assoc"]).stdout, 30,
            "slurmctld to know zoe's association")
        assert "standby" not in standby.run(["sacctmgr", "-nP", "show", "assoc", "user=zoe", "format=qos"]).stdout
        r = try_sbatch(standby, ["--qos=standby", "-p", "standby"], user="zoe")
        assert r.returncode != 0 and not r.stdout.strip(), r
        assert r.stderr.strip().splitlines() == [
            "sbatch: error: user zoe (account public) may not use qos standby; ask your "
            "administrator to grant it (sacctmgr modify user zoe set qos+=standby) or submit "
            "without --qos=standby",
            "sbatch: error: Batch job submission failed: Invalid qos specification"]
        assert queued(standby, "zoe") == []
    finally:
        standby.sacctmgr("delete", "user", "zoe")
