"""fairseq's dictionary file (``dict.SRC.txt``, ``WORD COUNT`` lines, optionally flagged
``#fairseq:overwrite``), read without fairseq: the one reader of its words for the console
scripts and the ``preprocess/`` recipes; and :func:`check_entries`, the one check of the content of
every file of keyed lines the project reads (dictionaries, alignment tables, fastBPE codes)."""
import fnmatch
import math
import os

from fairseq_wean.data.folder_files import DICTIONARY_NAMES, check_folder_file, folder_file_problem
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import read_lines

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # what fairseq's Dictionary adds itself, in its order


def check_entries(entries, path, what, kind="entry", counts=True, reserved=(), may_repeat=None):
    """The one check of every file of keyed lines the project reads (dictionaries, alignment tables,
    fastBPE codes): yield ``(line number, key, number)`` back, raising a one-line ``FairseqWeanError``
    naming ``what``, the file and the line for a key listed twice (but on the lines of ``may_repeat``, a
    set of line numbers: fairseq's ``#fairseq:overwrite``), one of ``reserved`` (the symbols fairseq adds
    itself), a number that is not finite (or, with ``counts``, negative; ``None``: no number on the line),
    and for a file with no entry at all."""
    seen = {key: 0 for key in reserved}
    listed = 0
    for lineno, key, number in entries:
        if number is not None and not (math.isfinite(number) and (number >= 0 or not counts)):
            raise FairseqWeanError("{} {} line {}: {} {!r} has the number {!r}, which is not a finite {}".format(
                what, path, lineno, kind, key, number, "count >= 0" if counts else "number"))
        if key in seen and lineno not in (may_repeat or ()):
            if seen[key] == 0:
                raise FairseqWeanError("{} {} line {} lists {!r}, which fairseq adds to every dictionary itself: "
                                       "remove the line".format(what, path, lineno, key))
            flag = "" if may_repeat is None else \
                " (fairseq's '#fairseq:overwrite' flag at the end of the later line keeps it)"
            raise FairseqWeanError("{} {} line {}: {} {!r} is listed twice (lines {} and {}); each is listed "
                                   "once{}".format(what, path, lineno, kind, key, seen[key], lineno, flag))
        seen.setdefault(key, lineno)
        listed += 1
        yield lineno, key, number
    if not listed:
        raise FairseqWeanError("{} {}: no {} in the file (it is empty)".format(what, path, kind))


def dictionary_entries(path, what="--dict"):
    """``[(line number, word, count, overwrite)]`` of a fairseq dictionary file in file order, read as
    ``Dictionary.add_from_file`` reads them (``overwrite``: the line's ``#fairseq:overwrite`` flag);
    a line that is not ``WORD COUNT`` (COUNT a whole number) or not UTF-8 is a one-line error naming
    ``what``. The content is :func:`check_dictionary`'s."""
    entries = []
    for n, line in enumerate(read_lines(path, what), 1):
        fields = line.rstrip().rsplit(" ", 1)
        overwrite = fields[-1] == "#fairseq:overwrite" and len(fields) == 2
        if overwrite:
            fields = fields[0].rsplit(" ", 1)
        if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
            raise FairseqWeanError("{} {} line {}: expected 'WORD COUNT' (a fairseq dictionary, e.g. "
                                   "data-bin/dict.src.txt; COUNT a whole number), got {!r}".format(
                                       what, path, n, line[:80]))
        entries.append((n, fields[0], int(fields[1]), overwrite))
    return entries


def dictionary_words(path, what="--dict"):
    """The words of a fairseq dictionary file in file order (frequency order for dictionaries
    fairseq-preprocess wrote); see :func:`dictionary_entries`."""
    return [word for _n, word, _count, _overwrite in dictionary_entries(path, what)]


def check_dictionary(path, existing=(), what="dictionary"):
    """Raise a one-line ``FairseqWeanError`` for a dictionary file that is not one, through
    :func:`check_entries`: a malformed or non-UTF-8 line, a word listed twice without the
    ``#fairseq:overwrite`` flag (what fairseq's ``Dictionary.add_from_file`` refuses), one of
    ``existing`` (the special symbols fairseq adds itself), no word at all; and,
    first, a data folder's dictionary that is not a file of its folder (:func:`check_folder_dictionary`)."""
    check_folder_dictionary(path, what)  # never quote a line of a file outside the folder
    entries = dictionary_entries(path, what)
    overwrites = {n for n, _word, _count, overwrite in entries if overwrite}
    for _ in check_entries(((n, word, count) for n, word, count, _ in entries), path, what, "word",
                           counts=False, reserved=existing, may_repeat=overwrites):  # any count fairseq reads
        pass


# the names fairseq composes itself in a data or model folder (tasks' dict.SRC.txt, the hub's dict.txt)
FOLDER_DICTIONARY_NAMES = DICTIONARY_NAMES

# the one rule of a file read by name from its folder (data/folder_files.py), under its former name
folder_link_problem = folder_file_problem


def check_folder_dictionary(path, what="dictionary"):
    """One-line FairseqWeanError, before anything is read, for a dictionary fairseq finds by name in a data
    or model folder (:data:`FOLDER_DICTIONARY_NAMES`) that is not a file of that folder
    (:func:`fairseq_wean.data.folder_files.folder_file_problem`: a link out of it or to nothing, a folder,
    a named pipe...)."""
    if any(fnmatch.fnmatchcase(os.path.basename(path), name) for name in FOLDER_DICTIONARY_NAMES):
        check_folder_file(path, what)
