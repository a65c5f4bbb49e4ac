"""The files and packages of the chosen --bpe / --tokenizer, checked at parse (fairseq_wean/tokenizer_files.py).

Every registered BPE and tokenizer (fairseq's and the plugin's) is classified here: which of its options name
a file (derived: ``tokenizer_files.path_fields``) and which packages it imports lazily (derived:
``required_packages``). A new one, or a new path option, fails :func:`test_every_component_is_classified`.
Each path option of each component naming a missing file, a folder, or a named pipe (a URL is fairseq's to download), each required one
left unset, and each package missing is one line before any work: in the parse-time check, in every fairseq
command's parser, in the real fairseq-interactive and fairseq-generate (before the checkpoint is even looked
at), and in the hub's keywords (before the checkpoint is read).
"""
import argparse
import os

import pytest

import fairseq_wean  # noqa: F401  (registers the plugin's components and the option check)
from conftest import USER_DIR, cli
from fairseq_wean import tokenizer_files as T
from fairseq_wean.errors import FairseqWeanError

# (section, component) -> (its path options, the packages it imports lazily); components with neither are absent
CLASSIFIED = {
    ("bpe", "bert"): (["bpe_vocab_file"], ["transformers"]),
    ("bpe", "byte_bpe"): (["sentencepiece_model_path"], ["sentencepiece"]),
    ("bpe", "fastbpe"): (["bpe_codes"], ["fastBPE"]),
    ("bpe", "gpt2"): (["gpt2_encoder_json", "gpt2_vocab_bpe"], ["regex"]),
    ("bpe", "hf_byte_bpe"): (["bpe_merges", "bpe_vocab"], ["tokenizers"]),
    ("bpe", "sentencepiece"): (["sentencepiece_model"], ["sentencepiece"]),
    ("bpe", "subword_nmt"): (["bpe_codes"], ["subword_nmt"]),
    ("bpe", "unk_markers"): (["unk_markers_dict"], []),
    ("tokenizer", "moses"): ([], ["sacremoses"]),
    ("tokenizer", "nltk"): ([], ["nltk"]),
}


def derived():
    from fairseq.registry import REGISTRIES

    found = {}
    for section in T.SECTIONS:
        for name, config in T.registered(section).items():
            fields = [f.name for f in T.path_fields(config)]
            packages = T.required_packages(REGISTRIES[section]["registry"][name])
            if fields or packages:
                found[(section, name)] = (fields, packages)
    return found


def test_every_component_is_classified():
    assert derived() == CLASSIFIED


PATH_OPTIONS = sorted((section, name, field) for (section, name), (fields, _) in CLASSIFIED.items() for field in fields)
KINDS = {"missing": "no such file", "a folder": "a directory, not a regular file",
         "a named pipe": "not a regular file (a named pipe, a socket or a device)"}


def planted(kind, tmp_path):
    path = tmp_path / "planted"
    if kind == "a folder":
        path.mkdir()
    elif kind == "a named pipe":
        os.mkfifo(path)
    return str(path)


@pytest.fixture
def installed(monkeypatch):
    """Every package present and every file readable by its component (the kind checks alone: fastBPE,
    transformers, tokenizers are not installed here; what the component reads: tests/test_tokenizer_build.py)."""
    monkeypatch.setattr(T, "missing_packages", lambda cls: [])
    monkeypatch.setattr(T, "build_problem", lambda *args: None)
    monkeypatch.setattr(T, "merges_problem", lambda *args, **kwargs: None)  # what a merges file holds: the same


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("section,name,field", PATH_OPTIONS)
def test_a_path_option_naming_no_regular_file_is_one_line(installed, tmp_path, section, name, field, kind):
    value = planted(kind, tmp_path)
    option = "--" + field.replace("_", "-")
    good = tmp_path / "good.file"
    good.write_text("x\n")
    others = {f: str(good) for f in CLASSIFIED[(section, name)][0] if f != field}  # the component's other files
    with pytest.raises(FairseqWeanError) as info:
        T.tokenizer_files_problem(argparse.Namespace(**{section: name, field: value}, **others))
    assert str(info.value) == "{} {} (read by --{} {}): {}; refused before any work".format(
        option, value, section, name, KINDS[kind])
    # the hub's keywords: the same line, named as keywords
    with pytest.raises(FairseqWeanError) as info:
        T.tokenizer_files_problem({section: name, field: value}, keywords=True, unset_ok=True)
    assert str(info.value).startswith("from_pretrained: {}={!r} (read by {}={!r}): {}".format(
        field, value, section, name, KINDS[kind]))
    assert (tmp_path / "planted").exists() or kind == "missing"


@pytest.mark.parametrize("section,name,field", PATH_OPTIONS)
def test_a_regular_file_passes_and_a_required_one_left_unset_is_named(installed, tmp_path, section, name, field):
    from fairseq.registry import REGISTRIES

    good = tmp_path / "model.file"
    good.write_text("x\n")
    fields = CLASSIFIED[(section, name)][0]
    assert T.tokenizer_files_problem(argparse.Namespace(**{section: name}, **{f: str(good) for f in fields})) is None
    link = tmp_path / "link"
    link.symlink_to(good)  # a path the user names: a link to a file is that file
    assert T.tokenizer_files_problem(argparse.Namespace(**{section: name}, **{f: str(link) for f in fields})) is None
    default = {f.name: f.default for f in T.path_fields(REGISTRIES[section]["dataclass_registry"][name])}[field]
    unset = argparse.Namespace(**{section: name}, **{f: str(good) for f in fields if f != field}, **{field: "???"})
    if default == "???":  # fairseq's required field: its value when the option is not given
        with pytest.raises(FairseqWeanError, match=r"^--{} {} needs --{} FILE \(".format(
                section, name, field.replace("_", "-"))):
            T.tokenizer_files_problem(unset)
        assert T.tokenizer_files_problem(vars(unset), keywords=True, unset_ok=True) is None  # the hub fills it
    else:  # optional (None: the component's own default)
        assert T.tokenizer_files_problem(unset) is None


PACKAGES = sorted((section, name, package) for (section, name), (_, packages) in CLASSIFIED.items()
                  for package in packages)


@pytest.mark.parametrize("section,name,package", PACKAGES)
def test_a_package_that_is_not_installed_is_named(monkeypatch, tmp_path, section, name, package):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == package else real(n, *a))
    missing = tmp_path / "missing"  # the package is named first: without it the file does not matter
    fields = CLASSIFIED[(section, name)][0]
    with pytest.raises(FairseqWeanError) as info:
        T.tokenizer_files_problem(argparse.Namespace(**{section: name}, **{f: str(missing) for f in fields}))
    assert str(info.value) == ("--{} {} needs the Python package {}, which is not installed (pip install {}): "
                               "refused before any work".format(section, name, package, package))


def test_fastbpe_is_refused_where_it_is_not_installed():
    import importlib.util

    if importlib.util.find_spec("fastBPE") is not None:
        pytest.skip("fastBPE is installed here")
    with pytest.raises(FairseqWeanError, match=r"^from_pretrained: bpe='fastbpe' needs the Python package fastBPE"):
        T.tokenizer_files_problem({"bpe": "fastbpe", "bpe_codes": "c2"}, keywords=True, unset_ok=True)


def parsers():
    from fairseq import options

    return {"train": options.get_training_parser, "generate": options.get_generation_parser,
            "interactive": options.get_interactive_generation_parser, "validate": options.get_validation_parser,
            "eval_lm": options.get_eval_lm_parser}


@pytest.mark.parametrize("command", sorted(parsers()))
@pytest.mark.parametrize("argv,expected", [
    (["--bpe", "sentencepiece", "--sentencepiece-model", "{tmp}/nosuch.model"],
     "--sentencepiece-model {tmp}/nosuch.model (read by --bpe sentencepiece): no such file"),
    (["--bpe", "subword_nmt", "--bpe-codes", "{tmp}"], "--bpe-codes {tmp} (read by --bpe subword_nmt): a directory"),
    (["--bpe", "sentencepiece"], "--bpe sentencepiece needs --sentencepiece-model FILE"),
    (["--bpe", "unk_markers", "--unk-markers-dict", "{tmp}/nosuch.txt"],
     "--unk-markers-dict {tmp}/nosuch.txt (read by --bpe unk_markers): no such file"),
])
def test_every_fairseq_parser_checks_at_parse(tmp_path, command, argv, expected):
    from fairseq import options

    parser = parsers()[command]()
    args = [str(tmp_path), "--user-dir", USER_DIR, "--path", str(tmp_path / "never.pt")] + [
        a.format(tmp=tmp_path) for a in argv]
    if command == "validate":
        args += ["--task", "translation"]
    if command == "train":
        args = [a for a in args if a not in ("--path", str(tmp_path / "never.pt"))] + ["--arch", "lstm"]
    with pytest.raises(FairseqWeanError) as info:
        options.parse_args_and_arch(parser, args)
    assert str(info.value).startswith(expected.format(tmp=tmp_path)), str(info.value)


@pytest.mark.parametrize("tool,argv,expected", [
    ("fairseq-interactive", ["--bpe", "sentencepiece", "--sentencepiece-model", "nosuch.model"],
     "--sentencepiece-model nosuch.model (read by --bpe sentencepiece): no such file"),
    ("fairseq-interactive", ["--bpe", "sentencepiece", "--sentencepiece-model", "{data}"],
     "--sentencepiece-model {data} (read by --bpe sentencepiece): a directory, not a regular file"),
    ("fairseq-generate", ["--bpe", "fastbpe", "--bpe-codes", "nosuch.codes"], "--bpe fastbpe needs the Python package "
                                                                             "fastBPE"),
])
def test_the_real_commands_refuse_before_loading_the_model(data_bin, tmp_path, tool, argv, expected):
    """B47, B48, B49: tracebacks after the model was loaded; here the checkpoint is never looked at."""
    import importlib.util

    if "fastBPE" in expected and importlib.util.find_spec("fastBPE") is not None:
        pytest.skip("fastBPE is installed here")
    never = tmp_path / "never.pt"
    proc = cli(tool, data_bin, "--user-dir", USER_DIR, "--cpu", "--path", never,
               *[a.format(data=data_bin) for a in argv], check=False, input="w1 w2\n")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and last == "fairseq-wean: error: " + expected.format(data=data_bin) + (
        "; refused before any work" if "Python package" not in expected else
        ", which is not installed (pip install fastBPE): refused before any work"), proc.stderr[-2000:]
    assert not proc.stdout.strip() and "Traceback" not in proc.stderr


def hub_folder(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "checkpoint_best.pt").write_bytes(b"never read: the refusal comes first")
    for lang in ("src", "tgt"):
        (folder / "dict.{}.txt".format(lang)).write_text("w1 3\n")
    return folder


@pytest.mark.parametrize("kwargs,expected", [
    (dict(bpe="sentencepiece", sentencepiece_model="nosuch.model"),
     "from_pretrained: sentencepiece_model='nosuch.model' (read by bpe='sentencepiece'): no such file"),
    (dict(sentencepiece_model="nosuch.model"),  # the stored configuration may choose the BPE
     "from_pretrained: sentencepiece_model='nosuch.model' (a file the BPE reads): no such file"),
    (dict(bpe="subword_nmt", bpe_codes="{tmp}"), "from_pretrained: bpe_codes='{tmp}' (read by bpe='subword_nmt'): "
                                                  "a directory"),
    (dict(bpe="fastbpe", bpe_codes="{tmp}"), "from_pretrained: bpe='fastbpe' needs the Python package fastBPE"),
])
def test_the_hubs_keywords_are_checked_before_the_checkpoint_is_read(tmp_path, kwargs, expected):
    """B85, B86: an OSError / ImportError traceback; now one line, the checkpoint never read (it is no pickle)."""
    import importlib.util

    from fairseq_wean.hub import from_pretrained

    if "fastBPE" in expected and importlib.util.find_spec("fastBPE") is not None:
        pytest.skip("fastBPE is installed here")
    folder = hub_folder(tmp_path)
    with pytest.raises(FairseqWeanError) as info:
        from_pretrained(str(folder), **{k: v.format(tmp=tmp_path) for k, v in kwargs.items()})
    assert str(info.value).startswith(expected.format(tmp=tmp_path)) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize("tokenize,refused", [("ja-mecab", "needs the Python package(s)"), ("13a", None),
                                              ("flores101", "needs sacrebleu's sentencepiece model")])
def test_generates_sacrebleu_tokenizer_is_checked_at_parse(tokenize, refused, monkeypatch, tmp_path):
    """fairseq-generate --scoring sacrebleu --sacrebleu-tokenizer X: built by fairseq after the whole test set is
    decoded (a download attempt, a missing package: a traceback then); checked at parse with the scorer's own
    rule (scoring.bleu_checks.sacrebleu_tokenizer_problem)."""
    monkeypatch.setenv("SACREBLEU", str(tmp_path))  # no model kept: flores101 would be downloaded
    args = argparse.Namespace(scoring="sacrebleu", sacrebleu_tokenizer=tokenize)
    if refused is None:
        assert T.tokenizer_files_problem(args) is None
    else:
        with pytest.raises(FairseqWeanError) as info:
            T.tokenizer_files_problem(args)
        assert str(info.value).startswith("--sacrebleu-tokenizer {} ".format(tokenize)) and refused in str(info.value)
        assert str(info.value).endswith("refused before any work")
    # another scorer does not read it
    assert T.tokenizer_files_problem(argparse.Namespace(scoring="bleu", sacrebleu_tokenizer=tokenize)) is None
