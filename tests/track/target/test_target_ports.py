"""Targets that are not the port the machinery was first proved on: a command that is a script of the
repository (nothing to pip-install), a target folder inside its repository, a folder of the target's own
cases beside a flat-layout package or without a manifest, a build backend detsim's venv lacks, an env that
extends PATH, and specs whose cases are wrong (one line naming the spec, exit 2, nothing written).

Each builds a throwaway repository under tmp_path (no network: pip is never asked for an index here); the
slow one records such a target with asv from the command line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from detsim.track.base.golden import GoldenCase, GoldenError
from detsim.track.base.files import RecordingError
from detsim.track.cli import main
from detsim.track.target.build import (SUITE_VAR, BuildError, Builder, installed_fingerprint, pip_reason, source_key,
                                       tree_of)
from detsim.track.target.project import Project
from detsim.track.target.render import command_env, command_words, render_case
from detsim.track.base.status import Status
from detsim.track.target.spec import FILE, TargetSpec, load_spec, target_cases
from planted_history import commit, git

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
REFERENCE = np.arange(1, 17, dtype="<f4").reshape(4, 4)

# a nanoBragg-compatible stand-in that is a script of the repository: writes the 4x4 reference to -floatfile
SCRIPT = '''#!/usr/bin/env python3
import sys
import numpy as np
args = sys.argv[1:]
np.arange(1, 17, dtype="<f4").tofile(args[args.index("-floatfile") + 1])
'''


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit(root, "the first commit")
    return root


@pytest.fixture
def case(tmp_path) -> GoldenCase:
    folder = tmp_path / "t01_tiny"
    folder.mkdir()
    REFERENCE.tofile(folder / "image.bin")
    return GoldenCase("t01_tiny", folder, ("-floatfile", "image.bin"), (4, 4))


def test_a_command_that_is_a_script_of_the_repository_runs_from_the_commits_tree(tmp_path, case):
    root = _repo(tmp_path / "scripted", {"tools/nb.py": SCRIPT, "nb.py": SCRIPT, "README.md": "plans\n"})
    os.chmod(root / "tools" / "nb.py", 0o755)
    sha = commit(root, "the script made executable")
    spec = TargetSpec("scripted", root, ("./tools/nb.py",))
    installed = Builder(spec, tmp_path / "scratch").install(sha)  # no pyproject.toml, no setup.py: not a build error
    tree = tree_of(installed.bin_dir)
    assert tree is not None and (tree / "tools" / "nb.py").is_file() and tree_of(tmp_path) is None
    for command in (("./tools/nb.py",), ("python", "tools/nb.py"), ("python", "nb.py")):
        out = render_case(TargetSpec("scripted", root, command), case, installed.bin_dir).outcome
        assert out.status is Status.OK and out.r == 1.0, (command, out.summary())
    # the working tree is never used: the same script at a commit where it is not executable does not run
    path = command_env(spec, installed.bin_dir, "0")["PATH"]
    plain = Builder(spec, tmp_path / "scratch").install(f"{sha}~1")
    assert command_words(spec, plain.bin_dir, path) is None
    out = render_case(spec, case, plain.bin_dir).outcome
    assert out.status is Status.CRASHED and "a script must be executable" in out.detail
    assert plain.fingerprint != installed.fingerprint  # the mode is part of what the commit runs


def test_python_dash_m_names_a_module_never_a_folder_of_the_tree(tmp_path):
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    spec = TargetSpec("m", tmp_path, ("python", "-m", "mypkg"))
    words = command_words(spec, tmp_path / "venv" / "bin", os.path.dirname(sys.executable))
    assert words is not None and words[1:] == ["-m", "mypkg"] and os.path.isabs(words[0])


def test_the_executable_bit_is_part_of_the_fingerprint(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "nb.py").write_text(SCRIPT)
    assert installed_fingerprint(tmp_path / "a") == installed_fingerprint(tmp_path / "b")
    os.chmod(tmp_path / "b" / "nb.py", 0o755)
    assert installed_fingerprint(tmp_path / "a") != installed_fingerprint(tmp_path / "b")


def test_the_specs_own_cases_are_left_out_of_what_is_built(tmp_path):
    """A folder of cases beside a flat-layout package would be a second top-level package to setuptools."""
    root = _repo(tmp_path / "flat", {"nb.py": SCRIPT, "mycases/x01/args.txt": "-floatfile image.bin\n",
                                     "mycases/x01/image.bin": "not read here\n", "flatport/__init__.py": ""})
    spec = TargetSpec("flat", root, ("python", "nb.py"), case_folder=root / "mycases" / "x01")
    installed = Builder(spec, tmp_path / "scratch").install("HEAD")
    tree = tree_of(installed.bin_dir)
    assert sorted(p.name for p in tree.iterdir()) == ["flatport", "nb.py"]  # and the folder it left empty
    (root / "mycases" / "x01" / "args.txt").write_text("-floatfile image.bin -N 2\n")
    again = Builder(spec, tmp_path / "scratch2").install(commit(root, "a case changed"))
    assert again.fingerprint == installed.fingerprint  # the cases are detsim's inputs, not the commit's code


def test_a_target_folder_inside_its_repository(tmp_path):
    root = _repo(tmp_path / "mono", {"python/sub/m.py": "A = 1\n", "python/pyproject.toml": "", "README.md": ""})
    target = root / "python"
    first = git(root, "rev-parse", "HEAD")
    key = source_key(target, first, ["sub", "pyproject.toml"])  # the export paths are the target folder's
    assert key is not None and key == source_key(root, first, ["python/sub", "python/pyproject.toml"])
    (target / FILE).write_text('command = "nb"\n')
    project = Project(tmp_path / "project")
    project.write(load_spec(target), ROOT, "m1")
    assert json.loads(project.config.read_text())["repo"] == str(root.resolve())  # asv clones the repository


def test_a_pip_failure_is_its_reason_not_pips_framing():
    flat = ("  error: subprocess-exited-with-error\n  \n  × Preparing metadata (pyproject.toml) did not run "
            "successfully.\n  │ exit code: 1\n  ╰─> [14 lines of output]\n      error: Multiple top-level packages "
            "discovered in a flat-layout: ['mycases', 'flatport'].\n      \n      To avoid accidental inclusion\n"
            "      [end of output]\n  \n  note: This error originates from a subprocess\nerror: "
            "metadata-generation-failed\n\n× Encountered error while generating package metadata.\n╰─> See above "
            "for output.\n\nnote: This is an issue with the package mentioned above, not pip.\nhint: See above for "
            "details.\n")
    why = "error: Multiple top-level packages discovered in a flat-layout: ['mycases', 'flatport']."
    assert pip_reason(flat) == why
    backend = ("ERROR: Exception:\nTraceback (most recent call last):\n  File \"/x/pip/_internal/cli.py\", line 1\n"
               "    status = run()\npip._vendor.pyproject_hooks._impl.BackendUnavailable: Traceback (most recent "
               "call last):\n  File \"<frozen importlib._bootstrap>\", line 1\nModuleNotFoundError: No module "
               "named 'hatchling'\n\n")
    assert pip_reason(backend) == "ModuleNotFoundError: No module named 'hatchling'"
    assert pip_reason("") == "pip gave no reason"


@pytest.mark.slow  # two pip runs, about 10 s
def test_a_build_backend_detsims_venv_lacks_is_asked_of_an_isolated_build(tmp_path, monkeypatch):
    """The isolated build is refused its index here (no network in tests): its failure is one line saying so."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-wheels"))
    root = _repo(tmp_path / "hatched", {
        "pyproject.toml": '[build-system]\nrequires = ["no_such_backend_for_detsim"]\n'
                          'build-backend = "no_such_backend_for_detsim.build"\n[project]\nname = "h"\nversion = "1"\n',
        "h/__init__.py": ""})
    with pytest.raises(BuildError) as caught:
        Builder(TargetSpec("hatched", root, ("nb",)), tmp_path / "scratch").install("HEAD")
    message = str(caught.value)
    assert "its build backend is not in detsim's venv and an isolated build failed" in message
    assert "no_such_backend_for_detsim" in message and "\n" not in message


def test_env_values_read_the_renders_own_variables(tmp_path):
    spec = TargetSpec("p", tmp_path, ("nb",), env={"PATH": "/opt/tools/bin:$PATH", "KEEP": "${NOT_SET_ANYWHERE}"})
    env = command_env(spec, tmp_path / "bin", "0")
    assert env["PATH"].split(os.pathsep)[:2] == ["/opt/tools/bin", str(tmp_path / "bin")]
    assert env["KEEP"] == "${NOT_SET_ANYWHERE}"  # what the environment does not have stays as written


def test_a_case_folder_without_a_manifest_takes_its_shape_from_its_arguments(tmp_path):
    folder = tmp_path / "mycases" / "c02_mine"
    folder.mkdir(parents=True)
    for name in ("args.txt", "image.bin"):
        shutil.copy2(GOLDEN / "c02_xds_xbeam_quirk" / name, folder / name)
    spec = TargetSpec("p", tmp_path, ("nb",), case_folder=tmp_path / "mycases", source=tmp_path / FILE)
    (found,) = target_cases(spec, ROOT)
    assert (found.id, found.shape) == ("c02_mine", (128, 128))
    (folder / "image.bin").write_bytes(b"\0" * 16)
    with pytest.raises(GoldenError, match=f"^{tmp_path / FILE}: 'cases': .*4 float32 values, expected a 128x128"):
        target_cases(spec, ROOT)


@pytest.mark.parametrize("cases, message", [
    ('["zz_nope"]', "'cases': 'zz_nope' is not a golden case"),
    ('["a01", "a01"]', "'cases' names 'a01' more than once"),
    ('["a01", "a01_cubic_mosflm_center"]', "'cases': 'a01_cubic_mosflm_center' is named more than once"),
    ('"mycases"', "'cases': .*mycases holds no case"),
])
def test_a_specs_wrong_cases_are_one_line_naming_it_before_anything_is_written(tmp_path, capsys, cases, message):
    target = _repo(tmp_path / "port", {"README.md": ""})
    (target / "mycases").mkdir()
    (target / FILE).write_text(f'command = "nb"\ncases = {cases}\n')
    work = tmp_path / "detsim"
    work.mkdir()
    assert main(["record", "--target", str(target), "--root", str(work), "--recent", "1", "--no-judge"]) == 2
    assert main(["bisect", "HEAD", "HEAD", "--target", str(target), "--root", str(ROOT), "--broken", "c02"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all(str(target / FILE) in line for line in lines), lines
    assert all(re.search(message, line) for line in lines), lines
    assert list(work.iterdir()) == []


@pytest.mark.slow  # one whole recording through asv (about 30 s)
def test_a_script_target_with_its_own_cases_recorded_from_a_relative_path_with_spaces(tmp_path, monkeypatch, capsys):
    """The repository has no package (a script, its one exported path), its HEAD is detached, its own case
    folder has no manifest, and it is given as a relative path with '..' and a space in it."""
    target = _repo(tmp_path / "my port", {"nb.py": SCRIPT})
    folder = target / "tests" / "mine" / "c02_mine"
    folder.mkdir(parents=True)
    for name in ("args.txt", "image.bin"):
        shutil.copy2(GOLDEN / "c02_xds_xbeam_quirk" / name, folder / name)
    (target / "nb.py").write_text(SCRIPT.replace('np.arange(1, 17, dtype="<f4")',
                                                 f'np.fromfile({str(folder / "image.bin")!r}, "<f4")'))
    (target / FILE).write_text('command = "python nb.py"\ncases = "tests/mine"\ntimeout_s = 60\nexport = ["nb.py"]\n')
    commit(target, "the script renders the case")
    (target / "NOTES.md").write_text("plans\n")
    commit(target, "notes")
    git(target, "checkout", "-q", "--detach", "HEAD")
    work = tmp_path / "detsim"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["record", "--target", "../my port/../my port", "--root", str(work), "--recent", "2",
                 "--machine", "m1", "--no-judge"]) == 0
    out = capsys.readouterr().out
    rows = Project(work / "results" / "targets" / "my port").rows("m1")
    assert len(rows) == 2 and sum(bool(r["reused_from"]) for r in rows) == 1, out
    measured = next(r for r in rows if not r["reused_from"])
    assert measured["cases"]["c02_mine"]["status"] == "ok" and measured["cases"]["c02_mine"]["at_parity"], out
    assert json.loads((work / "results" / "targets" / "my port" / "asv.conf.json").read_text())["branches"] == ["HEAD"]


def test_a_setup_py_package_named_detsim_is_the_commands_and_never_the_suites(tmp_path):
    """setup.py alone (no pyproject.toml) builds; a commit whose package is named ``detsim`` (a fork) is what its
    command imports, while a recording's asv suite, in the same venv, keeps importing detsim's own."""
    root = _repo(tmp_path / "fork", {
        "setup.py": "from setuptools import setup\nsetup(name='detsim-fork', version='1', packages=['detsim'])\n",
        "detsim/__init__.py": "WHO = 'the fork'\n"})
    installed = Builder(TargetSpec("fork", root, ("python",)), tmp_path / "scratch").install("HEAD")
    probe = [str(installed.bin_dir / "python"), "-c", "import detsim; print(getattr(detsim, 'WHO', 'the suite'))"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", SUITE_VAR)}
    assert subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True).stdout == "the fork\n"
    suite = subprocess.run(probe, env={**env, SUITE_VAR: str(tmp_path)}, cwd=tmp_path, capture_output=True, text=True)
    assert suite.stdout == "the suite\n"
    spec = TargetSpec("fork", root, ("python",))
    assert SUITE_VAR not in command_env(spec, installed.bin_dir, "0")  # so the command's own python sees the fork


def test_an_image_written_as_float64_is_the_wrong_size_and_says_so(tmp_path, case):
    program = tmp_path / "nb64.py"
    program.write_text(SCRIPT.replace('dtype="<f4"', 'dtype="<f8"'))
    out = render_case(TargetSpec("p", tmp_path, (sys.executable, str(program))), case).outcome
    assert out.status is Status.WRONG_SIZE and "as float64?" in out.detail, out.detail


def test_two_targets_whose_folders_share_a_name_never_share_a_recording(tmp_path):
    one = _repo(tmp_path / "a" / "port", {"README.md": ""})
    two = _repo(tmp_path / "b" / "port", {"README.md": "another history\n"})
    project = Project(tmp_path / "results" / "targets" / "port")
    project.write(TargetSpec("port", one, ("nb",)), ROOT, "m1")
    project.outcomes("m1").mkdir(parents=True)
    (project.outcomes("m1") / f"{git(one, 'rev-parse', 'HEAD')}.json").write_text("{}")
    before = project.config.read_text()
    with pytest.raises(RecordingError, match=f"records commits {two.resolve()} does not have .*of {one.resolve()}"):
        project.write(TargetSpec("port", two, ("nb",)), ROOT, "m1")
    assert project.config.read_text() == before
    clone = tmp_path / "c" / "port"
    git(tmp_path, "clone", "-q", str(one), str(clone))
    project.write(TargetSpec("port", clone, ("nb",)), ROOT, "m1")  # the same history from another clone goes on
