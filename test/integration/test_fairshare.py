"""Issue 6, priority/fairshare, on the real six-node cluster.

The module installs a test policy whose priority section makes the effects visible within
seconds: usage half-life 15 s, a usage pass every 2 s (policy seconds, since slurm.conf's
PriorityCalcPeriod counts whole minutes), fair-share weight 100000, age 100000 over 10000 s
(10 per second), and a standby boost of 5000. Usage is reset at the start. Pending jobs are
kept pending by a blocker that holds both public nodes (and keeps accruing usage for public,
as a busy cluster does). At the end the site policy is back and the queue is empty.
"""

import re
import signal
import time

import pytest

from cluster import (CLUSTER_POLICY_SHAPE, ClusterError, apply_policy, cancel_all, job_info, parse_lock_stats, poll,
                     policy_installed, port_open, reconfigure, ts)

POLICY_TEMPLATE = """\
version: 1
qos:
  standby:
    preemptible: true
    boost: 5000
    grace: 0
  normal:
    preempts: [standby]
  owner:
    preempts: [standby]
priority:
  weights: {{age: {age}, fairshare: {fairshare}, qos: 0, partition: {partition}, job_size: 0, class: 0}}
  half_life: 15s
  max_age: {max_age}
  calc_period: 2s
"""
AGE_PER_SECOND = 10


def policy(fairshare=100000, partition=0, age=100000, max_age="10000s"):
    return POLICY_TEMPLATE.format(fairshare=fairshare, partition=partition, age=age,
                                  max_age=max_age) + CLUSTER_POLICY_SHAPE


SLEEPER = "sleep 600"


@pytest.fixture(scope="module")
def fs_cluster(cluster):
    with policy_installed(cluster, policy()):
        yield cluster


@pytest.fixture
def fs(fs_cluster):
    """An empty queue and no usage anywhere (earlier tests' usage would skew the factors)."""
    cancel_all(fs_cluster)
    # All usage, not only this module's accounts: under pytest -n, modules that ran earlier on
    # the same session cluster leave usage behind, also below 1 (sshare prints it as RawUsage 0).
    # Resetting the root account resets every association below it (assoc_mgr's
    # _reset_children_usages). Reset again while any usage shows (a CI run was stuck on root's
    # own usage below 1, normalized to 1; usage may also arrive after a reset), and wait until
    # the plugin's next usage pass has recomputed every factor from zero (jobs submitted before
    # that pass would get the factors of the usage before the reset).
    seen = {"reset_at": 0.0}

    def reset():
        rows = seen["rows"] = sshare(fs_cluster)
        if time.monotonic() - seen["reset_at"] >= 2 and any(r["raw"] or r["norm"]
                                                            for r in rows.values()):
            fs_cluster.sacctmgr("modify", "account", "where", "name=root", "set", "RawUsage=0")
            seen["reset_at"] = time.monotonic()
            return False
        seen["rows"] = {k: r for k, r in rows.items()
                        if not (r["raw"] == 0 and r["norm"] == 0
                                and (not k[1] or r["factor"] >= 0.999))}
        return not seen["rows"]
    try:
        poll(reset, 60, "usage to be reset")
    except ClusterError as e:
        raise ClusterError(f"{e.cause}; still: {seen.get('rows')}") from None
    yield fs_cluster
    cancel_all(fs_cluster)


# --- helpers ------------------------------------------------------------------------------------

def sbatch(cluster, user, args, script=SLEEPER):
    r = cluster.run(["sbatch", "--parsable", "-o", "/dev/null", *args, "--wrap", script], user=user)
    return r.stdout.strip().split(";")[0]


def sprio(cluster):
    """{jobid: {"user", "priority", "age", "fairshare", "site"}} of the listed pending jobs."""
    out = cluster.run(["sprio", "-h", "-o", "%i|%u|%Y|%A|%F|%S"], check=False).stdout
    rows = {}
    for line in out.splitlines():
        jobid, user, prio, age, fs, site = [f.strip() for f in line.split("|")]
        rows[jobid] = {"user": user, "priority": int(prio), "age": int(age), "fairshare": int(fs),
                       "site": int(site)}
    return rows


def sshare(cluster):
    """{(account, user or ""): {"raw", "norm", "efctv", "factor"}} from sshare -a."""
    out = cluster.run(["sshare", "-a", "-P", "-n", "-o",
                       "Account,User,RawUsage,NormUsage,EffectvUsage,FairShare"]).stdout
    rows = {}
    for line in out.splitlines():
        account, user, raw, norm, efctv, factor = line.split("|")
        rows[(account.strip(), user)] = {"raw": float(raw or 0), "norm": float(norm or 0),
                                         "efctv": float(efctv or 0), "factor": float(factor or "nan")}
    return rows


def listed(cluster, *jobids):
    return poll(lambda: (lambda rows: rows if all(j in rows for j in jobids) else None)(sprio(cluster)),
                30, f"sprio to list jobs {jobids}")


def running(cluster, jobid, timeout=30):
    poll(lambda: job_info(cluster, jobid).get("JobState") == "RUNNING", timeout, f"job {jobid} to run")


def block_public(cluster):
    """alice's job on both public nodes: jobs submitted to public stay pending behind it."""
    blocker = sbatch(cluster, "alice", ["-p", "public", "-N2", "--exclusive"])
    running(cluster, blocker)
    return blocker


def heavy_usage(cluster, user, partition, seconds):
    """Both nodes of the partition for `seconds`, then gone."""
    jobid = sbatch(cluster, user, ["-p", partition, "-N2", "--exclusive"], f"sleep {seconds}")
    running(cluster, jobid)
    poll(lambda: job_info(cluster, jobid).get("JobState") == "COMPLETED", seconds + 30,
         f"job {jobid} to complete")


# --- tests --------------------------------------------------------------------------------------

def test_heavy_recent_usage_ranks_below_and_the_gap_closes_as_it_decays(fs):
    block_public(fs)
    heavy_usage(fs, "carol", "chem", 15)  # chem: 4 CPUs x 15 s; bio: nothing
    carol = sbatch(fs, "carol", ["-p", "public"])
    dave = sbatch(fs, "dave", ["-p", "public"])
    rows = listed(fs, carol, dave)
    assert rows[dave]["fairshare"] > rows[carol]["fairshare"] + 20000, rows
    assert rows[dave]["priority"] > rows[carol]["priority"], rows
    gap0 = rows[dave]["fairshare"] - rows[carol]["fairshare"]

    # sshare shows the numbers the scheduler uses: weight x factor (within one 2 s pass).
    def consistent():
        before, shares, after = sprio(fs), sshare(fs), sprio(fs)
        if before[carol]["fairshare"] != after[carol]["fairshare"]:
            return None  # a pass ran in between: read again
        return (before, shares)
    rows, shares = poll(consistent, 20, "an sprio/sshare pair from the same usage pass")
    carol_share = shares[("chem", "carol")]
    assert abs(rows[carol]["fairshare"] - 100000 * carol_share["factor"]) <= 1, (rows, carol_share)
    assert shares[("chem", "")]["raw"] > 0 and shares[("bio", "")]["raw"] == 0, shares
    assert carol_share["efctv"] > shares[("bio", "dave")]["efctv"], shares

    # Half-life 15 s, public keeps running: chem's share of the usage shrinks, the gap closes.
    def closed():
        r = sprio(fs)
        gap = r[dave]["fairshare"] - r[carol]["fairshare"]
        return gap if gap < gap0 / 2 else None
    poll(closed, 120, f"the fair-share gap of {gap0} to halve")


def test_requeued_job_age_restarts_from_the_requeue(fs):
    job = sbatch(fs, "dave", ["-p", "bio", "-N2", "--exclusive"])
    running(fs, job)
    submitted = ts(job_info(fs, job)["SubmitTime"])
    waiting = sbatch(fs, "dave", ["-p", "bio", "-N2", "--exclusive"])  # takes the nodes next
    # The job's age since its submission, 15 s, is what the requeue must reset: without this
    # time the age after the requeue could not tell a reset from a continued age.
    time.sleep(15)
    requeued_at = time.time()
    fs.run(["scontrol", "requeue", job])
    running(fs, waiting)
    rows = listed(fs, job)  # eligible again after cred_expire + 1 s
    age = rows[job]["age"]
    since_requeue = time.time() - requeued_at
    assert age <= AGE_PER_SECOND * since_requeue + 2 * AGE_PER_SECOND, (age, since_requeue)
    assert age < AGE_PER_SECOND * (requeued_at - submitted), (age, requeued_at - submitted)
    # AccrueTime is set by the scheduler's next pass over the eligible job (Unknown until then).
    accrue = poll(lambda: (lambda a: a if a != "Unknown" else None)(job_info(fs, job)["AccrueTime"]),
                  30, f"job {job}'s AccrueTime")
    accrued_at = ts(accrue)
    assert accrued_at >= int(requeued_at), job_info(fs, job)
    # It grows again from AccrueTime, at the policy's rate (max_age 10000 s: slurm.conf leaves
    # PriorityMaxAge at Slurm's default, which counts as unset). The scheduler may set AccrueTime
    # many seconds after the listing above: the age is measured against it, not against the
    # first listing.
    t0 = time.time()
    age0 = sprio(fs)[job]["age"]
    assert age0 <= AGE_PER_SECOND * (t0 - accrued_at + 4), (age0, t0 - accrued_at)
    assert age0 < AGE_PER_SECOND * (requeued_at - submitted), (age0, requeued_at - submitted)
    grown = poll(lambda: (lambda a: a if a >= age0 + 5 * AGE_PER_SECOND else None)(sprio(fs)[job]["age"]),
                 30, f"job {job}'s age to grow again")
    assert grown <= age0 + AGE_PER_SECOND * (time.time() - t0 + 4), (age0, grown)


def test_standby_boost_shows_in_sprio(fs):
    block_public(fs)
    standby = sbatch(fs, "carol", ["-p", "standby", "--qos=standby", "-w", "n1"])
    normal = sbatch(fs, "carol", ["-p", "public"])
    rows = listed(fs, standby, normal)
    assert rows[standby]["site"] == 5000, rows
    assert rows[normal]["site"] == 0, rows
    priority = int(job_info(fs, standby)["Priority"])
    assert priority == rows[standby]["priority"], (priority, rows)


def sprio_by_partition(cluster):
    """{(jobid, partition): (priority, partition term)} of the listed pending jobs."""
    out = cluster.run(["sprio", "-h", "-o", "%i|%r|%Y|%P"], check=False).stdout
    rows = {}
    for line in out.splitlines():
        jobid, part, prio, term = [f.strip() for f in line.split("|")]
        rows[(jobid, part)] = (int(prio), int(term))
    return rows


def test_a_job_in_two_partitions_is_scheduled_by_each_partitions_priority(fs):
    """Issue 15.4: a standby job queued in public and standby gets one priority per partition
    (Slurm's priority_array, as priority/multifactor fills it): sprio lists a line for each,
    with that partition's term, and in standby it competes with standby's priority, not with
    the public one it would have in public. public's PriorityJobFactor is 1000 and standby's
    1 (norms 1 and 0.001), the partition weight 100000: y (standby only) was submitted first,
    x (public,standby) after; when one standby node frees, y starts, where x's single
    public-term priority would have won."""
    try:
        apply_policy(fs, policy(partition=100000))  # a reconfigure: partitions from slurm.conf
        fs.run(["scontrol", "update", "PartitionName=public", "PriorityJobFactor=1000"])
        fs.run(["scontrol", "update", "PartitionName=standby", "PriorityJobFactor=1"])
        block_public(fs)
        owners = {node: sbatch(fs, user, ["-p", part, "-w", node, "-N1", "--exclusive"])
                  for node, user, part in (("n3", "carol", "chem"), ("n4", "carol", "chem"),
                                           ("n5", "dave", "bio"), ("n6", "dave", "bio"))}
        for jobid in owners.values():
            running(fs, jobid)
        y = sbatch(fs, "alice", ["--qos=standby", "-p", "standby", "-N1", "--exclusive"])
        poll(lambda: listed(fs, y)[y]["age"] >= 3 * AGE_PER_SECOND, 20, "job y to be a few seconds older")
        x = sbatch(fs, "alice", ["--qos=standby", "-N1", "--exclusive"])  # routed to public,standby
        assert job_info(fs, x)["Partition"] in ("public,standby", "standby,public"), job_info(fs, x)
        rows = poll(lambda: (lambda r: r if {(x, "public"), (x, "standby"), (y, "standby")} <= r.keys()
                             else None)(sprio_by_partition(fs)), 30, "sprio's line per partition")
        assert rows[(x, "public")][1] == 100000, rows
        assert rows[(x, "standby")][1] == rows[(y, "standby")][1] == 100, rows
        assert rows[(x, "public")][0] - rows[(x, "standby")][0] == 100000 - 100, rows
        assert rows[(y, "standby")][0] > rows[(x, "standby")][0], rows  # older, same user
        fs.run(["scancel", owners["n6"]])
        started = poll(lambda: [j for j in (x, y) if job_info(fs, j)["JobState"] == "RUNNING"], 30,
                       "a standby job to start on the freed node")
        assert started == [y], (started, job_info(fs, x), job_info(fs, y))
    finally:
        fs.run(["scontrol", "update", "PartitionName=public", "PriorityJobFactor=1"])
        fs.run(["scontrol", "update", "PartitionName=standby", "PriorityJobFactor=1"])
        apply_policy(fs, policy())


def test_weight_change_takes_effect_at_reconfigure(fs):
    block_public(fs)
    dave = sbatch(fs, "dave", ["-p", "public"])
    before = listed(fs, dave)[dave]["fairshare"]
    assert before > 50000, before  # bio has no usage: factor near 1
    try:
        apply_policy(fs, policy(fairshare=20000))
        poll(lambda: sprio(fs)[dave]["fairshare"] <= 20000, 20, "the new fair-share weight in sprio")
        prio = int(job_info(fs, dave)["Priority"])
        assert prio < before, (prio, before)
    finally:
        apply_policy(fs, policy())


def test_priority_weight_age_0_in_slurm_conf_turns_the_age_term_off(fs):
    """PriorityWeightAge=0 in slurm.conf wins over the policy's age weight (100000), as with
    priority/multifactor; without the key the policy's weight is back."""
    block_public(fs)
    job = sbatch(fs, "dave", ["-p", "public"])
    poll(lambda: listed(fs, job)[job]["age"] > 0, 20, "the job's age term to grow")
    original = fs.conf.read_text()
    try:
        fs.conf.write_text(original + "PriorityWeightAge=0\n")
        reconfigure(fs)
        poll(lambda: sprio(fs)[job]["age"] == 0, 20, "the age term to be 0 in sprio")
        fs.wait_log("slurmctld", r"reconfigured: .* weights age=0 ")
        deadline = time.monotonic() + 5  # two more passes (every 2 s): it stays 0
        while time.monotonic() < deadline:
            assert sprio(fs)[job]["age"] == 0
            time.sleep(0.5)
    finally:
        fs.conf.write_text(original)
        reconfigure(fs)
    poll(lambda: sprio(fs)[job]["age"] > 0, 20, "the policy's age weight to be back")


def test_a_job_that_has_waited_ranks_above_a_new_one_with_the_same_factors(fs):
    """Age weight 1000 over 7 days (a point per 605 s): a job that has waited outranks a new one
    with the same other factors, because the age term is rounded up. Slurm's _top_priority then
    refuses an --immediate allocation in the same partition that would pass it. Rounded to the
    nearest point, the age term stayed 0 for the first 5 minutes and the two tied (the new one
    ran)."""
    apply_policy(fs, policy(age=1000, max_age="7d"))
    # Without bf_min_age_reserve (the fragment's 60): _top_priority skips jobs pending for less.
    fs.set_conf(SchedulerParameters="partition_job_depth=20")
    reconfigure(fs)
    try:
        blocker = sbatch(fs, "alice", ["-p", "public", "-w", "n1", "--exclusive"])
        running(fs, blocker)
        older = sbatch(fs, "dave", ["-p", "public", "-w", "n1"])  # waits for n1
        poll(lambda: listed(fs, older)[older]["age"] == 1, 30, f"job {older}'s age term to be 1")
        row = sprio(fs)[older]
        assert row["fairshare"] == 100000, row  # bio has no usage: the same factor for both
        r = fs.run(["salloc", "-p", "public", "--immediate", "true"], user="dave", check=False)
        assert r.returncode != 0 and "insufficient priority" in r.stderr, (r.returncode, r.stderr)
        fs.run(["scancel", older])
        poll(lambda: older not in sprio(fs), 30, f"job {older} to leave the queue")
        r = fs.run(["salloc", "-p", "public", "--immediate", "true"], user="dave", check=False)
        assert r.returncode == 0, r.stderr
        # Before the reconfigure below: a step ending during one is seen a minute later.
        cancel_all(fs)
    finally:
        fs.reset_conf()
        reconfigure(fs)
        apply_policy(fs, policy())


def run_mins_used(cluster, account):
    """(limit, used) of the account's GrpTRESRunMins cpu, as slurmctld's assoc_mgr has them."""
    out = cluster.run(["scontrol", "-o", "show", "assoc_mgr", "flags=assoc", f"accounts={account}"]).stdout
    for line in out.splitlines():
        if f"Account={account} " in line and "UserName= " in line:
            m = re.search(r"GrpTRESRunMins=cpu=(\w+)\((\d+)\)", line)
            if m:
                return m.group(1), int(m.group(2))
    return None


def start_time(cluster, jobid):
    return ts(job_info(cluster, jobid)["StartTime"])


def test_grp_tres_run_mins_lets_the_next_job_start_once_the_first_has_run_long_enough(fs):
    """GrpTRESRunMins=cpu=2 on account bio: a 2-CPU, 1-minute job reserves 2 CPU-minutes, so
    a second one waits. As with priority/multifactor, the first job's reservation shrinks as it
    runs (it was never given back before the job ended): once it is under 1 CPU-minute (about
    30 s) the second job fits, long before the first ends (60 s)."""
    fs.sacctmgr("modify", "account", "bio", "set", "GrpTRESRunMins=cpu=2")
    try:
        poll(lambda: (run_mins_used(fs, "bio") or ("",))[0] == "2", 20, "the limit in slurmctld")
        first = sbatch(fs, "dave", ["-p", "bio", "-N1", "-n2", "--time=1"])
        running(fs, first)
        second = sbatch(fs, "dave", ["-p", "bio", "-N1", "-n2", "--time=1"])
        poll(lambda: fs.run(["squeue", "-h", "-o", "%r", "-j", second]).stdout.strip()
             == "AssocGrpCPURunMinutesLimit", 20, "the second job to wait for the limit")
        seen = []
        poll(lambda: seen.append(run_mins_used(fs, "bio")[1]) or seen[-1] == 0, 45,
             "the first job's reserved CPU-minutes to run out")
        ran = time.time() - start_time(fs, first)
        print(f"reserved CPU-minutes seen while the first job ran: {sorted(set(seen), reverse=True)}; "
              f"under 1 after {ran:.0f} s")
        # Reserved: 2 CPU x 60 s, shown in whole minutes (rounded down, as Slurm checks it).
        assert seen[0] in (1, 2) and seen[-1] == 0, seen
        assert 25 <= ran <= 45, ran
        assert job_info(fs, first)["JobState"] == "RUNNING"
        # Slurm reconsiders a job held by a limit at its next scheduling pass: a submission
        # starts one now (else the periodic pass, up to a minute away).
        sbatch(fs, "alice", ["-p", "public"], "true")
        poll(lambda: job_info(fs, second).get("JobState") == "RUNNING", 15, "the second job to start")
        assert job_info(fs, first)["JobState"] == "RUNNING", "it started only when the first ended"
    finally:
        cancel_all(fs)
        fs.sacctmgr("modify", "account", "bio", "set", "GrpTRESRunMins=cpu=-1")


def used_run_mins(cluster, account):
    """The account's reserved CPU-minutes, or None while slurmctld does not answer."""
    try:
        return (run_mins_used(cluster, account) or (None, None))[1]
    except Exception:  # slurmctld restarting
        return None


def stays_at_most(cluster, account, most, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        used = used_run_mins(cluster, account)
        assert used is None or used <= most, used
        time.sleep(0.5)


def test_reserved_run_minutes_stay_given_back_across_reconfigure_and_restart(fs):
    """A reconfigure and a slurmctld restart make Slurm reserve a running job's whole time
    limit again (4 CPU-minutes here); the plugin then gives back at once what it ran up to the
    last pass, as priority/multifactor does, instead of counting it a second time."""
    fs.sacctmgr("modify", "account", "bio", "set", "GrpTRESRunMins=cpu=100")
    try:
        poll(lambda: (run_mins_used(fs, "bio") or ("",))[0] == "100", 20, "the limit in slurmctld")
        job = sbatch(fs, "dave", ["-p", "bio", "-N1", "-n2", "--time=2"])
        running(fs, job)
        poll(lambda: used_run_mins(fs, "bio") == 2, 45, "half of the job's CPU-minutes to be used")
        reconfigure(fs)
        poll(lambda: (used_run_mins(fs, "bio") or 99) <= 2, 5, "the given-back minutes after a reconfigure")
        stays_at_most(fs, "bio", 2, 4)
        proc = fs.procs["slurmctld"]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        poll(lambda: not port_open(fs.ports["slurmctld"]), 30, "slurmctld's port to close")
        fs.start_slurmctld()
        poll(lambda: (used_run_mins(fs, "bio") or 99) <= 2, 15, "the given-back minutes after a restart")
        stays_at_most(fs, "bio", 2, 4)
        assert job_info(fs, job)["JobState"] == "RUNNING"
    finally:
        cancel_all(fs)
        fs.sacctmgr("modify", "account", "bio", "set", "GrpTRESRunMins=cpu=-1")


def test_usage_survives_a_slurmctld_restart(fs):
    heavy_usage(fs, "carol", "chem", 8)
    poll(lambda: sshare(fs)[("chem", "")]["raw"] > 0, 10, "chem's usage in sshare")
    # A pass that only decays (the ended job's last accrual already counted): the usage falls
    # between two readings. slurmctld saves assoc_usage at shutdown.
    last = [sshare(fs)[("chem", "")]["raw"]]

    def decayed():
        now = sshare(fs)[("chem", "")]["raw"]
        fell, last[0] = now < last[0], now
        return fell
    poll(decayed, 20, "a pass that decays chem's usage")
    before = last[0]
    state = fs.dir / "state" / "priority_fairshare_state"
    assert re.fullmatch(r"version 1\nlast_decay \d+\n", state.read_text()), state.read_text()
    proc = fs.procs["slurmctld"]
    stopped = time.time()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    poll(lambda: not port_open(fs.ports["slurmctld"]), 30, "slurmctld's port to close")
    fs.start_slurmctld()
    fs.wait_nodes_idle()
    after = poll(lambda: sshare(fs)[("chem", "")]["raw"] or None, 30, "chem's usage after the restart")
    # Decayed over the downtime (half-life 15 s), not lost and not reset.
    elapsed = time.time() - stopped
    assert after <= before, (before, after)
    assert after >= before * 0.5 ** ((elapsed + 4) / 15) - 1, (before, after, elapsed)


def test_a_pass_computes_the_usage_under_assoc_mgrs_read_locks_and_writes_it_under_its_write_locks(fs):
    # A recalculation pass walks the job list under slurmctld's job read lock ("priority usage
    # pass") and, inside that hold, computes the usage (decay, the running jobs' accrual, the
    # fair-share factors) under assoc_mgr's read locks ("priority usage, assoc_mgr read"), then
    # takes its write locks, which stop every submission, only to write it ("priority usage,
    # assoc_mgr write"). The lock statistics (StateSaveLocation/slurm_preempt_lock_stats,
    # written every 10 s) count one hold of each per pass (a pass every 2 s here), the inner
    # ones never longer than the walk's.
    path = fs.dir / "state" / "slurm_preempt_lock_stats"
    walk = "priority usage pass"
    read, write = "priority usage, assoc_mgr read", "priority usage, assoc_mgr write"

    def sites():
        try:
            got = parse_lock_stats(path.read_text())
        except OSError:
            return None
        return got if all(site in got for site in (walk, read, write)) else None
    before = poll(sites, 30, f"the lock stats to show {walk!r}, {read!r} and {write!r}", interval=1)
    after = poll(lambda: (s := sites()) and s[write]["count"] >= before[write]["count"] + 3 and s, 40,
                 "three more passes in the lock stats", interval=1)
    assert (after[walk]["kind"], after[read]["kind"], after[write]["kind"]) == ("read", "read", "write"), after
    passes = {site: after[site]["count"] - before[site]["count"] for site in (walk, read, write)}
    # The file may be written between a pass' records (the inner ones first).
    assert abs(passes[walk] - passes[write]) <= 1 and abs(passes[read] - passes[write]) <= 1, (passes, after)
    for inner in (read, write):
        assert after[inner]["max_us"] <= after[walk]["max_us"], after
        assert after[inner]["cpu_max_us"] <= after[walk]["cpu_max_us"], after
