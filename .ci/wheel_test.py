"""The built wheels as a user gets them: `make wheel-test`.

    python .ci/wheel_test.py pythons          # every CPython 3.10+ on this machine, one a line
    python .ci/wheel_test.py test DIR PY...   # each PY: a fresh venv, its wheel from DIR, pytest

For each interpreter: ``auditwheel show`` must place its wheel at manylinux2014 (glibc 2.17) or
older; a fresh virtual environment gets that wheel and the test requirements, nothing else of
the project; and the whole test suite runs from a copy of the project's files in a temporary
folder, with ``import streamfold`` checked to come from the venv's site-packages, so what is
tested is the installed wheel, not the source tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
#: manylinux2014 is glibc 2.17: auditwheel may place a wheel there or at an older glibc.
MAX_GLIBC_MINOR = 17


def pythons() -> list[str]:
    """One interpreter per CPython version found: pyenv's installs, else ``pythonX.Y`` on PATH."""
    found: list[str] = []
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in VERSIONS:
        candidates = sorted(pyenv_root.glob(f"{version}.*/bin/python{version}"), reverse=True)
        on_path = shutil.which(f"python{version}")
        if on_path:
            candidates.append(Path(on_path))
        for candidate in candidates:
            # A pyenv shim exists for every version but runs only the selected ones.
            ran = subprocess.run(
                [str(candidate), "-c", "import sys; print(sys.implementation.name)"],
                capture_output=True,
                text=True,
                check=False,
            )
            if ran.returncode == 0 and ran.stdout.strip() == "cpython":
                found.append(str(candidate))
                break
    return found


def _tag(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def _wheel_for(wheels: Path, tag: str) -> Path:
    matches = sorted(wheels.glob(f"streamfold-*-{tag}-{tag}-*.whl")) or sorted(
        wheels.glob("streamfold-*-abi3-*.whl")
    )
    if len(matches) != 1:
        sys.exit(f"wheel-test: expected one {tag} (or abi3) wheel in {wheels}, found {matches}")
    return matches[0]


def _check_manylinux(wheel: Path) -> None:
    if "manylinux2014_x86_64" not in wheel.name and "manylinux_2_17" not in wheel.name:
        sys.exit(f"wheel-test: {wheel.name} is not tagged manylinux2014")
    shown = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print(shown.strip())
    tag = re.search(r'consistent with the following platform tag:\s*"manylinux_2_(\d+)_', shown)
    if tag is None or int(tag.group(1)) > MAX_GLIBC_MINOR:
        sys.exit(f"wheel-test: auditwheel does not place {wheel.name} at manylinux2014")
    print(f"auditwheel: {wheel.name} is manylinux_2_{tag.group(1)} (manylinux2014 or older)")


def _project_copy(dest: Path) -> Path:
    """The project's files (tracked and new, not ignored) under ``dest/streamfold``, with
    ``dest/shared`` pointing at the shared captures, as the tests expect beside the root."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    copy = dest / "streamfold"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # examples/ -> python/streamfold/examples
            target.symlink_to(os.readlink(source))
        elif source.is_file():  # not deleted in the work tree, nor a submodule
            shutil.copy2(source, target)
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (dest / "shared").symlink_to(shared)
    return copy


def test(wheels: Path, interpreters: list[str]) -> None:
    if not interpreters:
        sys.exit("wheel-test: no CPython 3.10+ found")
    for python in interpreters:
        wheel = _wheel_for(wheels, _tag(python))
        print(f"\n=== {python}: {wheel.name}", flush=True)
        _check_manylinux(wheel)
        with tempfile.TemporaryDirectory(prefix="streamfold-wheel-") as tmp:
            venv = Path(tmp) / "venv"
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
            vpy = str(venv / "bin" / "python")
            pip = [vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            subprocess.run(
                [*pip, str(wheel), "-r", str(ROOT / "requirements" / "test.txt")], check=True
            )
            copy = _project_copy(Path(tmp))
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
            where = subprocess.run(
                [vpy, "-c", "import streamfold, streamfold._core as c; print(c.__file__)"],
                cwd=copy,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if not Path(where).resolve().is_relative_to((venv / "lib").resolve()):
                sys.exit(f"wheel-test: streamfold imported from {where}, not the venv")
            print(f"streamfold._core from {where}", flush=True)
            subprocess.run(
                [vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                cwd=copy,
                env=env,
                check=True,
            )


def main(argv: list[str]) -> None:
    if argv[:1] == ["pythons"]:
        print("\n".join(pythons()))
    elif argv[:1] == ["test"] and len(argv) >= 2:
        test(Path(argv[1]), argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
