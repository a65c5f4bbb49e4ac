"""The chosen --bpe / --tokenizer is BUILT and used on a sentence before any work (tokenizer_files.build_problem).

A file of the right kind (a regular file) may still be no file the component can read: empty, another format, not
UTF-8. fairseq built the component after the model was loaded (fairseq-generate: after the batches too) and the
hub after reading the checkpoint: a traceback then (sentencepiece's ``unk is not defined``, ``JSONDecodeError``,
``UnicodeDecodeError``, subword_nmt's own exit). Every registered component with a file option x every wrong
content x every entry point (the parse-time check of fairseq-generate, -interactive and -train, the hub's keywords,
the component a checkpoint stores) is one line naming the option, the file and the component's own first error
line, and no model is loaded or built. Also: components registered without a dataclass (``characters``, ``bytes``:
refused on fairseq's command line, which cannot compose them; built by the hub), unknown names (the hub's keywords,
a stored configuration), a package's data (nltk's punkt), URLs (only what fairseq downloads), and a field that
fairseq fills from an unset shared option (moses' languages).
"""
import argparse
import contextlib
import io
import json

import pytest

import fairseq_wean  # noqa: F401  (registers the plugin's components and the option check)
from conftest import USER_DIR
from fairseq_wean import tokenizer_files as T
from fairseq_wean.errors import FairseqWeanError
from test_crafted_checkpoints import train_tiny

CONTENTS = {"empty": b"", "another format": b"two young , white males are outside near many bushes .\nan old man\n",
            "not UTF-8": b"abc\xff\xfe def 10\n", "header only": b"#version: 0.2\n",
            "subword-nmt codes": b"#version: 0.2\ne n</w>\ne r</w>\nd ie</w>\n",
            "gpt2 merges": "#version: 0.2\n\u0120 t\n\u0120 a\nh e\n".encode()}
ENTRY_POINTS = ("generate", "interactive", "train", "hub keywords", "hub stored")
FILE_OPTIONS = sorted((section, name, field.name) for section in T.SECTIONS
                      for name, config in T.registered(section).items() for field in T.path_fields(config))
# a file of the component's own format: passed, as fairseq builds and uses it
READ_BY_THE_COMPONENT = {("gpt2", "gpt2_vocab_bpe", "gpt2 merges"), ("subword_nmt", "bpe_codes", "subword-nmt codes")}
# what the component itself reads without an error and is no file of it (gpt2 takes every line after the first of
# vocab.bpe as a merge: none, lines of words, subword-nmt's codes are merges it never applies; subword-nmt applies
# gpt2's merges as codes): refused by tokenizer_files.merges_problem, with the reason
BY_CONTENT = {("gpt2", "gpt2_vocab_bpe", "empty"): "it holds no merge (it is empty)",
              ("gpt2", "gpt2_vocab_bpe", "header only"): "it holds no merge (it is empty, or a '#version' header only)",
              ("gpt2", "gpt2_vocab_bpe", "another format"): "its line 2 'an old man' is no merge (two "
                                                             "symbols)",
              ("gpt2", "gpt2_vocab_bpe", "subword-nmt codes"): "it holds subword-nmt codes ('</w>' ends a word",
              ("subword_nmt", "bpe_codes", "empty"): "it holds no merge (it is empty)",
              ("subword_nmt", "bpe_codes", "header only"): "it holds no merge (it is empty, or a '#version' header",
              ("subword_nmt", "bpe_codes", "gpt2 merges"): "it holds gpt2's byte-level merges ('\u0120' starts a word"}
NO_DATACLASS = sorted((section, name) for section in T.SECTIONS
                      for name, config in T.registered(section).items() if config is None)


@pytest.fixture(autouse=True)
def fresh_builds():
    T._BUILT.clear()
    yield
    T._BUILT.clear()


def component_class(section, name):
    from fairseq.registry import REGISTRIES

    return REGISTRIES[section]["registry"][name]


def companion(tmp_path, section, name, field, bad):
    """Files for the component's other file options: readable ones where we can write them (gpt2), else ``bad``."""
    from fairseq.data.encoders.gpt2_bpe_utils import bytes_to_unicode

    if name == "gpt2" and field == "gpt2_encoder_json":
        path = tmp_path / "vocab.bpe"
        path.write_text("#version: 0.2\nq z\n")  # a merge the probe sentence never meets
        return str(path)
    if name == "gpt2":
        path = tmp_path / "encoder.json"
        encoder = {c: i for i, c in enumerate(bytes_to_unicode().values())}
        encoder.update({m: len(encoder) + i for i, m in enumerate(("\u0120t", "\u0120a", "he"))})  # the merges'
        path.write_text(json.dumps(encoder))  # results (CONTENTS' gpt2 merges), as a real encoder.json has them
        return str(path)
    return bad


def own_failure(section, name, values):
    """The component's own first error line, built directly by fairseq's builder (the reference)."""
    from fairseq.data import Dictionary, encoders

    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed), contextlib.redirect_stdout(printed):
            built = getattr(encoders, "build_" + section)(argparse.Namespace(**{section: name}, **values))
            if hasattr(built, "set_dictionary"):
                built.set_dictionary(Dictionary())
            built.decode(built.encode(T.PROBE_TEXT))
    except SystemExit:
        return printed.getvalue().strip().splitlines()[0]
    except Exception as exc:  # noqa: B902
        return [line for line in str(exc).splitlines() if line.strip()][0]
    pytest.fail("{} {} read the file".format(section, name))


def parse(command, argv, tmp_path):
    from fairseq import options

    parser = {"train": options.get_training_parser, "generate": options.get_generation_parser,
              "interactive": options.get_interactive_generation_parser}[command]()
    args = [str(tmp_path), "--user-dir", USER_DIR] + argv
    args += ["--arch", "lstm"] if command == "train" else ["--path", str(tmp_path / "never.pt")]
    return options.parse_args_and_arch(parser, args)


@pytest.fixture(scope="module")
def tiny(data_bin, tmp_path_factory):
    return train_tiny(data_bin, tmp_path_factory.mktemp("tokenizer-build")) / "checkpoint_last.pt", data_bin


def model_folder(tiny, tmp_path, stored=None):
    """A model folder: the tiny checkpoint (its configuration's sections replaced by ``stored``) and its dictionaries."""
    import torch

    checkpoint, data = tiny
    folder = tmp_path / "model"
    folder.mkdir()
    state = torch.load(str(checkpoint), weights_only=False)  # our own tiny checkpoint
    for section, value in (stored or {}).items():
        state["cfg"][section] = stored_section(section, value)
    torch.save(state, str(folder / "checkpoint_best.pt"))
    return folder


def stored_section(section, value):
    """A section as fairseq stores it: every field of the component's dataclass (a name alone for one without)."""
    from omegaconf import OmegaConf

    config = T.registered(section).get(value.get("_name")) if isinstance(value, dict) else None
    if config is None:
        return value
    return dict(OmegaConf.to_container(OmegaConf.structured(config)), **value)


def load(tiny, folder, **kwargs):
    from fairseq_wean.hub import from_pretrained

    return from_pretrained(str(folder), data_name_or_path=str(tiny[1]), **kwargs)


@pytest.fixture
def nothing_loaded(monkeypatch):
    """Fail the test if the hub reads a model or builds one."""
    import fairseq.models
    from fairseq import checkpoint_utils

    def never(*args, **kwargs):
        raise AssertionError("the model was built: the check came too late")

    monkeypatch.setattr(fairseq.models, "build_model", never)
    return checkpoint_utils


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("content", sorted(CONTENTS))
@pytest.mark.parametrize("section,name,field", FILE_OPTIONS)
def test_a_file_the_component_cannot_read_is_one_line_before_any_work(tiny, tmp_path, nothing_loaded, monkeypatch,
                                                                     section, name, field, content, entry):
    bad = tmp_path / "planted"
    bad.write_bytes(CONTENTS[content])
    fields = [f.name for f in T.path_fields(T.registered(section)[name])]
    values = {f: str(bad) if f == field else companion(tmp_path, section, name, field, str(bad)) for f in fields}
    keywords = entry.startswith("hub")
    missing = T.missing_packages(component_class(section, name))
    if (name, field, content) in READ_BY_THE_COMPONENT and not missing:
        assert T.tokenizer_files_problem(argparse.Namespace(**{section: name}, **values)) is None
        return
    if entry == "hub stored":
        chosen = "the checkpoint's {}={!r}".format(section, name)
    else:
        chosen = "{}={!r}".format(section, name) if keywords else "--{} {}".format(section, name)
    if missing:
        expected = "{} needs the Python package {}, which is not installed".format(chosen, missing[0])
    elif (name, field, content) in BY_CONTENT:
        expected = "{} (read by {}): {}".format("{}={!r}".format(field, values[field]) if keywords else "--{} {}".format(
            field.replace("_", "-"), values[field]), chosen, BY_CONTENT[name, field, content])
    else:
        shown = ", ".join("{}={!r}".format(f, values[f]) if keywords else "--{} {}".format(f.replace("_", "-"), values[f])
                          for f in fields)
        expected = "{} (read by {}): building the {} from {} failed (".format(
            shown, chosen, section.replace("bpe", "BPE"), "it" if len(fields) == 1 else "them")
    with pytest.raises(FairseqWeanError) as info:
        if not keywords:
            parse(entry, ["--" + section, name] + [a for f in fields for a in ("--" + f.replace("_", "-"), values[f])],
                  tmp_path)
        elif entry == "hub keywords":  # the checkpoint is no pickle: reading it would be another error
            folder = model_folder(tiny, tmp_path)
            (folder / "checkpoint_best.pt").write_bytes(b"never read: the refusal comes first")
            monkeypatch.setattr(nothing_loaded, "load_model_ensemble_and_task", _never_loaded)
            load(tiny, folder, **{section: name}, **values)
        else:  # the checkpoint names the component; the file given as a keyword
            load(tiny, model_folder(tiny, tmp_path, {section: {"_name": name}}), **values)
    message = str(info.value)
    assert message.startswith(("from_pretrained: " if keywords else "") + expected), message
    assert "\n" not in message and message.endswith("refused before any work")
    if not missing and (name, field, content) not in BY_CONTENT:  # the component's own first error line
        assert own_failure(section, name, values).strip() in message, message
    assert bad.read_bytes() == CONTENTS[content]


def _never_loaded(*args, **kwargs):
    raise AssertionError("the checkpoint was loaded: the check came too late")


@pytest.mark.parametrize("command", ["generate", "interactive", "train"])
@pytest.mark.parametrize("section,name", NO_DATACLASS)
def test_a_component_without_a_dataclass_is_refused_on_fairseqs_command_line(tmp_path, command, section, name):
    """fairseq 0.12 composes a command's configuration from each component's dataclass: ``--bpe characters`` was
    hydra's MissingConfigException traceback (fairseq's own limitation, also without the plugin)."""
    with pytest.raises(FairseqWeanError) as info:
        parse(command, ["--" + section, name], tmp_path)
    assert str(info.value) == (
        "--{s} {n} cannot be given on fairseq's command line: fairseq 0.12 composes the command's configuration from "
        "a {S}'s dataclass and {n} is registered without one (hydra: Could not load {s}/{n}); the hub builds it "
        "(from_pretrained(..., {s}={n!r})): refused before any work".format(s=section, n=name,
                                                                             S=section.replace("bpe", "BPE")))


@pytest.mark.parametrize("route", ["keyword", "stored"])
@pytest.mark.parametrize("section,name", NO_DATACLASS)
def test_a_component_without_a_dataclass_works_in_the_hub(tiny, tmp_path, section, name, route):
    """``from_pretrained(bpe='characters')`` was a TypeError in the plugin's own check (vars() of a string): now
    the component is checked as any other, here against the model's dictionary: on this word model its decode would
    join every output line's words (test_bpe_fit), one line naming it (its build on a model of characters:
    test_bpe_fit.test_every_bpe_against_every_dictionary_form)."""
    with pytest.raises(FairseqWeanError, match=r"^from_pretrained: bpe='{}' cannot decode the model's .*, of words "
                       r"\(e\.g\. .*drop bpe='{}'; refused before any work$".format(name, name)):
        if route == "keyword":
            load(tiny, model_folder(tiny, tmp_path), **{section: name})
        else:  # fairseq stores the name itself for such a component
            load(tiny, model_folder(tiny, tmp_path, {section: name}))


@pytest.mark.parametrize("kwargs,stored,expected", [
    ({"bpe": "space"}, None, "from_pretrained: bpe='space' is no registered BPE (registered: {bpe}); it is a "
                             "tokenizer: give tokenizer='space': refused before any work"),
    ({"tokenizer": "nosuch"}, None, "from_pretrained: tokenizer='nosuch' is no registered tokenizer (registered: "
                                    "{tokenizer}): refused before any work"),
    ({}, {"bpe": {"_name": "nosuch_bpe"}}, "from_pretrained: the checkpoint's bpe='nosuch_bpe' is no registered BPE "
                                           "(registered: {bpe}): refused before any work"),
])
def test_an_unknown_component_name_is_one_line(tiny, tmp_path, nothing_loaded, kwargs, stored, expected):
    with pytest.raises(FairseqWeanError) as info:
        load(tiny, model_folder(tiny, tmp_path, stored), **kwargs)
    assert str(info.value) == expected.format(**{s: ", ".join(sorted(T.registered(s))) for s in T.SECTIONS})


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_tokenizer_whose_data_is_missing_is_one_line(tiny, tmp_path, nothing_loaded, monkeypatch, entry):
    """nltk installed without its punkt data: NLTK's multi-line LookupError at the first sentence, after the model."""
    import nltk.tokenize

    def word_tokenize(text):
        raise LookupError("\n" + "*" * 70 + "\n  Resource \x1b[93mpunkt\x1b[0m not found.\n  Please use the NLTK "
                          "Downloader to obtain the resource:\n")

    monkeypatch.setattr(nltk.tokenize, "word_tokenize", word_tokenize)
    with pytest.raises(FairseqWeanError) as info:
        if entry == "hub keywords":
            load(tiny, model_folder(tiny, tmp_path), tokenizer="nltk")
        elif entry == "hub stored":
            load(tiny, model_folder(tiny, tmp_path, {"tokenizer": {"_name": "nltk"}}))
        else:
            parse(entry, ["--tokenizer", "nltk"], tmp_path)
    chosen = {"hub keywords": "from_pretrained: tokenizer='nltk'", "hub stored":
              "from_pretrained: the checkpoint's tokenizer='nltk'"}.get(entry, "--tokenizer nltk")
    assert str(info.value) == chosen + (" cannot be used: building it and encoding a sentence failed (LookupError: "
                                        "Resource punkt not found.); refused before any work")


def unset_shared_fields():
    """(section, name, field) of every component field fairseq fills from a command option that may be unset."""
    import dataclasses

    found = []
    for section in T.SECTIONS:
        for name, config in sorted(T.registered(section).items()):
            paths = T.path_fields(config)
            found += [(section, name, f.name) for f in (dataclasses.fields(config) if config else ())
                      if f.name != "_name" and f not in paths and not T._optional(f)]
    return found


def test_the_fields_fairseq_fills_from_command_options_are_known():
    assert [(s, n, f) for s, n, f in unset_shared_fields() if f.endswith("_lang")] == [
        ("tokenizer", "moses", "source_lang"), ("tokenizer", "moses", "target_lang")]


@pytest.mark.parametrize("command", ["generate", "interactive"])
def test_moses_without_its_languages_is_one_line(tmp_path, command):
    """fairseq-generate/-interactive --tokenizer moses without -s/-t: hydra's ConfigCompositionException
    (``Error merging override tokenizer.source_lang=null``); with them it works."""
    with pytest.raises(FairseqWeanError) as info:
        parse(command, ["--tokenizer", "moses"], tmp_path)
    assert str(info.value) == (
        "--tokenizer moses needs --source-lang and --target-lang given: fairseq passes the command's own to it and "
        "cannot compose its configuration while unset (it does not take them from the data folder): refused before "
        "any work")
    assert parse(command, ["--tokenizer", "moses", "-s", "src", "-t", "tgt"], tmp_path).tokenizer == "moses"


def test_the_url_options_are_the_ones_fairseq_downloads():
    import ast
    import inspect
    import sys

    from fairseq import file_utils

    found = {(s, n): T.download_fields(component_class(s, n)) for s in T.SECTIONS for n in T.registered(s)}
    assert {k: v for k, v in found.items() if v} == {
        ("bpe", "byte_bpe"): ["sentencepiece_model_path"], ("bpe", "fastbpe"): ["bpe_codes"],
        ("bpe", "gpt2"): ["gpt2_encoder_json", "gpt2_vocab_bpe"], ("bpe", "hf_byte_bpe"): ["bpe_merges", "bpe_vocab"],
        ("bpe", "sentencepiece"): ["sentencepiece_model"], ("bpe", "subword_nmt"): ["bpe_codes"]}
    imported = set()  # the packages fairseq's file_utils imports to download: each is some scheme's
    for function in ast.walk(ast.parse(inspect.getsource(file_utils))):
        for node in ast.walk(function) if isinstance(function, ast.FunctionDef) else ():
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                imported.update(n.split(".")[0] for n in names)
    assert imported - set(sys.stdlib_module_names) - {"fairseq"} == {p for ps in T.SCHEME_PACKAGES.values() for p in ps}


@pytest.mark.parametrize("section,name,field", [o for o in FILE_OPTIONS if not T.missing_packages(
    component_class(*o[:2]))])
@pytest.mark.parametrize("url", ["http://127.0.0.1:9/x", "file:///nosuch/x", "ftp://host/x"])
@pytest.mark.parametrize("requests", ["installed", "missing"])
def test_a_url_is_accepted_only_where_fairseq_downloads_it(monkeypatch, tmp_path, section, name, field, url,
                                                           requests):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: (None if requests == "missing" else real("json"))
                        if n in ("requests", "tqdm") else real(n, *a))
    monkeypatch.setattr(T, "build_problem", lambda *a: pytest.fail("built: fairseq would download the URL"))
    good = tmp_path / "good"
    good.write_text("x\n")
    fields = [f.name for f in T.path_fields(T.registered(section)[name])]
    values = dict({f: str(good) for f in fields}, **{field: url})
    downloads = field in T.download_fields(component_class(section, name))
    args = argparse.Namespace(**{section: name}, **values)
    shown = "--{} {} (read by --{} {}): ".format(field.replace("_", "-"), url, section, name)
    if not downloads:
        expected = shown + "no such file; refused before any work"
    elif not url.startswith("http"):
        expected = shown + ("a {}:// URL, which fairseq does not download (it fetches only http://, https://, s3:// "
                            "URLs): give the file's path; refused before any work".format(url.split(":")[0]))
    elif requests == "missing":
        expected = shown + ("fairseq downloads it with the Python package requests, which is not installed (pip "
                            "install requests; or give the file's path): refused before any work")
    else:
        assert T.tokenizer_files_problem(args) is None  # fairseq downloads it when it builds the component
        return
    with pytest.raises(FairseqWeanError) as info:
        T.tokenizer_files_problem(args)
    assert str(info.value) == expected


def test_a_build_is_cached_and_leaves_no_trace(tmp_path, monkeypatch):
    from fairseq.data import encoders

    from fairseq_wean import unk_replacement

    calls = []
    real = encoders.build_bpe
    monkeypatch.setattr(encoders, "build_bpe", lambda cfg: calls.append(cfg) or real(cfg))
    dictionary = tmp_path / "dict.txt"
    dictionary.write_text("w1 3\nw2 2\n")
    before = dict(unk_replacement._STATE)
    for _ in range(2):
        assert T.tokenizer_files_problem(argparse.Namespace(bpe="unk_markers", unk_markers_dict=str(dictionary))) is None
    assert len(calls) == 1 and unk_replacement._STATE == before
    dictionary.write_text("not a dictionary\n")  # another file under the same name is built again
    with pytest.raises(FairseqWeanError, match=r"building the BPE from it failed \(dictionary "):
        T.tokenizer_files_problem(argparse.Namespace(bpe="unk_markers", unk_markers_dict=str(dictionary)))
    assert len(calls) == 2


@pytest.mark.parametrize("tool,argv,expected", [
    ("fairseq-generate", ["--bpe", "sentencepiece", "--sentencepiece-model", "{empty}"],
     "--sentencepiece-model {empty} (read by --bpe sentencepiece): building the BPE from it failed (RuntimeError: "),
    ("fairseq-interactive", ["--bpe", "characters"], "--bpe characters cannot be given on fairseq's command line: "),
    ("fairseq-interactive", ["--tokenizer", "moses"], "--tokenizer moses needs --source-lang and --target-lang given: "),
])
def test_the_real_commands_refuse_before_loading_the_model(data_bin, tmp_path, tool, argv, expected):
    """C13/C22 (a traceback after the model and the batches), C75 (hydra's traceback), C106: the checkpoint is never
    looked at (it does not exist)."""
    from conftest import cli

    empty = tmp_path / "empty.model"
    empty.write_bytes(b"")
    proc = cli(tool, data_bin, "--user-dir", USER_DIR, "--cpu", "--path", tmp_path / "never.pt",
               *[a.format(empty=empty) for a in argv], check=False, input="w1 w2\n")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and last.startswith("fairseq-wean: error: " + expected.format(empty=empty)), proc.stderr
    assert last.endswith("refused before any work") and "Traceback" not in proc.stderr and not proc.stdout.strip()


@pytest.mark.parametrize("route", ["a path object", "the folder's file"])
def test_the_hubs_other_routes_to_a_file_are_built_before_loading(tiny, tmp_path, nothing_loaded, monkeypatch, route):
    """C97: ``bpe_codes=pathlib.Path(...)`` skipped the check; C35: the folder's ``bpecodes`` (fairseq's hub passes it
    as bpe_codes) was read only after the model was loaded: UnicodeDecodeError tracebacks."""
    folder = model_folder(tiny, tmp_path)
    (folder / "checkpoint_best.pt").write_bytes(b"never read: the refusal comes first")
    monkeypatch.setattr(nothing_loaded, "load_model_ensemble_and_task", _never_loaded)
    codes = folder / "bpecodes" if route == "the folder's file" else tmp_path / "codes"
    codes.write_bytes(CONTENTS["not UTF-8"])
    with pytest.raises(FairseqWeanError) as info:
        load(tiny, folder, bpe="subword_nmt", **({} if route == "the folder's file" else {"bpe_codes": codes}))
    assert str(info.value) == ("from_pretrained: bpe_codes={!r} (read by bpe='subword_nmt'): building the BPE from it "
                               "failed (UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 3: "
                               "invalid start byte); refused before any work".format(str(codes)))
