"""``--task translation_with_metrics``: fairseq's ``translation`` task that also scores SARI and ROUGE
on every validation, so that ``fairseq-train`` can keep the best checkpoint and stop early on them.

    fairseq-train DATA --user-dir fairseq_wean --task translation_with_metrics \\
        --eval-sari --eval-rouge --eval-bleu-args '{"beam": 5}' \\
        --best-checkpoint-metric sari --maximize-best-checkpoint-metric --patience 3 ...

A drop-in for ``--task translation`` (every option of it still applies, checkpoints load with either
task). ``--eval-sari`` logs ``sari`` and ``--eval-rouge`` logs ``rouge1``, ``rouge2`` and ``rougeL``
after each validation, beside fairseq's own ``--eval-bleu`` (``bleu``); all three can be on at once.
``--cpu-bf16`` trains in bfloat16 autocast on CPUs that have it (:meth:`TranslationWithMetricsTask.train_step`).
``--known-words FILE`` makes every decoding (fairseq-generate, fairseq-interactive, validation) spell
only words of FILE or of the sentence's source from sentencepiece pieces (:mod:`fairseq_wean.known_words`).

Decoding is fairseq's ``--eval-bleu`` machinery, and the options keep fairseq's names, because they
apply to every metric: ``--eval-bleu-args`` (generation arguments as JSON, e.g. the beam),
``--eval-bleu-remove-bpe``, ``--eval-bleu-detok`` / ``--eval-bleu-detok-args`` and
``--eval-bleu-print-samples``. Each validation batch is decoded once, whichever metrics are on.

Scores equal :mod:`fairseq_wean.scoring` (``fairseq-wean-score``) on the same strings:

* ``sari``: EASSE's corpus SARI (:mod:`fairseq_wean.scoring.sari`, ``--eval-sari-mode`` chooses
  ``default``, ``legacy`` or ``paper``). Corpus SARI is a function of 36 counts summed over the
  sentences (per n-gram order 1-4: correct / system / reference n-grams of ADD, KEEP and DELETE),
  so each batch logs its summed counts, fairseq adds them over batches and, in distributed
  training, over ranks (as it adds BLEU's n-gram counts), and the score is computed once from the
  totals: the same number as one process scoring the whole validation set.
* ``rouge1``/``rouge2``/``rougeL``: rouge-score F1 x 100 averaged over sentences (Porter stemming;
  ``--eval-rouge-chars`` for Chinese). Each batch logs the sum of its sentence scores and its
  number of sentences; the score is total / count.

References: fairseq's binarized validation set holds one target per source, so by default every
metric (BLEU too) uses that single reference. For multi-reference SARI and ROUGE (TurkCorpus has 8
references), give ``--eval-refs REF0,REF1,...``: plain text files whose line i is a reference of
validation sentence i (sentence i = line i of the text that ``fairseq-preprocess`` binarized into
the validation subset); and ``--eval-orig SRC`` to take SARI's original sentences from a text file
rather than from the binarized source. Both require a single ``--valid-subset``. These strings are
used as they are (no BPE removal, no detokenization): give the text ``fairseq-wean-score --refs``
and ``--orig`` would get.

``<unk>``: as fairseq does for ``--eval-bleu``, an unknown word in the hypothesis never matches
(it is written ``UNKNOWNTOKENINHYP``), and one in the binarized reference or source is written
``UNKNOWNTOKENINREF``: the source and the reference are the same data, so an unknown source word
the reference keeps is still a KEEP, but outputting ``<unk>`` earns nothing.

The logged values are not rounded (fairseq's BLEU is rounded to 2 decimals): checkpoint selection
and ``--patience`` compare full-precision scores; the log prints 6 significant digits.
"""
import json
import logging
from argparse import Namespace
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import encoders
from fairseq.dataclass import ChoiceEnum
from fairseq.logging import metrics
from fairseq.tasks import FairseqTask, register_task
from fairseq.tasks.translation import EVAL_BLEU_ORDER, TranslationConfig, TranslationTask
from omegaconf import II

from fairseq_wean import cpu
from fairseq_wean.errors import FairseqWeanError, value_range_problem
from fairseq_wean.known_words import KnownWordsBeamSearch, KnownWordsConstraint, read_known_words
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring.pieces import FAIRSEQ_RULES, apply as pieces_apply, check_no_pieces, check_post_process
from fairseq_wean.scoring.metrics import (ROUGE_TYPES, SEGMENT, check_line_lengths, check_rouge_unit,
                                         check_word_boundaries, rouge_sentence_scores)
from fairseq_wean.textio import read_lines

logger = logging.getLogger(__name__)

# fairseq's --eval-bleu spellings of <unk>: sacrebleu/13a would split "<unk>" into "< unk >"
HYP_UNK = "UNKNOWNTOKENINHYP"
DATA_UNK = "UNKNOWNTOKENINREF"

# One logging-output key per SARI sufficient statistic, in sari_lib's layout (statistic x order), so
# that fairseq's fast stat sync can sum each one across ranks.
SARI_KEYS = tuple(
    "_sari_{}_{}".format(name, order + 1) for name in sari_lib.STAT_NAMES for order in range(sari_lib.NGRAM_ORDER)
)
ROUGE_SUM_KEYS = {t: "_{}_sum".format(t) for t in ROUGE_TYPES}
SENTENCES_KEY = "_eval_sentences"
BLEU_KEYS = ["_bleu_sys_len", "_bleu_ref_len"] + [
    "_bleu_{}_{}".format(kind, i) for i in range(EVAL_BLEU_ORDER) for kind in ("counts", "totals")
]
# which flag logs which metric (for --best-checkpoint-metric)
METRIC_FLAGS = dict({"bleu": "eval_bleu", "sari": "eval_sari"}, **{t: "eval_rouge" for t in ROUGE_TYPES})
# the validation metrics a checkpoint can be selected by, by direction: fairseq's losses (and
# core_mode_loss's writing-mode loss) are better lower, this task's scores higher
LOWER_IS_BETTER = ("loss", "nll_loss", "ppl", "mode_loss")
HIGHER_IS_BETTER = tuple(METRIC_FLAGS)


@dataclass
class TranslationWithMetricsConfig(TranslationConfig):
    eval_sari: bool = field(
        default=False,
        metadata={"help": "decode the validation set and log SARI (EASSE's corpus SARI); decoding options "
                          "are --eval-bleu-args, --eval-bleu-remove-bpe, --eval-bleu-detok"},
    )
    eval_sari_mode: ChoiceEnum(sari_lib.MODES) = field(
        default="default",
        metadata={"help": "SARI variant, as fairseq-wean-score --sari-mode (default: EASSE's default; "
                          "legacy: the setting of published TurkCorpus numbers; paper: the paper's equations)"},
    )
    eval_rouge: bool = field(
        default=False,
        metadata={"help": "decode the validation set and log rouge1, rouge2, rougeL (rouge-score F1 x 100, "
                          "mean over sentences, Porter stemming)"},
    )
    eval_rouge_chars: bool = field(
        default=False, metadata={"help": "--eval-rouge on characters (Chinese, e.g. LCSTS)"}
    )
    eval_refs: Optional[str] = field(
        default=None,
        metadata={"path": True, "help": "comma-separated reference text files, line i = a reference of validation "
                          "sentence i, used instead of the binarized target by every --eval-* metric "
                          "(multi-reference SARI/ROUGE/BLEU); needs a single --valid-subset"},
    )
    eval_orig: Optional[str] = field(
        default=None,
        metadata={"path": True, "help": "source text file, line i = validation sentence i, used as SARI's original "
                          "sentences instead of the binarized source; needs a single --valid-subset"},
    )
    cpu_bf16: bool = field(
        default=False,
        metadata={"help": "CPU training: run the training forward passes under torch.autocast('cpu', bfloat16) "
                          "(parameters, optimizer, losses, validation and decoding stay float32); falls back to "
                          "float32 with a warning where the CPU has no native bfloat16 (avx512_bf16 or AMX)"},
    )
    known_words: Optional[str] = field(
        default=None,
        metadata={"path": True, "help": "decoding (fairseq-generate, fairseq-interactive, validation): a text file; beam search "
                          "writes only words that are whitespace tokens of it or of the sentence's source "
                          "(lowercased), spelled from sentencepiece pieces (fairseq_wean.known_words)"},
    )
    valid_subset: str = II("dataset.valid_subset")
    best_checkpoint_metric: str = II("checkpoint.best_checkpoint_metric")
    overwrite_best_checkpoint: bool = field(
        default=False,
        metadata={"help": "train from scratch in a --save-dir that holds checkpoint_best.pt but no checkpoint_last.pt "
                          "(refused otherwise: the first epochs of the new run would replace the best checkpoint)"},
    )


def check_generation_args(text):
    """``--eval-bleu-args``: a JSON object of fairseq generation options, checked before the first
    epoch (fairseq would fail in the first validation, after a whole epoch of training)."""
    from dataclasses import fields

    from fairseq.dataclass.configs import GenerationConfig

    def bad(what):
        return FairseqWeanError("--eval-bleu-args {}: {} (e.g. '{{\"beam\": 5, \"max_len_a\": 1.2, "
                                "\"max_len_b\": 10}}')".format(text, what))

    try:
        args = json.loads(text)
    except ValueError as exc:
        raise bad("not JSON ({})".format(exc)) from None
    except RecursionError:
        raise bad("not JSON this parser can read (nested too deeply)") from None
    if not isinstance(args, dict):
        raise bad("give a JSON object of generation options")
    known = {f.name for f in fields(GenerationConfig)} - {"_name"}
    unknown = sorted(set(args) - known)
    if unknown:
        raise bad("unknown generation option(s) {} (fairseq-generate's options, with _ for -)".format(
            ", ".join(unknown)))

    check_generation_arg_types(args, bad)
    from fairseq_wean.patching import GENERATION_RANGES

    from fairseq_wean.patching import GENERATION_ANY_VALUE

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


def check_generation_arg_types(args, bad):
    """Every key of --eval-bleu-args against its GenerationConfig field's type (fairseq turned
    "sampling": "yes" into a ValueError traceback and "constraints": "ordered" into a TypeError)."""
    from dataclasses import fields

    from fairseq.dataclass.configs import GenerationConfig

    for f in fields(GenerationConfig):
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


# Which commands read each option of the task (the enumeration of tests/test_option_ranges.py
# requires every field of TranslationWithMetricsConfig here): "train" only fairseq-train, "validate"
# fairseq-train and fairseq-validate (validation's metrics), "all" every command (data and decoding).
# Given to another command, an option would do nothing: a one-line error before any work.
TASK_OPTION_COMMANDS = dict(
    {name: "validate" for name in ("eval_sari", "eval_sari_mode", "eval_rouge", "eval_rouge_chars", "eval_refs",
                                   "eval_orig", "eval_bleu", "eval_bleu_args", "eval_bleu_detok",
                                   "eval_bleu_detok_args", "eval_tokenized_bleu", "eval_bleu_remove_bpe",
                                   "eval_bleu_print_samples")},
    cpu_bf16="train", overwrite_best_checkpoint="train",
    **{name: "all" for name in ("data", "source_lang", "target_lang", "load_alignments", "left_pad_source",
                                "left_pad_target", "max_source_positions", "max_target_positions",
                                "upsample_primary", "truncate_source", "num_batch_buckets", "train_subset",
                                "dataset_impl", "required_seq_len_multiple", "known_words", "valid_subset",
                                "best_checkpoint_metric")})
_COMMAND_READS = {"train": ("train",), "validate": ("train", "validate"), "all": ("train", "validate", "decode")}


def task_option_problem(args):
    """An option of this task given to a command that does not read it (fairseq-generate --eval-sari,
    --cpu-bf16, --overwrite-best-checkpoint, ...: accepted and ignored), or None. Registered with
    :func:`fairseq_wean.patching.add_option_check`: run after fairseq parses any command."""
    from dataclasses import MISSING, fields

    if getattr(args, "task", None) != "translation_with_metrics":
        return None
    command = "train" if hasattr(args, "max_update") else "decode" if hasattr(args, "beam") else "validate"
    for f in fields(TranslationWithMetricsConfig):
        scope = TASK_OPTION_COMMANDS.get(f.name, "all")
        if command in _COMMAND_READS[scope] or not hasattr(args, f.name):
            continue
        default = f.default if f.default is not MISSING else None
        if getattr(args, f.name) not in (default, None):
            flag = "--" + f.name.replace("_", "-")
            return "{} is read only by {} (--task translation_with_metrics{}): drop it here".format(
                flag, "fairseq-train" if scope == "train" else "fairseq-train and fairseq-validate",
                "'s validation metrics" if scope == "validate" else "'s training")
    return None


@register_task("translation_with_metrics", dataclass=TranslationWithMetricsConfig)
class TranslationWithMetricsTask(TranslationTask):
    """``translation`` plus SARI and ROUGE on every validation (see the module docstring)."""

    cfg: TranslationWithMetricsConfig

    def __init__(self, cfg: TranslationWithMetricsConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self._check_options()
        self.eval_refs = None  # [n_references][n_sentences] strings, from --eval-refs
        self.eval_orig = None  # [n_sentences] strings, from --eval-orig
        if cfg.eval_refs:
            paths = [p for p in cfg.eval_refs.split(",") if p]
            self.eval_refs = [read_lines(p, "--eval-refs file") for p in paths]
        if cfg.eval_orig:
            self.eval_orig = read_lines(cfg.eval_orig, "--eval-orig file")
        self.known_words = None
        if cfg.known_words:
            self.known_words = KnownWordsConstraint(tgt_dict, read_known_words(cfg.known_words))
        self.autocast_bf16 = bool(cfg.cpu_bf16) and cpu.native_bf16()
        if cfg.cpu_bf16 and not self.autocast_bf16:
            logger.warning("--cpu-bf16: this CPU has no native bfloat16 (avx512_bf16 or AMX); training in float32")
        elif self.autocast_bf16:
            logger.info("--cpu-bf16: training forward passes under torch.autocast('cpu', bfloat16)")

    @property
    def decodes_in_validation(self):
        return bool(self.cfg.eval_bleu or self.cfg.eval_sari or self.cfg.eval_rouge)

    def _check_options(self):
        """Mistakes that fairseq would only report after the first epoch (a KeyError), or never."""
        cfg = self.cfg
        metric = getattr(cfg, "best_checkpoint_metric", None)
        if isinstance(metric, str) and metric in METRIC_FLAGS and not getattr(cfg, METRIC_FLAGS[metric]):
            flag = "--" + METRIC_FLAGS[metric].replace("_", "-")
            raise FairseqWeanError(
                "--best-checkpoint-metric {} is logged only with {}: add {} (and "
                "--maximize-best-checkpoint-metric)".format(metric, flag, flag)
            )
        if (cfg.eval_refs or cfg.eval_orig) and not self.decodes_in_validation:
            raise FairseqWeanError(
                "--eval-refs/--eval-orig are only read by --eval-sari, --eval-rouge or --eval-bleu: add one of them"
            )
        if cfg.eval_orig and not (cfg.eval_sari or cfg.eval_bleu_print_samples):
            raise FairseqWeanError("--eval-orig is read only by --eval-sari (SARI's original sentences) and "
                                   "--eval-bleu-print-samples: add one of them, or drop it")
        subsets = getattr(cfg, "valid_subset", None)
        if (cfg.eval_refs or cfg.eval_orig) and isinstance(subsets, str) and "," in subsets:
            raise FairseqWeanError(
                "--eval-refs/--eval-orig hold the text of one validation subset, but --valid-subset is {}: "
                "validate on that one subset".format(subsets)
            )
        if cfg.eval_refs is not None and not [p for p in cfg.eval_refs.split(",") if p]:
            raise FairseqWeanError("--eval-refs is empty: give reference files separated by commas")
        try:  # read when the model is built, after the data: a JSON traceback then
            detok_args = json.loads(cfg.eval_bleu_detok_args or "{}")
        except ValueError as exc:
            raise FairseqWeanError("--eval-bleu-detok-args is not JSON ({}): give a JSON object of the "
                                   "--eval-bleu-detok tokenizer's options, e.g. '{{\"source_lang\": \"en\"}}'".format(exc))
        if not isinstance(detok_args, dict):
            raise FairseqWeanError("--eval-bleu-detok-args must be a JSON object ({{...}}), got {}".format(
                cfg.eval_bleu_detok_args))

    def check_training_options(self, checkpoint_cfg):
        """Mistakes fairseq-train would report after the first epoch, or never; called by the plugin's
        hook on fairseq-train's start (checkpoint_safety), before the first update, and not when a
        checkpoint is only loaded for decoding."""
        metric, maximize = checkpoint_cfg.best_checkpoint_metric, checkpoint_cfg.maximize_best_checkpoint_metric
        if metric not in LOWER_IS_BETTER + HIGHER_IS_BETTER:
            raise FairseqWeanError(
                "--best-checkpoint-metric {!r} is not a metric this task logs in validation (fairseq would fail "
                "with a KeyError after the first epoch, saving nothing): use one of {}".format(
                    metric, ", ".join(LOWER_IS_BETTER + HIGHER_IS_BETTER)))
        if bool(maximize) != (metric in HIGHER_IS_BETTER):
            raise FairseqWeanError(
                "--best-checkpoint-metric {} is better {}, so {}: fairseq would keep the worst "
                "checkpoint as checkpoint_best.pt".format(
                    metric, "higher" if metric in HIGHER_IS_BETTER else "lower",
                    "add --maximize-best-checkpoint-metric" if metric in HIGHER_IS_BETTER
                    else "drop --maximize-best-checkpoint-metric"))
        if metric in HIGHER_IS_BETTER and json.loads(self.cfg.eval_bleu_args or "{}").get("score_reference"):
            raise FairseqWeanError(  # with --best-checkpoint-metric loss it checks the scoring pipeline (tests do)
                "--eval-bleu-args score_reference scores the references themselves ({} 100 every epoch): selecting "
                "checkpoints on --best-checkpoint-metric {} would mean nothing; drop one of them".format(metric, metric))
        for flag, dest, needs, default in (("--eval-rouge-chars", "eval_rouge_chars", "eval_rouge", False),
                                           ("--eval-sari-mode", "eval_sari_mode", "eval_sari", "default"),
                                           ("--eval-tokenized-bleu", "eval_tokenized_bleu", "eval_bleu", False)):
            value = getattr(self.cfg, dest)
            if value != default and not getattr(self.cfg, needs):
                raise FairseqWeanError("{} changes only --{}, which is off: add --{} or drop {}".format(
                    flag, needs.replace("_", "-"), needs.replace("_", "-"), flag))
        # options of validation's decoding: nothing is decoded without a metric that decodes
        for flag, dest, default in (("--eval-bleu-args", "eval_bleu_args", "{}"),
                                    ("--eval-bleu-remove-bpe", "eval_bleu_remove_bpe", None),
                                    ("--eval-bleu-detok", "eval_bleu_detok", "space"),
                                    ("--eval-bleu-detok-args", "eval_bleu_detok_args", "{}"),
                                    ("--eval-bleu-print-samples", "eval_bleu_print_samples", False)):
            if getattr(self.cfg, dest, default) not in (default, None) and not self.decodes_in_validation:
                raise FairseqWeanError("{} sets how validation decodes, but no metric decodes (--eval-bleu, --eval-sari "
                                       "or --eval-rouge): add one or drop {}".format(flag, flag))

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch, combine, **kwargs)
        if split == self.cfg.train_subset or not self.decodes_in_validation:
            return
        n = len(self.datasets[split])
        files = list(zip(self.cfg.eval_refs.split(","), self.eval_refs)) if self.eval_refs else []
        if self.eval_orig is not None:
            files.append((self.cfg.eval_orig, self.eval_orig))
        for path, lines in files:
            if len(lines) != n:
                raise FairseqWeanError(
                    "{} has {} lines but the validation subset '{}' has {} sentences: give files line-aligned "
                    "with the text binarized into that subset".format(path, len(lines), split, n)
                )
        self._check_validation_text(split)

    def _check_validation_text(self, split):
        """Before any training: what validation will score is words (the hypotheses and references
        after --eval-bleu-remove-bpe, as fairseq-wean-score's rule: :mod:`fairseq_wean.scoring.pieces`),
        and --eval-rouge scores in a unit that fits the references' script (words on Latin text,
        --eval-rouge-chars on Chinese: :func:`~fairseq_wean.scoring.metrics.check_rouge_unit`)."""
        dataset, remove_bpe = self.datasets[split], self.cfg.eval_bleu_remove_bpe
        raw = [self.tgt_dict.string(dataset.tgt[i]) for i in range(len(dataset))] \
            if getattr(dataset, "tgt", None) is not None else None  # the rule fits the data (as the scorer's)
        check_post_process([("validation subset '{}'".format(split), raw, None)], remove_bpe, "--eval-bleu-remove-bpe",
                           FAIRSEQ_RULES)
        targets = pieces_apply(raw, remove_bpe)
        what = "validation subset '{}' (decoded with --eval-bleu-remove-bpe {})".format(split, remove_bpe) \
            if remove_bpe else "validation subset '{}' (the hypotheses are decoded alike)".format(split)
        named = [(what, targets, "add --eval-bleu-remove-bpe {kind} (fairseq's post-processing of validation "
                                 "hypotheses and references)" if not remove_bpe else None)]
        if self.eval_refs is not None:
            named += [("--eval-refs " + path, lines, "give the references as text (before BPE / sentencepiece)")
                      for path, lines in zip(self.cfg.eval_refs.split(","), self.eval_refs)]
        check_no_pieces(named, option="--eval-bleu-remove-bpe")
        refs = self.eval_refs or [targets or []]
        if self.cfg.eval_rouge:  # all the references here (one batch's could be all digits); ROUGE-L's lengths
            check_rouge_unit(refs, self.cfg.eval_rouge_chars, option="--eval-rouge-chars")
            check_line_lengths("rougeL", [], refs, chars=self.cfg.eval_rouge_chars)
        for metric in [m for m, on in (("BLEU", self.cfg.eval_bleu), ("SARI", self.cfg.eval_sari)) if on]:
            check_word_boundaries(metric, [r for stream in refs for r in stream], SEGMENT)  # unsegmented Chinese

    def build_model(self, cfg, from_checkpoint=False):
        # FairseqTask's, not TranslationTask's: this class builds the generator for every metric
        model = FairseqTask.build_model(self, cfg, from_checkpoint)
        if self.decodes_in_validation:
            detok_args = json.loads(self.cfg.eval_bleu_detok_args)
            self.tokenizer = encoders.build_tokenizer(Namespace(tokenizer=self.cfg.eval_bleu_detok, **detok_args))
            # checked here, not in check_training_options: fairseq-train builds the model (and its
            # generator, from these options) before its start hook runs
            check_generation_args(self.cfg.eval_bleu_args)
            gen_args = json.loads(self.cfg.eval_bleu_args)
            self.sequence_generator = self.build_generator([model], Namespace(**gen_args))
        return model

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None,
                        prefix_allowed_tokens_fn=None):
        """fairseq's generator; with ``--known-words``, its beam search spells only known words
        (:class:`fairseq_wean.known_words.KnownWordsBeamSearch`)."""
        if self.known_words is None or getattr(args, "score_reference", False):
            return super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs, prefix_allowed_tokens_fn)
        other = [flag for flag, on in [
            ("--sampling", getattr(args, "sampling", False)),
            ("--diverse-beam-groups", getattr(args, "diverse_beam_groups", -1) > 0),
            ("--match-source-len", getattr(args, "match_source_len", False)),
            ("--diversity-rate", getattr(args, "diversity_rate", -1) > -1),
            ("--constraints", getattr(args, "constraints", False)),
            ("--prefix-size", getattr(args, "prefix_size", 0) > 0),
            ("a prefix_allowed_tokens_fn", prefix_allowed_tokens_fn is not None),
        ] if on]
        if other:
            # fairseq would silently use the other search and drop the constraint
            raise FairseqWeanError("--known-words is a beam search of its own: it cannot be combined with "
                                   + ", ".join(other))
        generator = super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs)
        # (fairseq chooses the search from the generation options only: plain beam search here)
        generator.search = KnownWordsBeamSearch(self.target_dictionary, self.known_words)
        return generator

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        if self.known_words is not None:
            # each sentence may also write the words of its own source (names, rare words)
            src_tokens, pad = sample["net_input"]["src_tokens"], self.src_dict.pad()
            self.known_words.set_sources(sample["id"].tolist(), [
                self.src_dict.string(utils.strip_pad(src_tokens[i], pad), "sentencepiece")
                for i in range(src_tokens.size(0))])
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        """fairseq's training step; with ``--cpu-bf16`` its forward pass and loss run under
        ``torch.autocast("cpu", torch.bfloat16)``.

        Why: fairseq's own ``--bf16`` implies ``--tpu``, so fairseq has no bfloat16 on CPU, and
        on a CPU with native bfloat16 the matrix products of a training step are several times
        faster in it (docs/results/performance.md, "CPU bfloat16"). Autocast keeps the float32 parameters
        and runs only the ops on its lower-precision list (linear layers, matrix products, the
        RNN layers) in bfloat16; the models compute their (log-)softmaxes in float32. The
        backward pass runs outside the context, in the dtypes autocast chose forward, as torch
        recommends, and the optimizer steps on float32 parameters and gradients.
        """
        if not self.autocast_bf16:
            return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)
        model.train()
        model.set_num_updates(update_num)
        with torch.autograd.profiler.record_function("forward"):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss, sample_size, logging_output = criterion(model, sample)
        if ignore_grad:
            loss *= 0
        with torch.autograd.profiler.record_function("backward"):
            optimizer.backward(loss)
        return loss, sample_size, logging_output

    def valid_step(self, sample, model, criterion):
        loss, sample_size, logging_output = FairseqTask.valid_step(self, sample, model, criterion)
        if self.decodes_in_validation:
            origs, hyps, ref_streams = self.decode_validation_batch(self.sequence_generator, sample, model)
            logging_output.update(self.metric_statistics(origs, hyps, ref_streams))
        return loss, sample_size, logging_output

    def _to_string(self, dictionary, tokens, unk_string):
        s = dictionary.string(tokens.int().cpu(), self.cfg.eval_bleu_remove_bpe, unk_string=unk_string)
        return self.tokenizer.decode(s) if self.tokenizer else s

    def decode_validation_batch(self, generator, sample, model):
        """Decode a batch: (original sentences, hypotheses, reference streams), all strings.

        ``ref_streams`` has shape [n_references][batch size] (fairseq-wean-score's ``--refs`` layout).
        """
        gen_out = self.inference_step(generator, [model], sample, prefix_tokens=None)
        hyps = [self._to_string(self.tgt_dict, gen_out[i][0]["tokens"], HYP_UNK) for i in range(len(gen_out))]
        ids = sample["id"].tolist()
        if self.eval_refs is not None:
            ref_streams = [[stream[i] for i in ids] for stream in self.eval_refs]
        else:
            pad = self.tgt_dict.pad()
            ref_streams = [[self._to_string(self.tgt_dict, utils.strip_pad(sample["target"][i], pad), DATA_UNK)
                            for i in range(len(gen_out))]]
        if self.eval_orig is not None:
            origs = [self.eval_orig[i] for i in ids]
        else:
            src_tokens, pad = sample["net_input"]["src_tokens"], self.src_dict.pad()
            origs = [self._to_string(self.src_dict, utils.strip_pad(src_tokens[i], pad), DATA_UNK)
                     for i in range(len(gen_out))]
        if self.cfg.eval_bleu_print_samples and hyps:
            logger.info("example source: " + origs[0])
            logger.info("example hypothesis: " + hyps[0])
            logger.info("example reference: " + ref_streams[0][0])
        return origs, hyps, ref_streams

    def metric_statistics(self, origs, hyps, ref_streams):
        """Summable statistics of one batch, as logging-output entries (scalars only, for fast stat sync)."""
        out = {}
        if self.cfg.eval_bleu:
            import sacrebleu

            # as TranslationTask._inference_with_bleu, with every reference stream
            if self.cfg.eval_tokenized_bleu:
                bleu = sacrebleu.corpus_bleu(hyps, ref_streams, tokenize="none")
            else:
                bleu = sacrebleu.corpus_bleu(hyps, ref_streams)
            out["_bleu_sys_len"] = bleu.sys_len
            out["_bleu_ref_len"] = bleu.ref_len
            for i in range(EVAL_BLEU_ORDER):  # fairseq's keys
                out["_bleu_counts_" + str(i)] = bleu.counts[i]
                out["_bleu_totals_" + str(i)] = bleu.totals[i]
        out[SENTENCES_KEY] = len(hyps)
        if self.cfg.eval_sari:
            rows = sari_lib.corpus_stats(origs, hyps, ref_streams, mode=self.cfg.eval_sari_mode)
            out.update(zip(SARI_KEYS, sari_lib.sum_stats(rows)))
        if self.cfg.eval_rouge:
            per_sentence = rouge_sentence_scores(hyps, ref_streams, ROUGE_TYPES, chars=self.cfg.eval_rouge_chars,
                                                 unit_option=None)  # checked on all of them in load_dataset
            for t in ROUGE_TYPES:
                out[ROUGE_SUM_KEYS[t]] = float(per_sentence[t].sum())
        return out

    def reduce_metrics(self, logging_outputs, criterion):
        # FairseqTask's, not TranslationTask's: fairseq logs BLEU's counts as numpy arrays, and a
        # numpy array in a checkpoint's saved meters is refused by the plugin's weights-only
        # checkpoint loader; every statistic here is one scalar meter instead.
        FairseqTask.reduce_metrics(self, logging_outputs, criterion)
        if not any(SENTENCES_KEY in log for log in logging_outputs):
            return  # training steps, or validation without decoding

        def total(key):
            value = sum(log.get(key, 0) for log in logging_outputs)
            return value.item() if torch.is_tensor(value) else value  # tensors after a distributed sum

        # log_scalar with the default weight 1 adds up the batches' values in meter.sum
        keys = [SENTENCES_KEY]
        if self.cfg.eval_bleu:
            keys += BLEU_KEYS
            metrics.log_derived("bleu", _bleu_from_meters)
        if self.cfg.eval_sari:
            keys += SARI_KEYS
            mode = self.cfg.eval_sari_mode
            metrics.log_derived(
                "sari", lambda meters: sari_lib.sari_from_stats([meters[k].sum for k in SARI_KEYS], mode=mode)
            )
        if self.cfg.eval_rouge:
            for t in ROUGE_TYPES:
                keys.append(ROUGE_SUM_KEYS[t])
                metrics.log_derived(t, lambda meters, t=t: _mean(meters[ROUGE_SUM_KEYS[t]].sum,
                                                                 meters[SENTENCES_KEY].sum))
        for key in keys:
            metrics.log_scalar(key, total(key))


def _bleu_from_meters(meters):
    """fairseq's --eval-bleu score (TranslationTask.reduce_metrics): sacrebleu, exp smoothing, 2 decimals."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU.compute_bleu(
        correct=[meters["_bleu_counts_" + str(i)].sum for i in range(EVAL_BLEU_ORDER)],
        total=[meters["_bleu_totals_" + str(i)].sum for i in range(EVAL_BLEU_ORDER)],
        sys_len=int(meters["_bleu_sys_len"].sum),
        ref_len=int(meters["_bleu_ref_len"].sum),
        smooth_method="exp",
    )
    return round(bleu.score, 2)


def _mean(total, count):
    return float(total) / count if count > 0 else 0.0


def _register_option_checks():
    from fairseq_wean.patching import add_option_check

    add_option_check(task_option_problem)


_register_option_checks()
