"""fairseq's dictionary file (``dict.SRC.txt``, ``WORD COUNT`` lines, optionally flagged
``#fairseq:overwrite``), read without fairseq: the one reader of its words for the console
scripts and the ``preprocess/`` recipes."""
import fnmatch
import os

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import read_lines


def dictionary_entries(path, what="--dict"):
    """``[(line number, word, overwrite)]`` of a fairseq dictionary file in file order, read as
    ``Dictionary.add_from_file`` reads them (``overwrite``: the line's ``#fairseq:overwrite`` flag);
    a malformed or non-UTF-8 line is a one-line error naming ``what``."""
    entries = []
    for n, line in enumerate(read_lines(path, what), 1):
        fields = line.rstrip().rsplit(" ", 1)
        overwrite = fields[-1] == "#fairseq:overwrite" and len(fields) == 2
        if overwrite:
            fields = fields[0].rsplit(" ", 1)
        if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
            raise FairseqWeanError("{} {} line {}: expected 'WORD COUNT' (a fairseq dictionary, e.g. "
                                   "data-bin/dict.src.txt), got {!r}".format(what, path, n, line[:80]))
        entries.append((n, fields[0], overwrite))
    return entries


def dictionary_words(path, what="--dict"):
    """The words of a fairseq dictionary file in file order (frequency order for dictionaries
    fairseq-preprocess wrote); see :func:`dictionary_entries`."""
    return [word for _n, word, _overwrite in dictionary_entries(path, what)]


def check_dictionary(path, existing=(), what="dictionary"):
    """Raise a one-line ``FairseqWeanError`` for what fairseq's ``Dictionary.add_from_file`` refuses
    in the file at ``path``: a malformed or non-UTF-8 line, a word listed twice without the
    ``#fairseq:overwrite`` flag, or one of ``existing`` (the special symbols fairseq adds itself)."""
    check_folder_dictionary(path, what)  # never quote a line of a file outside the folder
    seen = {word: 0 for word in existing}
    for n, word, overwrite in dictionary_entries(path, what):
        if seen.get(word) == 0 and not overwrite:
            raise FairseqWeanError("{} {} line {} lists {!r}, which fairseq adds to every dictionary itself: remove "
                                   "the line".format(what, path, n, word))
        if word in seen and not overwrite:
            raise FairseqWeanError("{} {} lists {!r} twice (lines {} and {}): a fairseq dictionary has each word "
                                   "once (fairseq's '#fairseq:overwrite' flag at the end of the second line keeps "
                                   "it)".format(what, path, word, seen[word], n))
        seen.setdefault(word, n)


# the names fairseq composes itself in a data or model folder (tasks' dict.SRC.txt, the hub's dict.txt)
FOLDER_DICTIONARY_NAMES = ("dict.*.txt", "dict.txt")


def folder_link_problem(path):
    """Why ``path``, a file fairseq reads by name from a folder, may not be read, or None: it is reached
    through a symbolic link that leaves that folder (a link to another file of the folder is fine:
    ``dict.src.txt -> dict.txt``). Says nothing of the file's content."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if os.path.commonpath([os.path.realpath(path), folder]) != folder:
        return "is a symbolic link to a file outside its folder {}".format(os.path.dirname(os.path.abspath(path)))
    return None


def check_folder_dictionary(path, what="dictionary"):
    """One-line FairseqWeanError, before anything is read, for a dictionary fairseq finds by name in a data
    or model folder (:data:`FOLDER_DICTIONARY_NAMES`) reached through a link that leaves the folder."""
    if any(fnmatch.fnmatchcase(os.path.basename(path), name) for name in FOLDER_DICTIONARY_NAMES):
        problem = folder_link_problem(path)
        if problem is not None:
            raise FairseqWeanError("{} {} {}: refused (nothing was read); put the file itself in the folder, or a "
                                   "link to a file of the folder".format(what, path, problem))
