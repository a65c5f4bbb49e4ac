"""Source-position markers ``<unk-N>``: how ``core_copy`` copies rare and unseen words.

CoRe (Cao et al., AAAI 2017) copies a word by pointing at a source position (eq. 7 sums the
attention over the positions holding the word), but a word outside the vocabulary has no id of
its own: every such word would be ``<unk>``. As in fairseq's pointer-generator recipe
(``examples/pointer_generator``), a word outside the vocabulary at source position N is
therefore written ``<unk-N>`` in the source, and in the target wherever the same word occurs.
The model copies the marker like any other token, and post-processing puts back the source word
at position N. The markers pass through fairseq-preprocess, fairseq-generate and
fairseq-interactive unchanged, with no side input.

Format: ``<unk-N>`` with N a non-negative decimal number written in ASCII digits (``<unk-0>``,
``<unk-17>``); N is the position (from 0) of the word's *first* occurrence in its source
sentence. A dictionary holds markers ``<unk-0> .. <unk-M-1>`` after its words; a word first seen
at position >= M keeps its spelling (fairseq-preprocess then makes it ``<unk>``).
"""
import re

_MARKER = re.compile(r"<unk-([0-9]+)>")


def marker(position):
    """The marker for source position ``position``: ``marker(3) == "<unk-3>"``."""
    return "<unk-{}>".format(position)


def marker_position(word):
    """N for ``<unk-N>``; None for any other word."""
    match = _MARKER.fullmatch(word)
    return int(match.group(1)) if match else None


def is_position_marker(word):
    """True for ``<unk-N>`` (see the module docstring for the exact format)."""
    return _MARKER.fullmatch(word) is not None


def marker_ids(dictionary):
    """Ids of the markers in a fairseq ``Dictionary`` (any object with ``.symbols``), ascending."""
    return [i for i, w in enumerate(dictionary.symbols) if is_position_marker(w)]


def encode_pair(source, target, vocabulary, max_markers=None):
    """Replace out-of-vocabulary words by ``<unk-N>`` (N: first source position of the word).

    source: list of tokens; target: list of tokens or None. Returns (source, target). A word
    first seen at a position >= max_markers keeps its spelling (fairseq-preprocess makes it
    ``<unk>``). A target word that is not in the source keeps its spelling too.
    """
    first = {}
    out_src = []
    for pos, tok in enumerate(source):
        if tok in vocabulary or (max_markers is not None and first.get(tok, pos) >= max_markers):
            out_src.append(tok)
            continue
        first.setdefault(tok, pos)
        out_src.append(marker(first[tok]))
    out_tgt = None if target is None else [marker(first[t]) if t in first else t for t in target]
    return out_src, out_tgt


def decode_hypothesis(source, hypothesis, past_end="error"):
    """Put the source word at position N back for every ``<unk-N>`` (source: unmarked tokens).

    A marker past the end of the source points at no word. ``past_end="error"`` raises
    ``ValueError`` (a file of hypotheses read beside a file of sources: the likely cause is that
    the two are not line-parallel); ``past_end="unk"`` writes ``<unk>`` (the hypothesis is known to
    belong to this source, e.g. fairseq-interactive's: a model that can generate markers, or
    sampling at a high temperature, may write any marker of its dictionary).
    """
    if past_end not in ("error", "unk"):
        raise ValueError("past_end must be 'error' or 'unk', not {!r}".format(past_end))
    out = []
    for tok in hypothesis:
        pos = marker_position(tok)
        if pos is not None:
            if pos < len(source):
                tok = source[pos]
            elif past_end == "unk":
                tok = "<unk>"
            else:
                raise ValueError(
                    "{} points past the end of its {}-word source: the hypotheses and --src are not "
                    "line-parallel (sort fairseq-generate output by sentence id)".format(tok, len(source))
                )
        out.append(tok)
    return out


def encode_references(dictionary_words, sources, reference_streams):
    """Write reference streams with their sources' markers, as the training targets are written.

    dictionary_words: the words of the marked data's dictionary (markers ``<unk-0>..<unk-M-1>``
    after the words, as ``preprocess`` writes it); sources: unmarked source sentences (strings);
    reference_streams: [n_references][n_sentences] unmarked strings. A reference word that is a
    rare word of its source becomes that word's ``<unk-N>``: validation scores computed on the
    model's own tokens (``--eval-sari --eval-refs``) then credit a copied rare word.
    """
    vocabulary = {w for w in dictionary_words if not is_position_marker(w)}
    n_markers = len(dictionary_words) - len(vocabulary)
    return [[" ".join(encode_pair(s.split(), r.split(), vocabulary, n_markers)[1]) for s, r in zip(sources, refs)]
            for refs in reference_streams]


def marker_count(words):
    """How many markers ``words`` (a dictionary's symbols, a vocabulary) holds, or None for none:
    the ``max_markers`` of :func:`encode_pair`."""
    return sum(1 for w in words if is_position_marker(w)) or None
