"""The rows of fairseq's own options in the plugin's parse-time tables (:mod:`fairseq_wean.patching`): options that
do nothing in the given combination (``add_option_need``), fairseq-eval-lm's that contradict each other, the inference
commands' options only some tasks read (--arch, the subsets; ``task_reads``), fairseq's training-only option groups
in them (``INFERENCE_INERT``) and fairseq-validate's stored criterion. Other modules declare the rows of their own
options (the task's validation options, CoRe's, fairseq-train's files, the data folder's subsets). Imported by
:func:`patching.install_option_ranges`."""
import argparse
import ast
import copy
import dataclasses
import functools
import glob
import importlib.util
import inspect
import os
import sys
import types

from fairseq_wean.patching import (_decodes, _number, add_option_check, add_option_need,  # noqa: F401
                                   running_command)

_INFERENCE = ("generate", "interactive", "validate", "eval_lm")


add_option_need("diverse_beam_strength", lambda a: _number(a, "diverse_beam_groups", -1) > 0,
                "it weighs the groups of --diverse-beam-groups N, not given")
add_option_need("sampling_topk", lambda a: bool(getattr(a, "sampling", False)) and _number(a, "sampling_topp", -1) <= 0,
                "it restricts --sampling (beam search ignores it), and --sampling-topp, if given, replaces it")
add_option_need("sampling_topp", lambda a: bool(getattr(a, "sampling", False)),
                "it restricts --sampling, not given (beam search ignores it)")
for _dest in ("max_len_a", "max_len_b"):  # the output's length is the source's
    add_option_need(_dest, lambda a: not getattr(a, "match_source_len", False), "--match-source-len sets the length")
add_option_need("lenpen", lambda a: not getattr(a, "unnormalized", False) and _decodes(a),
                "it weighs the normalized score, which --unnormalized (or --score-reference) turns off")
for _dest in ("match_source_len", "unnormalized"):
    add_option_need(_dest, _decodes, "--score-reference scores the references, it decodes nothing")
for _dest in ("iter_decode_eos_penalty", "iter_decode_max_iter", "iter_decode_force_max_iter", "iter_decode_with_beam",
              "iter_decode_with_external_reranker", "print_step", "retain_iter_history"):  # KeyError 'steps' on others
    add_option_need(_dest, lambda a: _iterative_task(getattr(a, "task", None)),
                    "it is read by iterative refinement only (a task such as translation_lev decodes with it)")
add_option_need("constraints", lambda a: False, "fairseq-generate reads no constraints (fairseq-interactive reads "
                "them from each input line, after a tab)", commands=("generate",))
add_option_need("lm_weight", lambda a: bool(getattr(a, "lm_path", None)),
                "it weighs the language model of --lm-path, not given")
add_option_need("retain_dropout_modules", lambda a: bool(getattr(a, "retain_dropout", False)),
                "it names the modules of --retain-dropout, not given")
add_option_need("results_path", lambda a: False,
                "fairseq-validate and fairseq-eval-lm print their results in the log and write no file there",
                commands=("validate", "eval_lm"))
add_option_need("post_process", lambda a: _criterion_reads(a, "post_process"),
                "fairseq-validate scores the binarized references token by token and post-processes no text "
                "(only a criterion with a post_process option, e.g. ctc, reads it)", commands=("validate",))
add_option_need("gen_subset", lambda a: False, "fairseq-interactive translates standard input, fairseq-train reads "
                "--train-subset/--valid-subset and fairseq-validate --valid-subset, never --gen-subset",
                commands=("interactive", "train", "validate"))
add_option_need("mask_random", lambda a: _number(a, "mask") > 0, "it is the share of --mask's masked tokens made "
                "random, and --mask is 0 (nothing is masked)")


def _has_shards(args):
    """A second shard (SPLIT1.*, as load_langpair_dataset reads) of a loaded subset, or no upsampling asked (1, -1)."""
    names = {"train": ("train_subset", "valid_subset"), "validate": ("valid_subset",)}.get(running_command(), ())
    data, names = getattr(args, "data", None), names or ("gen_subset",)
    subsets = [s for n in names for s in str(getattr(args, n, "") or "").split(",") if s]
    return _number(args, "upsample_primary", 1) in (1, -1) or any(glob.glob(os.path.join(glob.escape(folder), glob.escape(
        s) + "1.*")) for s in subsets for folder in (data.split(os.pathsep) if isinstance(data, str) else ()))


add_option_need("upsample_primary", _has_shards, "it weighs a subset's first shard against its others (SPLIT1, "
                "SPLIT2, ... in the data folder), and it has none", commands=("train",) + _INFERENCE)
add_option_need("use_bmuf", lambda a: _number(a, "distributed_world_size", 1) > 1 or "WORLD_SIZE" in os.environ,
                "BMUF averages the models of several processes, and this run has one (--distributed-world-size 1; "
                "fairseq-wean-train-cpu-dist --nproc-per-node N starts several on the CPU)", commands=("train",))


def _iterative_task(name):
    """Whether the task ``name`` decodes with fairseq's IterativeRefinementGenerator (its build_generator says)."""
    from fairseq.tasks import TASK_REGISTRY
    build = getattr(TASK_REGISTRY.get(name), "build_generator", None)
    return build is not None and "IterativeRefinementGenerator" in inspect.getsource(build)


def _criterion_reads(args, field):
    """Whether the criterion of ``args`` has the dataclass field ``field`` (it then reads the shared option)."""
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    config = CRITERION_DATACLASS_REGISTRY.get(getattr(args, "criterion", None))
    return config is not None and field in getattr(config, "__dataclass_fields__", {})


# the --post-process values fairseq-eval-lm implements (others: NotImplementedError after the model is loaded)
EVAL_LM_POST_PROCESS = (None, "subword_nmt", "@@ ")


def eval_lm_option_problem(args, command=None):
    """fairseq-eval-lm's options that contradict each other, or None: --context-window not below
    --tokens-per-sample (fairseq subtracts the window from every sample: a ValueError traceback after the
    model is loaded) and a --post-process it does not implement (a NotImplementedError traceback)."""
    if (command or running_command()) != "eval_lm":
        return None
    window, tokens = getattr(args, "context_window", 0), getattr(args, "tokens_per_sample", None)
    if isinstance(window, int) and isinstance(tokens, int) and window > 0 and window >= tokens:
        return ("--context-window {} must be below --tokens-per-sample {}: fairseq-eval-lm takes the window out of "
                "every sample of --tokens-per-sample tokens".format(window, tokens))
    post = getattr(args, "post_process", None)
    if post not in EVAL_LM_POST_PROCESS:
        return ("--post-process {} is not implemented by fairseq-eval-lm: it joins only subword-nmt pieces "
                "(--post-process subword_nmt or '@@ ')".format(post))
    return None


add_option_check(eval_lm_option_problem)


# ---- precision: fairseq's half-precision options on a machine without CUDA, and where a command reads none
FP16_SCALING = ("fp16_no_flatten_grads", "fp16_init_scale", "fp16_scale_window", "fp16_scale_tolerance",
                "min_loss_scale", "threshold_loss_scale")  # FP16Optimizer's loss scaler (bfloat16 has none)
AMP_SCALING = ("amp_batch_retries", "amp_init_scale", "amp_scale_window")
CPU_BF16 = "bfloat16 on CPU is the plugin's --task translation_with_metrics --cpu-bf16"


def _uses_cuda(args):
    from fairseq_wean.distributed import uses_cuda
    return uses_cuda(args)


def precision_problem(args):
    """fairseq-train's half precision where it cannot run: --fp16 (and --memory-efficient-fp16) training on the
    CPU (fairseq asserts CUDA after the data and model are built) and --bf16 (and --memory-efficient-bf16) without
    torch_xla (fairseq's --bf16 sets --tpu and asks for a TPU device, an AttributeError after the model is built);
    one line at parse instead, or None."""
    if running_command() != "train":
        return None
    for dest in ("memory_efficient_bf16", "bf16"):  # the --memory-efficient- form sets bf16 too: named first
        if getattr(args, dest, False) and importlib.util.find_spec("torch_xla") is None:
            return ("--{} is fairseq's bfloat16 training on a TPU (it sets --tpu), and torch_xla is not installed "
                    "here: {}".format(dest.replace("_", "-"), CPU_BF16))
    for dest in ("memory_efficient_fp16", "fp16"):
        if getattr(args, dest, False) and not _uses_cuda(args):
            return ("--{} needs a CUDA GPU (fairseq's float16 training fails on the CPU after the model is built; "
                    "this run has {}): {}".format(dest.replace("_", "-"), "--cpu" if getattr(args, "cpu", False)
                                                 else "no CUDA device", CPU_BF16))
    return None


add_option_check(precision_problem)
add_option_need("amp", lambda a: running_command() == "train" and _uses_cuda(a),
                "fairseq-train's --amp is torch's CUDA autocast (off on the CPU: it trains in float32), and "
                "fairseq-generate, -interactive, -validate and -eval-lm read no --amp; " + CPU_BF16,
                commands=("train",) + _INFERENCE)
for _dest in ("bf16", "memory_efficient_bf16"):
    add_option_need(_dest, lambda a: False, "fairseq-generate, -interactive, -validate and -eval-lm read --fp16 "
                    "(model.half()) and no bfloat16 option", commands=_INFERENCE)
for _dest in FP16_SCALING:
    add_option_need(_dest, lambda a: running_command() == "train" and bool(getattr(a, "fp16", False))
                    and not getattr(a, "bf16", False),
                    "it sets fairseq-train's float16 loss scaler (--fp16 / --memory-efficient-fp16)",
                    commands=("train",) + _INFERENCE)
for _dest in AMP_SCALING:
    add_option_need(_dest, lambda a: running_command() == "train" and bool(getattr(a, "amp", False)),
                    "it sets fairseq-train's --amp loss scaler", commands=("train",) + _INFERENCE)


# ---- checkpoints fairseq-train writes or restores: options that act only with others
def _saves(args):
    return not getattr(args, "no_save", False)


add_option_need("keep_interval_updates", lambda a: _saves(a) and _number(a, "save_interval_updates") > 0,
                "it keeps the last N checkpoint_EPOCH_UPDATES.pt files, which only --save-interval-updates N "
                "(without --no-save) writes", commands=("train",))
add_option_need("keep_interval_updates_pattern", lambda a: _number(a, "keep_interval_updates", -1) > 0,
                "it chooses which files --keep-interval-updates keeps, not given", commands=("train",))
add_option_need("keep_last_epochs", lambda a: _saves(a) and not getattr(a, "no_epoch_checkpoints", False),
                "it keeps the last N checkpointEPOCH.pt files, which --no-epoch-checkpoints / --no-save turn off",
                commands=("train",))
for _dest in ("keep_best_checkpoints", "save_interval", "no_epoch_checkpoints", "no_last_checkpoints"):
    add_option_need(_dest, _saves, "--no-save writes no checkpoint", commands=("train",))


def restores_a_checkpoint(args):
    """Whether fairseq-train restores a checkpoint whose state the --reset-* options act on: metric_check's
    start_checkpoint (fairseq's own choice: --save-dir's checkpoint_last{suffix}.pt, --restore-file,
    --continue-once), not --finetune-from-model (fairseq resets everything itself, and refuses the two together)."""
    from fairseq_wean.metric_check import start_checkpoint
    return not getattr(args, "finetune_from_model", None) and \
        start_checkpoint(types.SimpleNamespace(checkpoint=args)) is not None


for _dest in ("reset_optimizer", "reset_lr_scheduler", "reset_meters", "reset_dataloader"):
    add_option_need(_dest, restores_a_checkpoint,
                    "it resets what a restored checkpoint holds, and this run restores none (no checkpoint_last.pt "
                    "in --save-dir, no --restore-file or --continue-once); --finetune-from-model resets it itself "
                    "(fairseq refuses the two together after the model is built)", commands=("train",))
add_option_need("score_reference", lambda a: False, "fairseq-interactive reads no references (a KeyError 'target' "
                "after the model is loaded): score them with fairseq-generate --score-reference",
                commands=("interactive",))


def interpolation_problem(args):
    """A string option holding '${': fairseq hands every option to OmegaConf (convert_namespace_to_omegaconf), which
    takes it for an interpolation (an InterpolationKeyError traceback, or a value resolved from the environment);
    one line at parse naming the option, or None (textio.PATH_RULES: the same rule for the tools' folders)."""
    from fairseq_wean.stored_paths import INTERPOLATION
    for dest, value in sorted(vars(args).items()):
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, str) and INTERPOLATION in item:
                return ("--{} {!r} holds '${{': fairseq reads its options through OmegaConf, which takes '${{' for an "
                        "interpolation: rename it (a folder or file name) or drop the '${{'".format(
                            dest.replace("_", "-"), item))
    return None


add_option_check(interpolation_problem)


# ---- checkpoints whose kind matters (--lm-path a language model, --path the task's kind): read from their stored
# configuration at parse, before any work
from fairseq_wean.checkpoint_kind import checkpoint_kind_problem  # noqa: E402

add_option_check(checkpoint_kind_problem)


# ---- task options fairseq leaves None and the task cannot run without (each found in the task's code: a
# traceback when the task is set up, after parse); tests/test_task_needs.py finds them and requires a row here
_LANG_PAIRS = "the language pairs, e.g. --lang-pairs de-en,en-de"
TASK_NEEDS = {
    "translation_from_pretrained_bart": (("langs", "the languages of the pretrained mBART model in its order, "
                                                   "e.g. --langs ar_AR,cs_CZ,de_DE,en_XX"),),
    "multilingual_translation": (("lang_pairs", _LANG_PAIRS),),
    "semisupervised_translation": (("lang_pairs", _LANG_PAIRS),),
    "translation_multi_simple_epoch": (("lang_pairs", _LANG_PAIRS),),
    "online_backtranslation": (("mono_langs", "the monolingual languages, e.g. --mono-langs de,en"),
                               ("valid_lang_pairs", "the validation pairs, e.g. --valid-lang-pairs de-en")),
}


def task_needs_problem(args):
    """An option of :data:`TASK_NEEDS` left unset (None) for its --task: fairseq fails when it sets the task up
    (an AttributeError, assertion or ValueError traceback); one line at parse, or None."""
    for dest, what in TASK_NEEDS.get(getattr(args, "task", None), ()):
        if getattr(args, dest, None) is None:
            return "--task {} needs --{}: {}".format(args.task, dest.replace("_", "-"), what)
    return None


add_option_check(task_needs_problem)


# ---- --score-reference: fairseq's build_generator returns a SequenceScorer, which scores the references and reads
# only --print-alignment; fairseq-generate itself still reads the output's options, the model's preparation
# (prepare_for_inference_) and the seed. Every GenerationConfig field (and the plugin's generation options, and the
# task's --known-words) is decided here, read under --score-reference (with why) or not (SCORE_REFERENCE_INERT: a
# row, refused with --score-reference); tests/test_score_reference.py fails on a field with no decision.
SCORE_REFERENCE_READS = {
    "score_reference": "itself", "print_alignment": "the scorer's alignment (SequenceScorer's compute_alignment)",
    "replace_unk": "the output's unknown words", "replace_unk_source": "the output's unknown words",
    "sacrebleu": "refused in any case (INFERENCE_INERT)", "print_gates": "a teacher-forced pass over the reference",
    "retain_dropout": "the model's preparation (its FairseqDropout modules kept on: the scores change)",
    "retain_dropout_modules": "the model's preparation, with --retain-dropout",
    "no_seed_provided": "fairseq's bookkeeping of --seed", "eos_token": "refused but for speech tasks (INFERENCE_INERT)",
}
SCORE_REFERENCE_INERT = (
    "beam", "beam_mt", "nbest", "max_len_a", "max_len_b", "max_len_a_mt", "max_len_b_mt", "min_len", "match_source_len",
    "unnormalized", "no_early_stop", "no_beamable_mm", "lenpen", "lenpen_mt", "unkpen", "prefix_size",
    "no_repeat_ngram_size", "sampling", "sampling_topk", "sampling_topp", "constraints", "temperature",
    "diverse_beam_groups", "diverse_beam_strength", "diversity_rate", "print_step", "lm_path", "lm_weight",
    "iter_decode_eos_penalty", "iter_decode_max_iter", "iter_decode_force_max_iter", "iter_decode_with_beam",
    "iter_decode_with_external_reranker", "retain_iter_history", "decoding_format", "known_words")
SCORED = "--score-reference scores the references, it decodes nothing"


def also_needs(dest, condition, why, commands=None, both_why=None):
    """Add ``condition`` to ``dest``'s row of ``patching.OPTION_NEEDS`` (both must hold; the reasons joined, or
    ``both_why``, so the one line names either), or declare the row where it has none."""
    from fairseq_wean.patching import OPTION_NEEDS
    if dest not in OPTION_NEEDS:
        return add_option_need(dest, condition, why, commands)
    first, first_why, first_commands = OPTION_NEEDS[dest]
    if first_why == why or why in first_why:
        return None
    merged = None if first_commands is None or commands is None else tuple(first_commands) + tuple(commands)

    def both(args, first=first, first_commands=first_commands, condition=condition, commands=commands):
        command = running_command()
        return ((first_commands is not None and command not in first_commands) or first(args)) and \
            ((commands is not None and command not in commands) or condition(args))

    add_option_need(dest, both, both_why or "{}; or {}".format(first_why, why), merged)
    return None


for _dest in SCORE_REFERENCE_INERT:
    also_needs(_dest, _decodes, SCORED)

# fairseq-interactive has no references to take a prefix from, and never reads --lm-path
also_needs("prefix_size", lambda a: running_command() != "interactive", "fairseq-interactive has no reference",
           both_why="it forces the first tokens of each reference: fairseq-interactive has none, and fairseq-generate "
           "--score-reference scores them whole (it decodes nothing)")
also_needs("lm_path", lambda a: running_command() != "interactive", "fairseq-interactive never loads it",
           both_why="the language model joins fairseq-generate's search: fairseq-interactive never loads it, and "
           "--score-reference decodes nothing")
# SlowMo's option (fairseq's only reader): fairseq-train starts one process per GPU of --distributed-world-size,
# and on the CPU none (the plugin's fairseq-wean-train-cpu-dist starts gloo ranks)
add_option_need("nprocs_per_node", lambda a: running_command() == "train" and getattr(a, "ddp_backend", None) == "slowmo",
                "only --ddp-backend slowmo reads it (fairseq-train starts one process per GPU of "
                "--distributed-world-size; on the CPU, fairseq-wean-train-cpu-dist --nproc-per-node N starts the ranks)",
                commands=("train",) + _INFERENCE)


# ---- options only fairseq-train reads, given to an inference command: the model's (fairseq-generate parses
# --arch's options, wav2vec2's by default, and builds the model from the checkpoint's stored options), the
# criterion's (a loss: fairseq-validate alone computes one, from the checkpoint's criterion with the options
# given), the optimizer's and the scheduler's. Registry option -> (the commands that never build it, why).
MODEL_OVERRIDES = "change the checkpoint's with --model-overrides \"{{'{}': VALUE}}\""
TRAINING_ONLY = {
    "arch": (("generate",), "fairseq-generate builds the model from the checkpoint's stored options: " +
             MODEL_OVERRIDES),
    "criterion": (("generate", "interactive", "eval_lm"), "fairseq-{} computes no loss (the criterion's options "
                  "are fairseq-train's and fairseq-validate's)"),
    "optimizer": (_INFERENCE, "fairseq-{} trains nothing (the optimizer's options are fairseq-train's)"),
    "lr_scheduler": (_INFERENCE, "fairseq-{} trains nothing (the scheduler's options are fairseq-train's)"),
}
_COMMAND_PARSERS = {"generate": "get_generation_parser", "interactive": "get_interactive_generation_parser",
                    "validate": "get_validation_parser", "eval_lm": "get_eval_lm_parser"}


def _component(registry, choice):
    """The class behind ``--registry choice`` (None if unknown)."""
    if registry == "arch":
        from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
        return ARCH_MODEL_REGISTRY.get(choice) or MODEL_REGISTRY.get(choice)
    from fairseq.registry import REGISTRIES
    return REGISTRIES[registry]["registry"].get(choice)


def component_actions(registry, choice):
    """The argparse actions ``--registry choice`` adds, as fairseq's parse_args_and_arch adds them (a model's with
    argparse.SUPPRESS defaults: absent unless given)."""
    from fairseq.dataclass.utils import gen_parser_from_dataclass
    cls = _component(registry, choice)
    parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve",
                                     argument_default=argparse.SUPPRESS if registry == "arch" else None)
    if hasattr(cls, "add_args"):
        cls.add_args(parser)
    elif hasattr(cls, "__dataclass"):
        gen_parser_from_dataclass(parser, cls.__dataclass())
    return [a for a in parser._actions if a.option_strings]


@functools.lru_cache(maxsize=None)
def _command_parser(command, task):
    """fairseq-``command``'s parser with ``--task task``'s options (read, never parsed with)."""
    from fairseq import options
    from fairseq.tasks import TASK_REGISTRY
    parser = getattr(options, _COMMAND_PARSERS[command])()
    if task in TASK_REGISTRY:
        TASK_REGISTRY[task].add_args(parser)
    return parser


def command_reads(command, task):
    """The dests fairseq-``command`` reads with ``--task task``: its own parser's and the task's (an option a model
    shares with the task, --max-source-positions, is the task's)."""
    return {a.dest for a in _command_parser(command, task)._actions} - {argparse.SUPPRESS}


def _defaults_without(args, registry, choice, dests):
    """The values fairseq gives ``dests`` when none is written: an architecture's are filled in by its
    configuration function (ARCH_CONFIG_REGISTRY, at the end of parse_args_and_arch), applied here to the parsed
    options without them."""
    from fairseq.models import ARCH_CONFIG_REGISTRY
    if registry != "arch" or choice not in ARCH_CONFIG_REGISTRY:
        return {}
    bare = argparse.Namespace(**{k: v for k, v in vars(args).items() if k not in dests})
    ARCH_CONFIG_REGISTRY[choice](bare)
    return vars(bare)


def training_option_problem(args, command=None):
    """An option of :data:`TRAINING_ONLY`'s components, written on the command line (an architecture's configuration
    derives unwritten options from written ones) away from its default, given to an inference command that never
    builds that component (fairseq parsed it and ignored it: fairseq-generate --wean-score concat decoded with the
    checkpoint's score), and fairseq-generate's --arch itself: the one line, or None. An architecture's option, or
    --arch, that the task's code reads or the architecture's configuration carries into an option the command reads
    is taken (:func:`arch_acts`)."""
    from fairseq.registry import REGISTRIES
    command = command or running_command()
    if command not in _COMMAND_PARSERS:
        return None
    reads = None
    written = {w.split("=", 1)[0] for w in sys.argv[1:] if isinstance(w, str) and w.startswith("-")}  # as fairseq reads
    for registry, (commands, why) in TRAINING_ONLY.items():
        choice = getattr(args, registry, None)
        if command not in commands or choice is None or _component(registry, choice) is None:
            continue
        default = REGISTRIES[registry]["default"] if registry in REGISTRIES else "wav2vec2"
        actions = component_actions(registry, choice)
        defaults = _defaults_without(args, registry, choice, {a.dest for a in actions})
        given = [(a.option_strings[0], a.dest) for a in actions if written.intersection(a.option_strings)
                 and getattr(args, a.dest, argparse.SUPPRESS) not in (argparse.SUPPRESS, defaults.get(a.dest, a.default))]
        given += [("--" + registry.replace("_", "-"), registry)] if registry != "arch" and choice != default else []
        task = getattr(args, "task", None)
        for flag, dest in given:
            reads = command_reads(command, task) if reads is None else reads
            if dest == registry or (dest not in reads and not (registry == "arch" and dest in arch_acts(
                    command, task, choice, args, (dest,)))):
                return "{} does nothing here: {}".format(flag, why.format(dest if registry == "arch" else
                                                                         command.replace("_", "-")))
        if registry == "arch" and written.intersection(("--arch", "-a")) and not arch_acts(command, task, choice, args):
            return ("--arch does nothing in fairseq-{}: the model and its architecture come from --path (the "
                    "checkpoint's stored options: change one with --model-overrides), and no code of --task {} reads "
                    "the model's options".format(command.replace("_", "-"), task))
    return None


add_option_check(training_option_problem)


# ---- what a task's code reads from its configuration, found by reading it (as fairseq's tasks read their options:
# cfg.NAME, args.NAME, self.cfg.NAME, getattr(args, "NAME")): the inference commands' options that only some tasks
# read (--arch's, the training and validation subsets) are refused for the others. A task's code is the modules of
# its classes (fairseq's tasks, the plugin's) and fairseq's multilingual data manager where it uses one; a
# build_model's own argument is the checkpoint's stored model configuration (fairseq's loaders pass it), not read.
_CONFIG_NAMES = ("args", "cfg", "task_cfg", "config")


def _config_read(node, own):
    """The option a node of a task's code reads from its configuration (``cfg.NAME``, ``getattr(args, "NAME")``)."""
    def config(obj):
        return (isinstance(obj, ast.Name) and obj.id in _CONFIG_NAMES and obj.id not in own) or (
            isinstance(obj, ast.Attribute) and obj.attr in _CONFIG_NAMES and isinstance(obj.value, ast.Name)
            and obj.value.id == "self")

    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and config(node.value):
        return node.attr
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
            "getattr", "safe_getattr", "hasattr", "safe_hasattr") and len(node.args) >= 2 and config(node.args[0]) \
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return node.args[1].value
    return None


@functools.lru_cache(maxsize=None)
def _module_reads(module_name):
    """{option: {place}} of one module's code: place is ``module.Class.function`` where it is read."""
    found = {}

    def walk(node, place, own):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                params = {a.arg for a in child.args.args[1:]} if getattr(child, "name", "") == "build_model" else set()
                walk(child, place + "." + child.name, params)
                continue
            name = _config_read(child, own)
            if name:
                found.setdefault(name, set()).add(place)
            walk(child, place, own)

    walk(ast.parse(inspect.getsource(sys.modules[module_name])), module_name, set())
    return found


@functools.lru_cache(maxsize=None)
def task_reads(task):
    """{option: {place}} of everything the code of ``--task task`` reads from its configuration (empty if unknown)."""
    from fairseq.tasks import TASK_REGISTRY
    cls, names = TASK_REGISTRY.get(task), []
    for klass in inspect.getmro(cls) if cls is not None else ():
        if klass.__module__.startswith(("fairseq.tasks", "fairseq_wean")) and klass.__module__ not in names:
            names.append(klass.__module__)
    if any("MultilingualDatasetManager" in inspect.getsource(sys.modules[n]) for n in names):
        from fairseq.data.multilingual import multilingual_data_manager
        names.append(multilingual_data_manager.__name__)
    found = {}
    for name in names:
        for dest, places in _module_reads(name).items():
            found.setdefault(dest, set()).update(places)
    return found


@functools.lru_cache(maxsize=None)
def _command_defaults(command, task):
    """fairseq-``command``'s options with ``--task task`` at their defaults (a Namespace)."""
    return argparse.Namespace(**{a.dest: a.default for a in _command_parser(command, task)._actions
                                 if a.dest != argparse.SUPPRESS})


def arch_acts(command, task, arch, args, dests=None):
    """What ``--arch arch`` (or, with ``dests``, those of its options as ``args`` holds them) changes in
    fairseq-``command`` with ``--task task``: the options of ``dests`` (default: "arch", the architecture itself)
    that the task's code reads (``task_reads``: sentence_ranking reads --max-positions) or whose value the
    architecture's configuration carries into an option the command reads (roberta's sets --max-source-positions
    from --max-positions); a configuration that fails on the command's defaults acts (nothing can be told)."""

    from fairseq.models import ARCH_CONFIG_REGISTRY
    brought = {a.dest for a in component_actions("arch", arch)}
    reads, own = task_reads(task), command_reads(command, task)
    if dests is None:
        configure = ARCH_CONFIG_REGISTRY.get(arch, lambda a: None)
        bare = _command_defaults(command, task)
        try:
            after = copy.deepcopy(bare)
            configure(after)
        except Exception:  # noqa: BLE001  (a configuration needing options the defaults lack: it may act)
            return {"arch"}
        brought |= set(vars(after)) - set(vars(bare))
        moved = any(getattr(after, d, None) != getattr(bare, d, None) for d in own)
        return {"arch"} if moved or "arch" in reads or (brought - own) & set(reads) else set()
    acting = {d for d in dests if d in reads}
    configure = ARCH_CONFIG_REGISTRY.get(arch)
    for dest in set(dests) - acting if configure is not None else ():
        try:
            plain = copy.deepcopy(_command_defaults(command, task))
            given = copy.deepcopy(plain)
            setattr(given, dest, getattr(args, dest, None))
            configure(plain), configure(given)
        except Exception:  # noqa: BLE001
            acting.add(dest)
            continue
        if any(getattr(plain, d, None) != getattr(given, d, None) for d in own):
            acting.add(dest)
    return acting


# ---- the subsets only fairseq-train (and, for --valid-subset, fairseq-validate) reads, given to an inference command:
# refused unless the task's code reads the option (task_reads) at a place that acts in that command. option ->
# (the commands that never read it themselves, why). INERT_READS: the places whose read changes nothing in an
# inference command, with why (a new place, or a new task reading the option, is taken).
SUBSET_OPTIONS = {
    "train_subset": (_INFERENCE, "fairseq-train alone trains on it (fairseq-{} loads {})"),
    "valid_subset": (("generate", "interactive", "eval_lm"), "fairseq-train and fairseq-validate alone validate on "
                     "it (fairseq-{} loads {})"),
    "combine_valid_subsets": (_INFERENCE, "fairseq-train alone combines valid, valid1, ...; this command loads each "
                              "subset it names on its own"),
    "ignore_unused_valid_subsets": (_INFERENCE, "fairseq-train alone looks for unused validation shards"),
}
_LOADS = {"generate": "--gen-subset", "eval_lm": "--gen-subset", "validate": "--valid-subset",
          "interactive": "standard input, no subset"}
INERT_READS = {
    ("train_subset", "fairseq.tasks.translation.TranslationTask.load_dataset"): (
        _INFERENCE, "it decides which shard of a later epoch to load: the inference commands load epoch 1"),
    ("train_subset", "fairseq_wean.tasks.translation_with_metrics.TranslationWithMetricsTask.load_dataset"): (
        ("generate", "interactive", "eval_lm"), "it skips validation's text check, which these commands never run"),
    ("valid_subset", "fairseq_wean.tasks.translation_with_metrics.TranslationWithMetricsTask._check_options"): (
        ("generate", "interactive", "eval_lm"), "only with --eval-refs/--eval-orig, which these commands refuse"),
    ("best_checkpoint_metric", "fairseq_wean.tasks.translation_with_metrics.TranslationWithMetricsTask._check_options"): (
        _INFERENCE, "it checks that validation logs the metric, and these commands write no checkpoint"),
}


def subset_reads(command, task, dest):
    """The places of ``--task task``'s code that read ``dest`` and act in fairseq-``command``: every place of
    ``task_reads`` but the :data:`INERT_READS` ones there, and a load_dataset in fairseq-interactive (it loads no
    subset)."""
    return sorted(place for place in task_reads(task).get(dest, ()) if command not in INERT_READS.get(
        (dest, place), ((), None))[0] and not (command == "interactive" and place.endswith(".load_dataset")))


def subset_option_problem(args, command=None):
    """An option of :data:`SUBSET_OPTIONS` written (away from fairseq's default) in an inference command whose task
    reads it nowhere that acts there: the one line, or None."""
    from fairseq.dataclass.configs import DatasetConfig
    command = command or running_command()
    written = {w.split("=", 1)[0] for w in sys.argv[1:] if isinstance(w, str) and w.startswith("--")}
    defaults = {f.name: f.default for f in dataclasses.fields(DatasetConfig)}
    for dest, (commands, why) in SUBSET_OPTIONS.items():
        flag = "--" + dest.replace("_", "-")
        if command not in commands or flag not in written or getattr(args, dest, None) in (defaults.get(dest), None):
            continue
        if not subset_reads(command, getattr(args, "task", None), dest):
            return "{} does nothing here: {}; no code of --task {} that it runs reads it".format(
                flag, why.format(command.replace("_", "-"), _LOADS[command]), getattr(args, "task", None))
    return None


add_option_check(subset_option_problem)


# ---- fairseq's option groups the inference parsers add (checkpoint, distributed, dataset): each field decided per
# command (tests/test_inference_groups.py), refused where neither the command's code nor its task's reads it.
_GI = ("generate", "interactive")
_SAVES = "fairseq-{} restores, writes and keeps no checkpoint (its model is --path's; a fairseq-train option)"
_WRAPS = "fairseq-{} never wraps the model for distributed training (DDP, FSDP, SlowMo: a fairseq-train option)"
INFERENCE_INERT = {
    **dict.fromkeys(("save_dir", "restore_file", "continue_once", "finetune_from_model", "reset_dataloader",
                     "reset_lr_scheduler", "reset_meters", "reset_optimizer", "optimizer_overrides", "save_interval",
                     "save_interval_updates", "keep_interval_updates", "keep_interval_updates_pattern",
                     "keep_last_epochs", "keep_best_checkpoints", "no_save", "no_epoch_checkpoints",
                     "no_last_checkpoints", "no_save_optimizer_state", "best_checkpoint_metric",
                     "maximize_best_checkpoint_metric", "patience", "load_checkpoint_on_all_dp_ranks",
                     "write_checkpoints_asynchronously"), (_GI, _SAVES)),
    **dict.fromkeys(("ddp_comm_hook", "bucket_cap_mb", "fix_batches_to_gpus", "find_unused_parameters",
                     "gradient_as_bucket_view", "fast_stat_sync", "heartbeat_timeout", "broadcast_buffers",
                     "slowmo_momentum", "slowmo_base_algorithm", "localsgd_frequency", "zero_sharding",
                     "no_reshard_after_forward", "fp32_reduce_scatter", "cpu_offload", "use_sharded_state",
                     "not_fsdp_flatten_parameters"), (_INFERENCE, _WRAPS)),
    **dict.fromkeys(("max_valid_steps", "validate_interval", "validate_interval_updates", "validate_after_updates",
                     "fixed_validation_seed", "disable_validation", "max_tokens_valid", "batch_size_valid", "curriculum",
                     "grouped_shuffling", "update_epoch_batch_itr", "update_ordered_indices_seed"),
                    (_INFERENCE, "only fairseq-train's epochs and validation read it (fairseq-{} reads each batch of "
                     "--max-tokens/--batch-size once, in order)")),
    **dict.fromkeys(("num_shards", "shard_id"), (_GI + ("validate",), "fairseq-{} splits its data by "
                                                 "--distributed-world-size and the process's rank, never by it")),
    "sacrebleu": (_GI, "fairseq-generate's score line is --scoring's (--scoring sacrebleu for sacrebleu's 13a "
                  "tokenization; fairseq-interactive scores nothing): --sacrebleu only silences fairseq's warning"),
    "eos_token": (_GI, "only speech tasks' data read it (fairseq-{} decodes until the dictionary's </s>)"),
}


def inference_group_problem(args, command=None):
    """An option of :data:`INFERENCE_INERT` written (any of its spellings, away from the command's default) in a
    command whose task reads it nowhere that acts there (:func:`subset_reads`): the one line, or None."""
    command, task = command or running_command(), getattr(args, "task", None)
    written = {w.split("=", 1)[0] for w in sys.argv[1:] if isinstance(w, str) and w.startswith("-")}
    for action in _command_parser(command, task)._actions if command in _COMMAND_PARSERS else ():
        commands, why = INFERENCE_INERT.get(action.dest, ((), None))
        if command in commands and written.intersection(action.option_strings) and getattr(
                args, action.dest, None) != action.default and not subset_reads(command, task, action.dest):
            return "{} does nothing here: {}".format(action.option_strings[0], why.format(command.replace("_", "-")))
    return None


add_option_check(inference_group_problem)


def validate_criterion_problem(args):
    """fairseq-validate builds --path's stored criterion, setting its fields by name (overwrite_args_by_name):
    --criterion naming another, or an option it has no field for, does nothing (old args checkpoints: taken)."""
    from fairseq_wean.checkpoint_container import INERT, stored_configuration
    from fairseq_wean.metric_check import _entry
    path = getattr(args, "path", None)
    if running_command() != "validate" or not isinstance(path, str) or not os.path.isfile(path):
        return None
    stored = _entry((stored_configuration(path) or {}).get("cfg"), "criterion")
    name = None if stored is None or isinstance(stored, INERT) else _entry(stored, "_name")
    written = {w.split("=", 1)[0] for w in sys.argv[1:] if isinstance(w, str) and w.startswith("-")}
    if not isinstance(name, str) or _component("criterion", getattr(args, "criterion", None)) is None:
        return None
    fixed = "fairseq-validate builds the checkpoint's criterion, {}, and sets only the fields it has".format(name)
    if "--criterion" in written and args.criterion != name:
        return "--criterion {} does nothing here: {}".format(args.criterion, fixed)
    for action in component_actions("criterion", args.criterion):
        if written.intersection(action.option_strings) and action.dest not in stored and action.dest not in \
                command_reads("validate", getattr(args, "task", None)):
            return "{} does nothing here: {}".format(action.option_strings[0], fixed)
    return None


add_option_check(validate_criterion_problem)
