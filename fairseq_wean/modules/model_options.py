"""Checks of the model options, run by every model's ``build_model`` before any module is built.

Sizes, depths and dropout (:func:`check_model_options`), option values outside their choices
(:func:`check_choice`), ``--share-decoder-input-output-embed`` with sizes that cannot be tied
(:func:`check_shared_output_embed`) and a model that needs a joined dictionary
(:func:`require_joined_dictionary`).

Without them a size of 0, a negative size or ``--dropout 1.5`` reaches torch, which answers
with a traceback from deep inside ``nn.LSTM`` or ``nn.Dropout`` (or, for ``--decoder-layers 0``,
only at the first training step). Each check raises a one-line ``FairseqWeanError`` that names
the option and the fix; fairseq-train, fairseq-generate and fairseq-interactive print it as
``fairseq-wean: error: ...`` and exit with status 1. On the command line the same lines come at parse
(:func:`plugin_model_option_problem`: ``fairseq-train: error: ...``, status 2).
"""
from fairseq_wean.errors import FairseqWeanError

# Declared by add_rnn_seq2seq_args (fairseq_wean.modules.rnn_encoder) for all three models.
SHARED_SIZE_OPTIONS = (
    "encoder_hidden_size",
    "encoder_layers",
    "decoder_hidden_size",
    "decoder_layers",
    "max_source_positions",
    "max_target_positions",
)


# Upper bounds of the models' numeric options, so that a mistyped size is one line at parse (and where a model is
# built from a checkpoint or a Python caller) instead of an allocator traceback (a 1,000,000-unit LSTM asked torch
# for 16 TB) or a table of |V| x 10^9 ids. The papers' sizes are 128-1024 units and 1-4 layers; each bound is far
# above any of them and below what one accelerator can hold. option -> (largest value, what it would cost).
MAX_UNITS = 16384  # one 16384-unit LSTM layer holds 4 x 16384 x 32768 = 2^31 weights: 8 GiB in float32
MAX_LAYERS = 64
MAX_POSITIONS = 1 << 20  # a sentence of a million tokens (fairseq's lstm: 1e5); past int64 numpy's filter overflows
MAX_TOPK = 1024  # the |V| x K id table core_copy keeps: 400 MB at 50,000 words (the paper's K: 10)
MAX_FREQUENT = 1 << 24  # |U| up to 16M words: above any dictionary (U is capped by |V| where it is built)
_UNITS = "units: one layer of 16384 already holds 2^31 weights (8 GiB); the papers use 128-1024"
MODEL_OPTION_MAXIMA = dict(
    {dest: (MAX_UNITS, _UNITS) for dest in ("encoder_hidden_size", "decoder_hidden_size", "embed_dim",
                                            "encoder_embed_dim", "decoder_embed_dim", "decoder_out_embed_dim")},
    encoder_layers=(MAX_LAYERS, "layers (the papers use 1-4)"),
    decoder_layers=(MAX_LAYERS, "layers (the papers use 1-4)"),
    max_source_positions=(MAX_POSITIONS, "tokens per sentence"),
    max_target_positions=(MAX_POSITIONS, "tokens per sentence"),
    core_topk=(MAX_TOPK, "aligned words per source word: core_copy keeps a |V| x K table of them (the paper: 10)"),
    core_num_frequent=(MAX_FREQUENT, "frequent words in U (the paper: 2000; U never exceeds the dictionary)"),
)


# The least value of the models' options, checked at parse with their maxima (--core-topk -1 or --encoder-layers 0
# were refused only in build_model, after the task had loaded both dictionaries): U may be empty
# (--core-num-frequent 0), A(X) may not; every size, depth and position count is at least 1 (size_problem's line,
# also where a model is built from saved arguments or by a Python caller: check_model_options).
SIZE_OPTIONS = tuple(dest for dest in MODEL_OPTION_MAXIMA if dest not in ("core_topk", "core_num_frequent"))
MODEL_OPTION_MINIMA = dict(dict.fromkeys(SIZE_OPTIONS, 1), core_topk=1, core_num_frequent=0)


def size_problem(dest, value):
    """The one line for a size, depth or position count ``value`` of option ``dest`` that is no whole number >= 1,
    or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return ("{} must be a positive whole number, got {!r}: every layer needs at least one unit and every model "
                "at least one encoder and one decoder layer".format(option_flag(dest), value))
    return None


def option_minimum_problem(args, dests=None):
    """The one line for the first option of :data:`MODEL_OPTION_MINIMA` (or of ``dests``) whose value in ``args``
    is below its least value, or None."""
    for dest in MODEL_OPTION_MINIMA if dests is None else dests:
        value = getattr(args, dest, None)
        if dest not in MODEL_OPTION_MINIMA or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if value < MODEL_OPTION_MINIMA[dest]:
            if dest in SIZE_OPTIONS:
                return size_problem(dest, value)
            return "{} {} is below {}, the least this model takes ({})".format(
                option_flag(dest), value, MODEL_OPTION_MINIMA[dest], MODEL_OPTION_MAXIMA[dest][1])
    return None


def option_maximum_problem(args, dests=None):
    """The one line for the first option of :data:`MODEL_OPTION_MAXIMA` (or of ``dests``) whose value in
    ``args`` is above its maximum, or None (values that are not numbers are left to the other checks)."""
    for dest in MODEL_OPTION_MAXIMA if dests is None else dests:
        value = getattr(args, dest, None)
        if dest not in MODEL_OPTION_MAXIMA or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        high, what = MODEL_OPTION_MAXIMA[dest]
        if value > high:
            return "{} {} is above {}, the most this model takes ({}): give a smaller value".format(
                option_flag(dest), value, high, what)
    return None


def dropout_problem(dropout):
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        return ("--dropout must be a probability in [0, 1), got {!r}: it is the fraction of units dropped "
                "(e.g. --dropout 0.2; 0 turns dropout off)".format(dropout))
    return None


def plugin_model_option_problem(args):
    """:func:`option_minimum_problem`, :func:`option_maximum_problem` and the dropout when fairseq parses a command
    that builds one of the plugin's models (``--arch``), registered with ``patching.add_option_check``: one line
    before any work (exit 2)."""
    arch = getattr(args, "arch", None)
    if not isinstance(arch, str):
        return None
    from fairseq.models import ARCH_MODEL_REGISTRY

    model = ARCH_MODEL_REGISTRY.get(arch)
    if model is None or not model.__module__.startswith("fairseq_wean."):
        return None
    return option_minimum_problem(args) or option_maximum_problem(args) or dropout_problem(getattr(args, "dropout",
                                                                                                     0.0))


def _register_option_checks():
    from fairseq_wean.patching import add_option_check

    add_option_check(plugin_model_option_problem)


_register_option_checks()


def option_flag(dest):
    """``"encoder_layers"`` -> ``"--encoder-layers"``: the flag as the user typed it."""
    return "--" + dest.replace("_", "-")


def check_choice(args, dest, choices):
    """Refuse a value of ``args.<dest>`` outside ``choices``.

    argparse already checks ``choices`` on the command line; this catches values that reach
    ``build_model`` another way (a checkpoint's saved arguments, a Python caller).
    """
    check_value(getattr(args, dest), choices, option_flag(dest))


def check_value(value, choices, name):
    """Refuse ``value`` outside ``choices``; ``name`` says what it is (an option's flag, or e.g.
    "score function" for a module's constructor argument)."""
    if value not in choices:
        raise FairseqWeanError(
            "unknown {} {!r}: choose one of {}".format(name, value, ", ".join(choices))
        )


def check_shared_output_embed(args, embed_dest):
    """``--share-decoder-input-output-embed`` uses the decoder's input embeddings (size
    ``args.<embed_dest>``) as the output projection: it needs ``--decoder-out-embed-dim`` equal
    to that size."""
    embed_dim = getattr(args, embed_dest)
    if args.share_decoder_input_output_embed and args.decoder_out_embed_dim != embed_dim:
        raise FairseqWeanError(
            "--share-decoder-input-output-embed needs --decoder-out-embed-dim ({}) equal to "
            "{} ({})".format(args.decoder_out_embed_dim, option_flag(embed_dest), embed_dim)
        )


def require_joined_dictionary(task, arch):
    """Encoder input, decoder input and output share one embedding matrix: one dictionary."""
    src, tgt = task.source_dictionary, task.target_dictionary
    if src is None or tgt is None or src.indices != tgt.indices:
        raise FairseqWeanError(
            "--arch {} shares one embedding matrix between source and target, but the source and "
            "target dictionaries differ: binarize the data with fairseq-preprocess "
            "--joined-dictionary".format(arch)
        )


def check_model_options(args, size_options=(), encoder_directions=1):
    """Refuse sizes, depths and dropout that cannot build a working model.

    ``size_options``: the model's own size options (``args`` attribute names, e.g.
    ``("embed_dim",)``), checked with the shared ones of ``SHARED_SIZE_OPTIONS``.
    ``encoder_directions``: 2 for a bidirectional encoder, whose states h_i have twice
    ``--encoder-hidden-size`` units; used to check ``--attention-score dot``, which needs
    query s_t and keys h_i of one size.
    """
    for dest in SHARED_SIZE_OPTIONS + tuple(size_options):
        problem = size_problem(dest, getattr(args, dest))
        if problem is not None:
            raise FairseqWeanError(problem)
    problem = option_maximum_problem(args, SHARED_SIZE_OPTIONS + tuple(size_options))
    if problem is not None:
        raise FairseqWeanError(problem)
    problem = dropout_problem(args.dropout)
    if problem is not None:
        raise FairseqWeanError(problem)
    if getattr(args, "attention_score", None) == "dot":
        keys = args.encoder_hidden_size * encoder_directions
        if args.decoder_hidden_size != keys:
            raise FairseqWeanError(
                "--attention-score dot needs the decoder state and the encoder states to have one size, "
                "but --decoder-hidden-size is {} and the encoder states have {} ({} x {} direction(s)): "
                "set --decoder-hidden-size {} or use --attention-score general".format(
                    args.decoder_hidden_size, keys, args.encoder_hidden_size, encoder_directions, keys
                )
            )


# fairseq lstm's embedding-size names, so that one command line sizes every model alike
EMBED_DIM_ALIASES = ("encoder_embed_dim", "decoder_embed_dim")


def add_shared_embed_dim_args(parser, help):
    """``--embed-dim`` of a model with one embedding table for both sides (WEAN, CoRe), and fairseq
    ``lstm``'s ``--encoder-embed-dim`` / ``--decoder-embed-dim`` as its aliases."""
    parser.add_argument("--embed-dim", type=int, metavar="N", help=help)
    for side in ("encoder", "decoder"):
        parser.add_argument("--{}-embed-dim".format(side), type=int, metavar="N",
                            help="the same as --embed-dim (fairseq lstm's name): this model has one embedding "
                                 "table for encoder and decoder, so the two sizes must agree")


def shared_embed_dim(args, default):
    """The embedding size of a shared-table model: --embed-dim or its aliases (which must agree),
    else ``default`` (an architecture's); for ``base_architecture`` and the presets."""
    given = {name: getattr(args, name) for name in ("embed_dim",) + EMBED_DIM_ALIASES
             if getattr(args, name, None) is not None}
    if len(set(given.values())) > 1:
        raise FairseqWeanError(
            "{}: this model has one embedding table for encoder and decoder (the paper's), so its embedding "
            "sizes must agree; give one size, e.g. --embed-dim {}".format(
                ", ".join("{} {}".format(option_flag(name), value) for name, value in given.items()),
                max(given.values())))
    return next(iter(given.values()), default)


def set_saved_arg(args, name, value):
    """Set a model argument that fairseq saves with the checkpoint, on an argparse namespace or
    on fairseq's (struct) OmegaConf config alike: e.g. that the checkpoint holds data the model
    read when first built for training (checkpoint_safety.BUILT_FROM_CHECKPOINT)."""
    import contextlib

    from omegaconf import OmegaConf, open_dict

    with open_dict(args) if OmegaConf.is_config(args) else contextlib.nullcontext():
        setattr(args, name, value)
