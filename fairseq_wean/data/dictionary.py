"""fairseq's dictionary file (``dict.SRC.txt``, ``WORD COUNT`` lines, optionally flagged
``#fairseq:overwrite``), read without fairseq: the one reader of its words for the console
scripts and the ``preprocess/`` recipes; and :func:`check_entries`, the one check of the content of
every file of keyed lines the project reads (dictionaries, alignment tables, fastBPE codes, the
``--replace-unk`` alignment dictionary). A dictionary fairseq finds in a data or model folder by its own
name (:func:`found_in_folder`) is read only as a file of that folder, and an error about its content never
quotes it."""
import fnmatch
import math
import os

from fairseq_wean.data.folder_files import DICTIONARY_NAMES, check_folder_file, folder_file_problem
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import read_lines

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # what fairseq's Dictionary adds itself, in its order


def check_entries(entries, path, what, kind="entry", counts=True, reserved=(), may_repeat=None, quote=True):
    """The one check of every file of keyed lines the project reads (dictionaries, alignment tables,
    fastBPE codes): yield ``(line number, key, number)`` back, raising a one-line ``FairseqWeanError``
    naming ``what``, the file and the line for a key listed twice (but on the lines of ``may_repeat``, a
    set of line numbers: fairseq's ``#fairseq:overwrite``), one of ``reserved`` (the symbols fairseq adds
    itself), a number that is not finite (or, with ``counts``, negative; ``None``: no number on the line),
    and for a file with no entry at all. ``quote=False``: a file found in a folder, not named by the user
    (:func:`found_in_folder`): the messages quote nothing of it (the key, the number), only the lines and
    the expected shape."""
    seen = {key: 0 for key in reserved}
    listed = 0
    for lineno, key, number in entries:
        shown = " {!r}".format(key) if quote else ""
        if number is not None and not (math.isfinite(number) and (number >= 0 or not counts)):
            raise FairseqWeanError("{} {} line {}: {}{} has {}, which is not a finite {}".format(
                what, path, lineno, kind, shown, "the number {!r}".format(number) if quote else "a number",
                "count >= 0" if counts else "number"))
        if key in seen and lineno not in (may_repeat or ()):
            if seen[key] == 0:  # one of ``reserved``: the program's own symbol, not the file's content
                raise FairseqWeanError("{} {} line {} lists {!r}, which fairseq adds to every dictionary itself: "
                                       "remove the line".format(what, path, lineno, key))
            flag = "" if may_repeat is None else \
                " (fairseq's '#fairseq:overwrite' flag at the end of the later line keeps it)"
            raise FairseqWeanError("{} {} line {}: {}{} is listed twice (lines {} and {}); each is listed "
                                   "once{}".format(what, path, lineno, kind if quote else "a " + kind, shown,
                                                   seen[key], lineno, flag))
        seen.setdefault(key, lineno)
        listed += 1
        yield lineno, key, number
    if not listed:
        raise FairseqWeanError("{} {}: no {} in the file (it is empty)".format(what, path, kind))


def found_in_folder(path):
    """Whether ``path`` is a dictionary as fairseq finds it in a data or model folder, by a name it composes
    itself (:data:`FOLDER_DICTIONARY_NAMES`: ``dict.SRC.txt``, ``dict.txt``), rather than a file the user
    named: it is read only as a file of its folder (:func:`check_folder_dictionary`), and an error about its
    content quotes none of it (its words could be anyone's file: the messages give the line and the shape)."""
    return any(fnmatch.fnmatchcase(os.path.basename(path), name) for name in FOLDER_DICTIONARY_NAMES)


def dictionary_entries(path, what="--dict"):
    """``[(line number, word, count, overwrite)]`` of a fairseq dictionary file in file order, read as
    ``Dictionary.add_from_file`` reads them (``overwrite``: the line's ``#fairseq:overwrite`` flag);
    a line that is not ``WORD COUNT`` (COUNT a whole number) or not UTF-8 is a one-line error naming
    ``what`` (quoting the line only for a file the user named, :func:`found_in_folder`), and a data folder's
    dictionary that is not a file of its folder is refused before it is read (:func:`check_folder_dictionary`).
    The content is :func:`check_dictionary`'s."""
    check_folder_dictionary(path, what)  # never read (nor quote) a file from outside the folder
    quote = not found_in_folder(path)
    entries = []
    for n, line in enumerate(read_lines(path, what), 1):
        fields = line.rstrip().rsplit(" ", 1)
        overwrite = fields[-1] == "#fairseq:overwrite" and len(fields) == 2
        if overwrite:
            fields = fields[0].rsplit(" ", 1)
        if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
            raise FairseqWeanError("{} {} line {}: expected 'WORD COUNT' (a fairseq dictionary, e.g. "
                                   "data-bin/dict.src.txt; COUNT a whole number){}".format(
                                       what, path, n, ", got {!r}".format(line[:80]) if quote else
                                       "; the line is not shown (a file found in a folder is never quoted)"))
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
    entries = dictionary_entries(path, what)  # a folder's dictionary: checked as a file of its folder first
    overwrites = {n for n, _word, _count, overwrite in entries if overwrite}
    for _ in check_entries(((n, word, count) for n, word, count, _ in entries), path, what, "word",
                           counts=False, reserved=existing, may_repeat=overwrites,  # any count fairseq reads
                           quote=not found_in_folder(path)):
        pass


# the names fairseq composes itself in a data or model folder (tasks' dict.SRC.txt, the hub's dict.txt)
FOLDER_DICTIONARY_NAMES = DICTIONARY_NAMES

# the one rule of a file read by name from its folder (data/folder_files.py), under its former name
folder_link_problem = folder_file_problem


def check_folder_dictionary(path, what="dictionary"):
    """One-line FairseqWeanError, before anything is read, for a dictionary fairseq finds by name in a data
    or model folder (:data:`FOLDER_DICTIONARY_NAMES`) that is not a file of that folder
    (:func:`fairseq_wean.data.folder_files.folder_file_problem`: a link out of it or to nothing, a folder,
    a named pipe, a hard link...)."""
    if found_in_folder(path):
        check_folder_file(path, what)
