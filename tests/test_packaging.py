"""The package as users install it: an sdist, the wheel pip builds from it (as from PyPI), and
the wheel pip builds from a checkout (``pip install .``). Built offline from a copy of the
tree (tracked and unignored files, as in a fresh clone), without build isolation: the test
extra installs pyproject.toml's build requirement. No JVM.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = "sparkpredict"
#: Folders of the repository that setup.py copies into the package: (source, pattern, inside the package).
COPIED = [("listeners/src/main/java", "**/*.java", "capture/listener_java"), ("jobs", "*.py", "jobs"),
          ("conf", "spark-defaults.conf.sparkpredict", "conf"), ("docs", "*.md", "docs"),
          ("benchmarks", "RESULTS.md", "docs/measured")]
#: Module-level paths that may point outside the installed package, and why that is safe.
OUTSIDE_OK = {
    "sparkpredict.capture.listener._REPO_SRC": "a checkout's listeners/; _PKG_SRC, the installed copy, comes first",
    "sparkpredict.workloads._REPO_JOBS": "a checkout's jobs/; JOBS_DIR takes the installed copy first",
    "sparkpredict.capture.listener._REPO_CONF": "a checkout's conf/; conf_template() takes the installed copy first",
}


def _run(cmd: list[str], cwd: Path, **env: str) -> str:
    full = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", **env}
    full.pop("SPARKPREDICT_LISTENER_SRC", None)
    r = subprocess.run(cmd, check=False, cwd=cwd, env=full, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _clone_files() -> list[str]:
    """The files a fresh clone has (tracked plus new, unignored ones), relative to the repo."""
    if (REPO / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, text=True, check=True).stdout
        return [f for f in out.split("\0") if f and (REPO / f).is_file()]
    skip = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
    return [str(p.relative_to(REPO)) for p in REPO.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(REPO).parts)
            and not any(part.endswith(".egg-info") for part in p.parts) and p.suffix != ".pyc"]


def _pip_wheel(target: Path, out: Path, cwd: Path) -> Path:
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-build-isolation",
          "--check-build-dependencies", "-w", str(out), str(target)], cwd=cwd)
    (wheel,) = out.glob(f"{PKG}-*.whl")
    return wheel


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    files = _clone_files()
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    _run([sys.executable, "-c", "import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])",
          str(tmp / "sdist")], cwd=src)
    (sdist,) = (tmp / "sdist").glob(f"{PKG}-*.tar.gz")
    wheels = {"from the sdist": _pip_wheel(sdist, tmp / "w-sdist", tmp),
              "from a checkout": _pip_wheel(src, tmp / "w-tree", tmp)}
    site = tmp / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site),
          str(wheels["from the sdist"])], cwd=tmp)
    return {"tmp": tmp, "files": files, "sdist": sdist, "wheels": wheels, "site": site}


def _expected_package_files(files: list[str]) -> set[str]:
    """Everything in the package folder of a clone, plus what setup.py copies into it."""
    want = {f for f in files if f.startswith(f"{PKG}/") and "__pycache__" not in f and not f.endswith(".pyc")}
    for src, pattern, dest in COPIED:
        found = sorted((REPO / src).glob(pattern))
        assert found, f"{src}/{pattern} matches nothing in the repository"
        want |= {f"{PKG}/{dest}/{p.relative_to(REPO / src).as_posix()}" for p in found}
    return want


@pytest.mark.parametrize("how", ["from the sdist", "from a checkout"])
def test_wheel_ships_the_whole_package_and_nothing_else(built, how):
    names = [n for n in zipfile.ZipFile(built["wheels"][how]).namelist() if not n.endswith("/")]
    dist_info = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
    assert len(dist_info) == 1, dist_info
    shipped = {n for n in names if n.startswith(f"{PKG}/")}
    stray = sorted(n for n in names if not n.startswith(f"{PKG}/") and n.split("/")[0] not in dist_info)
    assert not stray, f"wheel {how} ships files outside the package: {stray}"
    want = _expected_package_files(built["files"])
    assert not want - shipped, f"wheel {how} lacks: {sorted(want - shipped)}"
    assert not shipped - want, f"wheel {how} ships files a clone's package does not have: {sorted(shipped - want)}"
    leaks = [n for n in names if {"tests", "benchmarks", "__pycache__"} & set(n.split("/")) or n.endswith(".pyc")]
    assert not leaks, leaks
    for must in ("py.typed", "data/spark/log4j2-quiet.properties", "capture/listener_java/io/sparkpredict/SparkPredictListener.java"):
        assert f"{PKG}/{must}" in shipped


def test_sdist_holds_what_the_wheel_build_and_the_readme_need(built):
    with tarfile.open(built["sdist"]) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    need = {"setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE",
            "conf/spark-defaults.conf.sparkpredict", "benchmarks/RESULTS.md"}
    need |= {f for f in built["files"] if f.startswith(("listeners/src/main/java/", "jobs/", "docs/"))}
    assert not need - names, sorted(need - names)
    # the measured figures README cites, and no benchmark script
    leaks = sorted(n for n in names if n.startswith(("tests/", ".ci/")) or "__pycache__" in n
                   or (n.startswith("benchmarks/") and n != "benchmarks/RESULTS.md"))
    assert not leaks, leaks


_PROBE = r"""
import importlib, json, pkgutil, sys
from pathlib import Path
site, pkg = Path(sys.argv[1]).resolve(), sys.argv[2]
mod = importlib.import_module(pkg)
root = Path(mod.__file__).resolve().parent
out = {"root": str(root), "inside": {}, "outside": {}}
for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
    if info.name.endswith("__main__"):
        continue
    m = importlib.import_module(info.name)
    for attr, val in vars(m).items():
        for p in (val if isinstance(val, (list, tuple)) else [val]):
            if isinstance(p, Path) and p.is_absolute():
                p = p.resolve()
                key = f"{info.name}.{attr}"
                if p.is_relative_to(root):
                    out["inside"].setdefault(str(p), key)
                else:
                    out["outside"][key] = str(p)
out["missing"] = {k: v for v, k in out["inside"].items() if not Path(v).exists()}
from sparkpredict.capture.listener import java_source_dir
out["java"] = str(java_source_dir())
from sparkpredict.monitor import DEFAULT_TRAINING_STORE
from sparkpredict.store import io
out["training_runs"] = len(io.open(DEFAULT_TRAINING_STORE).runs())
from importlib.metadata import distribution
(ep,) = [e for e in distribution(pkg).entry_points if e.group == "console_scripts"]
out["entry_point"] = [ep.name, callable(ep.load())]
print(json.dumps(out))
"""


def _probe(built) -> dict:
    site = built["site"]
    run_dir = built["tmp"] / "elsewhere"
    run_dir.mkdir(exist_ok=True)
    out = _run([sys.executable, "-c", _PROBE, str(site), PKG], cwd=run_dir, PYTHONPATH=str(site))
    return json.loads(out.strip().splitlines()[-1])


def test_installed_package_finds_every_resource_its_code_names(built):
    got = _probe(built)
    root = Path(got["root"])
    assert root == (built["site"] / PKG).resolve(), "imported the checkout, not the installed wheel"
    assert got["inside"], "no module-level paths found: the probe is broken"
    assert not got["missing"], f"paths the code names that the installed package lacks: {got['missing']}"
    unexplained = {k: v for k, v in got["outside"].items() if k not in OUTSIDE_OK}
    assert not unexplained, f"module-level paths outside the installed package: {unexplained}"
    java = Path(got["java"])
    assert java.is_relative_to(root), f"listener source read from {java}, not from the installed package"
    repo_java = {p.relative_to(REPO / "listeners/src/main/java") for p in (REPO / "listeners/src/main/java").rglob("*.java")}
    assert {p.relative_to(java) for p in java.rglob("*.java")} == repo_java
    assert got["training_runs"] > 0
    assert got["entry_point"] == ["sparkpredict", True]


def test_workload_scripts_exist_in_an_installed_package(built):
    code = ("import sys; from sparkpredict import workloads as W; "
            "print(all(W.get(n).script.is_file() for n in W.names()))")
    run_dir = built["tmp"] / "elsewhere"
    run_dir.mkdir(exist_ok=True)
    out = _run([sys.executable, "-c", code], cwd=run_dir, PYTHONPATH=str(built["site"]))
    assert out.strip() == "True"


def test_an_installed_package_takes_its_own_copies_over_a_folder_beside_it(built):
    """Installed with --target into an application's folder that has its own jobs/ and conf/
    (or into site-packages beside them): JOBS_DIR was that folder's jobs/, the listener's source
    and the cluster template must be the package's too."""
    site = built["site"]
    (site / "jobs").mkdir(exist_ok=True)
    (site / "jobs" / "sort.py").write_text("print('not ours')\n")
    (site / "conf").mkdir(exist_ok=True)
    (site / "conf" / "spark-defaults.conf.sparkpredict").write_text("# not ours\n")
    code = ("from sparkpredict import workloads as W; from sparkpredict.capture import listener as L; "
            "import sparkpredict, pathlib; root = pathlib.Path(sparkpredict.__file__).parent; "
            "print(W.JOBS_DIR.is_relative_to(root), L.java_source_dir().is_relative_to(root), "
            "L.conf_template().startswith('# sparkpredict: record every application'), "
            "(root / 'docs' / 'advice.md').is_file())")
    run_dir = built["tmp"] / "elsewhere"
    run_dir.mkdir(exist_ok=True)
    try:
        out = _run([sys.executable, "-c", code], cwd=run_dir, PYTHONPATH=str(site))
    finally:
        shutil.rmtree(site / "jobs")
        shutil.rmtree(site / "conf")
    assert out.split() == ["True", "True", "True", "True"], out
