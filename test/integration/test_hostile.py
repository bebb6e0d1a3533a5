"""Hostile users (issue 12): what an unprivileged user can send to slurmctld, on the real
cluster, run as the cluster's non-root users (alice attacks, bob is the bystander).

Every test runs beside bob's running job: after it, slurmctld is still the same process and
bob's job is exactly as before (the `bystander` fixture checks both). Each hostile request is
refused with a clear message or accepted unchanged. Symlinked checkpoint directories and
planted notice files are covered by test_checkpoint.py (test_a_symlink_as_checkpoint_dir_*,
test_a_checkpoint_dir_of_another_user_*, test_a_notice_file_planted_by_another_user_*).

The module runs under the site policy (etc/preempt.yaml: standby preemptible with a 60 s
grace and the USR1 checkpoint signal; normal and owner preempt it).
"""

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cluster import cancel_all, job_info, log_mark, poll, queued, restore_site_policy

HERE = Path(__file__).resolve().parent
ATTACKER, VICTIM = "alice", "bob"
BIG = 120 * 1024  # bytes: past every limit of Slurm's and ours
PROMISE = "SLURM_PREEMPT_CHECKPOINT"
# A promise as job_submit/preempt writes it, with the user's choice of numbers: if it were
# believed, the job would be told USR2 and a 7 s grace (and a watcher would wait 7 s for it).
FORGED = f"{PROMISE}=signal=12,grace=7,lead=7,requeue=1,steps=all"
# Fields of bob's job that no request of alice's may change.
WATCHED = ["JobState", "Restarts", "TimeLimit", "QOS", "Partition", "Priority", "Nice",
           "Requeue", "StartTime", "NodeList", "JobName", "Account", "AdminComment", "Comment"]
MAX_LINE = 1024  # bytes: a refusal longer than this is not "one clear line"


def uid(cluster, user):
    return cluster.run(["id", "-u", user]).stdout.strip()


def log_since(cluster, mark):
    return cluster.log("slurmctld")[mark:]


def our_lines(text):
    return [line for line in text.splitlines() if "job_submit/preempt:" in line]


@pytest.fixture(scope="module")
def hostile(cluster):
    restore_site_policy(cluster)  # whatever an earlier module left: the site policy
    cancel_all(cluster)
    yield cluster
    cancel_all(cluster)


@pytest.fixture
def bystander(hostile):
    """bob's running job. Afterwards: slurmctld is the same process, bob's job is unchanged,
    and alice's jobs are cancelled."""
    ctld = hostile.running_pid("slurmctld")
    jobid = hostile.sbatch(["--qos=normal", "-p", "public", "--time=30", "-J", "bystander"],
                           "sleep 600\n", user=VICTIM)
    hostile.wait_job_state(jobid, "RUNNING", timeout=30)
    before = {k: job_info(hostile, jobid).get(k) for k in WATCHED}
    yield jobid
    assert hostile.running_pid("slurmctld") == ctld, "slurmctld died or restarted"
    assert "is UP" in hostile.run(["scontrol", "ping"]).stdout
    after = {k: job_info(hostile, jobid).get(k) for k in WATCHED}
    assert after == before, f"bob's job {jobid} was touched"
    hostile.run(["scancel", "-u", ATTACKER], check=False)
    hostile.run(["scancel", str(jobid)])


def submit(cluster, args, env=(), script="sleep 300"):
    """sbatch as the attacker (held: nothing needs to run); the CompletedProcess."""
    argv = ["env", *env, "sbatch", "--parsable", "-H", "-o", "/dev/null", *args, "--wrap", script]
    return cluster.run(argv, user=ATTACKER, check=False)


def assert_refused(cluster, r, first=None):
    """Refused in one clear line (a second one may be sbatch's own 'Batch job submission
    failed' or 'Invalid --X argument' echo), and no job of the attacker's is queued."""
    assert r.returncode != 0 and not r.stdout.strip(), r
    lines = r.stderr.strip().splitlines()
    assert lines and lines[0].startswith("sbatch: error: "), lines
    assert len(lines[0]) <= MAX_LINE, f"the refusal is {len(lines[0])} bytes"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", lines[0]), lines[0]
    if first is not None:
        assert first in lines[0], lines[0]
    assert queued(cluster, ATTACKER) == []
    return lines[0]


# --- claims of what was not granted ---------------------------------------------------------

@pytest.mark.parametrize("account", ["chem", "CHEM", "bio"])
def test_an_owner_account_not_granted_is_refused(hostile, bystander, account):
    assert_refused(hostile, submit(hostile, ["-A", account]),
                   "Invalid account or account/partition combination specified")
    assert_refused(hostile, submit(hostile, ["-A", account, "--qos=owner", "-p", account.lower()]))


def test_an_owner_partition_is_refused_to_other_accounts_whatever_the_qos_case(hostile, bystander):
    assert_refused(hostile, submit(hostile, ["--qos=normal", "-p", "chem"]),
                   "partition chem holds chem's own nodes; other accounts may use them only "
                   "while idle, as preemptible jobs: submit with --qos=standby and without "
                   "--partition")
    for qos in ("standby", "Standby", "STANDBY"):
        assert_refused(hostile, submit(hostile, [f"--qos={qos}", "-p", "chem"]),
                       "qos standby jobs are preemptible and cannot run in partition chem")
    # Partition names are exact in Slurm: "Chem" is no partition at all.
    assert_refused(hostile, submit(hostile, ["-p", "Chem"]), "invalid partition specified: Chem")


def test_the_standby_partition_takes_no_job_that_is_not_preemptible(hostile, bystander):
    for qos in ("normal", "owner"):
        assert_refused(hostile, submit(hostile, [f"--qos={qos}", "-p", "standby"]),
                       "partition standby spans owned nodes and takes only preemptible jobs: add "
                       "--qos=standby")


def test_a_qos_not_granted_is_refused(hostile, bystander):
    hostile.sacctmgr("add", "qos", "vip")
    try:
        for qos in ("vip", "VIP"):
            assert_refused(hostile, submit(hostile, [f"--qos={qos}"]),
                           "Invalid qos specification")
    finally:
        hostile.sacctmgr("delete", "qos", "vip")


def test_a_qos_in_another_case_gets_the_full_standby_treatment(hostile, bystander):
    """Slurm takes --qos=Standby as standby; so must the policy: routing, the requeue rule
    and the checkpoint promise (it escaped all three, issue 12 item 10)."""
    r = submit(hostile, ["--qos=Standby"])
    assert r.returncode == 0, r.stderr
    info = job_info(hostile, r.stdout.strip())
    assert info["QOS"] == "standby", info
    assert info["Partition"] == "public,standby", info
    assert info["Requeue"] == "0", info
    assert info.get("AdminComment") == ("slurm-preempt: partition (default)->public,standby; "
                                        "requeue off; checkpoint USR1 grace 60s;"), info


# --- a forged checkpoint promise ------------------------------------------------------------

@pytest.fixture(scope="module")
def forge(hostile):
    """forge_submit.c, built for the attacker: Slurm's API with any SPANK environment."""
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the hostile API client")
    exe = hostile.jobs / "forge_submit"
    subprocess.run(["gcc", "-Wall", "-Werror", "-o", str(exe), str(HERE / "forge_submit.c"),
                    "-lslurm"], check=True)
    exe.chmod(0o755)
    return exe


def forged(cluster, exe, mode, qos, partition, *entries, warn_signal=0):
    r = cluster.run([str(exe), mode, qos, partition, str(warn_signal), *entries], user=ATTACKER,
                    check=False, timeout=90)
    assert r.returncode == 0, r.stderr
    jobid = re.search(r"^job (\d+)$", r.stdout, re.M).group(1)
    env = re.findall(r"^env (\S+?)=(.*)$", r.stdout, re.M)
    return jobid, {k: v for k, v in env if k.startswith("SLURM_CHECKPOINT_")}


def test_a_forged_promise_does_not_make_a_job_managed(hostile, bystander, forge):
    """An interactive allocation gets the variables of its promise from slurmctld (the
    priority plugin reads the promise from the SPANK environment). A normal job that brings
    its own promise, twice and in both forms, gets none, nothing in its AdminComment, and the
    removal is logged."""
    mark = log_mark(hostile)
    jobid, env = forged(hostile, forge, "alloc", "normal", "public", FORGED,
                        "SPANK_" + FORGED.replace("grace=7", "grace=99999999999999999"), FORGED,
                        warn_signal=61)
    assert env == {}, env
    assert "checkpoint" not in (job_info(hostile, jobid).get("AdminComment") or ""), jobid
    lines = our_lines(log_since(hostile, mark))
    assert (f"job_submit/preempt: removed 3 {PROMISE} entries from the SPANK environment of the "
            f"submission of uid {uid(hostile, ATTACKER)} (job name forged): only "
            "job_submit/preempt sets it") in "\n".join(lines), lines


def test_a_forged_promise_on_a_standby_job_is_replaced_by_the_real_one(hostile, bystander, forge):
    jobid, env = forged(hostile, forge, "alloc", "standby", "standby", FORGED,
                        FORGED.replace("signal=12", "signal=9"))
    assert env == {"SLURM_CHECKPOINT_SIGNAL": "USR1", "SLURM_CHECKPOINT_GRACE": "60",
                   "SLURM_CHECKPOINT_LEAD": "60", "SLURM_CHECKPOINT_REQUEUE": "0",
                   "SLURM_CHECKPOINT_STEPS": "all"}, env
    assert job_info(hostile, jobid).get("AdminComment") == \
        "slurm-preempt: requeue off; checkpoint USR1 grace 60s;"


def test_a_forged_promise_on_a_batch_job_is_dropped(hostile, bystander, forge):
    mark = log_mark(hostile)
    jobid, _ = forged(hostile, forge, "batch", "normal", "public", FORGED, warn_signal=61)
    hostile.wait_job_state(jobid, "RUNNING", timeout=30)
    assert "checkpoint" not in (job_info(hostile, jobid).get("AdminComment") or "")
    assert f"removed 1 {PROMISE} entries" in log_since(hostile, mark)
    hostile.run(["scancel", jobid])


@pytest.mark.parametrize("qos, expected", [
    ("normal", []),
    ("standby", ["SLURM_CHECKPOINT_GRACE=60", "SLURM_CHECKPOINT_LEAD=60",
                 "SLURM_CHECKPOINT_REQUEUE=0", "SLURM_CHECKPOINT_SIGNAL=USR1",
                 "SLURM_CHECKPOINT_STEPS=all"]),
])
def test_promise_variables_in_the_submitters_environment_are_not_passed_on(
        hostile, bystander, qos, expected):
    """sbatch exports the submitter's environment: a job submitted from inside a managed job,
    or by a user who sets them, would carry another promise's variables. Only its own reach
    its tasks (none for a job without a promise)."""
    out = hostile.jobs / f"inherited-{qos}-{time.time_ns()}.out"
    r = hostile.run(["env", "SLURM_CHECKPOINT_SIGNAL=USR2", "SLURM_CHECKPOINT_GRACE=7",
                     "SLURM_CHECKPOINT_LEAD=7", "SLURM_CHECKPOINT_REQUEUE=1",
                     "SLURM_CHECKPOINT_STEPS=all", "SLURM_CHECKPOINT_NOTICE=/tmp/elsewhere",
                     "sbatch", "--parsable", "-o", str(out), f"--qos={qos}",
                     "--wrap", "env | grep ^SLURM_CHECKPOINT_ | sort"], user=ATTACKER)
    jobid = r.stdout.strip()
    hostile.wait_job_state(jobid, "COMPLETED", timeout=60)
    assert out.read_text().splitlines() == expected, out.read_text()


# --- control characters and huge or negative values in every option -------------------------

NL_NAME = "evil\njob_submit/preempt: forged line"


def test_a_newline_and_a_huge_rejected_value_make_one_bounded_log_line(hostile, bystander):
    """A value no client checks (the checkpoint option read from the job's environment) of
    120 KB and a job name with a newline: one refusal line in slurmctld's log, bounded, with
    the newline escaped; ten of them add a few KB, not 1.2 MB."""
    value = "/" + "d" * BIG
    env = [f"_SLURM_SPANK_OPTION_checkpoint_checkpoint_dir={value}"]
    mark = log_mark(hostile)
    r = submit(hostile, ["-J", NL_NAME, "--qos=standby"], env=env)
    first = assert_refused(hostile, r, "invalid --checkpoint-dir=/ddd")
    assert f"...({len(value)} bytes): the path is longer than 4095 bytes" in first, first
    text = log_since(hostile, mark)
    lines = our_lines(text)
    assert len(lines) == 1, lines
    assert "(job name evil\\njob_submit/preempt: forged line)" in lines[0], lines[0]
    assert len(lines[0]) <= MAX_LINE, len(lines[0])
    assert not any(line.startswith("job_submit/preempt: forged") for line in text.splitlines())

    mark = log_mark(hostile)
    for _ in range(10):
        assert_refused(hostile, submit(hostile, ["-J", NL_NAME, "--qos=standby"], env=env))
    growth = len(log_since(hostile, mark))
    assert growth < 10 * 2048, f"10 refusals added {growth} bytes to slurmctld's log"


def test_a_huge_job_name_is_logged_bounded_then_refused_by_slurm(hostile, bystander):
    mark = log_mark(hostile)
    assert_refused(hostile, submit(hostile, ["-J", "n" * BIG, "--qos=standby"]),
                   "Pathname of a file, directory or other parameter too long")
    lines = our_lines(log_since(hostile, mark))
    assert len(lines) == 1 and f"...({BIG} bytes)" in lines[0], lines
    assert len(lines[0]) <= MAX_LINE


@pytest.mark.parametrize("signal, message", [
    ("200@5", "invalid --signal=SIG200@5: signal 200 does not exist (signals are 1 to 64)"),
    ("KILL@5", "invalid --signal=KILL@5: KILL cannot be caught to checkpoint"),
    ("STOP@5", "invalid --signal=STOP@5: STOP cannot be caught to checkpoint"),
    ("61@5", "invalid --signal=SIG61@5: signal 61 is reserved"),
    ("63@5", "invalid --signal=SIG63@5: signal 63 is reserved"),
    ("B:62@5", "invalid --signal=SIG62@5: signal 62 is reserved"),
    ("-5", "invalid --signal=SIG65531@60: signal 65531 does not exist"),
    ("USR1@65535", "--signal=USR1@65535: qos standby gives at most 60 s between the signal and "
                   "the kill"),
])
def test_a_signal_the_promise_cannot_deliver_is_refused_on_a_preemptible_job(
        hostile, bystander, signal, message):
    assert_refused(hostile, submit(hostile, ["--qos=standby", f"--signal={signal}"]), message)


def test_a_signal_is_left_to_slurm_on_a_job_without_a_promise(hostile, bystander):
    """A signal no checkpoint could use is no business of ours on a job we do not manage: the
    job is queued as asked, with no promise and no note of ours."""
    mark = log_mark(hostile)
    r = submit(hostile, ["--qos=normal", "--signal=KILL@5"])
    assert r.returncode == 0, r.stderr
    jobid = r.stdout.strip().split(";")[0]
    info = job_info(hostile, jobid)
    assert info["QOS"] == "normal" and "slurm-preempt" not in (info.get("AdminComment") or ""), info
    assert not [line for line in our_lines(log_since(hostile, mark)) if f"JobId={jobid}" in line or
                "signal" in line], log_since(hostile, mark)


# Refused: by job_submit/preempt, by the SPANK plugin in sbatch, or by Slurm itself.
REFUSED = [
    (["--checkpoint-signal=USR1\nx"], "invalid --checkpoint-signal=USR1\\nx: unknown signal"),
    (["--checkpoint-signal=USR1@-1"], "seconds must be between 1 and 86400"),
    (["--checkpoint-signal=USR1@99999999999999999999"], "is not a whole number of seconds"),
    (["--checkpoint-signal=SIG65"], "unknown signal 'SIG65'"),
    (["--checkpoint-signal=" + "U" * BIG], f"...({BIG} bytes)"),
    (["--checkpoint-dir=/tmp/a\nb"], "the path contains a control character"),
    (["--checkpoint-dir=relative/\x1b[2J"], "invalid --checkpoint-dir=relative/\\x1b[2J"),
    (["--checkpoint-dir=/" + "d" * BIG], "the path is longer than 4095 bytes"),
    (["--qos=standby\nnormal"], "Invalid qos specification"),
    (["--qos=" + "q" * BIG], "parameter too long"),
    (["--qos=-1"], "Invalid qos specification"),
    (["-p", "public\nchem"], "invalid partition specified: public"),
    (["-p", "p" * BIG], "parameter too long"),
    (["-A", "public\nchem"], "Invalid account"),
    (["-A", "a" * BIG], "parameter too long"),
    (["--comment=" + "c" * BIG], "parameter too long"),
    (["--time=-5"], "exceeds qos normal's maximum of 2-00:00:00"),
    (["--time=999999999"], "exceeds qos normal's maximum of 2-00:00:00"),
    (["--qos=standby", "--time=99-00:00:00"], "exceeds qos standby's maximum of 7-00:00:00"),
    (["--nice=-10000"], "Invalid --nice value"),
    (["--array=0-99999999"], "Invalid job array specification"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=lambda v: repr(v)[:40])
def test_a_bad_value_is_refused_in_one_clear_line(hostile, bystander, args, message):
    mark = log_mark(hostile)
    assert_refused(hostile, submit(hostile, args), message)
    growth = log_since(hostile, mark)
    assert len(growth) < 4096, f"one refusal added {len(growth)} bytes to slurmctld's log"


# Accepted, and kept exactly as given (Slurm's business; they harm no one but the sender).
ACCEPTED = [
    (["-J", "a\tb\x1b[31m red"], "%j", "a\tb\x1b[31m red"),
    (["-J", NL_NAME, "--qos=standby"], "%j", NL_NAME),
    (["--comment=line1\nline2\x07"], "%k", "line1\nline2\x07"),
    (["-N", "99999"], "%D", "99999"),
    (["--nice=99999"], "%y", "99999"),
]


@pytest.mark.parametrize("args, fmt, value", ACCEPTED, ids=lambda v: repr(v)[:40])
def test_a_strange_but_harmless_value_is_accepted_unchanged(hostile, bystander, args, fmt, value):
    mark = log_mark(hostile)
    r = submit(hostile, args)
    assert r.returncode == 0, r.stderr
    jobid = r.stdout.strip()
    shown = hostile.run(["squeue", "-h", "-j", jobid, "-o", fmt]).stdout
    assert shown == value + "\n", (shown, value)
    text = log_since(hostile, mark)
    assert len(text) < 4096, len(text)
    for line in our_lines(text):  # what we logged of it is escaped
        assert "\t" not in line and "\x1b" not in line, line
    assert not any(line.startswith("job_submit/preempt: forged") for line in text.splitlines())


# --- other users' jobs ----------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ["scontrol", "update", "jobid={job}", "timelimit=1"],
    ["scontrol", "update", "jobid={job}", "qos=standby"],
    ["scontrol", "update", "jobid={job}", "partition=chem"],
    ["scontrol", "update", "jobid={job}", "nice=-100"],
    ["scontrol", "update", "jobid={job}", "comment=mine"],
    ["scontrol", "update", "jobid={job}", "name=mine"],
    ["scontrol", "requeue", "{job}"],
    ["scontrol", "requeuehold", "{job}"],
    ["scontrol", "hold", "{job}"],
    ["scontrol", "suspend", "{job}"],
    ["scontrol", "top", "{job}"],
    ["scancel", "{job}"],
    ["scancel", "-s", "USR1", "{job}"],
    ["scancel", "-u", VICTIM],
], ids=lambda c: " ".join(c[:3]))
def test_another_users_job_cannot_be_changed_signalled_or_requeued(hostile, bystander, command):
    argv = [part.format(job=bystander) for part in command]
    r = hostile.run(argv, user=ATTACKER, check=False)
    assert r.returncode != 0, r
    assert re.search(r"Access/permission denied|Invalid user id|Invalid partition name",
                     r.stderr), r.stderr
    # The bystander fixture checks that the job is exactly as before.
    poll(lambda: hostile.job_state(bystander) == "RUNNING", 5, "bob's job to be running")
