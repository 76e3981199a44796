"""`benchmarks/bert_throughput.py`: its `matmuls` rows run exactly the work its FLOP count credits."""

import importlib.util
import os
import pathlib
from unittest import mock

import pytest

BENCHMARK = pathlib.Path(__file__).parents[1] / "benchmarks" / "bert_throughput.py"


@pytest.fixture(scope="module")
def bert_throughput():
    spec = importlib.util.spec_from_file_location("bert_throughput", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    with mock.patch.dict(os.environ):  # the script sets its TF_* defaults; keep them out of other tests
        spec.loader.exec_module(module)
    return module


def _matmul_flops(graph) -> int:
    """2 x output elements x contraction size, summed over the graph's (batch) matmuls."""
    flops = 0
    for op in graph.get_operations():
        if op.type == "MatMul":
            transposed = op.get_attr("transpose_a")
        elif op.type in ("BatchMatMulV2", "BatchMatMulV3"):
            transposed = op.get_attr("adj_x")
        else:
            continue
        left = op.inputs[0].shape
        contraction = left[-2] if transposed else left[-1]
        flops += 2 * op.outputs[0].shape.num_elements() * contraction
    return flops


@pytest.mark.parametrize("mode", ["infer", "train"])
def test_matmuls_rows_run_the_counted_flops(bert_throughput, mode):
    step = bert_throughput.matmuls_step("small", mode, xla=False)
    graph = step.get_concrete_function().graph
    assert _matmul_flops(graph) == bert_throughput.flops_per_step("small", mode)
    outputs = step()
    assert len(outputs) == (1 if mode == "infer" else 3 + 4 * 4)  # inputs, MLM head, 4 per layer
