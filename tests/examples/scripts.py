"""Runs the scripts of tpu/ and examples/ in the test process: flag and bad-input checks without a
fresh Python + TensorFlow process each (the claims that need one keep their subprocess).

Every script has a `run(argv)` entry (what `python script.py` calls) that parses absl flags and
ends with `SystemExit`; bad input is one line `<script>.py: error: ...` on stderr and exit code 1.
Test files import it as `from tests.examples import scripts` (pytest's --import-mode=importlib
makes `tests` a package); it is one module for the whole session, whose record of loaded flags
every test file shares, also under the name `script_test_helpers` (which
tests/training/test_pretrain_main.py looks up).
"""

import importlib.util
import logging
import os
import pathlib
import re
import runpy
import sys
import types

from absl import flags
from absl import logging as absl_logging

ROOT = pathlib.Path(__file__).resolve().parents[2]


# Flags defined by the scripts loaded so far: dropped before the next load, so that one script's
# required flags or validators never apply to another's run.
_LOADED_FLAGS: set[str] = set()
sys.modules.setdefault("script_test_helpers", sys.modules[__name__])


def forget_flags(path: os.PathLike) -> None:
    """Puts the script at `path` on `sys.path` (for its sibling imports: `common`, `script_runner`,
    `main_job_data`) and drops the absl flags of scripts loaded before and those it defines itself,
    so that it can be run (again) in this process."""
    path = pathlib.Path(path)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sources = path.read_text()
    if path.parent.name == "examples":
        sources += (path.parent / "common.py").read_text()
    # A sibling script it imports, whose flags are defined when it loads (tpu/main_job.py imports
    # pretrain.py), loads anew with it.
    for name in re.findall(r"^import (\w+)$", sources, re.M):
        sibling = path.parent / f"{name}.py"
        if sibling.exists() and re.search(r"^flags\.DEFINE_", sibling.read_text(), re.M):
            sources += sibling.read_text()
            sys.modules.pop(name, None)
    _LOADED_FLAGS.update(re.findall(r'DEFINE_\w+\(\s*"(\w+)"', sources))
    for name in _LOADED_FLAGS:
        if name in flags.FLAGS:
            delattr(flags.FLAGS, name)


def load_script(path: os.PathLike) -> types.ModuleType:
    """Imports the script at `path` as a new module, after `forget_flags(path)`."""
    path = pathlib.Path(path)
    forget_flags(path)
    spec = importlib.util.spec_from_file_location(f"{path.stem}_script", path)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # as an import would (dataclasses)
    spec.loader.exec_module(module)
    return module


def run_script(path: os.PathLike, capfd, *argv: str) -> tuple[int, str, str]:
    """The script at `path`, freshly loaded, run on `argv` as `python path argv...` would run it,
    in this process; returns (exit code, its stdout, its stderr and absl log messages)."""
    module = load_script(path)
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage() + "\n")
    logging.getLogger("absl").addHandler(handler)
    capfd.readouterr()
    # absl's handler writes to the stream it was given first, possibly one an earlier test's capture closed.
    absl_logging.get_absl_handler().python_handler.stream = sys.stderr
    verbosity = absl_logging.get_verbosity()  # as a fresh process has it, whatever an earlier test set
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        module.run([str(path), *map(str, argv)])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    finally:
        logging.getLogger("absl").removeHandler(handler)
        absl_logging.set_verbosity(verbosity)
    out, err = capfd.readouterr()
    return code, out, err + "".join(messages)


def one_error(path: os.PathLike, capfd, *argv: str) -> str:
    """The single error line of a run that fails on bad input (exit code 1, no traceback), without
    its `<script>.py: error: ` prefix."""
    code, _, stderr = run_script(path, capfd, *argv)
    assert code == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    prefix = f"{pathlib.Path(path).name}: error: "
    (line,) = [line for line in stderr.splitlines() if line.startswith(prefix)]
    return line[len(prefix):]


def help_text(path: os.PathLike, capfd, monkeypatch) -> str:
    """What `python <path> --help` prints, run in this process as `python` runs it: the script is
    `__main__` and `sys.argv[0]` its path, which is how absl's --help picks the flags to list.
    absl's --help exits with status 1."""
    forget_flags(path)
    monkeypatch.setattr(sys, "argv", [str(path), "--help"])
    capfd.readouterr()
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        assert e.code == 1, e.code
    else:
        raise AssertionError(f"{path} --help did not exit")
    return capfd.readouterr().out
