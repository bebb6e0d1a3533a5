"""Issue 17: the Debian package on the real cluster, in one pass (one cluster, in order):

  1. scripts/build-deb builds it lintian-clean; it holds exactly what `make install` installs,
     pins the installed Slurm version, writes nothing into /etc; its man pages agree with the
     installed preemptctl; a Slurm source of another version stops the build with one line;
  2. installed, the cluster runs from the installed files alone (PluginDir is Slurm's own, the
     examples copied beside slurm.conf, /usr/bin/preemptctl): preemptctl check finds it
     ready, names a policy's missing partition in one line, says so when slurmctld does not
     answer; a standby job is routed, preempted with its checkpoint signal and notice, saves,
     is requeued and completes;
  3. upgrade: a newer package installed during a preemption grace, then slurmctld and the
     victim's slurmd restarted: the restarted slurmctld runs the new files, the running job
     keeps running, the job in its grace is requeued when it exits (not COMPLETED) and the
     owner runs on time, fair-share usage is kept;
  4. rollback: the plugin lines out of slurm.conf and plugstack.conf, daemons restarted: stock
     Slurm runs every job that was running or pending, and preemptctl check lists what the
     policy now lacks;
  5. purge: every file of the package gone, the stock cluster still runs jobs.

The package is purged at the end whatever happens (other engineers' clusters put their build
trees first on PluginDir, so a brief installed copy is harmless to them). Cluster on
SLURM_PREEMPT_PORT_OFFSET + 600. After a failed step the later ones are skipped.
"""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import PORT_OFFSET
from test_docs import assert_help_matches_page, assert_page_documents_every_key, render

from cluster import (CLUSTER_POLICY_SHAPE, STOCK_PLUGIN_DIR, UNTIL_RELEASED, Cluster, job_info,
                     poll, release, wait_qos_walltimes)

REPO = Path(__file__).resolve().parents[2]
PKG = "slurm-preempt"
PREEMPTCTL = "/usr/bin/preemptctl"
PLUGINS = ["job_submit_preempt.so", "preempt_quota.so", "priority_fairshare.so",
           "spank_checkpoint.so"]
GRACE = 20  # s: room for a slurmctld and a slurmd restart inside it

POLICY = f"""\
version: 1
qos:
  standby:
    preemptible: true
    boost: 1000
    grace: {GRACE}s
    requeue: user
    limits:
      max_walltime: 301m
  normal:
    preempts: [standby]
  owner:
    preempts: [standby]
priority:
  calc_period: 2s
""" + CLUSTER_POLICY_SHAPE

# A standby victim: saves on USR1 (prints the notice) and exits once released (a file), so a
# test decides when it exits within its grace. The second run waits to be released.
SAVER = r"""
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
  while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.5; done
  exit 0
fi
trap 'echo "got USR1 at $(date +%s.%N)"; cat "$SLURM_CHECKPOINT_NOTICE"; echo "saved";
      while [ ! -e "$SLURM_SUBMIT_DIR/exit.$SLURM_JOB_ID" ]; do sleep 0.2; done; exit 0' USR1
trap 'echo "got TERM"' TERM
while true; do sleep 0.2; done
"""
WHOLE = ["--exclusive", "-N1", "--time=30"]
_carried = {}  # a job that one step leaves running for the next


# --- helpers ------------------------------------------------------------------------------------

def run(argv, check=True, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    assert not check or r.returncode == 0, f"{' '.join(map(str, argv))}: {r.stderr.strip() or r.stdout.strip()}"
    return r


def dpkg(*args, timeout=180):
    """dpkg, waiting for its lock while another apt or dpkg runs on this shared machine."""
    def attempt():
        r = run(["dpkg", *args], check=False)
        return None if r.returncode != 0 and "lock" in r.stderr else r
    r = poll(attempt, timeout, "the dpkg lock", interval=1)
    assert r.returncode == 0, f"dpkg {' '.join(args)}: {r.stderr.strip()}"
    return r


def installed_version():
    r = run(["dpkg-query", "-W", "-f=${Status} ${Version}", PKG], check=False)
    m = re.match(r"install ok installed (\S+)", r.stdout)
    return m.group(1) if m else None


def purge():
    if run(["dpkg-query", "-W", PKG], check=False).returncode == 0:
        dpkg("--purge", PKG)


def slurm_version():
    return run(["dpkg-query", "-W", "-f=${Version}", "slurmctld"]).stdout


def build_deb(outdir, *args):
    r = run([REPO / "scripts" / "build-deb", f"--output={outdir}", *args], check=False, timeout=900)
    assert r.returncode == 0, r.stderr
    deb = Path(r.stdout.strip().splitlines()[-1])
    assert deb.exists(), r.stdout
    return deb, r.stderr


def newer_version_of(deb, version, outdir):
    """The same files as a package of a newer version: what an upgrade replaces (new files,
    new inodes) without a second build."""
    tree = outdir / "tree"
    run(["dpkg-deb", "-R", deb, tree])
    control = tree / "DEBIAN" / "control"
    control.write_text(re.sub(r"^Version: .*$", f"Version: {version}", control.read_text(), flags=re.M))
    newer = outdir / f"{PKG}_{version}_amd64.deb"
    run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", tree, newer])
    shutil.rmtree(tree)
    return newer


def maps(pid):
    """Paths of the shared objects a process has mapped (a replaced file ends in ' (deleted)')."""
    text = Path(f"/proc/{pid}/maps").read_text()
    return {line.split(None, 5)[5] for line in text.splitlines() if len(line.split(None, 5)) == 6}


def output(cluster, jobid):
    path = cluster.jobs / f"{jobid}.out"
    return path.read_text() if path.exists() else ""


def wait_output(cluster, jobid, text, timeout):
    poll(lambda: text in output(cluster, jobid), timeout, f"job {jobid} to print {text!r}", interval=0.2)


def starts(cluster, jobid):
    return re.findall(r"^start (\S+) restart=(\d+)", output(cluster, jobid), re.M)


def wait_run(cluster, jobid, run_no, timeout):
    poll(lambda: len(starts(cluster, jobid)) > run_no, timeout, f"job {jobid}'s run {run_no}", interval=0.3)


def runs(cluster, jobid):
    return [r["State"].split()[0] for r in cluster.sacct(jobid, ["State"], ["-D"]) if r["JobID"] == str(jobid)]


def sshare_raw(cluster, account):
    out = cluster.run(["sshare", "-A", account, "-P", "-n", "-o", "Account,User,RawUsage"], check=False).stdout
    rows = [line.split("|") for line in out.splitlines()]
    return next((float(raw or 0) for acct, user, raw in rows if acct.strip() == account and not user), None)


def preemptctl(cluster, *args, env=None):
    return run([PREEMPTCTL, *args], check=False, env=env or cluster.env, timeout=120)


# --- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    """The package as scripts/build-deb makes it (lintian-clean), and a newer version of it."""
    purge()  # a crashed earlier run of this module may have left it installed
    out = tmp_path_factory.mktemp("debs")
    v1, lintian = build_deb(out, "--lintian")
    version = re.match(rf"{PKG}_(\S+)_amd64\.deb", v1.name).group(1)
    v2 = newer_version_of(v1, f"{version}+upgrade1", out)
    print(f"{v1.name}: {v1.stat().st_size} bytes; lintian overrides in force:\n{lintian}")
    return {"v1": v1, "v2": v2, "version": version}


@pytest.fixture(scope="module")
def package(debs):
    """The package installed for the module; purged at its end whatever happened."""
    try:
        dpkg("-i", debs["v1"])
        yield debs
    finally:
        purge()


@pytest.fixture(scope="module")
def pkg_cluster(package, request):
    base = request.session.testsfailed
    c = Cluster(installed=True, policy=POLICY, port_offset=PORT_OFFSET + 600)
    c.start()
    try:
        r = preemptctl(c, "qos-sync")
        assert r.returncode == 0, r.stderr
        wait_qos_walltimes(c, {"standby": 301})
        yield c
    finally:
        c.failed = c.failed or request.session.testsfailed > base  # keeps the work dir
        c.stop()


@pytest.fixture(scope="module")
def failures_before(request):
    return request.session.testsfailed


@pytest.fixture(autouse=True)
def in_order(request, failures_before):
    """Each step builds on the one before: after a failure the rest are skipped."""
    if request.session.testsfailed > failures_before:
        pytest.skip("an earlier step of the package test failed")


# --- 1. the package -----------------------------------------------------------------------------

def test_package_holds_what_make_install_installs_pins_slurm_and_writes_nothing_into_etc(package, tmp_path):
    fields = run(["dpkg-deb", "-f", package["v1"], "Depends", "Breaks"]).stdout
    pin = slurm_version()
    assert f"slurm-wlm-basic-plugins (= {pin})" in fields and f"slurm-client (= {pin})" in fields, fields
    assert f"slurmctld (<< {pin})" in fields and f"slurmd (>> {pin})" in fields, fields
    listed = {p for p in run(["dpkg", "-L", PKG]).stdout.splitlines() if Path(p).is_file()}
    assert not [p for p in listed if p.startswith(("/etc", "/usr/local"))], listed
    assert {f"{STOCK_PLUGIN_DIR}/{so}" for so in PLUGINS} | {PREEMPTCTL} <= listed, listed
    # Exactly what make install installs (prefix /usr; libtool's .la files aside, man pages
    # compressed), plus Debian's own documentation files.
    stage = tmp_path / "stage"
    run(["make", "-C", REPO, "install", f"DESTDIR={stage}", "prefix=/usr"], timeout=300)
    made = {"/" + str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file()}
    made = {p + ".gz" if "/share/man/" in p else p for p in made if not p.endswith(".la")}
    extra = {f"/usr/share/doc/{PKG}/copyright", f"/usr/share/doc/{PKG}/changelog.gz",
             f"/usr/share/lintian/overrides/{PKG}"}
    assert listed == made | extra, (sorted(listed ^ (made | extra)))
    for path in listed:
        if path.endswith(".so") or path == PREEMPTCTL:
            dynamic = run(["readelf", "-d", path]).stdout
            # No search path into the build tree or elsewhere; the slurmctld plugins find the
            # library they share beside themselves ($ORIGIN).
            paths = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dynamic)
            assert paths in ([], ["$ORIGIN"]), (path, paths)
    print(f"installed {len(listed)} files, {package['v1'].stat().st_size} bytes packed")


def test_installed_man_pages_agree_with_the_installed_preemptctl(package, tmp_path):
    assert run(["man", "-w", "preemptctl"]).stdout.strip() == "/usr/share/man/man1/preemptctl.1.gz"
    assert_help_matches_page(PREEMPTCTL, "preemptctl")
    assert_page_documents_every_key(PREEMPTCTL, "preempt.yaml", tmp_path)
    assert "CHECKPOINT CONTRACT FOR JOB AUTHORS" in render("slurm-preempt")


def test_a_slurm_source_of_another_version_stops_the_build_with_one_line(package, tmp_path):
    fake = tmp_path / "slurm-22.05.7"
    (fake / "src" / "slurmctld").mkdir(parents=True)
    (fake / "src" / "slurmctld" / "slurmctld.h").write_text("/* stand-in */\n")
    (fake / "config.h").write_text('#define SLURM_VERSION_STRING "22.05.7"\n#define MULTIPLE_SLURMD 1\n')
    before = (REPO / "Makefile").read_text()
    r = run([REPO / "scripts" / "build-deb", f"--with-slurm-source={fake}", f"--output={tmp_path / 'out'}"],
            check=False)
    assert r.returncode != 0 and not r.stdout, r
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"build-deb: Slurm source {fake} is 22.05.7 but the installed daemons are "
                               f"{slurm_version()}"), r.stderr
    assert not (tmp_path / "out").exists()
    assert (REPO / "Makefile").read_text() == before  # the tree was not reconfigured


# --- 2. the cluster from the installed files ----------------------------------------------------

def test_the_cluster_runs_from_the_installed_files_and_preemptctl_check_finds_it_ready(pkg_cluster, tmp_path):
    c = pkg_cluster
    conf = c.conf.read_text()
    assert re.search(rf"^PluginDir={STOCK_PLUGIN_DIR}$", conf, re.M), conf
    for f in ("slurm.conf", "slurm.conf.fragment", "plugstack.conf"):
        assert str(REPO) not in (c.dir / "etc" / f).read_text(), f
    mapped = maps(c.running_pid("slurmctld"))
    for so in ("job_submit_preempt.so", "priority_fairshare.so", "preempt_quota.so"):
        assert f"{STOCK_PLUGIN_DIR}/{so}" in mapped, sorted(mapped)
    assert not [m for m in mapped if str(REPO) in m], mapped
    c.wait_log("slurmctld", r"job_submit/preempt: loaded slurm-preempt")

    r = preemptctl(c, "check")
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[-1] == f"preemptctl: cluster preempt is ready for {c.dir}/etc/preempt.yaml", r.stdout

    bad = tmp_path / "preempt.yaml"
    bad.write_text(POLICY.replace("partitions: [chem]", "partitions: [chemistry]"))
    r = preemptctl(c, "check", "--policy", bad)
    assert r.returncode == 1, r
    assert r.stdout.splitlines()[-2:] == [
        f"slurm.conf: partition chemistry (owners.chem.partitions in {bad}) does not exist: add "
        "PartitionName=chemistry to slurm.conf or change owners.chem.partitions",
        f"preemptctl: 1 problem in cluster preempt for {bad}"], r.stdout

    # slurmctld that does not answer: a slurm.conf naming a port nobody listens on.
    away = tmp_path / "away"
    away.mkdir()
    # MessageTimeout=2: scontrol retries a refused connection once a second for MessageTimeout
    # seconds (10 by default) before it gives up.
    (away / "slurm.conf").write_text(re.sub(r"^SlurmctldPort=\d+", "SlurmctldPort=9", conf, flags=re.M)
                                     + "MessageTimeout=2\n")
    shutil.copy(c.dir / "etc" / "preempt.yaml", away / "preempt.yaml")
    t0 = time.monotonic()
    r = preemptctl(c, "check", env=dict(c.env, SLURM_CONF=str(away / "slurm.conf")))
    took = time.monotonic() - t0
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r
    assert r.stderr.startswith("preemptctl: slurmctld does not answer (scontrol show config: "), r.stderr
    assert "start it, or set SLURM_CONF" in r.stderr
    print(f"check on an unreachable slurmctld: {took:.1f} s: {r.stderr.strip()}")


def test_a_standby_job_is_routed_preempted_with_its_checkpoint_signal_and_requeued(pkg_cluster):
    c = pkg_cluster
    routed = c.sbatch(["-H", "--qos=standby", "--requeue"], "true\n", user="alice")
    assert job_info(c, routed)["Partition"] == "public,standby"
    c.run(["scancel", str(routed)])

    ckdir = c.jobs / "ckpt-a"
    victim = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n3", "--open-mode=append",
                       f"--checkpoint-dir={ckdir}", *WHOLE], SAVER, user="alice")
    wait_run(c, victim, 0, 30)
    time.sleep(3.5)  # past batch_sched_delay: the owner's job gets its own scheduling pass
    t0 = time.time()
    owner = c.sbatch(["-w", "n3", *WHOLE], UNTIL_RELEASED, user="carol")
    wait_output(c, victim, "saved", 10)
    got = float(re.search(r"got USR1 at (\S+)", output(c, victim)).group(1))
    assert got - t0 <= 3, f"USR1 came {got - t0:.1f} s after the owner's submission"
    notice = (ckdir / "preempt-notice").read_text()
    assert "SLURM_CHECKPOINT_REASON=preemption" in notice and "SLURM_CHECKPOINT_SIGNAL=USR1" in notice, notice
    assert "got TERM" not in output(c, victim)
    release_exit(c, victim)
    poll(lambda: job_info(c, victim)["Restarts"] == "1", 15, "the victim to be requeued")
    c.wait_job_state(owner, "RUNNING", timeout=10)
    release(c, owner)
    wait_run(c, victim, 1, 60)
    release(c, victim)
    c.wait_job_state(victim, "COMPLETED", timeout=30)
    assert poll(lambda: (r := runs(c, victim)) == ["PREEMPTED", "COMPLETED"] and r, 30,
                "sacct to have both runs")


def release_exit(cluster, jobid):
    path = cluster.jobs / f"exit.{jobid}"
    path.touch()
    path.chmod(0o666)


# --- 3. upgrade ---------------------------------------------------------------------------------

def test_an_upgrade_with_restarts_keeps_running_jobs_grace_promises_and_usage(pkg_cluster, package):
    c = pkg_cluster
    running = c.sbatch(["-w", "n1", *WHOLE], UNTIL_RELEASED, user="bob")
    wait_run(c, running, 0, 30)
    started = job_info(c, running)["StartTime"]
    victim = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n4", "--open-mode=append",
                       f"--checkpoint-dir={c.jobs / 'ckpt-b'}", *WHOLE], SAVER, user="alice")
    wait_run(c, victim, 0, 30)
    poll(lambda: (sshare_raw(c, "public") or 0) > 0, 20, "usage of account public in sshare")
    time.sleep(3.5)  # past batch_sched_delay, as above
    owner = c.sbatch(["-w", "n4", *WHOLE], UNTIL_RELEASED, user="carol")
    wait_output(c, victim, "saved", 10)
    grace_start = float(re.search(r"got USR1 at (\S+)", output(c, victim)).group(1))
    usage_before = sshare_raw(c, "public")

    old_ctld = c.running_pid("slurmctld")
    dpkg("-i", package["v2"])
    assert installed_version() == f"{package['version']}+upgrade1"
    so = f"{STOCK_PLUGIN_DIR}/job_submit_preempt.so"
    assert f"{so} (deleted)" in maps(old_ctld)  # the old code runs until the restart
    c.restart_slurmctld(signal.SIGTERM)
    c.restart_slurmd("n4")
    new_maps = maps(c.running_pid("slurmctld"))
    assert so in new_maps and f"{so} (deleted)" not in new_maps, sorted(new_maps)

    release_exit(c, victim)  # saved and exits within its grace, after the upgrade
    poll(lambda: job_info(c, victim)["Restarts"] == "1", 15, "the victim to be requeued, not COMPLETED")
    c.wait_job_state(owner, "RUNNING", timeout=max(1, grace_start + GRACE + 4 - time.time()))
    print(f"owner RUNNING {time.time() - grace_start:.1f} s after its victim's grace began (grace {GRACE} s)")
    info = job_info(c, running)
    assert (info["JobState"], info["StartTime"], info["Restarts"]) == ("RUNNING", started, "0"), info
    usage_after = poll(lambda: sshare_raw(c, "public"), 30, "sshare after the restart")
    assert usage_after >= usage_before > 0, (usage_before, usage_after)

    release(c, owner)
    wait_run(c, victim, 1, 60)
    release(c, victim)
    c.wait_job_state(victim, "COMPLETED", timeout=30)
    assert poll(lambda: (r := runs(c, victim)) == ["PREEMPTED", "COMPLETED"] and r, 30, "sacct runs")
    _carried["running"] = running  # into the rollback


# --- 4. rollback --------------------------------------------------------------------------------

def test_taking_the_plugins_out_of_slurm_conf_leaves_stock_slurm_running_every_job(pkg_cluster):
    c = pkg_cluster
    running = [_carried["running"],
               c.sbatch(["--qos=standby", "--requeue", "-p", "standby", "-w", "n5", *WHOLE], UNTIL_RELEASED,
                        user="alice")]
    wait_run(c, running[1], 0, 30)
    started = {j: job_info(c, j)["StartTime"] for j in running}
    pending = c.sbatch(["-H", "-w", "n2", *WHOLE], "srun hostname\n", user="alice")

    c.set_conf(JobSubmitPlugins=None, PriorityType="priority/multifactor", PreemptType="preempt/qos")
    (c.dir / "etc" / "plugstack.conf").write_text("# slurm-preempt removed\n")
    mark = len(c.log("slurmctld"))
    c.restart_slurmctld(signal.SIGTERM)
    for node in ("n1", "n2", "n5"):  # where jobs run or will: their slurmd loads no plugin now
        c.restart_slurmd(node)
    assert not [m for m in maps(c.running_pid("slurmctld")) if any(so in m for so in PLUGINS)]
    assert not re.search(r"(job_submit/preempt|preempt/quota|priority/fairshare): ", c.log("slurmctld")[mark:])
    for j in running:
        info = job_info(c, j)
        assert (info["JobState"], info["StartTime"]) == ("RUNNING", started[j]), info

    c.update_job(["scontrol", "release", str(pending)])
    c.wait_job_state(pending, "COMPLETED", timeout=60)
    fresh = c.sbatch(["--qos=standby", "--time=5"], "srun hostname\n", user="alice")
    c.wait_job_state(fresh, "COMPLETED", timeout=60)
    release(c, *running)
    for j in running:
        c.wait_job_state(j, "COMPLETED", timeout=30)

    r = preemptctl(c, "check")
    assert r.returncode == 1, r
    problems = [line for line in r.stdout.splitlines() if line.startswith("slurm.conf: ")]
    assert [p.split(" is ")[0] for p in problems] == ["slurm.conf: JobSubmitPlugins", "slurm.conf: PriorityType"], r.stdout
    assert r.stdout.splitlines()[-1].startswith("preemptctl: 2 problems in cluster preempt"), r.stdout


# --- 5. purge -----------------------------------------------------------------------------------

def test_purge_removes_every_file_and_the_stock_cluster_still_runs_jobs(pkg_cluster):
    c = pkg_cluster
    files = [p for p in run(["dpkg", "-L", PKG]).stdout.splitlines() if Path(p).is_file()]
    dpkg("--purge", PKG)
    assert run(["dpkg-query", "-W", PKG], check=False).returncode != 0
    assert [p for p in files if os.path.lexists(p)] == []
    assert not Path(f"/usr/share/doc/{PKG}").exists()
    assert Path(STOCK_PLUGIN_DIR, "priority_multifactor.so").exists()  # Slurm's own stay
    job = c.sbatch(["-N2", "--time=5"], "srun hostname\n", user="bob")
    c.wait_job_state(job, "COMPLETED", timeout=60)
