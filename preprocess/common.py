"""Helpers shared by the ``preprocess.prepare_*`` recipes.

Every recipe reads the raw benchmark files from a data directory (default ``../shared/data``
relative to the repository, or ``$FAIRSEQ_WEAN_DATA``), writes plain tokenized text under
``OUT/text/`` and one fairseq-binarized directory per vocabulary variant (``OUT/word``,
``OUT/spm``, ``OUT/char``, ``OUT/bpe``), plus ``OUT/recipe.json`` describing what each fairseq
subset holds and where its references are. Nothing is written into the repository.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.environ.get("FAIRSEQ_WEAN_DATA", os.path.join(REPO, "..", "shared", "data"))

# fairseq's own marker for the word boundary of sentencepiece pieces; ``--post-process
# sentencepiece`` turns "▁ a b ▁ c" back into "ab c", which is also how we undo characters.
WORD_BOUNDARY = "\u2581"


class RecipeError(Exception):
    """Missing input data or a bad option: the message says what to do."""


def base_parser(description, default_out):
    """The options every recipe has; each number is range-checked by argparse (one line, before any work)."""
    from fairseq_wean.cli.options import quantity
    from fairseq_wean.errors import at_least  # here: importing this module stays cheap

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                   help="raw benchmark data directory (default: ../shared/data next to the repository, "
                        "or $FAIRSEQ_WEAN_DATA)")
    p.add_argument("--out", default=default_out, help="output directory (created)")
    p.add_argument("--max-sentences", type=at_least(1), default=None, metavar="N",
                   help="subsample: at most N training pairs (a fixed random sample)")
    p.add_argument("--max-eval", type=at_least(1), default=None, metavar="N",
                   help="subsample: at most N sentences in every valid/test set (the first N)")
    p.add_argument("--tiny", action="store_true",
                   help="CI size: --max-sentences 300 --max-eval 12 unless given")
    p.add_argument("--workers", type=quantity("threads"), default=1, help="fairseq-preprocess --workers")
    p.add_argument("--seed", type=quantity("seed"), default=1, help="seed of every random choice")
    p.add_argument("--force", action="store_true", help="redo even if OUT/recipe.json exists")
    return p


def parse(parser, argv):
    """Parse a recipe's command line: every option once (``fairseq_wean.cli.options.once``: a second
    occurrence is argparse's usage error); ``args.given_options``: the options the command line named."""
    from fairseq_wean.cli import options

    args = options.once(parser).parse_args(argv)
    args.given_options = options.given(parser, args)
    return args


NOT_RECORDED = ("out", "force", "workers", "given_options")  # options that do not change what a recipe writes


def recorded_options(args):
    """What ``recipe.json`` records of the options (``"options"``): every option that changes what the recipe
    writes, as it was in effect (``--tiny``'s sizes filled in, paths absolute)."""
    paths = ("data_dir", "sumdata", "raw", "bpe_codes")
    return {k: (os.path.abspath(v) if k in paths and v else v) for k, v in sorted(vars(args).items())
            if k not in NOT_RECORDED}


def prepared(out, args, name):
    """The recipe already in ``out`` (None when there is none, or with ``--force``). A recipe prepared
    with other options than these is refused in one line naming them (rerunning would silently keep the
    old data); checks the folder first (:func:`done`), before any work."""
    from fairseq_wean.errors import FairseqWeanError

    if not done(out) or args.force:
        return None
    recipe = load_recipe(out)
    old, new = recipe.get("options"), recorded_options(args)
    if old is None:
        log("{} data already prepared in {} (its options are not recorded: --force to redo)".format(name, out))
        return recipe
    differ = ["--{}: {} there, {} here".format(k.replace("_", "-"), json.dumps(old.get(k)), json.dumps(new.get(k)))
              for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if differ:
        raise FairseqWeanError("--out {} holds {} data prepared with other options ({}): give --force to prepare it "
                               "again with these, or another --out".format(out, name, "; ".join(differ)))
    log("{} data already prepared in {} (--force to redo)".format(name, out))
    return recipe


def note_sample(args, n, what="training pairs"):
    """One log line when ``--max-sentences`` draws no sample (the data hold at most that many), with
    ``--seed`` given: the seed then chose nothing. Not a refusal: drivers (the comparison runner) pass their
    --seed to every recipe, whatever its data size."""
    if (args.max_sentences is None or n <= args.max_sentences) and (
            args.max_sentences is not None or "--seed" in args.given_options):
        used = "--seed {} chose nothing: ".format(args.seed) if "--seed" in args.given_options else ""
        bound = " (--max-sentences {})".format(args.max_sentences) if args.max_sentences is not None else ""
        log("{}all {} {} are used, no sample is drawn{}".format(used, n, what, bound))


def variant_list(choices):
    """An argparse ``type`` for ``--variants``: a comma list of vocabulary variants from ``choices``,
    each once. An empty item, an unknown variant or one named twice is argparse's one-line usage
    error before any work (an unknown one failed in build_variants, after the text was prepared).
    Returns the list as given, comma-joined (what the recipes split)."""

    def parse(text):
        items = text.split(",")
        if not text.strip() or any(not item.strip() for item in items):
            raise argparse.ArgumentTypeError("expected a comma list of variants from {}, got {!r}".format(
                ",".join(choices), text))
        unknown = [item for item in items if item not in choices]
        if unknown:
            raise argparse.ArgumentTypeError("unknown vocabulary variant(s) {}: choose from {}".format(
                ",".join(unknown), ",".join(choices)))
        twice = sorted({item for item in items if items.count(item) > 1})
        if twice:
            raise argparse.ArgumentTypeError("{} named twice: each variant once".format(",".join(twice)))
        return ",".join(items)

    parse.__name__ = "variant list"
    return parse


# options of some vocabulary variants (argparse dest -> the variants they act on, their default): given
# without one of those variants in --variants, they would do nothing, and are refused
VARIANT_OPTIONS = {"threshold": (("word", "word-pg"), 2), "word_threshold": (("word", "word-pg"), 2),
                   "spm_vocab": (("spm",), 8000), "bpe_merges": (("bpe",), 10000), "bpe_codes": (("bpe",), None)}


def check_variant_options(parser, args):
    """Refuse (an argparse usage error, before any work) a :data:`VARIANT_OPTIONS` option given without a
    variant it acts on, and ``--bpe-merges`` with ``--bpe-codes`` (the codes are applied, no merges
    learned); then fill in the defaults (the parsers declare these options with default None)."""
    variants = args.variants.split(",")
    given = {dest for dest in VARIANT_OPTIONS if getattr(args, dest, None) is not None}
    for dest in sorted(given):
        acting = VARIANT_OPTIONS[dest][0]
        if not set(acting) & set(variants):
            parser.error("--{} acts on the {} variant(s), and --variants {} builds none of them: it would do "
                         "nothing; drop it, or add {} to --variants".format(
                             dest.replace("_", "-"), "/".join(acting), args.variants, acting[0]))
    if {"bpe_codes", "bpe_merges"} <= given:
        parser.error("--bpe-merges does nothing with --bpe-codes (the codes given are applied, no merges are "
                     "learned): drop one of them")
    for dest, (_, default) in VARIANT_OPTIONS.items():
        if hasattr(args, dest) and dest not in given:
            setattr(args, dest, default)
    return args


def apply_tiny(args, max_sentences=300, max_eval=12):
    if args.tiny:
        if args.max_sentences is None:
            args.max_sentences = max_sentences
        if args.max_eval is None:
            args.max_eval = max_eval
    return args


def log(msg):
    print("[{}] {}".format(time.strftime("%H:%M:%S"), msg), flush=True)


def require(path, url_hint):
    if not os.path.exists(path):
        raise RecipeError("missing {}. Get it from {} (see docs/data.md, 'Data and recipes').".format(path, url_hint))
    return path


def data_dir_or(parser, args, option):
    """``--data-dir`` given with ``option`` (``--sumdata``, ``--raw``: the data come from there) is a usage error
    (it would be read by nothing, and recorded as the data's source); with ``option``, ``args.data_dir`` is None."""
    if getattr(args, option.lstrip("-").replace("-", "_")):
        if "--data-dir" in args.given_options:
            parser.error("--data-dir is not read with {} (the data come from {} DIR): drop one of them".format(
                option, option))
        args.data_dir = None  # not read: neither recorded


def read_complete_lines(path, folder=None, what="data file"):
    """The lines of ``path`` through ``fairseq_wean.textio.read_lines`` with ``complete=True`` and ``strict=True``:
    with ``folder``, a file found in that folder (``textio.open_in_folder``: a symbolic link, a pipe, a folder or a
    hard link refused in one line); without, a file the user named. Not UTF-8, a last line with no newline (a cut
    file: an interrupted download or copy), or a ``\\r`` inside a line (a line break to fairseq-preprocess, not
    here): one line naming the file; the other line separators of Unicode become a space (whitespace to fairseq),
    so every reader of the text written from these lines counts the lines counted here."""
    from fairseq_wean import textio

    return textio.read_lines(path, what, folder=folder, complete=True, strict=True)


class RawData:
    """The raw benchmark files a recipe reads from its data folder (--data-dir, --sumdata, --raw), all read
    before any work, each through :func:`read_complete_lines` (the one reader of found data files): first
    every file must be there, then each is read (a regular file of the folder, complete), then every group of
    parallel files (one line per example each) must have equal line counts and no empty line (an empty source
    or reference: fairseq-preprocess would binarize it as a lone </s>, trained on or scored silently)."""

    def __init__(self, folder, files, groups=()):
        """``files``: {path: where to get it}, every file the recipe will read; ``groups``: tuples of paths."""
        self.folder, self.files = folder, set(files)
        for path, url in files.items():
            require(path, url)
        self._lines = {path: read_complete_lines(path, folder) for path in files}
        for group in groups:
            counts = [len(self._lines[p]) for p in group]
            if len(set(counts)) > 1:
                raise RecipeError("parallel files differ in line count: {}".format(
                    ", ".join("{} {}".format(p, n) for p, n in zip(group, counts))))
            for path in group:
                empty = next((n for n, line in enumerate(self._lines[path], 1) if not line.strip()), None)
                if empty is not None:
                    raise RecipeError("{} line {} is empty: each of its lines is one example, paired with that line "
                                      "of {}, and an empty one would be binarized as a lone </s> and trained on or "
                                      "scored; remove the line from each of these files, or give it its text".format(
                                          path, empty, ", ".join(p for p in group if p != path)))

    def lines(self, path, strip=True):
        lines = self._lines[path]
        return [l.strip() for l in lines] if strip else list(lines)


def read_lines(path, strip=True):
    """The lines of a file the recipes wrote themselves (OUT/text); raw data: :class:`RawData`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l.strip() for l in lines] if strip else lines


def write_lines(path, lines):
    """Write ``lines`` to ``path`` through ``textio.atomic_output``: a new file renamed over the old
    one on success, so a planted link in --out is replaced, never written through, and a device or
    pipe there is refused in one line."""
    from fairseq_wean.textio import atomic_output

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_output(path, (), os.path.basename(path)) as f:
        for line in lines:
            if "\n" in line:
                raise ValueError("line with a newline inside, for {}".format(path))
            f.write(line + "\n")


def clear_for_tool(path):
    """Remove ``path`` when it is anything but a regular file or a folder (a planted link, pipe or
    device), before an outside tool (sentencepiece, fairseq-preprocess) writes it with a plain open."""
    from fairseq_wean import textio

    if textio.node_kind(path) in (textio.LINK, textio.NODE):
        os.unlink(path)


def sample_indices(n, k, seed):
    """A fixed random subset of range(n) of size k, in original order."""
    if k is None or k >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), k))


class MosesLowercaser:
    """Moses tokenization (sacremoses, no XML escaping) + lowercasing + PTB bracket tokens.

    TurkCorpus is PTB-tokenized and lowercased with brackets written ``-lrb-``/``-rrb-``; on
    the 2000 ASSET sources (= TurkCorpus tune sources) this reproduces TurkCorpus's tokenization
    exactly for 1923 sentences (the rest differ in ``u.s.``-style abbreviations and quotes).
    """

    BRACKETS = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}

    def __init__(self, lang="en", ptb_brackets=True):
        from sacremoses import MosesTokenizer

        self.tok = MosesTokenizer(lang=lang)
        self.ptb_brackets = ptb_brackets

    def __call__(self, text):
        toks = self.tok.tokenize(text.strip(), escape=False)
        if self.ptb_brackets:
            toks = [self.BRACKETS.get(t, t) for t in toks]
        return " ".join(toks).lower()


def to_chars(line):
    """'the cat' -> 't h e ▁ c a t' (undone by fairseq's --post-process sentencepiece)."""
    words = line.split()
    return (" " + WORD_BOUNDARY + " ").join(" ".join(w) for w in words)


def from_chars(line):
    return line.replace(" ", "").replace(WORD_BOUNDARY, " ").strip()


def bin_path(name):
    """A console script of this Python environment (fairseq-preprocess, ...)."""
    exe = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(exe):
        return exe
    found = shutil.which(name)
    if not found:
        raise RecipeError("{} not found: install fairseq (pip install -e .)".format(name))
    return found


def run(cmd, log_path=None, quiet=True):
    """Run a command; on failure show its output tail and raise."""
    cmd = [str(c) for c in cmd]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if log_path:
        from fairseq_wean.textio import open_in_folder

        with open_in_folder(log_path, "a+", what="log") as f:
            f.write("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RecipeError("command failed ({}): {}\n{}\n{}".format(
            proc.returncode, " ".join(cmd), proc.stdout[-2000:], proc.stderr[-4000:]))
    if not quiet:
        print(proc.stdout, end="")
    return proc


def fairseq_preprocess(text_dir, dest, src, tgt, train, valid, test, threshold=0, joined=True,
                       workers=1, srcdict=None, extra=()):
    """fairseq-preprocess TEXT_DIR/{train}.{src,tgt} etc. into DEST (valid/test: lists of prefixes).

    Several valid/test prefixes become fairseq subsets valid, valid1, ... and test, test1, ...
    """
    clear_for_tool(dest)  # a planted link to a folder elsewhere: removed, never emptied
    if os.path.isdir(dest):  # fairseq-preprocess refuses to overwrite a dictionary
        shutil.rmtree(dest)
    os.makedirs(dest)
    pref = lambda names: ",".join(os.path.join(text_dir, n) for n in names)  # noqa: E731
    argv = ["--user-dir", os.path.join(REPO, "fairseq_wean"),
            "--source-lang", src, "--target-lang", tgt,
            "--trainpref", os.path.join(text_dir, train), "--validpref", pref(valid),
            "--destdir", dest, "--workers", workers]
    if test:
        argv += ["--testpref", pref(test)]
    if srcdict:
        argv += ["--srcdict", srcdict]
    if joined:
        argv.append("--joined-dictionary")
    if threshold:
        argv += ["--thresholdsrc", threshold, "--thresholdtgt", threshold]
    argv = [str(a) for a in argv + list(extra)]
    # fairseq-preprocess, in-process: one import of fairseq for all variants of a recipe. Its log
    # goes to DEST/preprocess.log only (as the command writes it there too).
    from fairseq import options
    from fairseq_cli import preprocess as fairseq_cli_preprocess

    logger = fairseq_cli_preprocess.logger
    handlers, propagate = list(logger.handlers), logger.propagate
    logger.propagate = False
    try:
        fairseq_cli_preprocess.main(options.get_preprocessing_parser().parse_args(argv))
    except (Exception, SystemExit) as e:
        raise RecipeError("fairseq-preprocess {} failed: {!r} (log: {})".format(
            " ".join(argv), e, os.path.join(dest, "preprocess.log")))
    finally:
        for h in logger.handlers[len(handlers):]:
            logger.removeHandler(h)
            h.close()
        logger.propagate = propagate
    return dest


def subset_names(prefixes, split):
    """fairseq's subset names for --validpref/--testpref a,b,c: valid, valid1, valid2."""
    return {name: split + ("" if i == 0 else str(i)) for i, name in enumerate(prefixes)}


def train_sentencepiece(inputs, model_prefix, vocab_size, model_type="unigram"):
    import sentencepiece as spm

    for ext in (".model", ".vocab"):  # sentencepiece writes them with a plain open
        clear_for_tool(model_prefix + ext)
    spm.SentencePieceTrainer.train(
        input=",".join(inputs), model_prefix=model_prefix, vocab_size=vocab_size,
        model_type=model_type, character_coverage=1.0, input_sentence_size=1000000,
        shuffle_input_sentence=False, seed_sentencepiece_size=1000000,
        hard_vocab_limit=False, minloglevel=2,
        # fairseq adds its own <s> <pad> </s> <unk>; keep ids but they never appear in text
        bos_id=-1, eos_id=-1, unk_id=0, pad_id=-1,
    )
    return model_prefix + ".model"


def encode_sentencepiece(model, src_path, dest_path):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=model)
    lines = read_lines(src_path)
    write_lines(dest_path, (" ".join(sp.encode(l, out_type=str)) for l in lines))


VARIANTS = ("word", "word-pg", "spm", "char", "bpe")


def _split_files(prefixes, src, tgt):
    names = [prefixes["train"]] + list(prefixes["valid"]) + list(prefixes.get("test") or [])
    return ["{}.{}".format(n, lang) for n in names for lang in (src, tgt)]


def _map_files(text_dir, dest_dir, files, fn):
    os.makedirs(dest_dir, exist_ok=True)
    for f in files:
        write_lines(os.path.join(dest_dir, f), (fn(l) for l in read_lines(os.path.join(text_dir, f))))


def build_variants(out, text_dir, src, tgt, prefixes, variants, threshold=2, spm_vocab=8000, bpe_codes=None,
                   bpe_merges=10000, workers=1, small=False):
    """Binarize the tokenized text of TEXT_DIR in every vocabulary variant; returns recipe entries.

    All variants share one joined source/target dictionary (wean_lstm, core_copy: one embedding
    matrix) and the subsets of ``prefixes`` (fairseq: train, valid, valid1, ..., test, test1, ...).

    * ``word``: words; fairseq-preprocess --thresholdsrc/--thresholdtgt THRESHOLD: rarer words are
      ``<unk>``. Outputs are scored as they are, and after attention-based UNK replacement.
    * ``word-pg``: the same vocabulary, rarer words replaced by source-position markers ``<unk-N>``
      (:mod:`preprocess.unk_markers`, fairseq's pointer-generator recipe; core_copy's way of
      copying unseen words); outputs are mapped back to words before scoring.
    * ``spm``: a sentencepiece unigram model of SPM_VOCAB pieces trained on the training text;
      fairseq-generate --post-process sentencepiece gives back the tokenized words.
    * ``char``: characters with ``▁`` between words (undone by --post-process sentencepiece).
    * ``bpe``: subword-nmt BPE: BPE_CODES if given, else BPE_MERGES joint merges learned on the
      training text; undone by --post-process subword_nmt. ``bpe_codes``: the lines of the codes file.
    """
    files = _split_files(prefixes, src, tgt)
    entries = {}
    for variant in variants:
        log("binarizing the {} variant".format(variant))
        dest = os.path.join(out, variant)
        info = {"bin": variant, "post_process": None, "text": os.path.basename(text_dir)}
        vtext = os.path.join(out, variant + "-text")
        srcdict = None
        if variant == "word":
            vtext, thr = text_dir, threshold
            info["unk_replaceable"] = True
        elif variant == "word-pg":
            from preprocess import unk_markers

            train = [os.path.join(text_dir, "{}.{}".format(prefixes["train"], l)) for l in (src, tgt)]
            longest = max(len(l.split()) for f in files if f.endswith("." + src)
                          for l in read_lines(os.path.join(text_dir, f)))
            n_markers = min(longest, 1000)
            vocab = unk_markers.build_vocab(unk_markers.count_words(train), min_count=threshold, markers=n_markers)
            os.makedirs(vtext, exist_ok=True)
            srcdict = os.path.join(vtext, "dict.txt")
            write_lines(srcdict, ("{} {}".format(w, c) for w, c in vocab))
            words = {w for w, _ in vocab}
            for name in {f.rsplit(".", 1)[0] for f in files}:
                s_lines = read_lines(os.path.join(text_dir, "{}.{}".format(name, src)))
                t_lines = read_lines(os.path.join(text_dir, "{}.{}".format(name, tgt)))
                pairs = [unk_markers.encode_pair(a.split(), b.split(), words, n_markers)
                         for a, b in zip(s_lines, t_lines)]
                write_lines(os.path.join(vtext, "{}.{}".format(name, src)), (" ".join(a) for a, _ in pairs))
                write_lines(os.path.join(vtext, "{}.{}".format(name, tgt)), (" ".join(b) for _, b in pairs))
            thr = 0
            info.update(markers=True, unk_replaceable=True)
        elif variant == "spm":
            model = train_sentencepiece(
                [os.path.join(text_dir, "{}.{}".format(prefixes["train"], l)) for l in (src, tgt)],
                os.path.join(out, "spm"), min(spm_vocab, 500) if small else spm_vocab)
            import sentencepiece as spm

            sp = spm.SentencePieceProcessor(model_file=model)
            _map_files(text_dir, vtext, files, lambda l: " ".join(sp.encode(l, out_type=str)))
            thr = 0
            info.update(post_process="sentencepiece", spm_model=os.path.relpath(model, out))
        elif variant == "char":
            _map_files(text_dir, vtext, files, to_chars)
            thr = 0
            info["post_process"] = "sentencepiece"
        elif variant == "bpe":
            from subword_nmt.apply_bpe import BPE

            codes = os.path.join(out, "bpe.codes")
            if bpe_codes is not None:  # the codes' lines, read before any work
                write_lines(codes, bpe_codes)
            else:
                learn_joint_bpe([os.path.join(text_dir, "{}.{}".format(prefixes["train"], l)) for l in (src, tgt)],
                                codes, min(bpe_merges, 500) if small else bpe_merges)
            with open(codes, encoding="utf-8") as f:
                bpe = BPE(f)
            _map_files(text_dir, vtext, files, bpe.process_line)
            thr = 0
            info.update(post_process="subword_nmt", bpe_codes=os.path.relpath(codes, out))
        else:
            raise RecipeError("unknown vocabulary variant {!r}: choose from {}".format(variant, ", ".join(VARIANTS)))
        if vtext != text_dir:
            info["text"] = os.path.basename(vtext)
        fairseq_preprocess(vtext, dest, src, tgt, threshold=thr, workers=workers, srcdict=srcdict, **prefixes)
        entries[variant] = info
    return entries


def check_bpe_codes(lines, path, what="--bpe-codes"):
    """The lines of subword-nmt BPE codes (``apply_bpe.BPE``'s format), checked before any work (subword-nmt
    itself fails only when the codes are applied, after the text was written): an optional first line
    ``#version: X.Y``, then at least one merge, one per line: two subword units separated by one space. A fastBPE
    codes file (``a b COUNT``) is named as such. One line naming the file and line (RecipeError); returns ``lines``."""
    import re

    header = bool(lines) and lines[0].startswith("#version:")
    if header and not re.fullmatch(r"#version:\s+[0-9]+(\.[0-9]+)*\s*", lines[0]):
        raise RecipeError("{} {} line 1 ({!r}) is no subword-nmt version header (#version: 0.2)".format(
            what, path, lines[0]))
    if len(lines) == header:
        raise RecipeError("{} {} holds no merge{}: subword-nmt codes are one merge per line, two subword units "
                          "separated by a space (as subword-nmt learn-bpe writes them)".format(
                              what, path, "" if lines else " (it is empty)"))
    for number, line in enumerate(lines[header:], 1 + header):
        units = line.strip(" ").split(" ")  # as apply_bpe.BPE splits a line
        if len(units) != 2 or not all(units) or line.startswith("#version:") or any(
                c.isspace() for unit in units for c in unit):
            hint = (": these are fastBPE codes (a b COUNT); convert them with python -m preprocess.fastbpe_codes"
                    if len(units) == 3 and units[2].isdigit() else
                    " (subword-nmt codes: an optional #version: header on line 1, then one merge per line)")
            raise RecipeError("{} {} line {} ({!r}) is not a merge of two subword units separated by one "
                              "space{}".format(what, path, number, line, hint))
    return lines


def learn_joint_bpe(inputs, codes_path, merges):
    """subword-nmt learn-bpe on the concatenated inputs (joint source/target BPE, as prepare-iwslt14.sh)."""
    from subword_nmt.learn_bpe import learn_bpe

    import io

    text = io.StringIO("".join(line + "\n" for p in inputs for line in read_complete_lines(p, os.path.dirname(p))))
    from fairseq_wean.textio import atomic_output

    with atomic_output(codes_path, inputs, os.path.basename(codes_path)) as out:
        learn_bpe(text, out, merges)
    return codes_path


def unk_rate(dict_path, text_path):
    """Fraction of running tokens of a text file absent from a fairseq dictionary."""
    from fairseq_wean.data.dictionary import dictionary_words  # here: this module stays cheap to import

    vocab = set(dictionary_words(dict_path, "dictionary"))
    total = unk = 0
    for line in read_lines(text_path):
        for w in line.split():
            total += 1
            unk += w not in vocab
    return unk / max(total, 1)


def check_out_folder(out):
    """Refuse, in one line before any work, an --out that is not a folder, or one that holds a named
    pipe, a device, a socket (what the recipe writes there would be refused half-way) or a symbolic
    link to a folder (the recipe would write into it); a planted link to a file is replaced by the
    recipe's atomic writes, never written through."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    if os.path.lexists(out) and not os.path.isdir(out):
        raise FairseqWeanError("--out {} is not a folder: give a folder path".format(out))
    for root, dirs, files in os.walk(out):  # links to folders are not followed
        for name in dirs + files:
            path = os.path.join(root, name)
            kind = textio.node_kind(path)
            if kind == textio.LINK and os.path.isdir(path):
                raise FairseqWeanError("--out {} holds {}, a symbolic link to the folder {}: the recipe would write "
                                       "there; remove the link".format(out, path, os.path.realpath(path)))
            if kind == textio.NODE:
                raise FairseqWeanError("--out {} holds {}, which is not a regular file (a named pipe, a device "
                                       "or a socket): remove it".format(out, path))


def out_folder(out):
    """``--out`` as an absolute path, checked as given first (``textio.check_resolvable``): a path through a
    missing folder (OUT/nodir/../NAME) is refused in one line, before any work and before anything is made;
    every recipe takes its --out through here."""
    from fairseq_wean import textio

    textio.check_resolvable(out, "--out")
    return os.path.abspath(out)


def done(out):
    """Whether ``out`` holds a finished recipe; first checks the folder (:func:`check_out_folder`),
    which every recipe calls before any work."""
    check_out_folder(out)
    return os.path.lexists(os.path.join(out, "recipe.json"))


def write_recipe(out, recipe, note=""):
    """Write ``recipe.json`` (what examples/compare.py reads) last, so a folder that has one is
    complete; log where it is and return the recipe (each prepare_* main() ends with this)."""
    from fairseq_wean.textio import atomic_output

    with atomic_output(os.path.join(out, "recipe.json"), (), "recipe.json") as f:
        json.dump(recipe, f, indent=2, sort_keys=True)
    log("done: {}{}".format(out, " ({})".format(note) if note else ""))
    return recipe


def load_recipe(out):
    """``OUT/recipe.json``, read only as itself (``textio.open_in_folder``); not JSON: one line."""
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.textio import open_in_folder

    path = os.path.join(out, "recipe.json")
    with open_in_folder(path, "r", out, "recipe.json") as f:
        try:
            recipe = json.load(f)
        except ValueError as e:
            raise FairseqWeanError("{} is not JSON ({}): remove it and prepare the data again".format(path, e))
    if not isinstance(recipe, dict) or not isinstance(recipe.get("variants"), dict):
        raise FairseqWeanError("{} is not a recipe (no variants): remove it and prepare the data again".format(path))
    return recipe


def main_wrapper(fn):
    """Run a recipe's main(); a RecipeError becomes one line on stderr and exit status 1."""
    from fairseq_wean.errors import FairseqWeanError

    try:
        return fn()
    except (RecipeError, FairseqWeanError) as e:
        sys.stderr.write("prepare: error: {}\n".format(e))
        sys.exit(1)
