#!/usr/bin/env python
"""Mutation check: do the model-level tests notice a one-line mistake in the models, the
criterion, the contextual gate or CoRe's copy mixture?

Each mutant below is one line of the package changed (file, the exact old text, its
replacement). The working tree is copied to a temporary folder (the checkout itself is never
modified), each mutant is applied there in turn, and the model-level tests of the three models
and of their shared encoder and decoder state (``tests/test_wean_lstm.py``,
``tests/test_core_copy.py``, ``tests/test_word_attn_gated.py``, ``tests/test_rnn_encoder.py``;
without the tests that train or decode through fairseq's CLIs) run against that copy with
``-x`` (a mutant may name other test files: the decoder-state, layer and attention mutants name
the one file that must kill them). A mutant is *killed* when a test fails (or errors, or runs past
``TIMEOUT_S``), and *survives* when every test passes; every mutant on the list must be killed
(exit status 1 otherwise), but for a mutant of code this installation never runs (``RUNS_ONLY_WITH``:
torch >= 2.4's weights-only loading), which is *not run* and says why. A mutant whose old text is no longer found exactly once is *invalid*:
the check names it and exits 1 before running any test (the code moved on and the mutant would
test nothing; tests/test_mutation_check.py checks this in CI). The list is short on purpose:
about ten seconds per mutant on one core.

The reorder mutants are the reason this exists: a cached decoder tensor left out of
``reorder_incremental_state`` once passed every test (batched and single-sentence beam search
reordered the same wrong way, and no sentence finished early); the beam tests that rescore every
hypothesis with a teacher-forced pass while the batch shrinks kill them (a wrong row within a
beam changes the scores, a tensor not shrunk with the batch no longer fits the others).

Not on the list, because they are equivalent (no test can kill them): leaving ``"sentence_ids"``
out of ``reorder_per_sentence`` only makes every later reorder copy (the row counts no longer
match), with the same results.

    python scripts/mutation_check.py            # every mutant
    python scripts/mutation_check.py --list     # the mutants, not run
    python scripts/mutation_check.py W1 G3      # some of them
    python scripts/mutation_check.py -k "not teacher_forced_pass"   # without some tests

Also a pytest plugin (``-p mutation_check``): it leaves out the tests that need the data the
real CLIs build (fixtures ``raw_dir``, ``skewed_data_bin``), so that the check stays fast.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = ["tests/test_wean_lstm.py", "tests/test_core_copy.py", "tests/test_word_attn_gated.py", "tests/test_rnn_encoder.py"]
CLI_FIXTURES = {"raw_dir", "skewed_data_bin"}  # data made by fairseq-preprocess / fairseq-train
TIMEOUT_S = 600

WEAN = "fairseq_wean/models/wean_lstm.py"
CORE = "fairseq_wean/models/core_copy.py"
GATED = "fairseq_wean/models/word_attn_gated.py"
STATE = "fairseq_wean/modules/decoder_state.py"
ENCODER = "fairseq_wean/modules/rnn_encoder.py"
LOSS = "fairseq_wean/criterions/core_mode_loss.py"
GATE = "fairseq_wean/modules/contextual_gate.py"
MIXTURE = "fairseq_wean/modules/copy_mixture.py"
LAYERS = "fairseq_wean/modules/layers.py"
ATTENTION = "fairseq_wean/modules/attention.py"
DECODER_STATE = ["tests/test_decoder_state.py"]
SAFETY = "fairseq_wean/checkpoint_safety.py"
METRICS = "fairseq_wean/scoring/metrics.py"
BOUNDS = "fairseq_wean/scoring/bounds.py"
TEXTIO = "fairseq_wean/textio.py"
PATCHING = "fairseq_wean/patching.py"
STORED = "fairseq_wean/stored_paths.py"
PIECES = "fairseq_wean/scoring/pieces.py"

_WEAN_REORDER = "reordered = tuple(t.index_select(1, new_order) for t in cached)"
_GATED_RECURRENT = 'recurrent = {key: cache[key].index_select(1, new_order) for key in ("hidden", "cell") if key in cache}'
_GATED_REORDERED = "reordered = dict(reorder_per_sentence(per_sentence, new_order), **recurrent)"


def _torch_has_weights_only_globals():
    from fairseq_wean.checkpoint_safety import loading_mechanism

    return loading_mechanism() == "weights_only"


# mutants of code that runs only on some installations: id -> (what it needs, a test of it here). Such a
# mutant is *not run* where its code never runs (it would survive by construction), and says why.
RUNS_ONLY_WITH = {
    "U2": ("torch >= 2.4 (safe_load's weights_only branch; torch 1.13-2.3 load through U1's allow-list "
           "pickle_module)", _torch_has_weights_only_globals),
}

# (id, file, old text, new text, what the mistake is[, the test files that must kill it: TESTS otherwise])
MUTANTS = [
    # --- beam search: every cached tensor reordered with its hypothesis
    ("W1", WEAN, _WEAN_REORDER, "reordered = tuple(cached)", "wean_lstm: (h, c) not reordered"),
    ("W2", WEAN, _WEAN_REORDER, "reordered = (cached[0], cached[1].index_select(1, new_order))",
     "wean_lstm: h not reordered"),
    ("W3", WEAN, _WEAN_REORDER, "reordered = (cached[0].index_select(1, new_order), cached[1])",
     "wean_lstm: c not reordered"),
    ("C1", CORE, '"cached_state", hidden.index_select(1, new_order))', '"cached_state", hidden)',
     "core_copy: s_t-1 not reordered"),
    ("C2", CORE, '"per_sentence", reorder_per_sentence(per_sentence, new_order))', '"per_sentence", per_sentence)',
     "core_copy: per-sentence cache (W_k h_j, V_G masks, copy index) not reordered"),
    ("G1", GATED, _GATED_RECURRENT,
     'recurrent = {key: cache[key] if key == "hidden" else cache[key].index_select(1, new_order) '
     'for key in ("hidden", "cell") if key in cache}', "word_attn_gated: h not reordered"),
    ("G2", GATED, _GATED_RECURRENT,
     'recurrent = {key: cache[key] if key == "cell" else cache[key].index_select(1, new_order) '
     'for key in ("hidden", "cell") if key in cache}', "word_attn_gated: c (LSTM cells) not reordered"),
    ("G3", GATED, _GATED_REORDERED,
     'reordered = dict(reorder_per_sentence(per_sentence, new_order), **recurrent, '
     '**{k: cache[k] for k in ("attention_keys",) if k in cache})', "word_attn_gated: U_a h_j not reordered"),
    ("G4", GATED, _GATED_REORDERED,
     'reordered = dict(reorder_per_sentence(per_sentence, new_order), **recurrent, '
     '**{k: cache[k] for k in ("word_attention_keys",) if k in cache})', "word_attn_gated: word-attention keys U_b x_j not reordered"),
    ("D1", STATE, "return torch.equal(sentence_ids.index_select(0, new_order), sentence_ids)", "return True",
     "a reorder across sentences that keeps the batch size is skipped (beam search makes none)"),
    ("D2", STATE, "return tuple(v.index_select(0, new_order) for v in value)", "return value",
     "tuples of per-sentence data (core_copy's V_G mask and copy index) not reordered"),
    ("E1", ENCODER, "return reorder_per_sentence(encoder_out, new_order)", "return encoder_out",
     "encoder output not reordered"),
    # --- core_mode_loss (eq. 12-15)
    ("L1", LOSS, "return in_source & ~special", "return in_source", "eq. 12: </s> and <unk> count as copied"),
    ("L2", LOSS, "usable = found & torch.isfinite(picked)", "usable = found",
     "a target in neither part is not scored as <unk> (infinite loss)"),
    ("L3", LOSS, "loss = ce_loss + self.mode_loss_weight * mode_loss", "loss = ce_loss + mode_loss",
     "--mode-loss-weight ignored"),
    ("L4", LOSS, "mode_loss = mode.masked_fill(~non_pad, 0.0).sum()", "mode_loss = mode.sum()",
     "eq. 15 counts padding"),
    ("L5", LOSS, "eps_i = self.eps / (support - 1)", "eps_i = self.eps / support",
     "label smoothing mass spread over the wrong number of words"),
    ("L6", LOSS, "ce_loss = tok_loss.masked_fill(~non_pad, 0.0).sum()", "ce_loss = tok_loss.sum()",
     "label-smoothed loss counts padding"),
    # --- contextual gate (Wu et al., section 4)
    ("A1", GATE, "return o * c_alpha, (1.0 - o) * word_context, o", "return (1.0 - o) * c_alpha, o * word_context, o",
     "o and 1 - o swapped"),
    ("A2", GATE, "o = torch.sigmoid(partial + self.c_alpha_o(c_alpha) + self.c_beta_o(c_beta))",
     "o = torch.sigmoid(partial + self.c_alpha_o(c_alpha))", "the gate does not read c^beta"),
    # --- CoRe's copy mixture (eq. 7, 11)
    ("M1", MIXTURE, "F.logsigmoid(-gate_logit).unsqueeze(-1) + log_p_gen)", "F.logsigmoid(gate_logit).unsqueeze(-1) + log_p_gen)",
     "eq. 11: lambda weighs both parts"),
    ("M2", MIXTURE, "grad_gate = (1 - lam) * grad_copy.sum(-1) - lam * grad_gen.sum(-1)",
     "grad_gate = lam * grad_copy.sum(-1) - (1 - lam) * grad_gen.sum(-1)", "wrong gradient of the gate logit"),
    ("M3", MIXTURE, "p_copy.scatter_add_(2, copy_index", "p_copy.scatter_(2, copy_index",
     "eq. 7: repeated source words do not add up"),
    ("M4", MIXTURE, "return (grad / p).masked_fill_(p == 0, 0.0)", "return grad / p",
     "masked log: NaN/inf gradient where p = 0"),
    # --- decoder state: incremental decoding against the full pass, per option (issue 54); these
    # name the test file that must kill them (tests/test_decoder_state.py runs every model x
    # decoder-state option value x 1 and 2 layers x preset)
    ("S1", CORE, "previous_top = hidden[-1].unsqueeze(1)", "previous_top = hidden[0].unsqueeze(1)",
     "core_copy --core-attend-previous-state: s_t-1 of the first layer (2 layers: incremental != full)",
     DECODER_STATE),
    ("S2", CORE, 'self.set_incremental_state(incremental_state, "cached_state", hidden)',
     'self.set_incremental_state(incremental_state, "cached_state", hidden[-1:].expand_as(hidden))',
     "core_copy: every layer's cached state is the top layer's (only with 2 layers)", DECODER_STATE),
    ("S3", WEAN, 'self.set_incremental_state(incremental_state, "cached_state", (hidden, cell))',
     'self.set_incremental_state(incremental_state, "cached_state", (hidden, cell[:1].expand_as(cell)))',
     "wean_lstm: every layer's cached LSTM cell is the first layer's (only with 2 layers)", DECODER_STATE),
    ("S4", GATED, 'cache["cell"] = torch.stack(cell)', 'cache["cell"] = torch.stack(cell[:1] * len(cell))',
     "word_attn_gated --rnn-cell lstm: every layer's cached cell is the first layer's (2 layers)",
     DECODER_STATE),
    ("S5", GATED, "cache = dict(cache, hidden=torch.stack(hidden))", "cache = dict(cache, hidden=torch.stack(hidden[::-1]))",
     "word_attn_gated: the cached layers in reverse order (only with 2 layers)", DECODER_STATE),
    # --- layers and the additive score (issue 54's survivors)
    ("R1", LAYERS, "if layer < self.num_layers - 1 and self.dropout > 0 and self.training:",
     "if layer < self.num_layers and self.dropout > 0 and self.training:",
     "padded GRU: dropout on the top layer's outputs too", ["tests/test_rnn_encoder.py"]),
    ("R2", LAYERS, "return self._under_autocast_rule(input, None, lambda x, _hx: self._forward_right_padded(x, lengths))",
     "return self._forward_right_padded(input, lengths)",
     "padded GRU: skips the precision rule under CPU autocast (issue 53)", ["tests/test_recurrent_precision.py"]),
    ("V1", ATTENTION, "            if need_v:\n                grad_v +=", "            if need_query:\n                grad_v +=",
     "additive score: v's gradient computed under the query's flag", ["tests/test_attention.py"]),
    ("V2", ATTENTION, "acc = torch.promote_types(dtype, torch.float32)", "acc = dtype",
     "additive score: bfloat16/float16 gradients summed over blocks in their own dtype", ["tests/test_attention.py"]),
    # --- checkpoints: the allow-list in torch's own unpickler
    ("U1", SAFETY, 'raise CheckpointRefused("{}.{}".format(module, name))', "pass",
     "the allow-list pickle_module (torch < 2.4) lets every global through", ["tests/test_crafted_checkpoints.py"]),
    ("U2", SAFETY, "return torch.load(f, map_location, weights_only=True, **kwargs)",
     "return torch.load(f, map_location, weights_only=False, **kwargs)",
     "checkpoints loaded with torch's unrestricted unpickler (torch >= 2.4)", ["tests/test_crafted_checkpoints.py"]),
    ("U3", "fairseq_wean/checkpoint_container.py", "        if sizes[name] != numel * element:",
     "        if sizes[name] > numel * element:",
     "storage records shorter than their pickle declares reach torch (out-of-bounds reads on torch 1.13)",
     ["tests/test_checkpoint_records.py"]),
    # --- scoring: ROUGE's unit against the references' script
    ("T1", METRICS, "share, example, _ = latin_letter_share(texts)", "share, example, _ = 0.0, None, None",
     "character ROUGE on Latin text scored (each line one token)", ["tests/test_rouge_unit.py"]),
    ("T2", METRICS, "    if unit_option is not None:\n        check_normalization(", "    if False:\n        check_normalization(",
     "ROUGE computed without checking its unit", ["tests/test_rouge_unit.py"]),
    # --- nothing lost, nobody in: one mechanism per class
    ("F1", TEXTIO, "    if write and info.st_nlink > 1:", "    if False:",
     "a hard-linked file written in place (the other name's file changed)",
     ["tests/test_output_paths.py::test_one_rule_for_a_file_written_in_place"]),
    ("F2", TEXTIO, "    if found and info.st_nlink > 1:", "    if False:",
     "a hard-linked file found in a folder read (its other name's content quoted)",
     ["tests/test_textio.py::test_a_file_found_in_a_folder_is_read_only_when_it_has_no_other_name"]),
    ("O1", PATCHING, "command in commands) and not condition(args):", "command in commands) and condition(args):",
     "an option that does nothing accepted (and one that acts refused)", ["tests/test_option_noops.py"]),
    ("I1", STORED, 'INTERPOLATION = "${"', 'INTERPOLATION = "$["',
     "a stored ${...} interpolation resolved by fairseq", [
         "tests/test_stored_interpolation.py::test_a_hand_made_state_keeps_no_interpolation"]),
    ("P1", PIECES, '        if expect == "words":', '        if expect != "words":',
     "a word tool fed unsegmented Chinese/Thai", ["tests/test_word_tools.py::test_align_table_text_and_dict_of_one_form"]),
    ("B1", BOUNDS, "    if work > MAX_WORK[metric]:", "    if work > 10 * MAX_WORK[metric]:",
     "ROUGE-L/TER run over their bound on a whole input", ["tests/test_scoring_bounds.py"]),
    ("N1", "fairseq_wean/scoring/inputs.py", "        if decomposed and composed:", "        if decomposed and composed and 0:",
     "inputs in two Unicode normalization forms scored (the same text as different words)",
     ["tests/test_text_forms.py::test_the_message_names_the_files_and_the_code_points"]),
    ("B2", "fairseq_wean/scoring/ter.py", "if self.limit is not None and self.done", "if self.limit is None and self.done",
     "TER's shift search run past its bound on a crafted input", ["tests/test_ter_work_bound.py"]),
    ("H1", "fairseq_wean/optim_check.py", "not math.isfinite(rate) or rate < 0:", "not math.isfinite(rate):",
     "a schedule reaching a negative learning rate trained", ["tests/test_optim_schedule.py::test_schedule_mistakes_are_one_line_before_any_work"]),
    ("F3", TEXTIO, "        except FileExistsError:\n            # there already", "        except NotADirectoryError:\n            # there already",
     "a run folder made meanwhile by a parallel run an error (the runner's runs/ race)",
     ["tests/test_textio.py::test_makedirs_in_folder_keeps_a_folder_made_meanwhile"]),
]


# ------------------------------------------------------------------------------ pytest plugin
def pytest_collection_modifyitems(config, items):
    """Leave out the tests that need data built by fairseq's CLIs (minutes each)."""
    keep = [item for item in items if not CLI_FIXTURES & set(getattr(item, "fixturenames", ()))]
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


# ------------------------------------------------------------------------------ the check
def unpack(mutant):
    """(id, file, old, new, what, test files) of a MUTANTS entry."""
    mid, path, old, new, what = mutant[:5]
    return mid, path, old, new, what, (mutant[5] if len(mutant) > 5 else TESTS)


def invalid_mutants(root, mutants=MUTANTS):
    """'ID: why' for each mutant whose old text is not found exactly once in its file under ``root``
    (the code moved on: the mutant would test nothing)."""
    invalid = []
    for mid, path, old, _new, _what, _tests in map(unpack, mutants):
        found = (Path(root) / path).read_text().count(old)
        if found != 1:
            invalid.append("{}: old text found {} times in {}".format(mid, found, path))
    return invalid


def copy_tree(dest):
    shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".git", "__pycache__", ".venv", "*.pyc"))


def test_env(copy):
    """The environment of a test run in ``copy``: the copy (and its scripts/, for -p mutation_check) first;
    no bytecode written (a mutant restored within a second, of the same size, could reuse a stale .pyc)."""
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
                PYTHONPATH=os.pathsep.join([str(copy), str(copy / "scripts"), os.environ.get("PYTHONPATH", "")]))


def run_tests(copy, keyword=None, tests=TESTS, tools=None):
    """pytest on ``tests`` in ``copy``: (exit status or None, the first failure or the summary, seconds).
    ``tools``: tests/forkserver.py's Tools started with :func:`test_env`: each run is a child forked from
    a process that imported torch and fairseq once (the plugin, mutated or not, is imported afresh by
    each run), instead of a fresh interpreter paying those imports for every mutant."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "mutation_check"] + list(tests)
    if keyword:
        cmd += ["-k", keyword]
    start = time.time()
    if tools is not None:
        rc, stdout, stderr, timed_out = tools.run(cmd, copy, test_env(copy), TIMEOUT_S)
        if timed_out:
            return None, "timed out after {} s".format(TIMEOUT_S), time.time() - start
        proc = subprocess.CompletedProcess(cmd, rc, stdout, stderr)
    else:
        try:
            proc = subprocess.run(cmd, cwd=copy, env=test_env(copy), capture_output=True, text=True,
                                  timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, "timed out after {} s".format(TIMEOUT_S), time.time() - start
    out = proc.stdout + proc.stderr
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, flags=re.M)
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    return proc.returncode, (failed[0] if failed else summary), time.time() - start


def check_import_path(copy):
    env = dict(os.environ, PYTHONPATH=str(copy))
    where = subprocess.run([sys.executable, "-c", "import fairseq_wean; print(fairseq_wean.__file__)"],
                           cwd=copy, env=env, capture_output=True, text=True).stdout.strip()
    if not where.startswith(str(copy)):
        sys.exit("mutation_check: fairseq_wean is imported from {}, not from the copy {}".format(where, copy))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="print the mutants and stop")
    parser.add_argument("-k", dest="keyword", help="only the tests pytest -k selects (e.g. 'not teacher_forced_pass': "
                                                   "which mutants the other tests kill)")
    from fairseq_wean.cli.options import once

    args = once(parser).parse_args(argv)
    known = {m[0] for m in MUTANTS}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        parser.error("unknown mutant(s) {}; known: {}".format(", ".join(unknown), ", ".join(sorted(known))))
    mutants = [m for m in MUTANTS if not args.ids or m[0] in args.ids]
    if args.list:
        for mid, path, old, new, what, tests in map(unpack, mutants):
            print("{}  {}: {}\n     - {}\n     + {}\n     by {}".format(mid, path, what, old, new, " ".join(tests)))
        return 0
    invalid = invalid_mutants(REPO, mutants)
    if invalid:  # before any test: a mutant that no longer applies is a broken check, not a pass
        for line in invalid:
            print("invalid mutant " + line, file=sys.stderr)
        print("mutation_check: {} of {} mutant(s) no longer apply: update their old text".format(
            len(invalid), len(mutants)), file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory(prefix="mutation-check-") as tmp:
        copy = Path(tmp) / "repo"
        copy_tree(copy)
        check_import_path(copy)
        sys.path.insert(0, str(Path(REPO) / "tests"))
        from forkserver import Tools

        tools = Tools(env=test_env(copy))
        try:
            return run_mutants(copy, mutants, args.keyword, tools)
        finally:
            tools.close()


def run_mutants(copy, mutants, keyword, tools):
    """The baseline, then each mutant applied to ``copy`` in turn with its tests; 0 when all are killed."""
    every_file = sorted({t for m in mutants for t in unpack(m)[5]})
    rc, detail, seconds = run_tests(copy, keyword, every_file, tools)
    print("baseline (no mutant): {} ({:.0f} s)".format("pass" if rc == 0 else "FAIL: " + detail, seconds), flush=True)
    if rc != 0:
        return 2
    results = []
    for mid, path, old, new, what, tests in map(unpack, mutants):
        if mid in RUNS_ONLY_WITH and not RUNS_ONLY_WITH[mid][1]():
            results.append((mid, "not-run", "", 0.0))
            print("{:3s} {:8s} {:4.0f} s  {}  [its code runs only with {}]".format(
                mid, "not-run", 0, what, RUNS_ONLY_WITH[mid][0]), flush=True)
            continue
        target = copy / path
        original = target.read_text()
        target.write_text(original.replace(old, new))
        try:
            rc, detail, seconds = run_tests(copy, keyword, tests, tools)
        finally:
            target.write_text(original)
        # pytest's 5: no test ran (all deselected or none collected) - a mutant nothing tested is not killed
        verdict = "survived" if rc == 0 else "untested" if rc == 5 else "killed"
        results.append((mid, verdict, detail if rc not in (0, 5) else "every test passed" if rc == 0 else
                        "no test ran: its tests need data the check leaves out", seconds))
        print("{:3s} {:8s} {:4.0f} s  {}  [{}]".format(mid, verdict, seconds, what, detail), flush=True)
    killed = sum(r[1] == "killed" for r in results)
    ran = sum(r[1] != "not-run" for r in results)
    print("score: {} of {} killed{}".format(killed, ran, "" if ran == len(results) else
                                            " ({} not run here: their code never runs on this installation)"
                                            .format(len(results) - ran)))
    return 0 if killed == ran else 1


if __name__ == "__main__":
    sys.exit(main())
