"""The files and Python packages of the chosen ``--bpe`` and ``--tokenizer``, checked before any work.

fairseq builds the BPE and the tokenizer a command names (``--bpe sentencepiece --sentencepiece-model
F``, ``--bpe fastbpe --bpe-codes F``, ``--tokenizer moses``...) only after the model is loaded (and, in
fairseq-generate, the batches are built): a missing file, a folder, a named pipe or a package that is
not installed was a traceback (``OSError: file nosuch.model not found``, ``RuntimeError:
FAILED_PRECONDITION: ... Is a directory``, ``ImportError: Please install fastBPE``) after that work,
and the hub's keywords (``sentencepiece_model='nosuch.model'``, ``bpe='fastbpe'``) the same.

:func:`path_fields` derives, from the registered component's dataclass (fairseq's ``BPE`` and
``TOKENIZER`` registries, the plugin's included), which of its options name a file: a string field whose
name ends in :data:`PATH_SUFFIXES` or whose help speaks of a path or file (or that declares
``metadata={"path": True}``). :func:`required_packages` derives the packages the component imports
lazily (imports inside the functions of its module and of the modules it imports relatively: fastBPE,
sentencepiece, sacremoses, subword_nmt, transformers, tokenizers, regex, nltk), looked up without importing
them. :func:`tokenizer_files_problem` checks the chosen components of a parsed command (registered with
``patching.add_option_check`` by ``compat.apply()``: every fairseq command, at parse); the hub
(``fairseq_wean.hub``) calls it for its keywords before loading and for the merged configuration before
building the BPE. Refusals are one line (``FairseqWeanError``) naming the option, its value and what is wrong.

A file of the right kind may still be no file the component can read (empty, another BPE's format, not UTF-8),
and a component may need more than its package (nltk's punkt data): :func:`build_problem` builds the chosen
component as fairseq does (``fairseq.data.encoders.build_bpe``/``build_tokenizer``) and encodes and decodes
:data:`PROBE_TEXT`; any failure (an exception, subword_nmt's message and ``sys.exit``) is the one line, with
the component's own first error line (cached per component and values), and so is a decode that does not give the
text back (:func:`round_trip_problem`: ``--bpe-separator ''`` removed every space of every output line), except for the
components lossy by design (:data:`LOSSY`, each with its reason). The chosen ``--bpe`` must also be able to decode
the model's target dictionary (:func:`dictionary_fit_problem`, the data folder's ``dict.TGT.txt``; the hub's loaded
configuration: its data folder), by the forms of :data:`fairseq_wean.input_form.DECODED_FORMS` (``--bpe gpt2`` on a
model of words: a ValueError traceback once the whole test set was decoded). A URL is accepted only where fairseq
downloads it (an option the component passes to ``file_utils.cached_path``: :func:`download_fields`) with a
scheme fairseq fetches (:data:`SCHEME_PACKAGES`), and then the packages that download needs must be installed;
any other ``://`` value is a path. A name no component is registered under (the hub's keywords, a
checkpoint's configuration) is one line listing the registered ones. On fairseq's command line a component
registered without a dataclass (``--bpe characters``, ``bytes``) is refused: fairseq 0.12 composes the
command's configuration from the component's dataclass and fails (hydra's ``Could not load bpe/characters``);
the hub builds it from its name. A field of the component that is not Optional and whose option (shared with
the task: moses' ``--source-lang``) is unset is refused too: fairseq overrides it with null and fails.
"""
import argparse
import re
import string
import unicodedata

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

SECTIONS = ("bpe", "tokenizer")
PATH_SUFFIXES = ("_model", "_codes", "_vocab", "_json", "_dict", "_path", "_file")
PATH_HELP = re.compile(r"\bpath\b|\bfile\b", re.I)
UNSET = (None, "???", "")  # "???": fairseq's value of a required field that was not given
DEPENDENCIES = ("fairseq", "fairseq_wean", "omegaconf", "torch", "numpy")  # what the plugin runs on


def registered(section):
    """{name: dataclass or None} of every registered component of ``section`` ("bpe", "tokenizer")."""
    from fairseq.data import encoders  # noqa: F401  (registers fairseq's own)
    from fairseq.registry import REGISTRIES

    registry = REGISTRIES[section]
    return {name: registry["dataclass_registry"].get(name) for name in registry["registry"]}


def path_fields(config):
    """The fields of a component's dataclass ``config`` that name a file (see the module docstring)."""
    import dataclasses

    if config is None or not dataclasses.is_dataclass(config):
        return []
    found = []
    for field in dataclasses.fields(config):
        metadata = field.metadata or {}
        if field.name == "_name" or "str" not in str(field.type):
            continue
        if metadata.get("path") or field.name.endswith(PATH_SUFFIXES) or PATH_HELP.search(metadata.get("help") or ""):
            found.append(field)
    return found


def _relative_modules(module):
    """``module`` and the modules it imports relatively at its top level (fairseq's gpt2_bpe: gpt2_bpe_utils)."""
    import ast
    import importlib

    found, tree = [module], _tree(module)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.level:
            name = importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__)
            try:
                found.append(importlib.import_module(name))
            except ImportError:
                continue
    return found


def _tree(module):
    import ast
    import inspect

    try:
        return ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return None


def required_packages(cls):
    """The top-level packages the component class ``cls`` imports inside functions of its module (and of the
    modules that imports relatively): what building it needs beyond fairseq, sorted."""
    import ast
    import sys

    packages = set()
    for module in _relative_modules(sys.modules[cls.__module__]):
        tree = _tree(module)
        for function in ast.walk(tree) if tree is not None else ():
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    packages.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    packages.add(node.module.split(".")[0])
    return sorted(packages - set(sys.stdlib_module_names) - set(DEPENDENCIES))


def missing_packages(cls):
    """The :func:`required_packages` of ``cls`` that are not installed (looked up, not imported)."""
    import importlib.util

    missing = []
    for name in required_packages(cls):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


# what fairseq's file_utils.cached_path fetches, by URL scheme, and the packages it imports to do it
SCHEME_PACKAGES = {"http": ("requests", "tqdm"), "https": ("requests", "tqdm"), "s3": ("boto3", "botocore")}
PROBE_TEXT = "Hello world , 12 ."  # what a built component must encode and decode
_BUILT = {}  # (section, name, values, file stamps) -> the problem of building it, or None
TRIAL_STATE = (("fairseq_wean.unk_replacement", "_STATE"),)  # process state a trial build must leave unchanged
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def download_fields(cls):
    """The options the component class ``cls`` passes to fairseq's ``file_utils.cached_path`` (which downloads
    an http(s)/s3 URL into fairseq's cache): ``cached_path(cfg.X)`` in its module, sorted."""
    import ast
    import sys

    found = set()
    tree = _tree(sys.modules[cls.__module__])
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Attribute) and \
                (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "cached_path":
            found.add(node.args[0].attr)
    return sorted(found)


def url_scheme(value):
    """The scheme of ``value`` when it is written as a URL (``scheme://...``), else None."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", value)
    return match.group(1).lower() if match else None


def file_problem(path, downloads=False):
    """Why ``path`` (links followed: the user named it) is no file a BPE or tokenizer can read, or None.
    ``downloads``: the option goes through fairseq's ``cached_path``, which fetches http(s)/s3 URLs (those are
    :func:`url_problem`'s); any other value is a path (``file://x`` too: fairseq takes it as a path)."""
    scheme = url_scheme(path)
    if scheme is not None and downloads and scheme in SCHEME_PACKAGES:
        return None
    if scheme is not None and downloads:
        return "a {}:// URL, which fairseq does not download (it fetches only {} URLs): give the file's path".format(
            scheme, ", ".join(sorted(s + "://" for s in SCHEME_PACKAGES)))
    return textio.named_file_problem(path)


def url_problem(value):
    """For a URL fairseq will download: the package the download needs that is not installed, or None."""
    import importlib.util

    for package in SCHEME_PACKAGES.get(url_scheme(value) or "", ()):
        try:
            found = importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return package
    return None


def _name(dest, keywords):
    return dest if keywords else "--" + dest.replace("_", "-")


def _shown(dest, value, keywords):
    return "{}={!r}".format(dest, value) if keywords else "--{} {}".format(dest.replace("_", "-"), value)


def _optional(field):
    import typing

    kind = field.type
    return kind is typing.Any or type(None) in typing.get_args(kind) or (isinstance(kind, str) and "Optional" in kind)


def unknown_problem(section, name, keywords, stored):
    """The one line for a component name that is registered nowhere in ``section``."""
    known = sorted(registered(section))
    other = [s for s in SECTIONS if s != section and name in registered(s)]
    what = section.replace("bpe", "BPE")
    chosen = "the checkpoint's {}={!r}".format(section, name) if stored else _shown(section, name, keywords)
    return "{} is no registered {} (registered: {}){}: refused before any work".format(
        chosen, what, ", ".join(known), "; it is a {}: give {}".format(
            other[0].replace("bpe", "BPE"), _shown(other[0], name, keywords)) if other else "")


def component_problem(section, name, values, keywords=False, unset_ok=False, stored=False):
    """The one line for the component ``name`` of ``section`` with option values ``values`` (a mapping; a
    dest it lacks is unset), or None: an unknown name (``keywords``: the hub's, where nothing else checks it;
    ``stored``: read from the checkpoint), a component fairseq's command line cannot compose, a package it
    imports that is not installed, a required path option unset (``unset_ok``: the hub fills it from the
    model's folder), a path that is no regular file, a URL fairseq cannot fetch, and what building it and
    encoding :data:`PROBE_TEXT` raise (:func:`build_problem`)."""
    components = registered(section)
    if not isinstance(name, str) or name in UNSET:
        return None  # not chosen
    if name not in components:
        return unknown_problem(section, name, keywords, stored) if keywords or stored else None
    from fairseq.registry import REGISTRIES

    cls = REGISTRIES[section]["registry"][name]
    chosen = "the checkpoint's {}={!r}".format(section, name) if stored else _shown(section, name, keywords)
    if components[name] is None and not keywords:
        return ("{} cannot be given on fairseq's command line: fairseq 0.12 composes the command's configuration "
                "from a {}'s dataclass and {} is registered without one (hydra: Could not load {}/{}); the hub "
                "builds it (from_pretrained(..., {}={!r})): refused before any work".format(
                    chosen, section.replace("bpe", "BPE"), name, section, name, section, name))
    missing = missing_packages(cls)
    if missing:
        return "{} needs the Python package {}, which is not installed (pip install {}): refused before any " \
               "work".format(chosen, missing[0], missing[0])
    fields = path_fields(components[name])
    if not keywords:  # fairseq overrides a shared option left unset with null: a hydra error for a str field
        import dataclasses

        unset = [f.name for f in dataclasses.fields(components[name]) if f.name != "_name" and f not in fields
                 and f.name in values and values[f.name] is None and not _optional(f)]
        if unset:
            return ("{} needs {} given: fairseq passes the command's own to it and cannot compose its configuration "
                    "while unset (it does not take them from the data folder): refused before any work".format(
                        chosen, " and ".join(_name(n, False) for n in unset)))
    downloads, buildable, files, urls = download_fields(cls), True, [], []
    for field in fields:
        value = values.get(field.name, field.default)
        if value in UNSET or not isinstance(value, str):
            buildable = False
            if value in UNSET and not unset_ok and field.default == "???":
                return "{} needs {} FILE ({}): refused before any work".format(
                    chosen, _name(field.name, keywords), (field.metadata or {}).get("help") or "its file")
            continue
        problem = file_problem(value, field.name in downloads)
        if problem is not None:
            return "{} (read by {}): {}; refused before any work".format(
                _shown(field.name, value, keywords), chosen, problem)
        if url_scheme(value) is not None:
            buildable = False  # fairseq downloads it when it builds the component
            urls.append((field.name, value))
        files.append(_shown(field.name, value, keywords))
    for dest, value in urls:
        package = url_problem(value)
        if package is not None:
            return ("{} (read by {}): fairseq downloads it with the Python package {}, which is not installed "
                    "(pip install {}; or give the file's path): refused before any work".format(
                        _shown(dest, value, keywords), chosen, package, package))
    for field in fields if buildable else ():  # what the component reads without an error, and is no file of it
        value = values.get(field.name, field.default)
        problem = merges_problem(value, MERGES_FILES[name, field.name]) if (name, field.name) in MERGES_FILES else None
        if problem is not None:
            return "{} (read by {}): {}; refused before any work".format(_shown(field.name, value, keywords), chosen,
                                                                         problem)
    problem = build_problem(section, name, values) if buildable else None
    if problem is None:
        return None
    if problem.startswith(ROUND_TRIP):
        return "{}{}: {}; refused before any work".format(chosen, " with " + ", ".join(files) if files else "", problem)
    if files:
        return "{} (read by {}): building the {} from {} failed ({}); refused before any work".format(
            ", ".join(files), chosen, section.replace("bpe", "BPE"), "it" if len(files) == 1 else "them", problem)
    return "{} cannot be used: building it and encoding a sentence failed ({}); refused before any work".format(
        chosen, problem)


# the merges files whose component reads them without an error when they hold no merge, or another BPE's merges
# (gpt2 takes every line after the first of vocab.bpe as a merge; subword-nmt applies merges it never meets):
# (component, option) -> the style its file is in
MERGES_FILES = {("gpt2", "gpt2_vocab_bpe"): "gpt2", ("subword_nmt", "bpe_codes"): "subword_nmt",
                ("fastbpe", "bpe_codes"): "subword_nmt"}
GPT2_SPACE = "\u0120"  # gpt2's byte-level mark of a space (its merges' word starts)
END_OF_WORD = "</w>"  # subword-nmt's and fastBPE's end-of-word mark in their codes


def merges_problem(path, style):
    """Why the merges file ``path`` is no file of a ``style`` BPE (``gpt2``: vocab.bpe; ``subword_nmt``: codes of
    subword-nmt or fastBPE), or None (a file the component cannot read at all is :func:`build_problem`'s): it
    holds no merge (empty, or a ``#version`` header only), another BPE's merges (subword-nmt's ``</w>`` in a
    gpt2 vocab.bpe; gpt2's ``Ġ`` and no ``</w>`` in codes), or (gpt2) a line that is no pair of symbols."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    start = 1 if style == "gpt2" or lines and lines[0].startswith("#version") else 0  # gpt2 skips its first line
    merges = [(number, line) for number, line in enumerate(lines[start:], start + 1) if line.strip()]
    what = "gpt2 vocab.bpe" if style == "gpt2" else "BPE codes file"
    if not merges:
        return "it holds no merge (it is empty{}), and a {} holds one merge a line: it would encode nothing".format(
            "" if not lines else ", or a '#version' header only", what)
    if style == "gpt2" and any(END_OF_WORD in line for _, line in merges):
        return "it holds subword-nmt codes ('{}' ends a word in them), not gpt2's byte-level merges: give the " \
               "model's vocab.bpe".format(END_OF_WORD)
    if style == "gpt2":
        bad = [(number, line) for number, line in merges if len(line.split()) != 2]
        if bad:
            return "its line {} {!r} is no merge (two symbols), as every line of {} after the first is".format(
                bad[0][0], _cut(bad[0][1], 40), what)
    elif not any(END_OF_WORD in line for _, line in merges) and any(GPT2_SPACE in line for _, line in merges):
        return "it holds gpt2's byte-level merges ('{}' starts a word, no '{}'), not subword-nmt codes: give the " \
               "model's BPE codes".format(GPT2_SPACE, END_OF_WORD)
    return None


def _stamp(value):
    import os

    try:
        stat = os.stat(value)
    except (OSError, TypeError, ValueError):
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _cut(line, most=400):
    return line if len(line) <= most else line[:most] + "..."


def _first_line(exc, output):
    """The component's own first error line: its exception's message (its type named), or what it printed
    before ``sys.exit`` (subword_nmt)."""
    text = str(exc if not isinstance(exc, SystemExit) else "")
    lines = [ANSI.sub("", line).strip(" *") for line in text.splitlines()]
    lines = [_cut(line) for line in lines if re.search(r"\w", line)]
    if lines:
        return lines[0] if isinstance(exc, FairseqWeanError) else "{}: {}".format(type(exc).__name__, lines[0])
    printed = [_cut(ANSI.sub("", line).strip()) for line in output.splitlines() if re.search(r"\w", line)]
    if printed:
        return printed[0]
    return "{} (exit status {})".format(type(exc).__name__, exc.code) if isinstance(exc, SystemExit) \
        else type(exc).__name__


# the components whose decode(encode(x)) is not x by design, and why (every other one must give its text back, its
# spaces and words: :func:`round_trip_problem`); nltk's punkt: a package's data the trial build needs
LOSSY = {("tokenizer", "moses"): "it detokenizes ('world , 12 .' becomes 'world, 12.') and escapes &, <, >, quotes",
         ("tokenizer", "nltk"): "its decode is the identity: the text comes back tokenized",
         ("bpe", "bert"): "its uncased vocabularies lowercase, and WordPiece marks the pieces of unknown words [UNK]",
         ("bpe", "unk_markers"): "its decode restores each <unk-N> from the hypothesis' source, which a trial has not"}
# the surface of a piece outside the model's vocabulary, by component: text outside it does not come back
ROUND_TRIP = "it does not give text back"
# (sentencepiece's byte_fallback pieces '<0xNN>': fairseq's string-level decode leaves them, as it leaves '⁇')
UNKNOWN_SURFACES = {"sentencepiece": re.compile("\u2047|<0x[0-9A-F]{2}>"), "byte_bpe": re.compile("\u2047")}
# the trial's sentences: PROBE_TEXT, and every letter and digit at a word's end and alone (a --bpe-separator 'e'
# passed PROBE_TEXT, which has no word ending in 'e', and then ate every 'e ' of the output)
PROBE_TEXTS = (PROBE_TEXT, " ".join("{0} x{0}".format(c) for c in string.ascii_letters + string.digits))


def _given(config, values):
    """``values``' options of the dataclass ``config`` that are no path option and differ from their default."""
    import dataclasses

    paths = {f.name for f in path_fields(config)} if config is not None else set()
    return {f.name: values[f.name] for f in (dataclasses.fields(config) if config is not None else ())
            if f.name in values and f.name != "_name" and f.name not in paths and values[f.name] != f.default}


def option_texts(options):
    """A trial sentence for each short text option given (``--bpe-separator '++'``): words that end with it, hold it,
    and it alone (a separator no word of :data:`PROBE_TEXTS` ends with ate the text that holds it)."""
    return tuple("x{0} {0} x{0}x .".format(v) for _, v in sorted(options.items())
                 if isinstance(v, str) and 0 < len(v) <= 10 and v.strip() == v)


def _difference(text, decoded):
    """The words of ``text`` and ``decoded`` from the first that differs (a few of each)."""
    words, back = text.split(), decoded.split()
    first = next((i for i, (a, b) in enumerate(zip(words, back)) if a != b), min(len(words), len(back)))
    start = max(0, first - 2)
    return " ".join(words[start:start + 6]), " ".join(back[start:start + 6])


def _normalized(text):
    """``text`` as a normalizing model reads it (NFKC, case-folded: sentencepiece's nfkc_cf rule), word by word."""
    return unicodedata.normalize("NFKC", text).casefold().split()


def round_trip_problem(section, name, decoded, options, text=PROBE_TEXT):
    """Why the component ``name`` of ``section``, whose decode of its encoding of ``text`` (one of
    :data:`PROBE_TEXTS`) is ``decoded``, does not give its text back (compared word for word: a leading space of
    byte_bpe is no change), or None; a component of :data:`LOSSY` is lossy by design, a piece outside the vocabulary
    (:data:`UNKNOWN_SURFACES`) is the model's, and so is its normalization of what it encodes (``decoded`` is
    ``text`` NFKC-normalized or case-folded: a model trained with ``nfkc_cf`` gives back lower case).
    ``options``: its other options given, named in the line (``--bpe-separator ''``)."""
    if (section, name) in LOSSY or not isinstance(decoded, str) or decoded.split() == text.split():
        return None
    if name in UNKNOWN_SURFACES and UNKNOWN_SURFACES[name].search(decoded):
        return None
    if _normalized(decoded) == _normalized(text):
        return None
    given = ["{} {!r}".format(_name(k, False), v) for k, v in sorted(options.items()) if v not in (None, "???")]
    if len(text) > 60:  # the words where they differ
        text, decoded = ("..." + part + "..." for part in _difference(text, decoded))
    return ROUND_TRIP + ": decode(encode({!r})) is {!r}, so every line it decodes would be changed " \
           "so{}".format(text, decoded, " (with {})".format(", ".join(given)) if given else "")


def build_problem(section, name, values):
    """Build the component ``name`` of ``section`` from ``values`` as fairseq does (``encoders.build_bpe`` /
    ``build_tokenizer``: from its dataclass filled from the values, or from the name alone when it has none, as
    the hub builds it) and encode and decode :data:`PROBE_TEXT`: the component's own first error line, or None.
    Cached per component, values and the files' identity."""
    import contextlib
    import dataclasses
    import importlib
    import io

    from fairseq.data import encoders

    config = registered(section)[name]
    names = [f.name for f in dataclasses.fields(config) if f.name != "_name"] if config is not None else []
    kept = {k: values[k] for k in names if k in values and values[k] != "???"}
    key = (section, name, tuple(sorted((k, repr(v)) for k, v in kept.items())),
           tuple(_stamp(v) for _, v in sorted(kept.items()) if isinstance(v, str)))
    if key in _BUILT:
        return _BUILT[key]
    saved = [(importlib.import_module(m), a) for m, a in TRIAL_STATE]
    saved = [(getattr(m, a), dict(getattr(m, a))) for m, a in saved]
    output, problem, given = io.StringIO(), None, _given(config, kept)
    try:
        with contextlib.redirect_stderr(output), contextlib.redirect_stdout(output):
            target = argparse.Namespace(**{section: name}, **kept) if config is not None else name
            built = getattr(encoders, "build_" + section)(target)
            if getattr(built, "vocabulary", True) is None and hasattr(built, "set_dictionary"):
                from fairseq.data import Dictionary  # unk_markers: the model's dictionary, set later

                built.set_dictionary(Dictionary())
            decoded = [(text, built.decode(built.encode(text))) for text in PROBE_TEXTS + option_texts(given)]
        problem = next((found for found in (round_trip_problem(section, name, d, given, text)
                                            for text, d in decoded) if found is not None), None)
    except (Exception, SystemExit) as exc:  # noqa: B902  (whatever the component raises, subword_nmt's exit)
        problem = _first_line(exc, output.getvalue())
    finally:
        for state, copy in saved:
            state.clear()
            state.update(copy)
    _BUILT[key] = problem
    return problem


def tokenizer_files_problem(args, keywords=False, unset_ok=False, stored=()):
    """The option check of a parsed command (``patching.add_option_check``; also the hub's, ``keywords``:
    named as keywords; ``stored``: the sections whose component the checkpoint names): raises the one-line
    ``FairseqWeanError`` of :func:`component_problem` for the chosen ``--bpe`` and ``--tokenizer``; returns None."""
    import os

    values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    values = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in values.items()}
    for section in SECTIONS:
        problem = component_problem(section, values.get(section), values, keywords, unset_ok, section in stored)
        if problem is not None:
            raise FairseqWeanError(("from_pretrained: " if keywords else "") + problem)
    problem = dictionary_fit_problem(values, keywords)  # what --bpe writes vs the model's dictionary
    if problem is not None:
        raise FairseqWeanError(("from_pretrained: " if keywords else "") + problem)
    tokenize = values.get("sacrebleu_tokenizer")
    if not keywords and values.get("scoring") == "sacrebleu" and isinstance(tokenize, str):
        # fairseq-generate --scoring sacrebleu: sacrebleu's tokenizer, built after the whole test set is decoded
        # (a download attempt or a missing package then ended the run in a traceback)
        from fairseq_wean.scoring.bleu_checks import sacrebleu_tokenizer_problem

        problem = sacrebleu_tokenizer_problem(tokenize, "--sacrebleu-tokenizer")
        if problem is not None:
            raise FairseqWeanError("{}; refused before any work".format(problem))
    return None


_DICTIONARIES = {}  # (path, file stamp) -> the fairseq Dictionary read from it


def target_dictionaries(values):
    """[(path, Dictionary)] of the target dictionaries a parsed command (or the hub's configuration) decodes into:
    its data folder's (the first of ``a:b`` shards) ``dict.TGT.txt`` with ``--target-lang``; else every
    ``dict.*.txt`` there (``dict.txt``: a language model's). A file fairseq cannot read is left to its own check."""
    import glob
    import os

    data, target = values.get("data"), values.get("target_lang")
    if not isinstance(data, str) or not data or "://" in data:
        return []
    folder = data.split(os.pathsep)[0]
    paths = [os.path.join(folder, "dict.{}.txt".format(target))] if isinstance(target, str) and target else sorted(
        glob.glob(os.path.join(glob.escape(folder), "dict.*.txt")) + glob.glob(os.path.join(glob.escape(folder),
                                                                                              "dict.txt")))
    found = []
    for path in paths:
        key = (path, _stamp(path))
        if key[1] is None or not os.path.isfile(path):
            continue
        if key not in _DICTIONARIES:
            from fairseq.data import Dictionary

            try:
                _DICTIONARIES[key] = Dictionary.load(path)
            except Exception:  # noqa: B902  (the dictionary check's line, where fairseq reads it)
                _DICTIONARIES[key] = None
        if _DICTIONARIES[key] is not None:
            found.append((path, _DICTIONARIES[key]))
    return found


def dictionary_fit_problem(values, keywords=False):
    """For the chosen ``--bpe``: the one line of :func:`fairseq_wean.input_form.bpe_dictionary_problem` when it
    cannot decode the model's target dictionary (any of the folder's when the target language is not given:
    refused when none fits), else None."""
    from fairseq_wean.input_form import bpe_dictionary_problem

    bpe, target = values.get("bpe"), values.get("target_lang")
    what = "the model's target dictionary {}" if isinstance(target, str) and target else \
        "the model's dictionary {} (no target language given: none of the data folder's fits)"
    problems = [bpe_dictionary_problem(bpe, dictionary, what.format(path), keywords)
                for path, dictionary in target_dictionaries(values)] if isinstance(bpe, str) else []
    if problems and all(problems):
        return problems[0] + "; refused before any work"
    return None


def path_keyword_problem(kwargs):
    """For the hub before loading: any keyword that is a path option of some registered BPE or tokenizer
    (the stored configuration may choose the component) naming no regular file: the one line, or None."""
    import os

    from fairseq.registry import REGISTRIES

    for section in SECTIONS:
        for name, config in sorted(registered(section).items()):
            downloads = download_fields(REGISTRIES[section]["registry"][name])
            for field in path_fields(config):
                value = kwargs.get(field.name)
                value = os.fspath(value) if isinstance(value, os.PathLike) else value
                if isinstance(value, str) and value not in UNSET:
                    problem = file_problem(value, field.name in downloads)
                    if problem is not None:
                        return "from_pretrained: {} (a file the {} reads): {}; refused before any work".format(
                            _shown(field.name, value, True), section.replace("bpe", "BPE"), problem)
    return None


def cfg_values(cfg, given=None):
    """``{option: value}`` of the ``bpe`` and ``tokenizer`` sections of a loaded configuration (the hub's),
    with each section's component under its section's name (a section stored as a plain string: a component
    registered without a dataclass, ``bpe='characters'``). ``given``: the hub's keyword arguments; a path option
    of a component that they do not give is unset (a path stored in a checkpoint is never opened)."""
    values = {}
    for section in SECTIONS:
        part = cfg.get(section) if hasattr(cfg, "get") else None
        if part is None:
            continue
        if isinstance(part, str):
            values[section] = part
            continue
        keys = list(part.keys()) if hasattr(part, "keys") else list(vars(part)) if hasattr(part, "__dict__") else []
        for key in keys:
            try:
                values[key] = part.get(key) if hasattr(part, "get") else getattr(part, key)
            except Exception:  # omegaconf's MissingMandatoryValue for "???": unset
                values[key] = None
        values[section] = values.pop("_name", None)
    task = cfg.get("task") if hasattr(cfg, "get") else None
    for key in ("data", "target_lang") if task is not None and hasattr(task, "get") else ():
        try:  # the data folder the hub read the dictionaries from (dictionary_fit_problem)
            values[key] = task.get(key)
        except Exception:  # noqa: B902  (omegaconf: unset)
            values[key] = None
    if given is not None:
        for section in SECTIONS:
            for config in registered(section).values():
                for field in path_fields(config):
                    if field.name in values and field.name not in given:
                        values[field.name] = None
    return values


def install():
    """Check the chosen --bpe/--tokenizer at every fairseq parse (called by ``compat.apply()``)."""
    from fairseq_wean.patching import add_option_check

    add_option_check(tokenizer_files_problem)
