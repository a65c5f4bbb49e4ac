"""The validation options of ``--task translation_with_metrics``, checked before any work.

* :func:`check_generation_args`: ``--eval-bleu-args`` (fairseq generation options as JSON) and
  :func:`check_detok_args`: ``--eval-bleu-detok-args`` (the ``--eval-bleu-detok`` tokenizer's
  options as JSON): each key must be a field of the config dataclass that declares those options
  (``GenerationConfig``; the tokenizer's registered config) and its value of that field's type, one
  mechanism (:func:`check_json_options`) for both. :func:`eval_bleu_option_problem` runs both when
  fairseq parses a command, for every task that has these options (fairseq's ``translation`` and its
  subclasses included), not only this plugin's.
* :data:`OPTION_CONDITIONS`: every option the task's dataclass declares -> the condition under
  which it does something in fairseq-train (``None``: always). :func:`inert_option_problem`
  refuses an option set away from its default whose condition does not hold (registered with
  :func:`fairseq_wean.patching.add_option_check`, so it runs when fairseq parses the command).
"""
import json
from dataclasses import MISSING, fields

from fairseq_wean.errors import FairseqWeanError, value_range_problem


def check_generation_args(text):
    """``--eval-bleu-args``: a JSON object of fairseq generation options, checked before the first
    epoch (fairseq would fail in the first validation, after a whole epoch of training)."""
    from fairseq.dataclass.configs import GenerationConfig

    args, bad = check_json_options(text, "--eval-bleu-args", GenerationConfig,
                                   '{"beam": 5, "max_len_a": 1.2, "max_len_b": 10}', kind="generation ",
                                   hint="fairseq-generate's options, with _ for -")
    from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES

    rows = dict(GENERATION_RANGES, **{name: (float("-inf"), float, None, False) for name in GENERATION_ANY_VALUE})
    for name, row in rows.items():  # one table with fairseq-generate's
        value = args.get(name)
        problem = None if value is None else value_range_problem(value, *row)
        if problem is not None:
            raise bad("{} {}, got {!r}".format(name, problem, value))
    if args.get("nbest", 1) > args.get("beam", 5):
        raise bad("nbest ({}) cannot exceed beam ({})".format(args.get("nbest"), args.get("beam", 5)))
    from fairseq_wean.patching import min_len_problem

    problem = min_len_problem(args.get("min_len", 1), args.get("max_len_a", 0), args.get("max_len_b", 200), prefix="")
    if problem is not None:
        raise bad(problem)
    check_generation_args_for_validation(args, bad)
    check_generation_args_combination(args, bad)


def check_generation_args_combination(args, bad):
    """The rules fairseq-generate's options have against each other (two searches, a value fairseq reads as
    "off", an option that does nothing in that combination: ``patching.search_option_problem`` and
    ``patching.OPTION_NEEDS``), on --eval-bleu-args' keys: one table with the command line and the hub."""
    import re
    from argparse import Namespace

    from fairseq.dataclass.configs import GenerationConfig

    from fairseq_wean.patching import OPTION_NEEDS, no_effect_problem, search_option_problem

    defaults = {f.name: f.default for f in fields(GenerationConfig) if f.default is not MISSING}
    merged = Namespace(**dict(defaults, **args))
    problem = search_option_problem(merged) or no_effect_problem(
        merged, {k for k in args if k in OPTION_NEEDS and args[k] != defaults.get(k)}, command="train")
    if problem is not None:  # the keys' own spelling
        raise bad(re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), problem))


# --eval-bleu-args keys that fairseq-generate takes but that make validation's scores meaningless or
# do nothing in validation: refused (when set to anything but fairseq's default), with the reason
VALIDATION_REFUSED_GENERATION_ARGS = {
    "constraints": "it needs constraints given with each input line (fairseq-interactive); validation has none",
    "prefix_size": "validation decodes without a prefix (fairseq passes none), so it would change nothing; a "
                   "prefix of the reference would also inflate the scores",
    "print_alignment": "validation prints no alignment; it would only swap in fairseq's aligning generator",
    "print_step": "validation prints nothing per step",
    "retain_iter_history": "validation keeps no iteration history",
    "replace_unk": "validation does not replace unknown words (an <unk> never matches a reference word)",
    "sacrebleu": "it is fairseq-generate's scoring switch; validation's BLEU is --eval-bleu",
    "lm_path": "validation decodes with the model alone (no language model is loaded)",
    "lm_weight": "validation decodes with the model alone (no language model is loaded)",
    "no_seed_provided": "it is fairseq's own bookkeeping of --seed",
    "decoding_format": "it formats iterative refinement output, which validation does not print",
}


def _generation_arg_type_problem(field, value):
    """Why ``value`` does not fit the GenerationConfig field's type (JSON: a bool for a bool, a whole
    number for an int, a number for a float, text for a str, one of the choices), or None."""
    import typing

    kind = field.type
    if typing.get_origin(kind) is typing.Union:  # Optional[X]: null is its default
        if value is None:
            return None
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    if kind is typing.Any:
        return None
    if kind is bool:
        return None if isinstance(value, bool) else "true or false"
    if kind is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else "a whole number"
    if kind is float:
        return None if value_range_problem(value, float("-inf"), float) is None else "a finite number"
    enum = isinstance(kind, type) and hasattr(kind, "__members__")
    choices = [getattr(c, "value", c) for c in kind] if enum else None
    if choices is not None:
        return None if value in choices else "one of " + ", ".join('"{}"'.format(c) for c in choices)
    if kind is str:
        return None if isinstance(value, str) else "text"
    return None


def check_generation_arg_types(args, bad, config=None):
    """Every key of --eval-bleu-args against its GenerationConfig field's type (fairseq turned
    "sampling": "yes" into a ValueError traceback and "constraints": "ordered" into a TypeError);
    ``config``: another dataclass (the --eval-bleu-detok tokenizer's)."""
    from fairseq.dataclass.configs import GenerationConfig

    for f in fields(config or GenerationConfig):
        if f.name not in args:
            continue
        value = args[f.name]
        wanted = _generation_arg_type_problem(f, value)
        if wanted is not None:
            raise bad("{} must be {} (JSON), got {}".format(f.name, wanted, json.dumps(value)))



def check_generation_args_for_validation(args, bad):
    """The keys that make validation meaningless or do nothing there, set to anything but fairseq's
    default (:data:`VALIDATION_REFUSED_GENERATION_ARGS`)."""
    from dataclasses import MISSING, fields

    from fairseq.dataclass.configs import GenerationConfig

    for f in fields(GenerationConfig):
        default = f.default if f.default is not MISSING else None
        if f.name in args and f.name in VALIDATION_REFUSED_GENERATION_ARGS and args[f.name] != default:
            raise bad("{} is refused in validation: {}".format(f.name, VALIDATION_REFUSED_GENERATION_ARGS[f.name]))



def check_json_options(text, option, config, example, kind="", hint=None):
    """``text`` (``option``'s value): a JSON object whose keys are fields of the dataclass ``config``,
    each of that field's type; returns the dict and the function making its one-line errors. Shared
    by --eval-bleu-args (``kind`` "generation ", ``hint`` on unknown keys) and --eval-bleu-detok-args."""
    def bad(what):
        return FairseqWeanError("{} {}: {} (e.g. '{}')".format(option, text, what, example))

    def once(pairs):  # a key given twice: json keeps the last silently
        keys = [k for k, _ in pairs]
        twice = [k for i, k in enumerate(keys) if k in keys[:i]]
        if twice:
            raise bad("{} is given twice (JSON keeps only the last): give each option once".format(twice[0]))
        return dict(pairs)

    try:
        args = json.loads(text, object_pairs_hook=once)
    except ValueError as exc:
        raise bad("not JSON ({})".format(exc)) from None
    except RecursionError:
        raise bad("not JSON this parser can read (nested too deeply)") from None
    if not isinstance(args, dict):
        raise bad("give a JSON object" + (" of {}options".format(kind) if kind else ""))
    known = {f.name for f in fields(config)} - {"_name"}
    unknown = sorted(set(args) - known)
    if unknown:
        raise bad("unknown {}option(s) {} ({})".format(kind, ", ".join(unknown),
                                                      hint or "known: " + (", ".join(sorted(known)) or "none")))
    check_generation_arg_types(args, bad, config)
    return args, bad


def check_detok_args(detok, text):
    """``--eval-bleu-detok-args``: the keys the ``--eval-bleu-detok`` tokenizer's config declares
    (fairseq ignored any other key; moses takes source_lang, target_lang, moses_no_dash_splits,
    moses_no_escape; space and nltk take none)."""
    from fairseq.data import encoders
    from fairseq.dataclass import FairseqDataclass

    if detok in (None, "none") or detok not in encoders.TOKENIZER_REGISTRY:
        return  # no tokenizer (fairseq's choices are checked by fairseq)
    config = getattr(encoders.TOKENIZER_REGISTRY[detok], "__dataclass", None) or FairseqDataclass
    check_json_options(text or "{}", "--eval-bleu-detok-args", config,
                       '{"source_lang": "en"}' if detok == "moses" else "{}")


# fairseq's validation-decoding options, each read as fairseq's TranslationTask reads it (json.loads, then
# generation options / the tokenizer's), by every task that declares them: fairseq's translation and its
# subclasses (translation_lev, ...), audio_finetuning, nlu_finetuning, online_backtranslation, this plugin's
# task. Option dest -> its check (text, parsed args).
EVAL_BLEU_CHECKS = {
    "eval_bleu_args": lambda text, args: check_generation_args(text),
    "eval_bleu_detok_args": lambda text, args: check_detok_args(getattr(args, "eval_bleu_detok", None), text),
}


def eval_bleu_option_problem(args):
    """--eval-bleu-args / --eval-bleu-detok-args of ANY task whose options include them (decided by the
    parsed options, not by the task's name): the one line, or None. Registered with
    :func:`fairseq_wean.patching.add_option_check`: checked when fairseq parses the command, before any
    work (fairseq's own task read them when the model was built, or in the first validation). Where the
    option does nothing (``patching.OPTION_NEEDS``: this plugin's task without a decoding metric), that line."""
    from fairseq_wean.patching import no_effect_problem

    for dest, check in EVAL_BLEU_CHECKS.items():
        text = getattr(args, dest, None)
        if isinstance(text, str):
            try:
                check(text, args)
            except FairseqWeanError as exc:
                return no_effect_problem(args, {dest}) or str(exc)
    return None


# --------------------------------------------------------------------------------------------------
# Every option of the task's dataclass -> when it does something in fairseq-train and fairseq-validate:
# None (always: data and training options; which command reads which option is
# translation_with_metrics.TASK_OPTION_COMMANDS) or (a predicate of the parsed args, what it needs).
# Each row is declared with patching.add_option_need (the plugin's one table of options that act only
# under a condition): given while its predicate is false, it is refused when fairseq parses the command.
# A new option must get a row (tests/test_task_options.py enumerates the dataclass).
def _validates(a):
    """fairseq-train validates unless --disable-validation; fairseq-validate always does."""
    return not (hasattr(a, "max_update") and getattr(a, "disable_validation", False))


def _decodes(a):
    return _validates(a) and bool(a.eval_bleu or a.eval_sari or a.eval_rouge)


_VALIDATION = (_validates, "it acts in validation, which --disable-validation turns off")
_DECODING = (_decodes, "it sets how validation decodes, but no metric decodes (add --eval-bleu, --eval-sari or "
                       "--eval-rouge, without --disable-validation)")
OPTION_CONDITIONS = dict(
    {name: None for name in ("data", "source_lang", "target_lang", "load_alignments", "left_pad_source",
                             "left_pad_target", "max_source_positions", "max_target_positions", "upsample_primary",
                             "truncate_source", "num_batch_buckets", "train_subset", "dataset_impl",
                             "required_seq_len_multiple", "known_words", "cpu_bf16", "overwrite_best_checkpoint")},
    eval_bleu=_VALIDATION, eval_sari=_VALIDATION, eval_rouge=_VALIDATION, valid_subset=_VALIDATION,
    best_checkpoint_metric=_VALIDATION,
    eval_bleu_args=_DECODING, eval_bleu_remove_bpe=_DECODING, eval_bleu_detok=_DECODING,
    eval_bleu_detok_args=_DECODING, eval_bleu_print_samples=_DECODING,
    eval_refs=(_decodes, "the references of --eval-bleu, --eval-sari or --eval-rouge (add one, without "
                         "--disable-validation)"),
    eval_tokenized_bleu=(lambda a: _validates(a) and a.eval_bleu, "it changes only --eval-bleu, which is off"),
    eval_sari_mode=(lambda a: _validates(a) and a.eval_sari, "it changes only --eval-sari, which is off"),
    eval_rouge_chars=(lambda a: _validates(a) and a.eval_rouge, "it changes only --eval-rouge, which is off"),
    eval_orig=(lambda a: _validates(a) and (a.eval_sari or (_decodes(a) and a.eval_bleu_print_samples)),
               "it is read only by --eval-sari (SARI's original sentences) and --eval-bleu-print-samples "
               "(add one, without --disable-validation)"),
)
# fairseq's options that act only through validation: with --disable-validation they do nothing either
FAIRSEQ_VALIDATION_OPTIONS = ("patience", "maximize_best_checkpoint_metric", "validate_interval",
                              "validate_interval_updates", "validate_after_updates", "best_checkpoint_metric")


def _ours(args):
    return getattr(args, "task", None) == "translation_with_metrics" and not hasattr(args, "beam")


def _register_option_conditions():
    from fairseq_wean.patching import add_option_check, add_option_need

    add_option_check(eval_bleu_option_problem)

    for name, row in OPTION_CONDITIONS.items():
        if row is not None and name not in FAIRSEQ_VALIDATION_OPTIONS:
            add_option_need(name, lambda a, holds=row[0]: not _ours(a) or bool(holds(a)), row[1])
    for name in FAIRSEQ_VALIDATION_OPTIONS:  # every task: fairseq-train only (validate ignores the flag)
        add_option_need(name, _validates, "it acts on validation, which --disable-validation turns off")
    from fairseq_wean.option_rules import also_needs

    for name in validation_only_task_options():
        also_needs(name, lambda a: running_command() not in NOT_VALIDATING, NO_VALIDATION)


# the commands that never validate: a task's validation options (eval_*: read by its valid_step, fairseq-train's
# and fairseq-validate's) do nothing there (fairseq-generate --eval-bleu: accepted, ignored)
NOT_VALIDATING = ("generate", "interactive", "eval_lm")
NO_VALIDATION = ("fairseq-generate, -interactive and -eval-lm do not validate (a task's --eval-* options act in "
                 "fairseq-train's and fairseq-validate's validation)")


def validation_only_task_options():
    """The validation options of every registered task: its dataclass's fields named eval_* (fairseq's
    translation --eval-bleu family, this plugin's, the audio tasks' --eval-wer, ...)."""
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    return sorted({f.name for config in TASK_DATACLASS_REGISTRY.values() for f in fields(config)
                   if f.name.startswith("eval_")})


def running_command():
    from fairseq_wean.patching import running_command as command

    return command()


_register_option_conditions()
