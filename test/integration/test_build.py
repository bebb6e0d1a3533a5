"""configure refuses a Slurm it cannot build against, with one line naming the cause."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fresh_tree(tmp_path_factory):
    """A copy of the tracked sources with its own configure script (the repo itself may be
    configured already, and automake refuses a second build of a configured source dir)."""
    tree = tmp_path_factory.mktemp("build") / "src"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, check=True, capture_output=True,
                           text=True).stdout.split()
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, tree / f)
    subprocess.run(["autoreconf", "-fi"], cwd=tree, check=True, capture_output=True)
    return tree


def fake_slurm_source(root, version, multiple_slurmd=True):
    (root / "src" / "slurmctld").mkdir(parents=True)
    (root / "src" / "slurmctld" / "slurmctld.h").write_text("/* stand-in */\n")
    config = f'#define SLURM_VERSION_STRING "{version}"\n'
    if multiple_slurmd:
        config += "#define MULTIPLE_SLURMD 1\n"
    (root / "config.h").write_text(config)
    return root


def configure(tree, *args):
    r = subprocess.run(["./configure", *args], cwd=tree, capture_output=True, text=True)
    errors = [line for line in r.stderr.splitlines() if "error:" in line]
    return r.returncode, errors


def installed_version():
    out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def test_source_tree_of_another_version_is_refused(fresh_tree, tmp_path):
    src = fake_slurm_source(tmp_path / "slurm", "22.05.7")
    rc, errors = configure(fresh_tree, f"--with-slurm-source={src}")
    assert rc != 0
    assert len(errors) == 1, errors
    assert f'Slurm source tree is "22.05.7" but the installed daemons are "{installed_version()}"' \
        in errors[0]


def test_source_tree_configured_without_multiple_slurmd_is_refused(fresh_tree, tmp_path):
    src = fake_slurm_source(tmp_path / "slurm", installed_version(), multiple_slurmd=False)
    rc, errors = configure(fresh_tree, f"--with-slurm-source={src}")
    assert rc != 0
    assert len(errors) == 1 and "--enable-multiple-slurmd" in errors[0], errors


def test_unconfigured_source_tree_is_refused(fresh_tree, tmp_path):
    (tmp_path / "empty").mkdir()
    rc, errors = configure(fresh_tree, f"--with-slurm-source={tmp_path / 'empty'}")
    assert rc != 0
    assert len(errors) == 1 and "is not a configured Slurm source tree" in errors[0], errors


def test_missing_source_directory_is_refused(fresh_tree, tmp_path):
    rc, errors = configure(fresh_tree, f"--with-slurm-source={tmp_path / 'nowhere'}")
    assert rc != 0
    assert len(errors) == 1 and "no such directory" in errors[0], errors


# The places the plugins time a hold of Slurm's locks (plugins/common/slurm_locks.hpp): a site
# name in lock_site("..."), .site("...") or a CtldLock/AssocLock's arguments.
SITE_PATTERNS = [r'lock_site\(\s*"([^"]+)"', r'\.site\(\s*"([^"]+)"\s*\)',
                 r'(?:CtldLock|AssocLock)\s+\w+\(([^;]*?)\)\s*;']


def test_the_lock_statistics_have_a_slot_for_every_site_the_plugins_time():
    """LockStats has a fixed number of slots and records nothing for a site past them, silently:
    every site the plugins name must fit."""
    names = set()
    for source in (REPO / "plugins").rglob("*.[ch]pp"):
        text = source.read_text()
        for pattern in SITE_PATTERNS:
            for m in re.finditer(pattern, text, re.S):
                names.update(re.findall(r'"([^"]+)"', m.group(0)))
    slots = int(re.search(r"kSites = (\d+);", (REPO / "lib" / "watch_events.hpp").read_text()).group(1))
    assert len(names) >= 18, sorted(names)  # the count this test was written at: the patterns still match
    assert len(names) <= slots, f"{len(names)} sites, {slots} slots: raise LockStats::kSites ({sorted(names)})"
