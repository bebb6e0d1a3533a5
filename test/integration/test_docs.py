"""Issue 17.2: the man pages say what the programs do. `preemptctl --help` and preemptctl(1)
list the same synopsis, commands and options; preempt.yaml(5) documents every key the policy
loader accepts. No cluster: the build tree's preemptctl and its rendered pages (doc/*.[158],
built by make from doc/*.scd). test_package.py runs the same comparison on the installed
package."""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILT_PREEMPTCTL = REPO / "tools" / "preemptctl" / "preemptctl"
BUILT_PAGES = REPO / "doc"


def render(page):
    """A man page (a file, or a name `man` finds) as plain text: no hyphenation, no
    justification, ASCII hyphens, wide enough that no synopsis line wraps."""
    args = ["man", "--nh", "--nj", *(["-l", str(page)] if isinstance(page, Path) else [page])]
    r = subprocess.run(args, capture_output=True, text=True, check=True,
                       env=dict(os.environ, MANWIDTH="200", LANG="C.UTF-8", MAN_KEEP_FORMATTING=""))
    return r.stdout.replace("\u2010", "-").replace("\u2212", "-")


def sections(text):
    """Rendered page -> {SECTION: [lines]} (section headings are unindented capitals)."""
    found, current = {}, None
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Z ()\-.]+$", line):
            current = line.strip()
            found[current] = []
        elif current:
            found[current].append(line)
    return found


def terms(lines):
    """The terms of a definition list: lines indented exactly 7 columns (the text under a
    term is indented further), first word only ("--policy FILE" -> "--policy")."""
    return [m.group(1) for line in lines if (m := re.match(r"^ {7}(\S+)", line))]


def help_text(binary):
    r = subprocess.run([str(binary), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r
    return r.stdout


def help_parts(text):
    """(synopsis lines, commands, options) of `preemptctl --help`."""
    lines = text.splitlines()
    synopsis = [re.sub(r"^(usage:)?\s+", "", line).strip()
                for line in lines[:lines.index("commands:")]]
    synopsis[0] = re.sub(r"^usage:\s*", "", synopsis[0])
    commands = [m.group(1) for line in lines[lines.index("commands:") + 1:lines.index("options:")]
                if (m := re.match(r"^  (\S+)", line))]
    options = [m.group(1) for line in lines[lines.index("options:") + 1:]
               if (m := re.match(r"^  (-\S+)", line))]
    return synopsis, commands, options


def assert_help_matches_page(binary, page):
    synopsis, commands, options = help_parts(help_text(binary))
    man = sections(render(page))
    assert [line.strip() for line in man["SYNOPSIS"] if line.strip()] == synopsis
    assert terms(man["COMMANDS"]) == commands
    assert terms(man["OPTIONS"]) == options


def test_preemptctl_help_and_its_man_page_agree():
    assert_help_matches_page(BUILT_PREEMPTCTL, BUILT_PAGES / "preemptctl.1")


def test_version_is_the_configured_one():
    version = re.search(r"^PACKAGE_VERSION = (\S+)", (REPO / "Makefile").read_text(), re.M).group(1)
    r = subprocess.run([str(BUILT_PREEMPTCTL), "--version"], capture_output=True, text=True, check=True)
    assert r.stdout == f"preemptctl (slurm-preempt) {version}\n"


# Each place of the policy with its own keys: (where, YAML that puts an unknown key there).
PLACES = [
    ("top level", "zzz: 1\n"),
    ("qos.standby", "qos: {standby: {preemptible: true, zzz: 1}}\n"),
    ("qos.standby.limits", "qos: {standby: {preemptible: true, limits: {zzz: 1}}}\n"),
    ("partitions", "partitions: {zzz: 1}\n"),
    ("owners.chem", "owners: {chem: {zzz: 1}}\n"),
    ("checkpoint", "checkpoint: {zzz: 1}\n"),
    ("classes.train", "classes: {train: {zzz: 1}}\n"),
    ("quotas.p", "quotas: {p: {zzz: 1}}\n"),
    ("default_class", "default_class: {zzz: 1}\n"),
    ("priority", "priority: {zzz: 1}\n"),
    ("priority.weights", "priority: {weights: {zzz: 1}}\n"),
    ("story", "story: {zzz: 1}\n"),
]


def loader_keys(binary, tmp_path, yaml):
    """The keys the loader accepts at one place, from its own error message."""
    policy = tmp_path / "preempt.yaml"
    policy.write_text("version: 1\n" + yaml)
    r = subprocess.run([str(binary), "check", "--policy-only", "--policy", str(policy)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r
    m = re.search(r"unknown key 'zzz' in .*\(expected one of: ([^)]*)\)", r.stderr)
    assert m, r.stderr
    return m.group(1).split(", ")


def assert_page_documents_every_key(binary, page, tmp_path):
    text = render(page)
    documented = set(re.findall(r"[a-z_]+", text))
    for where, yaml in PLACES:
        keys = loader_keys(binary, tmp_path, yaml)
        missing = [k for k in keys if k not in documented]
        assert not missing, f"preempt.yaml(5) does not document {where}: {missing}"


def test_preempt_yaml_page_documents_every_key_the_loader_accepts(tmp_path):
    assert_page_documents_every_key(BUILT_PREEMPTCTL, BUILT_PAGES / "preempt.yaml.5", tmp_path)


@pytest.mark.parametrize("page", ["preemptctl.1", "preempt.yaml.5", "slurm-preempt.8"])
def test_pages_render_without_warnings(page):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(BUILT_PAGES / page)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr


FRAGMENT = REPO / "etc" / "slurm.conf.fragment"
# Every Slurm command and daemon hashes each character of slurm.conf and its Includes,
# comments too (parse_config.c _compute_hash_val, about 80 instructions a character), each
# time it starts: the fragment's reasons live in slurm-preempt(8), not in the file.
FRAGMENT_COMMENT_BUDGET = 400


def fragment_lines():
    return [line for line in FRAGMENT.read_text().splitlines() if line and not line.startswith("#")]


def test_slurm_preempt_page_explains_every_fragment_line():
    man = sections(render(BUILT_PAGES / "slurm-preempt.8"))
    explained = {k for line in man["SLURM.CONF"] if re.match(r"^ {7}\S", line)
                 for k in re.findall(r"(\w+)=", line)}
    keys = [line.split("=", 1)[0] for line in fragment_lines()]
    assert keys and not [k for k in keys if k not in explained], (keys, explained)
    synopsis = [line.strip() for line in man["SYNOPSIS"] if "=" in line]
    assert synopsis == fragment_lines()


def test_fragment_comments_stay_within_their_budget():
    comments = sum(len(line) + 1 for line in FRAGMENT.read_text().splitlines() if line.startswith("#"))
    assert comments <= FRAGMENT_COMMENT_BUDGET, f"{comments} characters of comments in {FRAGMENT}"
