"""Python API: ``from_pretrained`` for the plugin's models, and the ``unk_markers`` BPE.

Loading a trained model (any of ``wean_lstm``, ``core_copy``, ``word_attn_gated``)::

    import fairseq_wean.hub
    hub = fairseq_wean.hub.from_pretrained("checkpoints", checkpoint_file="checkpoint_best.pt",
                                           data_name_or_path="data-bin")
    hub.translate(["the cat sat on the mat ."], beam=5)   # -> ["the cat sat ."]

It returns fairseq's ``GeneratorHubInterface`` (``translate``, ``sample``, ``generate``,
``encode``/``decode``), built as fairseq's ``hub_utils.from_pretrained`` builds it with the
plugin's ``--user-dir``. After ``import fairseq_wean`` the models' inherited classmethod works
too: ``fairseq_wean.models.wean_lstm.WeanLSTMModel.from_pretrained(dir, checkpoint_file=...,
data_name_or_path=...)``. Keyword arguments override the checkpoint's options
(``bpe="unk_markers"``, ``tokenizer="moses"``, ``beam``...), as in fairseq.

``--bpe unk_markers`` (this module registers it): raw text in, raw text out for ``core_copy``
trained on ``<unk-N>`` data (docs/models/core_copy.md, "Rare and unseen words"). ``encode`` writes each word
outside the marker dictionary as ``<unk-N>`` (N: its first source position), as
``preprocess/unk_markers.py encode`` does; ``decode`` puts source word N back for every
``<unk-N>`` of the hypothesis. The marker dictionary is ``--unk-markers-dict`` or, by default,
the model's source dictionary (the data directory's ``dict.<src>.txt``).

Why decode knows the source. fairseq calls ``bpe.decode(hypothesis)`` with the hypothesis only.
Rather than guessing which encoded sentence a hypothesis belongs to from the order of the calls
(which breaks with nbest > 1, ``--buffer-size``, sorted batches, repeated identical sources, or
two different sources with the same marked form), every hypothesis carries its own source words:
:mod:`fairseq_wean.unk_replacement` attaches them to ``hypo["alignment"]`` in
``FairseqTask.inference_step``, fairseq-interactive and fairseq-generate pass that object to
``utils.post_process_prediction`` and then call ``decode`` on the same hypothesis, and the hub's
``sample``/``translate`` (patched here) decode each hypothesis with its sentence's words. A
``decode`` with no known source (e.g. ``hub.decode(tokens)`` called directly, or fairseq-generate
decoding its ``S-``/``T-`` strings) leaves the markers as they are.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq.data.encoders import register_bpe
from fairseq.dataclass import FairseqDataclass

from fairseq_wean import hub_inputs, textio, tokenizer_files, unk_replacement
from fairseq_wean.data.folder_files import check_data_folder, folder_file_problem
from fairseq_wean.data.markers import decode_hypothesis, encode_pair, is_position_marker, marker_count
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import same_code, wrap_once

USER_DIR = os.path.dirname(os.path.abspath(__file__))
logger = logging.getLogger(__name__)


def from_pretrained(checkpoint_dir, checkpoint_file="checkpoint_best.pt", data_name_or_path=".", **kwargs):
    """fairseq's ``GeneratorHubInterface`` for a checkpoint of this plugin.

    checkpoint_dir: directory of the checkpoint; checkpoint_file: its file name (several joined
    by ``os.pathsep`` make an ensemble); data_name_or_path: the binarized data directory (its
    dictionaries), relative to checkpoint_dir when it starts with "."; kwargs: option overrides
    (e.g. ``bpe="unk_markers"``, ``beam=5``).

    A model whose source dictionary has ``<unk-N>`` markers (``core_copy`` trained on marked data)
    gets ``bpe="unk_markers"`` when neither ``bpe`` is given nor the checkpoint names one: raw
    text in, the source's rare words back in the output. ``bpe=None`` keeps the markers.
    """
    from fairseq import hub_utils

    check_pretrained_paths(checkpoint_dir, checkpoint_file, data_name_or_path)
    check_folder_files(checkpoint_dir, data_name_or_path, checkpoint_file)
    problem = generation_kwargs_problem(kwargs)
    if problem is not None:
        raise FairseqWeanError("from_pretrained: {}".format(problem))
    # the BPE/tokenizer given (its package, its files, built on a sentence) with the files fairseq's hub takes
    # from the folder, any BPE/tokenizer file given: before any work (a stored one: read_checked_cfg)
    tokenizer_files.tokenizer_files_problem(dict(kwargs, **folder_keyword_files(checkpoint_dir)), keywords=True,
                                            unset_ok=True)
    problem = tokenizer_files.path_keyword_problem(kwargs)
    if problem is not None:
        raise FairseqWeanError(problem)
    kwargs.setdefault("user_dir", USER_DIR)
    try:
        loaded = hub_utils.from_pretrained(checkpoint_dir, checkpoint_file=checkpoint_file,
                                           data_name_or_path=data_name_or_path, **kwargs)
    except Exception as exc:
        if "Could not infer language pair" not in str(exc):
            raise
        raise FairseqWeanError("{}: which dictionaries are the source's and the target's cannot be told from the "
                               "dict.*.txt files there: give source_lang= and target_lang= (e.g. "
                               "from_pretrained(..., source_lang='src', target_lang='tgt'))".format(
                                   data_name_or_path)) from None
    cfg = loaded["args"]
    symbols = loaded["task"].source_dictionary.symbols
    problem = unknown_keyword_problem(kwargs, pretrained_keywords(cfg), "from_pretrained")
    if problem is None and kwargs.get("bpe") == "unk_markers" and not any(is_position_marker(w) for w in symbols):
        problem = ("from_pretrained: bpe='unk_markers' does nothing for this model: its source dictionary has no "
                   "<unk-N> markers (drop bpe=, or give the model trained on marked data)")
    if problem is not None:
        raise FairseqWeanError(problem)
    if "bpe" not in kwargs and getattr(cfg.bpe, "_name", None) is None:
        from omegaconf import open_dict

        if any(is_position_marker(w) for w in symbols):
            with open_dict(cfg):
                cfg.bpe = UnkMarkersBPEConfig()
                cfg.bpe._name = "unk_markers"
        else:
            found = subword_model_beside(checkpoint_dir, loaded["task"].source_dictionary)
            if found is not None:  # the dictionary is pieces, and their model lies beside the checkpoint
                name, option, path = found
                with open_dict(cfg):
                    cfg.bpe = {"_name": name, option: path}
    # the BPE and tokenizer the hub builds now (stored, given, or found in the folder): files, packages, built
    tokenizer_files.tokenizer_files_problem(tokenizer_files.cfg_values(cfg), keywords=True, unset_ok=True)
    try:
        return hub_utils.GeneratorHubInterface(cfg, loaded["task"], loaded["models"])
    except Exception as exc:
        missing = forgotten_files(cfg)
        if not missing or isinstance(exc, FairseqWeanError):
            raise
        raise FairseqWeanError(
            "{}: the checkpoint's {} needs {}, and a path stored in a checkpoint is never opened: give {} to "
            "from_pretrained, or put the file beside the checkpoint ({})".format(
                checkpoint_dir, ", ".join("--{} {}".format(s, n) for s, n, _ in missing),
                ", ".join(f for _, _, f in missing), ", ".join("{}=PATH".format(f) for _, _, f in missing),
                type(exc).__name__)) from None


def forgotten_files(cfg):
    """[(section, component, option)] of the BPE and tokenizer options that name a file and are
    None in ``cfg``: what loading the checkpoint forgot (stored_paths.PATH_SECTIONS)."""
    import dataclasses

    from fairseq.registry import REGISTRIES

    from fairseq_wean.stored_paths import PATH_SECTIONS

    missing = []
    for section in PATH_SECTIONS:
        part = cfg.get(section) if hasattr(cfg, "get") else None
        name = getattr(part, "_name", None) if part is not None else None
        config = REGISTRIES[section]["dataclass_registry"].get(name) if name else None
        if config is None:
            continue
        for field in dataclasses.fields(config):
            if field.name != "_name" and "str" in str(field.type) and part.get(field.name) is None \
                    and field.default is not None:
                missing.append((section, name, field.name))
    return missing


# fairseq's hub_utils.from_pretrained reads these files of a model folder as the BPE's model
SUBWORD_MODEL_FILES = {"subword_nmt": (("bpecodes", "code"), "bpe_codes"),
                       "sentencepiece": (("sentencepiece.bpe.model",), "sentencepiece_model")}


def dictionary_pieces(dictionary):
    """``subword_nmt`` or ``sentencepiece`` when a dictionary's entries are pieces of that kind (the form
    ``fairseq_wean.input_form.dictionary_form`` gives it, the rule the hub's input check applies), else None."""
    from fairseq_wean.input_form import dictionary_form

    kind = dictionary_form(dictionary)[0]
    return kind if kind in SUBWORD_MODEL_FILES else None


def subword_model_beside(checkpoint_dir, dictionary):
    """(bpe name, its option, path) when the dictionary is pieces and the folder holds the file fairseq's
    hub reads for them (``bpecodes``/``code``; ``sentencepiece.bpe.model``); else None. A dictionary of
    pieces without that file: a warning naming the arguments (raw text would become ``<unk>``)."""
    kind = dictionary_pieces(dictionary)
    if kind is None:
        return None
    files, option = SUBWORD_MODEL_FILES[kind]
    for name in files:
        path = os.path.join(checkpoint_dir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            return kind, option, path
    logger.warning(
        "the model's dictionary is %s pieces, but neither the checkpoint nor %s names their model: raw text "
        "would be read as <unk>; pass bpe='%s', %s=PATH to from_pretrained, or put the file in the folder as %s",
        kind, checkpoint_dir, kind, option, files[0])
    return None


def hub_folder_files():
    """{file name: option} of the files fairseq's ``hub_utils.from_pretrained`` takes from a model's
    folder when they exist (``bpecodes``, ``code``, ``sentencepiece.bpe.model``, ``merges.txt``,
    ``vocab.json``), read from fairseq's own source so that a file it adds is checked too, with the
    plugin's own (:data:`SUBWORD_MODEL_FILES`)."""
    import ast
    import inspect

    from fairseq import hub_utils

    found = {}
    try:
        tree = ast.parse(inspect.getsource(inspect.unwrap(hub_utils.from_pretrained)).lstrip())
    except (OSError, TypeError, SyntaxError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute) \
                and isinstance(node.iter.func.value, ast.Dict):
            table = node.iter.func.value
            found.update({k.value: v.value for k, v in zip(table.keys, table.values)
                          if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)})
    if not found:  # fairseq's source not at hand: its 0.12 list
        found = {"code": "bpe_codes", "bpecodes": "bpe_codes", "sentencepiece.bpe.model": "sentencepiece_model",
                 "merges.txt": "bpe_merges", "vocab.json": "bpe_vocab"}
    for kind, (names, option) in SUBWORD_MODEL_FILES.items():
        found.update({name: option for name in names})
    return found


def folder_keyword_files(checkpoint_dir):
    """{option: path} of the files fairseq's ``hub_utils.from_pretrained`` puts in its keyword arguments from a
    model folder (:func:`hub_folder_files`, in fairseq's order: a later one of an option wins)."""
    found = {}
    for name, option in hub_folder_files().items():
        path = os.path.join(checkpoint_dir, name)
        if os.path.exists(path):
            found[option] = path
    return found


# hub loads under way in this process (fairseq's hub_utils.from_pretrained, any route): while one is, the
# configuration of each checkpoint read is checked before its model is built (_wrapped_load_checkpoint_to_cpu)
_HUB_LOADING = [0]


def _wrapped_load_checkpoint_to_cpu(original):
    def load_checkpoint_to_cpu(path, arg_overrides=None, *args, **kwargs):
        """fairseq's; in a hub load, the BPE and tokenizer of the configuration read (the checkpoint's, with the
        keyword arguments and the folder's files over it) are checked as the keywords are
        (:func:`fairseq_wean.tokenizer_files.tokenizer_files_problem`: an unknown stored name, its package,
        its files, built on a sentence) before the model is built. Only files the caller gives are read: a
        path stored in the checkpoint is never opened."""
        state = original(path, arg_overrides, *args, **kwargs)
        cfg = state.get("cfg") if isinstance(state, dict) else None
        if _HUB_LOADING[0] and cfg is not None:
            given = dict(arg_overrides or {})
            values = tokenizer_files.cfg_values(cfg, given)
            stored = [s for s in tokenizer_files.SECTIONS if values.get(s) is not None and given.get(s) != values[s]]
            tokenizer_files.tokenizer_files_problem(values, keywords=True, unset_ok=True, stored=stored)
        return state

    return load_checkpoint_to_cpu


def check_folder_files(checkpoint_dir, data_name_or_path=None, checkpoint_file=None):
    """One line (FairseqWeanError), before anything is opened, for any file fairseq's hub would take by
    name from ``checkpoint_dir`` (:func:`hub_folder_files`; the checkpoints ``checkpoint_file`` names, several
    joined by ``os.pathsep``, given as bare file names: a name with a directory in it is the user's path) or
    from the data folder ``data_name_or_path`` (relative to ``checkpoint_dir`` when it starts with ".", as
    fairseq takes it; its dictionaries and data files: :func:`fairseq_wean.data.folder_files.check_data_folder`)
    that is not a regular file of its folder (:func:`fairseq_wean.data.folder_files.folder_file_problem`, the
    rule of every such file: a hard link, a link out of the folder...)."""
    for name in checkpoint_file.split(os.pathsep) if isinstance(checkpoint_file, str) else ():
        if name and os.path.basename(name) == name:
            path = os.path.join(checkpoint_dir, name)
            problem = folder_file_problem(path, checkpoint_dir)
            if problem is not None:
                raise FairseqWeanError(
                    "from_pretrained: checkpoint {} {}: refused (a checkpoint the hub finds in its folder is read "
                    "only as a file of that folder); nothing was loaded: put the file itself there, or give its "
                    "full path as checkpoint_file=".format(path, problem))
    for name, option in sorted(hub_folder_files().items()):
        path = os.path.join(checkpoint_dir, name)
        problem = folder_file_problem(path, checkpoint_dir)
        if problem is not None:
            raise FairseqWeanError(
                "from_pretrained: {} {}: refused (fairseq's hub reads it as the BPE's {}); put a regular file "
                "there, or move it away and give {}=PATH".format(path, problem, option, option))
    if isinstance(data_name_or_path, str):
        data = os.path.join(checkpoint_dir, data_name_or_path) if data_name_or_path.startswith(".") \
            else data_name_or_path
        check_data_folder(data)


# what fairseq's hub_utils.from_pretrained itself reads from its keyword arguments (the others override the
# checkpoint's configuration, any section, where a key of that name exists: an unknown one was ignored)
HUB_LOADING_KEYWORDS = {"user_dir", "data", "bpe", "tokenizer", "source_lang", "target_lang", "archive_map",
                        "generation_args", "bpe_codes", "sentencepiece_model", "bpe_merges", "bpe_vocab",
                        "checkpoint_file", "data_name_or_path", "is_vocoder"}
# what fairseq's GeneratorHubInterface.generate reads besides its generation configuration's fields
HUB_GENERATE_KEYWORDS = {"beam", "verbose", "skip_invalid_size_inputs", "inference_step_args",
                         "prefix_allowed_tokens_fn"}


def pretrained_keywords(cfg):
    """The keywords from_pretrained acts on for the checkpoint configuration ``cfg``: every key of its sections."""
    import argparse

    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_DATACLASS_REGISTRY, MODEL_REGISTRY

    known = set(HUB_LOADING_KEYWORDS)
    model = cfg.get("model") if hasattr(cfg, "get") else None
    arch = getattr(model, "arch", None) or getattr(model, "_name", None)
    cls = ARCH_MODEL_REGISTRY.get(arch) or MODEL_REGISTRY.get(arch)
    if cls is not None:  # the model's own options (a legacy model's section holds every override given, known or not)
        parser = argparse.ArgumentParser()
        cls.add_args(parser)
        known.update(a.dest for a in parser._actions)
        config = MODEL_DATACLASS_REGISTRY.get(getattr(model, "_name", None) or arch)
        known.update(config.__dataclass_fields__ if config is not None else ())
    for name in cfg.keys() if hasattr(cfg, "keys") else ():
        section = cfg.get(name)
        if name == "model" and cls is not None:
            continue
        keys = section.keys() if hasattr(section, "keys") else vars(section) if hasattr(section, "__dict__") else ()
        known.update(str(k) for k in keys)
    return known


def generate_keywords():
    """The keywords the hub's translate/sample/generate act on: fairseq's generation fields and its own."""
    import dataclasses

    from fairseq.dataclass.configs import GenerationConfig

    return {f.name for f in dataclasses.fields(GenerationConfig)} | HUB_GENERATE_KEYWORDS


def generation_default(name):
    """fairseq's default of the generation option ``name`` (None when it has none)."""
    import dataclasses

    from fairseq.dataclass.configs import GenerationConfig

    found = [f.default for f in dataclasses.fields(GenerationConfig) if f.name == name]
    return found[0] if found and found[0] is not dataclasses.MISSING else None


def unknown_keyword_problem(kwargs, known, where):
    """The one line for a keyword argument of ``where`` that it does not act on (a misspelling, a command-line
    option the hub has no use for: fairseq ignored it silently), with the close names; or None."""
    import difflib

    unknown = sorted(k for k in kwargs if k not in known)
    if not unknown:
        return None
    close = difflib.get_close_matches(unknown[0], sorted(known), n=3)
    return "{}keyword {}={!r} does nothing there (not an option it reads){}".format(
        where + ": " if where else "", unknown[0], kwargs[unknown[0]],
        ": did you mean {}?".format(", ".join(close)) if close else "")


def generation_kwargs_problem(kwargs, base=None):
    """What is wrong with the decoding keyword arguments of the hub (``translate``, ``sample``,
    ``generate``, ``from_pretrained``), or None: the ranges the command line has
    (``patching.GENERATION_RANGES``, ``GENERATION_ANY_VALUE``) and ``patching.decoding_option_problem``
    on the options they give with ``base`` (the hub's generation configuration)."""
    import argparse

    from fairseq_wean.errors import value_range_problem
    from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES, SHARDING_RANGES, \
        decoding_option_problem

    ranges = dict(GENERATION_RANGES, **SHARDING_RANGES)
    for key in sorted(kwargs):
        value = kwargs[key]
        if value is None or key not in ranges and key not in GENERATION_ANY_VALUE:
            continue  # None: unset (fairseq's default)
        problem = value_range_problem(value, *ranges.get(key, (float("-inf"), float, None, False)))
        if problem is not None:
            return "{}={!r}: {}".format(key, value, problem)
    merged = argparse.Namespace()
    from fairseq_wean.patching import OPTION_NEEDS, no_effect_problem

    for key in ("beam", "nbest", "sampling", "num_shards", "shard_id", "diverse_beam_groups", "diversity_rate",
                "lm_path", "retain_dropout") + tuple(OPTION_NEEDS):
        value = kwargs.get(key, getattr(base, key, None) if base is not None else None)
        setattr(merged, key, value)
    problem = decoding_option_problem(merged) or no_effect_problem(
        merged, {k for k in kwargs if k in OPTION_NEEDS and kwargs[k] not in (None, generation_default(k))},
        command="hub")
    import re

    return None if problem is None else re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), problem)


def check_pretrained_paths(checkpoint_dir, checkpoint_file, data_name_or_path):
    """One-line errors, before fairseq's unrelated ones, for a missing folder, checkpoint file or
    dictionary (fairseq's ``dict.*.txt`` in the data folder)."""
    import glob

    if not os.path.isdir(checkpoint_dir):
        raise FairseqWeanError("from_pretrained: {} is not a folder: give the folder that holds the checkpoint "
                               "(e.g. the --save-dir of fairseq-train)".format(checkpoint_dir))
    from fairseq_wean.checkpoint_safety import checkpoint_file_problem

    for name in checkpoint_file.split(os.pathsep):
        problem = checkpoint_file_problem(os.path.join(checkpoint_dir, name))
        if problem is not None and problem != "no such file":  # a folder, a named pipe: never opened
            raise FairseqWeanError("from_pretrained: checkpoint {}: {}; nothing was loaded".format(
                os.path.join(checkpoint_dir, name), problem))
        if problem is not None:
            found = sorted(os.path.basename(p) for p in glob.glob(os.path.join(checkpoint_dir, "*.pt")))
            raise FairseqWeanError("from_pretrained: no checkpoint {} in {} (it holds: {})".format(
                name, checkpoint_dir, ", ".join(found) or "no .pt file"))
    data = os.path.join(checkpoint_dir, data_name_or_path) if data_name_or_path.startswith(".") else data_name_or_path
    if not glob.glob(os.path.join(glob.escape(data), "dict.*.txt")) and not os.path.lexists(os.path.join(data,
                                                                                                  "dict.txt")):
        raise FairseqWeanError("from_pretrained: no dictionary (dict.SRC.txt and dict.TGT.txt, or a language model's "
                               "dict.txt) in {}: give data_name_or_path, the binarized data folder of "
                               "fairseq-preprocess, or copy those files beside the checkpoint".format(data))


@dataclass
class UnkMarkersBPEConfig(FairseqDataclass):
    unk_markers_dict: Optional[str] = field(
        default=None,
        metadata={"path": True, "help": "fairseq dictionary whose words stay words (others become <unk-N>, up to its "
                          "number of markers); default: the model's source dictionary"})


@register_bpe("unk_markers", dataclass=UnkMarkersBPEConfig)
class UnkMarkersBPE(object):
    """Words outside the dictionary <-> ``<unk-N>`` (see the module docstring)."""

    def __init__(self, cfg):
        self.vocabulary = None
        self.max_markers = None
        if cfg.unk_markers_dict:
            from fairseq.data import Dictionary

            from fairseq_wean.textio import check_input

            check_input(cfg.unk_markers_dict, "--unk-markers-dict")
            self.set_dictionary(Dictionary.load(cfg.unk_markers_dict))
        unk_replacement.mark_active()

    def set_dictionary(self, dictionary):
        """Use the words and the markers of ``dictionary`` (a fairseq Dictionary)."""
        self.vocabulary = {w for w in dictionary.symbols if not is_position_marker(w)}
        self.max_markers = marker_count(dictionary.symbols)

    def encode(self, x: str) -> str:
        if self.vocabulary is None:
            raise RuntimeError("unk_markers BPE used before its dictionary was set")
        unk_replacement.record_bpe_input(x)
        marked, _ = encode_pair(x.split(), None, self.vocabulary, self.max_markers)
        return " ".join(marked)

    def decode(self, x: str, source=None) -> str:
        """``x`` with every ``<unk-N>`` replaced by word N of ``source`` (list of words; default:
        the source of the hypothesis fairseq post-processed last); a marker past the end of its
        own source (sampled, or generated by a model whose vocabulary has markers) is ``<unk>``."""
        if source is None:
            source = unk_replacement.take_current_source()
        if source is None:
            return x
        return " ".join(decode_hypothesis(source, x.split(), past_end="unk"))

    def is_beginning_of_word(self, x: str) -> bool:
        return True


def _wrapped_hub_utils_from_pretrained(original):
    import functools

    @functools.wraps(original)
    def from_pretrained(model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", *args, **kwargs):
        """fairseq's, after :func:`check_folder_files` on a local model folder and its data folder: every
        route to it (``fairseq_wean.hub.from_pretrained``, a model class's ``from_pretrained``) is checked. A text
        argument holding '${' (fairseq hands them to OmegaConf: an interpolation, a TypeError traceback) is one
        line first."""
        from fairseq_wean.stored_paths import INTERPOLATION

        named = dict(kwargs, model_name_or_path=model_name_or_path, checkpoint_file=checkpoint_file,
                     data_name_or_path=data_name_or_path)
        for key, value in sorted(named.items()):
            if isinstance(value, (str, os.PathLike)) and INTERPOLATION in os.fspath(value):
                raise FairseqWeanError("from_pretrained: {}={!r} holds '${{': fairseq reads it through OmegaConf, "
                                       "which takes '${{' for an interpolation: rename the folder or file".format(
                                           key, os.fspath(value)))
        if isinstance(model_name_or_path, str) and os.path.isdir(model_name_or_path):
            check_folder_files(model_name_or_path, data_name_or_path, checkpoint_file)
        _HUB_LOADING[0] += 1
        try:
            return original(model_name_or_path, checkpoint_file, data_name_or_path, *args, **kwargs)
        finally:
            _HUB_LOADING[0] -= 1

    return from_pretrained


def _wrapped_load_archive_file(original):
    def load_archive_file(archive_file):
        """fairseq's for a local folder only (A01): anything else (an archive file, a URL, a name of a
        hub's archive_map) fairseq would download and extract with tarfile.extractall (members named
        ``../x``, links: files written outside, the archive replaced by a folder) is refused before."""
        if isinstance(archive_file, str) and os.path.isdir(archive_file):
            return original(archive_file)
        raise FairseqWeanError(
            "from_pretrained: {} is not a folder: fairseq-wean never lets fairseq download or extract a model "
            "archive (its extraction can write outside the folder); extract it yourself, check it, and give "
            "the folder".format(archive_file))

    return load_archive_file


def _wrapped_hub_generate(original):
    def generate(self, tokenized_sentences, *args, **kwargs):
        """fairseq's, after the checks of :func:`generation_kwargs_problem`: ``beam=0`` was a reshape
        traceback, ``lenpen=nan`` or ``max_len_a=-3`` decoded with no error."""
        given = dict(kwargs)  # (nbest, prefix_size, print_alignment and the input: hub_inputs, around it)
        given["beam"] = args[0] if args else kwargs.get("beam", 5)
        problem = unknown_keyword_problem(kwargs, generate_keywords(), None) \
            or generation_kwargs_problem(given, getattr(self.cfg, "generation", None))
        if problem is not None:
            raise FairseqWeanError("hub generation: {}".format(problem))
        return original(self, tokenized_sentences, *args, **kwargs)

    return generate


def _wrapped_hub_translate(original):
    def translate(self, sentences, beam=None, verbose=False, **kwargs):
        """fairseq's, whose own ``beam=5`` replaced the beam given to from_pretrained (``beam=...``,
        kept in ``cfg.generation``): without ``beam`` here, that one."""
        if beam is None:
            beam = getattr(getattr(self.cfg, "generation", None), "beam", None) or 5
        return original(self, sentences, beam, verbose, **kwargs)

    return translate


def _wrapped_hub_init(original):
    def __init__(self, cfg, task, models):
        generation = cfg.get("generation") if hasattr(cfg, "get") else None
        if generation is not None:  # what from_pretrained's keyword arguments set (beam=0, ...), any route
            from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES

            given = {k: generation.get(k) for k in list(GENERATION_RANGES) + list(GENERATION_ANY_VALUE)
                     if k in generation and generation.get(k) is not None and k not in ("batch_size", "max_tokens")}
            # (k in generation: fairseq 0.12.2's struct config has no *_mt fields, and its omegaconf raises on get)
            prefix = {"prefix_size": generation.get("prefix_size")} if "prefix_size" in generation else {}
            problem = generation_kwargs_problem(given, generation) or hub_inputs.keyword_problem("from_pretrained",
                                                                                                 prefix)
            if problem is not None:
                raise FairseqWeanError("from_pretrained: {}".format(problem))
        original(self, cfg, task, models)
        if isinstance(self.bpe, UnkMarkersBPE) and self.bpe.vocabulary is None:
            self.bpe.set_dictionary(self.src_dict)

    return __init__


def _wrapped_hub_sample(original):
    def sample(self, sentences, beam=1, verbose=False, **kwargs):
        if not isinstance(self.bpe, UnkMarkersBPE):
            return original(self, sentences, beam, verbose, **kwargs)
        if isinstance(sentences, str):
            return sample(self, [sentences], beam=beam, verbose=verbose, **kwargs)[0]
        tokenized = [self.tokenize(sentence) for sentence in sentences]
        batched_hypos = self.generate([self.binarize(self.apply_bpe(t)) for t in tokenized], beam, verbose,
                                      **kwargs)
        return [self.detokenize(self.bpe.decode(self.string(hypos[0]["tokens"]), source=t.split()))
                for t, hypos in zip(tokenized, batched_hypos)]

    return sample


def _wrapped_build_bpe(original):
    def build_bpe(self, args):
        bpe = original(self, args)
        if isinstance(bpe, UnkMarkersBPE) and bpe.vocabulary is None:
            bpe.set_dictionary(self.source_dictionary)
        return bpe

    return build_bpe


def _wrapped_hub_binarize(original):
    def binarize(self, sentence):
        """fairseq's, except that a control symbol typed in the text (``</s>``, ``<pad>``, ``<s>``) is
        a word the model does not know (``<unk>``), not the control token: ``"a </s> b"`` was cut
        short at ``</s>``, and ``<pad>`` masked. Only the end-of-sentence that encode_line appends
        stays ``</s>``. Text in another form than the source dictionary (pieces to a word model, words to a
        model of pieces without its BPE) is one line before anything is decoded (``input_form``)."""
        from fairseq_wean.input_form import check_hub_input

        check_hub_input(self, sentence)
        tokens = original(self, sentence)
        d = self.src_dict
        controls = {d.pad(), d.bos(), d.eos()}
        body = tokens[:-1] if len(tokens) and int(tokens[-1]) == d.eos() else tokens
        typed = [i for i, t in enumerate(body.tolist()) if t in controls]
        if typed:
            tokens = tokens.clone()
            tokens[typed] = d.unk()
        return tokens

    return binarize


def install():
    """Patch the hub (fairseq's from_pretrained: the folder's files checked; sample, generate, translate,
    binarize) and the task's BPE builder (called when the plugin is imported)."""
    from fairseq import checkpoint_utils, file_utils, hub_utils
    from fairseq.hub_utils import GeneratorHubInterface
    from fairseq.tasks import FairseqTask

    same_code("hub (the Python API)", "GeneratorHubInterface encodes control symbols typed in the input "
              "as themselves and knows no --bpe unk_markers")
    wrap_once(hub_utils, "from_pretrained", _wrapped_hub_utils_from_pretrained)
    wrap_once(checkpoint_utils, "load_checkpoint_to_cpu", _wrapped_load_checkpoint_to_cpu)
    wrap_once(file_utils, "load_archive_file", _wrapped_load_archive_file)
    wrap_once(GeneratorHubInterface, "__init__", _wrapped_hub_init)
    wrap_once(GeneratorHubInterface, "sample", _wrapped_hub_sample)
    wrap_once(GeneratorHubInterface, "generate", _wrapped_hub_generate)
    wrap_once(GeneratorHubInterface, "translate", _wrapped_hub_translate)
    wrap_once(GeneratorHubInterface, "binarize", _wrapped_hub_binarize)
    wrap_once(FairseqTask, "build_bpe", _wrapped_build_bpe)
    hub_inputs.install()  # every public method's input and keywords, around the wrappers above
