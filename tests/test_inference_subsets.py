"""Options an inference command parses and only some tasks read, refused in one line at parse for the others
(``option_rules.task_reads``: what a task's code reads from its configuration, found by reading it):

* ``fairseq-generate --arch NAME`` (fairseq adds it "for constructing tasks that rely on model args"): the model
  comes from --path; refused unless the task's code reads one of the architecture's options or the architecture's
  configuration changes an option the command reads (``option_rules.arch_acts``); fairseq-interactive, -validate
  and -eval-lm have no --arch (argparse's "unrecognized arguments" line);
* ``--train-subset``, ``--valid-subset``, ``--combine-valid-subsets``, ``--ignore-unused-valid-subsets`` in
  fairseq-generate, -interactive, -eval-lm (and, but for --valid-subset, fairseq-validate): refused unless the
  task's code reads them at a place that acts in that command (``option_rules.subset_reads``).

Each is enumerated over every registered task and every inference command, on both fairseq versions.
"""

import pytest
from conftest import USER_DIR, parse_outcome, task_parsers

COMMANDS = {"fairseq-generate": ("get_generation_parser", ["--path", "x.pt"]),
            "fairseq-interactive": ("get_interactive_generation_parser", ["--path", "x.pt"]),
            "fairseq-validate": ("get_validation_parser", ["--path", "x.pt", "--max-tokens", "9"]),
            "fairseq-eval-lm": ("get_eval_lm_parser", ["--path", "x.pt"])}
# the options a task cannot be parsed without (option_rules.TASK_NEEDS)
NEEDED = {"langs": "de_DE,en_XX", "lang_pairs": "src-tgt", "mono_langs": "src,tgt", "valid_lang_pairs": "src-tgt"}


def _tasks():
    return [name for name, _, _ in task_parsers()]


def _positional(task):
    """DATA where the task takes it (dummy_lm, dummy_mt take none)."""
    parser = next(p for name, _, p in task_parsers() if name == task)
    return [a.dest for a in parser._actions if not a.option_strings and a.dest == "data"]


def outcome(command, task, argv, tmp_path, monkeypatch, capsys):
    """The last line fairseq's parse of ``command --task task argv`` ends with (exit status 2), or None if taken;
    as the command's entry builds it (fairseq-generate adds --arch, default wav2vec2)."""
    from fairseq_wean.option_rules import TASK_NEEDS

    build, base = COMMANDS[command]
    needed = [w for dest, _ in TASK_NEEDS.get(task, ()) for w in ("--" + dest.replace("_", "-"), NEEDED[dest])]
    words = [str(tmp_path)] * len(_positional(task)) + ["--user-dir", USER_DIR, "--task", task] + base + needed + argv
    return parse_outcome(command, build, words, monkeypatch, capsys)


def parses(command, task, tmp_path, monkeypatch, capsys):
    """Whether ``command --task task`` parses without the option tried (else it is refused, or fails, for another
    reason first: fairseq-eval-lm on a task with no language model, hubert_pretraining's --labels)."""
    if (command, task) not in _PARSES:
        _PARSES[(command, task)] = outcome(command, task, [], tmp_path, monkeypatch, capsys) is None
    return _PARSES[(command, task)]


_PARSES = {}
# the pairs refused (or failing) before any option tried here, each for its own reason; a pair that newly fails to
# parse must be added here, so that the enumeration cannot shrink silently
EVAL_LM_TASKS = ("language_modeling", "multilingual_language_modeling", "speech_dlm_task")  # an eval_lm_dataloader
NOT_PARSED = {"hubert_pretraining": ("fairseq-generate", "fairseq-interactive", "fairseq-validate"),  # --labels 'ltr'
              # fairseq-generate's default --arch wav2vec2 and the task both add --mask-prob (fairseq 0.12.2: the
              # denoising tasks' --mask-length too): one line (patching: "fairseq cannot build this command's options")
              "multilingual_masked_lm": ("fairseq-generate",), "denoising": ("fairseq-generate",),
              "multilingual_denoising": ("fairseq-generate",)}


def commands_for(task, tmp_path, monkeypatch, capsys):
    """The inference commands that parse ``--task task`` (checked against :data:`NOT_PARSED`)."""
    taken = [c for c in COMMANDS if parses(c, task, tmp_path, monkeypatch, capsys)]
    allowed = set(NOT_PARSED.get(task, ())) | ({"fairseq-eval-lm"} if task not in EVAL_LM_TASKS else set())
    assert set(COMMANDS) - set(taken) <= allowed, (task, sorted(set(COMMANDS) - set(taken) - allowed))
    return taken


# ---- --arch: the tasks whose code reads an option of the architecture (for the architecture named)
ARCH_READERS = {("sentence_ranking", "roberta_base"): "self.args.max_positions (roberta's --max-positions)"}


def test_the_scan_finds_the_tasks_that_read_the_model_options():
    from fairseq_wean.option_rules import arch_acts, task_reads

    tasks = _tasks()
    assert "arch" not in set().union(*(task_reads(t) for t in tasks))  # no task of fairseq 0.12 reads --arch
    assert "max_positions" in task_reads("sentence_ranking")
    for (task, arch) in ARCH_READERS:
        assert arch_acts("generate", task, arch, None) == {"arch"}, (task, arch)
    # roberta's configuration sets --max-source-positions from its --max-positions: it acts on translation
    assert arch_acts("generate", "translation", "roberta_base", None) == {"arch"}
    assert arch_acts("generate", "translation", "transformer", None) == set()


@pytest.mark.parametrize("task", _tasks())
def test_arch_in_an_inference_command_is_refused_unless_the_task_reads_it(task, tmp_path, monkeypatch, capsys):
    for command in commands_for(task, tmp_path, monkeypatch, capsys):
        line = outcome(command, task, ["--arch", "lstm"], tmp_path, monkeypatch, capsys)
        if command == "fairseq-generate":
            assert line == ("fairseq-generate: error: --arch does nothing in fairseq-generate: the model and its "
                            "architecture come from --path (the checkpoint's stored options: change one with "
                            "--model-overrides), and no code of --task {} reads the model's options".format(task)), line
        else:  # fairseq-interactive, -validate, -eval-lm have no --arch
            assert line == "{}: error: unrecognized arguments: --arch lstm".format(command), line
    for (reader, arch), _ in ARCH_READERS.items():
        if reader == task:
            assert outcome("fairseq-generate", task, ["--arch", arch], tmp_path, monkeypatch, capsys) is None
            assert outcome("fairseq-generate", task, ["--arch", arch, "--max-positions", "256"], tmp_path, monkeypatch,
                           capsys) is None  # the option the task reads is taken
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_an_architecture_option_its_configuration_carries_into_a_task_option_is_taken(tmp_path, monkeypatch, capsys):
    """roberta's configuration sets --max-source-positions from --max-positions: both act in fairseq-generate
    --task translation (an option of its own the architecture leaves alone is still refused)."""
    assert outcome("fairseq-generate", "translation", ["--arch", "roberta_base", "--max-positions", "256"], tmp_path,
                   monkeypatch, capsys) is None
    line = outcome("fairseq-generate", "translation", ["--arch", "roberta_base", "--encoder-layers", "2"], tmp_path,
                   monkeypatch, capsys)
    assert line.startswith("fairseq-generate: error: --encoder-layers does nothing here"), line
    assert "--model-overrides" in line, line


# ---- the subsets: (option, value) and the (command, task) pairs whose code reads it where it acts
SUBSETS = {"train_subset": ["--train-subset", "test"], "valid_subset": ["--valid-subset", "test"],
           "combine_valid_subsets": ["--combine-valid-subsets"],
           "ignore_unused_valid_subsets": ["--ignore-unused-valid-subsets"]}
# the tasks whose code reads the subset where it acts (every inference command but fairseq-interactive, which
# loads no subset and so never runs a load_dataset): found by the scan, written here as the reference
LOADERS_READ = {"train_subset": {"multilingual_denoising", "multilingual_language_modeling", "multilingual_masked_lm"},
                "valid_subset": {"multilingual_denoising", "multilingual_language_modeling", "multilingual_masked_lm"}}
# the tasks whose code reads it outside load_dataset (every command): speech_to_text's set-up ("Train splits should
# be named like train*"), the multilingual data manager of translation_multi_simple_epoch
SETUP_READS = {"train_subset": {"speech_to_text", "speech_to_speech", "text_to_speech", "frm_text_to_speech",
                                "simul_speech_to_text", "translation_multi_simple_epoch"}}

# fairseq-validate: the plugin's task skips validation's text check on the split --train-subset names
VALIDATE_READS = {"train_subset": {"translation_with_metrics"}}


def expected_taken(command, task, dest):
    from fairseq_wean.option_rules import SUBSET_OPTIONS

    if command[len("fairseq-"):].replace("-", "_") not in SUBSET_OPTIONS[dest][0]:
        return True  # the command reads it itself (fairseq-validate --valid-subset)
    if command == "fairseq-validate" and task in VALIDATE_READS.get(dest, ()):
        return True
    loads = command != "fairseq-interactive"  # fairseq-interactive runs no load_dataset
    return task in SETUP_READS.get(dest, ()) or (loads and task in LOADERS_READ.get(dest, ()))


def test_the_scan_finds_the_readers_of_every_subset_option():
    from fairseq_wean.option_rules import INERT_READS, subset_reads, task_reads

    tasks = set(_tasks())
    for dest in SUBSETS:
        for command in ("generate", "interactive"):
            found = {t for t in tasks if subset_reads(command, t, dest)}
            want = {t for t in tasks if expected_taken("fairseq-" + command, t, dest)}
            assert found == want, (command, dest, found ^ want)
    for dest, place in INERT_READS:  # no stale reason: each place still reads its option
        assert any(place in task_reads(t).get(dest, ()) for t in tasks), (dest, place)


@pytest.mark.parametrize("task", _tasks())
def test_a_subset_option_is_refused_where_no_code_reads_it(task, tmp_path, monkeypatch, capsys):
    """fairseq-generate --train-subset test (every subset option, every inference command, every task): accepted and
    ignored; now one line at parse, unless the task's code reads it where it acts."""
    failures = []
    for dest, argv in SUBSETS.items():
        for command in commands_for(task, tmp_path, monkeypatch, capsys):
            line = outcome(command, task, argv, tmp_path, monkeypatch, capsys)
            if expected_taken(command, task, dest):
                ok = line is None or argv[0] not in line  # taken (or refused for another reason: a missing file)
            else:
                ok = line is not None and line.startswith("{}: error: {} does nothing here".format(command, argv[0]))
            if not ok:
                failures.append("{} --task {} {}: {}".format(command, task, argv[0], line or "accepted"))
    assert not failures, "\n".join(failures)
    assert list(tmp_path.iterdir()) == []  # nothing written
