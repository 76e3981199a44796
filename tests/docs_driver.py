"""Runs one Markdown file's code blocks, given as JSON on stdin, in the current folder, in order,
stopping at the first failure (tests/test_docs.py starts it in a fresh Python process per file).

```python blocks run in one namespace. A ```bash block whose every command is `python <script>.py
...` (no shell operators, pipes or substitutions) runs those scripts in this process, as `python`
runs them: the script is `__main__`, `sys.argv` is what bash would pass (bash itself expands the
arguments), the script's folder comes first on `sys.path`, its sibling modules and absl flags are
loaded anew, Keras' global dtype policy is restored after it, and an exit code other than 0 fails
the block. That spares each script a fresh Python + TensorFlow start. Other bash blocks run with
bash. Python's garbage collector runs at the test processes' thresholds (tests/conftest.py): the
blocks trace many graphs, and at the default thresholds collecting took ~5 % of a guide's CPU time.
"""

import gc
import json
import os
import pathlib
import resource
import runpy
import shlex
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
SCRIPT_FOLDERS = {REPO / name for name in ("tpu", "examples", "benchmarks")}
SHELL_OPERATORS = set("();<>|&")


def cpu_seconds() -> float:
    """CPU time of this process and of the processes it ran."""
    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def script_commands(code: str) -> list[list[str]] | None:
    """The argv (script path first) of each command of a bash block, as bash would pass them, when
    every command is `python <script>.py ...` without shell operators; else None."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:
            return None
        if not words:
            continue
        if len(words) < 2 or words[0] != "python" or not words[1].endswith(".py") or any(
                set(word) <= SHELL_OPERATORS for word in words):
            return None
        expanded = subprocess.run(["bash", "-e", "-c", 'printf "%s\\0" ' + line.strip()[len("python"):]],
                                  capture_output=True, text=True, check=True).stdout
        commands.append(expanded.split("\0")[:-1])
    return commands


class ScriptRunner:
    """Runs scripts in this process, each as a fresh `python <script>.py` would load it."""

    def __init__(self):
        import keras
        from absl import app, flags, logging  # noqa: F401  (their own flags stay defined)

        self.keras = keras
        self.flags = flags.FLAGS
        self.library_flags = set(self.flags)

    def run(self, argv: list[str]) -> int:
        """Runs `python argv[0] argv[1:]`; returns its exit code."""
        folder = os.path.dirname(os.path.realpath(argv[0]))
        for name, module in list(sys.modules.items()):   # its siblings (common, script_runner, ...) load anew
            path = getattr(module, "__file__", None)
            if path and pathlib.Path(path).resolve().parent in SCRIPT_FOLDERS:
                del sys.modules[name]
        for name in set(self.flags) - self.library_flags:
            delattr(self.flags, name)
        self.flags.unparse_flags()
        saved_argv, saved_path, saved_policy = sys.argv, list(sys.path), self.keras.config.dtype_policy()
        sys.argv, sys.path[:0] = argv, [folder]
        try:
            runpy.run_path(argv[0], run_name="__main__")
            return 0
        except SystemExit as e:
            return e.code if isinstance(e.code, int) else int(e.code is not None)
        finally:   # the blocks after it see what they would after a separate process (tpu/pretrain.py sets a policy)
            sys.argv, sys.path[:] = saved_argv, saved_path
            self.keras.config.set_dtype_policy(saved_policy)


def main() -> None:
    gc.set_threshold(20_000, 20, 20)
    namespace = {"__name__": "__main__"}
    runner = None
    for block in json.load(sys.stdin):
        print(f"=== {block['where']} ({block['language']})", flush=True)
        start, start_cpu = time.perf_counter(), cpu_seconds()
        if block["language"] == "python":
            code = "\n" * (block["line"] - 1) + block["code"]   # tracebacks show the Markdown line
            exec(compile(code, block["file"], "exec"), namespace)
        elif (commands := script_commands(block["code"])) is not None:
            runner = runner or ScriptRunner()
            for argv in commands:
                if code := runner.run(argv):
                    sys.exit(f"{block['where']}: {' '.join(argv)} exited with {code}")
        else:
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block["code"]])
            if done.returncode:
                sys.exit(f"{block['where']}: bash exited with {done.returncode}")
        print(f"=== {block['where']}: {time.perf_counter() - start:.1f} s "
              f"({cpu_seconds() - start_cpu:.1f} s CPU)", flush=True)


if __name__ == "__main__":
    main()
