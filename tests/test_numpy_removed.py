"""Compat fix 21 (fairseq_wean/numpy_removed.py): every numpy name or keyword fairseq 0.12 uses that this numpy
(or numpy 2) removed works in fairseq's modules, with the value numpy 1.21 gave it.

The class is found by scanning fairseq's installed source (the library and fairseq_cli; not its examples/), so a
fairseq that uses one more removed name fails here until numpy_removed.FAIRSEQ_USES covers it. Each use site is
then run in-process on a tiny input (the language-model hub's eos blocks, --num-batch-buckets, masking, the CRF).
"""
import ast
import os
import warnings

import numpy
import pytest
import torch

import fairseq
import fairseq_wean  # noqa: F401  (applies the patches)
from fairseq_wean import numpy_removed

FAIRSEQ = os.path.dirname(fairseq.__file__)
SOURCES = [os.path.join(FAIRSEQ, "..", "fairseq_cli"), FAIRSEQ]
# removed by numpy 1.24 / 2.0 / 2.4 whether or not this numpy still has them (the 0.12.2 env runs numpy 1.26)
ALWAYS_FLAGGED = {"compat", "int", "float", "bool", "object", "str", "complex", "long", "unicode", "NaN", "Inf",
                  "product", "cumproduct", "alltrue", "sometrue", "in1d", "row_stack", "trapz", "float_", "complex_",
                  "string_", "unicode_", "asscalar", "rank", "msort", "round_", "mat", "infty", "PINF", "NINF"}
# numpy 2 re-added these with another meaning, a NumPy scalar type (np.long: C long); a fairseq use is flagged too
# but np.bool/np.long are numpy's own there: covered only where listed in numpy_removed.REMOVED
NUMPY_1_21 = {"compat.long": int, "int": int, "float": float}  # what numpy 1.21 gave the names fairseq uses


def _has(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(numpy, name)
            return True
        except AttributeError:
            return False


def removed_uses():
    """{(module, 'name' or 'name.attr' or 'function(keyword=)')} for every use of a removed numpy name."""
    found = set()
    for root in SOURCES:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("examples", "__pycache__")]
            for file in (f for f in files if f.endswith(".py")):
                path = os.path.join(folder, file)
                tree = ast.parse(open(path, encoding="utf-8").read())
                aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                           for a in node.names if a.name == "numpy"}
                relative = os.path.relpath(path, os.path.dirname(FAIRSEQ))
                module = relative[:-3].replace(os.sep, ".").replace(".__init__", "")
                for node in ast.walk(tree):
                    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                            and node.value.id in aliases):
                        if node.attr in ALWAYS_FLAGGED or not _has(node.attr):
                            found.add((module, node.attr))
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and isinstance(node.func.value, ast.Name) and node.func.value.id in aliases
                            and _has(node.func.attr)):
                        for kw in node.keywords:
                            if kw.arg and ((node.func.attr, kw.arg) in numpy_removed.REMOVED_KEYWORDS
                                           or not numpy_removed._takes(getattr(numpy, node.func.attr), kw.arg)):
                                found.add((module, "{}({}=)".format(node.func.attr, kw.arg)))
    return found


USES = sorted(removed_uses())


def test_the_scan_finds_what_fairseq_0_12_is_known_to_use():
    assert {("fairseq.data.token_block_dataset", "compat"), ("fairseq.data.data_utils", "int"),
            ("fairseq.data.data_utils", "percentile(interpolation=)")} <= set(USES)


@pytest.mark.parametrize("module_name, use", USES)
def test_every_removed_numpy_name_fairseq_uses_is_covered(module_name, use):
    import importlib

    assert use in numpy_removed.FAIRSEQ_USES.get(module_name, ()), (
        "{} uses numpy's removed {}: add it to numpy_removed.FAIRSEQ_USES (and REMOVED)".format(module_name, use))
    np = importlib.import_module(module_name).np
    if use.endswith("=)"):
        function = use.split("(")[0]
        assert list(getattr(np, function)([1, 2, 3, 4], [50], interpolation="lower")) == [2]
        assert list(getattr(np, function)([1, 2, 3, 4], [50], interpolation="higher")) == [3]
        return
    for dotted, value in NUMPY_1_21.items():
        if dotted.split(".")[0] == use:
            got = np
            for part in dotted.split("."):
                got = getattr(got, part)
            assert got is value
    assert np.arange is numpy.arange and np.ndarray is numpy.ndarray  # numpy itself otherwise


def test_numpy_itself_is_unchanged():
    missing = numpy_removed.missing_here()
    for name in numpy_removed.REMOVED:
        if name in missing:
            assert name not in numpy.__dict__
    if not missing:
        return
    assert "compat 21 (numpy removals)" in fairseq_wean.patching.status()


def test_token_blocks_with_eos_break_mode_the_language_model_hub_uses():
    """TokenBlockDataset(break_mode='eos'): the LM hub's score/sample, eval-lm/train --sample-break-mode eos."""
    from fairseq.data import TokenBlockDataset
    from fairseq.data.lm_context_window_dataset import LMContextWindowDataset
    from fairseq.data.monolingual_dataset import MonolingualDataset
    from fairseq.data import Dictionary

    d = Dictionary()
    for w in "a b c".split():
        d.add_symbol(w)
    lines = [torch.tensor([4, 5, 2]), torch.tensor([6, 2]), torch.tensor([4, 4, 5, 2])]
    blocks = TokenBlockDataset(lines, [3, 2, 4], block_size=8, pad=d.pad(), eos=d.eos(), break_mode="eos")
    assert [blocks[i].tolist() for i in range(3)] == [t.tolist() for t in lines]
    mono = MonolingualDataset(blocks, blocks.sizes, d, d, add_eos_for_other_targets=False, shuffle=False)
    window = LMContextWindowDataset(mono, tokens_per_sample=8, context_window=2, pad_idx=d.pad())
    batch = window.collater([window[i] for i in range(3)])
    assert batch["ntokens"] == 9


def test_num_batch_buckets_buckets_and_pads():
    """--num-batch-buckets: data_utils.get_buckets (percentile interpolation=) and LanguagePairDataset (compat.long)."""
    from fairseq.data import Dictionary, LanguagePairDataset, data_utils

    assert list(data_utils.get_buckets(numpy.array([1, 2, 3, 4, 5, 6, 7, 8]), 2)) == [4, 8]
    d = Dictionary()
    src = [torch.tensor([4] * n + [2]) for n in (1, 3, 6)]
    pairs = LanguagePairDataset(src, numpy.array([2, 4, 7]), d, src, numpy.array([2, 4, 7]), d, num_buckets=2)
    assert [int(n) for n in pairs.bucketed_num_tokens] == [4, 4, 7]


def test_masking_and_the_crf_layer():
    """np.int (data_utils.compute_mask_indices with no_overlap: wav2vec-style masking) and np.float (DynamicCRF)."""
    from fairseq.data import data_utils
    from fairseq.modules.dynamic_crf_layer import DynamicCRF

    try:
        mask = data_utils.compute_mask_indices((2, 20), None, 0.3, 3, mask_type="static", no_overlap=True,
                                               min_space=1)
        assert mask.shape == (2, 20) and mask.any()
    except AttributeError as exc:  # fairseq-fixed's own bug, past np.int: Generator has no randint (not numpy's)
        assert "Generator' object has no attribute 'randint'" in str(exc)
    crf = DynamicCRF(num_embedding=6, low_rank=2, beam_size=3)
    emissions, targets = torch.randn(1, 4, 6), torch.tensor([[1, 2, 3, 4]])
    assert torch.isfinite(crf(emissions, targets, torch.ones(1, 4, dtype=torch.bool))).all()
