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
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.known_words import KnownWordsBeamSearch, KnownWordsConstraint, read_known_words
from fairseq_wean.scoring import sari as sari_lib
from fairseq_wean.scoring.pieces import (FAIRSEQ_RULES, apply as pieces_apply, check_no_pieces, check_post_process,
                                        with_vocabulary)
from fairseq_wean.scoring.metrics import (ROUGE_TYPES, SEGMENT, check_input_size, check_line_lengths,
                                         check_rouge_unit, check_word_boundaries, rouge_sentence_scores)
from fairseq_wean.scoring.inputs import check_normalization
from fairseq_wean.textio import read_lines
from fairseq_wean.tasks.validation_options import (  # noqa: F401 (their home before; tests import them here)
    VALIDATION_REFUSED_GENERATION_ARGS, check_detok_args, check_generation_args)
from fairseq_wean.tasks.validation_files import check_eval_content, check_eval_files

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
            paths = cfg.eval_refs.split(",")
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
        subsets = getattr(cfg, "valid_subset", None)
        if (cfg.eval_refs or cfg.eval_orig) and isinstance(subsets, str) and "," in subsets:
            raise FairseqWeanError(
                "--eval-refs/--eval-orig hold the text of one validation subset, but --valid-subset is {}: "
                "validate on that one subset".format(subsets)
            )
        check_eval_files(cfg.eval_refs, cfg.eval_orig)  # the lists; their content in load_dataset
        if self.decodes_in_validation:  # read when the model is built, after the data (and ignored keys)
            check_detok_args(cfg.eval_bleu_detok, cfg.eval_bleu_detok_args)

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
        # options that act only under a condition (another metric, validation): validation_options.OPTION_CONDITIONS

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch, combine, **kwargs)
        if split == self.cfg.train_subset or not self.decodes_in_validation:
            return
        check_eval_content(self, split)  # line counts, then the text against the binarized subset
        self._check_validation_text(split)

    def _check_validation_text(self, split):
        """Before any training: what validation will score is words (the hypotheses and references
        after --eval-bleu-remove-bpe, as fairseq-wean-score's rule: :mod:`fairseq_wean.scoring.pieces`),
        and --eval-rouge scores in a unit that fits the references' script (words on Latin text,
        --eval-rouge-chars on Chinese: :func:`~fairseq_wean.scoring.metrics.check_rouge_unit`)."""
        dataset, remove_bpe = self.datasets[split], self.cfg.eval_bleu_remove_bpe
        raw = [self.tgt_dict.string(dataset.tgt[i]) for i in range(len(dataset))] \
            if getattr(dataset, "tgt", None) is not None else None  # the rule fits the data (as the scorer's)
        check_post_process([("validation subset '{}' (and its dictionary)".format(split),
                             with_vocabulary(raw, self.tgt_dict), None)], remove_bpe, "--eval-bleu-remove-bpe",
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
        if self.eval_refs is not None or self.eval_orig is not None:  # compared with what the model writes: one form
            check_normalization(
                [("the target dictionary (what the model writes)", self.tgt_dict.symbols[self.tgt_dict.nspecial:])]
                + [("--eval-refs " + path, lines) for path, lines in zip(self.cfg.eval_refs.split(","), self.eval_refs or [])]
                + ([("--eval-orig " + self.cfg.eval_orig, self.eval_orig)] if self.eval_orig is not None else []))
        refs = self.eval_refs or [targets or []]
        if self.cfg.eval_rouge:  # all the references here (one batch's could be all digits); ROUGE-L's lengths
            check_rouge_unit(refs, self.cfg.eval_rouge_chars, option="--eval-rouge-chars")
            check_line_lengths("rougeL", [], refs, chars=self.cfg.eval_rouge_chars)
        for metric in [m for m, on in (("BLEU", self.cfg.eval_bleu), ("SARI", self.cfg.eval_sari)) if on]:
            check_word_boundaries(metric, [r for stream in refs for r in stream], SEGMENT)  # unsegmented Chinese
        self._check_validation_work(split, refs)

    def validation_metrics(self):
        """The metrics each validation computes (scoring's names), by the --eval-* options that log them."""
        return [m for m, flag in METRIC_FLAGS.items() if getattr(self.cfg, flag)]

    def _check_validation_work(self, split, refs):
        """Each validation's metrics under the bound of one scoring call (:func:`~fairseq_wean.scoring.bounds.
        check_input_size`: each metric's work on the whole subset, all references, and their seconds together),
        before training: the references and sources are known here, the hypotheses not yet, so each is taken as
        long as the longest of its source and references (a model's output of that subset)."""
        dataset, names = self.datasets[split], self.validation_metrics()
        if not names or not len(dataset):
            return
        if self.eval_orig is not None:
            sources = self.eval_orig
        elif getattr(dataset, "src", None) is not None:
            sources = [self.src_dict.string(dataset.src[i], self.cfg.eval_bleu_remove_bpe) for i in range(len(dataset))]
        else:
            sources = None
        refs = [stream for stream in refs if len(stream) == len(dataset)]  # no binarized target: none
        sides = refs + ([sources] if sources is not None else [])
        if not sides:
            return
        stand_in = [max((side[i] for side in sides), key=len) for i in range(len(dataset))]
        try:
            check_input_size(names, stand_in, refs, sources, chars=self.cfg.eval_rouge_chars)
        except FairseqWeanError as e:
            options = " ".join("--" + flag.replace("_", "-") for flag in dict.fromkeys(
                METRIC_FLAGS[m] for m in names))
            raise FairseqWeanError(
                "validation of subset '{}' ({}{}; each output taken as long as its longest source or reference): {}; "
                "or validate on fewer sentences (--valid-subset) or with fewer --eval-* metrics".format(
                    split, options, " with --eval-refs" if self.eval_refs is not None else "", e)) from None

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
