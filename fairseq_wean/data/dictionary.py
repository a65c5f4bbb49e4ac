"""fairseq's dictionary file (``dict.SRC.txt``, ``WORD COUNT`` lines, optionally flagged
``#fairseq:overwrite``), read without fairseq: the one reader of its words for the console
scripts and the ``preprocess/`` recipes."""
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import read_lines


def dictionary_words(path, what="--dict"):
    """The words of a fairseq dictionary file in file order (frequency order for dictionaries
    fairseq-preprocess wrote), read as ``Dictionary.add_from_file`` reads them; a malformed line is
    a one-line error naming ``what``."""
    words = []
    for n, line in enumerate(read_lines(path, what), 1):
        fields = line.rstrip().rsplit(" ", 1)
        if fields[-1] == "#fairseq:overwrite" and len(fields) == 2:
            fields = fields[0].rsplit(" ", 1)
        if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
            raise FairseqWeanError("{} {} line {}: expected 'WORD COUNT' (a fairseq dictionary, e.g. "
                                   "data-bin/dict.src.txt), got {!r}".format(what, path, n, line[:80]))
        words.append(fields[0])
    return words
