"""Decoding that spells only known words: ``--known-words FILE`` of ``--task translation_with_metrics``.

A model over sentencepiece pieces can write any string of pieces, so it can write words that no
text has: converged ``wean_lstm`` on TurkCorpus spells rare source words wrongly piece by piece
("able-bodied" -> "able-bodw") and gives simpler words suffix pieces they do not take
("completeed"); docs/results/simplification.md, "Why wean_lstm on sentencepiece invents words". This constraint
lets beam search extend a hypothesis only with pieces that keep its last word a prefix of a known
word, and start a new word only after a complete one. Known words are the whitespace tokens of
``FILE`` (the training text, say) and of the sentence's own source, compared lowercased.

It is fairseq's beam search with the pieces that would spell an unknown word masked out
(:class:`KnownWordsBeamSearch`), so the scores are the model's own log-probabilities: the
constraint removes candidates, it never rescales them. ``allowed_tokens`` is the same rule as a
``prefix_allowed_tokens_fn`` (fairseq's interface for prefix-constrained search).

End of sentence is allowed after a complete word. At the maximum length fairseq allows nothing
but end of sentence; a hypothesis that is in the middle of a word there (or that no allowed piece
can extend) ends anyway, in a prefix of a known word, because a step where every candidate is
masked would leave its sentence without a hypothesis (:class:`KnownWordsBeamSearch`).

Pieces: a piece that starts with ``▁`` (U+2581) begins a word; any other continues the word
before it (sentencepiece's convention, as ``--post-process sentencepiece`` undoes it).
"""
import inspect
import math

import torch
from fairseq import search

from fairseq_wean.errors import FairseqWeanError

WORD_START = "\u2581"


class _Node:
    __slots__ = ("children", "end", "ids")

    def __init__(self):
        self.children = {}
        self.end = False  # a word ends here (word trie)
        self.ids = []  # pieces whose text ends here (piece tries)

    def walk(self, text):
        node = self
        for ch in text:
            node = node.children.get(ch)
            if node is None:
                return None
        return node


def _insert(root, text):
    node = root
    for ch in text:
        node = node.children.setdefault(ch, _Node())
    return node


def word_trie(words):
    """A character trie of ``words`` (lowercased)."""
    root = _Node()
    for w in words:
        _insert(root, w.lower()).end = True
    return root


def _spelled(word_node, piece_node, out):
    """Add to ``out`` the ids of the pieces (of ``piece_node``'s trie) whose text continues the
    word prefix at ``word_node`` into a prefix of a known word: both tries walked together."""
    out.extend(piece_node.ids)
    for ch, piece_child in piece_node.children.items():
        word_child = word_node.children.get(ch)
        if word_child is not None:
            _spelled(word_child, piece_child, out)


class KnownWordsConstraint:
    """Which pieces may follow a hypothesis: ``allowed_mask(sentence_id, prefix)`` (a boolean row
    over the vocabulary) and ``allowed_tokens`` (the same as fairseq's ``prefix_allowed_tokens_fn``:
    a list of ids). ``set_sources`` gives the source text of the sentences about to be decoded, by
    dataset id (fairseq's ``sample["id"]``, which the search passes as the batch id).

    Args:
        dictionary (~fairseq.data.Dictionary): the target dictionary, of sentencepiece pieces
        known_words (Iterable[str]): the words allowed in every sentence
    """

    def __init__(self, dictionary, known_words):
        self.vocab_size = len(dictionary)
        self.eos = dictionary.eos()
        self.start_pieces = _Node()  # pieces that begin a word, keyed by their text after the ▁
        self.continuation_pieces = _Node()
        self.starts_word = {}  # token id -> bool, for every piece that can be written
        for idx, symbol in enumerate(dictionary.symbols):
            # the special symbols (<s>, <pad>, </s>, <unk>, and any added before the pieces) spell no word
            if idx < dictionary.nspecial or idx == dictionary.unk() or not symbol:
                continue
            if symbol.startswith(WORD_START):
                _insert(self.start_pieces, symbol[len(WORD_START):].lower()).ids.append(idx)
                self.starts_word[idx] = True
            else:
                _insert(self.continuation_pieces, symbol.lower()).ids.append(idx)
                self.starts_word[idx] = False
        if not any(self.starts_word.values()):
            raise FairseqWeanError(
                "--known-words needs a sentencepiece vocabulary (pieces that begin a word start with "
                "\u2581); this target dictionary has none"
            )
        self.symbols = dictionary.symbols
        self.eos_row = self._row([self.eos])
        self.known = self._words(word_trie(known_words))
        self.sources = {}  # sentence id -> its source's _words

    def _row(self, ids):
        row = torch.zeros(self.vocab_size, dtype=torch.bool)
        row[ids] = True
        return row

    def _words(self, trie):
        """A word set: its trie, the pieces that start one of its words (a row), and a cache of
        word prefix -> (is a complete word?, the continuation pieces it allows as a row)."""
        starts = []
        _spelled(trie, self.start_pieces, starts)
        return {"trie": trie, "starts": self._row(starts), "cache": {}}

    def _continue(self, words, word):
        cache = words["cache"]
        if word not in cache:
            node = words["trie"].walk(word)
            continuations = []
            if node is not None:
                _spelled(node, self.continuation_pieces, continuations)
            cache[word] = (node is not None and node.end, self._row(continuations))
        return cache[word]

    def set_sources(self, sentence_ids, source_texts):
        """The source text (pieces decoded to words) of each sentence about to be decoded."""
        self.sources = {int(i): self._words(word_trie(text.split())) for i, text in zip(sentence_ids, source_texts)}

    def current_word(self, prefix):
        """The text (lowercased, without the ▁) of the word being written at the end of ``prefix``
        (token ids after the leading end-of-sentence), or None before the first piece."""
        pieces = []
        for idx in reversed(prefix):
            if idx not in self.starts_word:  # the leading </s>
                break
            if self.starts_word[idx]:
                pieces.append(self.symbols[idx][len(WORD_START):].lower())
                break
            pieces.append(self.symbols[idx].lower())
        return "".join(reversed(pieces)) if pieces else None

    def allowed_mask(self, sentence_id, prefix):
        """The tokens that may follow ``prefix`` (a 1-d tensor of token ids that starts with
        end-of-sentence) in sentence ``sentence_id``: a boolean row over the vocabulary."""
        word = self.current_word(prefix.tolist())
        word_sets = [self.known]
        if int(sentence_id) in self.sources:
            word_sets.append(self.sources[int(sentence_id)])
        allowed = torch.zeros(self.vocab_size, dtype=torch.bool)
        may_start = word is None
        for words in word_sets:
            if word is not None:
                complete, continuations = self._continue(words, word)
                allowed |= continuations
                may_start = may_start or complete
        if may_start:
            allowed |= self.eos_row
            for words in word_sets:
                allowed |= words["starts"]
        return allowed

    def allowed_tokens(self, sentence_id, prefix):
        """fairseq's ``prefix_allowed_tokens_fn``: ``allowed_mask`` as a list of token ids."""
        return self.allowed_mask(sentence_id, prefix).nonzero().flatten().tolist()


# fairseq-fixed's BeamSearch.step takes candidate_multiple; fairseq 0.12.2's does not
_STEP_TAKES_CANDIDATE_MULTIPLE = "candidate_multiple" in inspect.signature(search.BeamSearch.step).parameters


class KnownWordsBeamSearch(search.BeamSearch):
    """fairseq's beam search (2 x beam candidates per sentence, as ``search.BeamSearch``) over
    the log-probabilities with every piece the constraint does not allow masked to -inf.

    The mask is built from one boolean row per hypothesis (vectorized, not an index list of
    thousands of ids as ``search.PrefixConstrainedBeamSearch`` builds), and no row is left without
    a candidate: a hypothesis whose allowed pieces all have probability 0 (at fairseq's maximum
    length only end of sentence is left) may end there.
    """

    def __init__(self, tgt_dict, constraint):
        super().__init__(tgt_dict)
        self.constraint = constraint

    def known_words_mask(self, lprobs, prev_output_tokens, original_batch_idxs):
        """lprobs: (bsz * beam, vocab); the additive mask, 0 or -inf, of the same shape."""
        beam_size = lprobs.shape[0] // original_batch_idxs.shape[0]
        ids = original_batch_idxs.unsqueeze(-1).repeat((1, beam_size)).flatten().tolist()
        allowed = torch.stack([self.constraint.allowed_mask(i, sent) for sent, i in zip(prev_output_tokens, ids)])
        allowed = allowed.to(lprobs.device)
        stuck = ~(allowed & torch.isfinite(lprobs)).any(dim=1)
        allowed[stuck, self.constraint.eos] = True
        return torch.zeros_like(lprobs).masked_fill_(~allowed, -math.inf)

    def step(self, step, lprobs, scores, prev_output_tokens=None, original_batch_idxs=None, candidate_multiple=2):
        """lprobs: (bsz, beam, vocab); prev_output_tokens: (bsz * beam, step + 1), starting with
        end of sentence; original_batch_idxs: (bsz,) the sentences' dataset ids."""
        bsz, beam_size, vocab_size = lprobs.size()
        mask = self.known_words_mask(lprobs.view(bsz * beam_size, vocab_size), prev_output_tokens, original_batch_idxs)
        extra = (candidate_multiple,) if _STEP_TAKES_CANDIDATE_MULTIPLE else ()  # fairseq 0.12.2: no such argument
        return super().step(step, lprobs + mask.view(bsz, beam_size, vocab_size), scores, prev_output_tokens,
                            original_batch_idxs, *extra)


def read_known_words(path):
    """The whitespace tokens of a text file, lowercased; a clear error if it cannot be read."""
    words = set()
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                words.update(line.lower().split())
    except OSError as e:
        raise FairseqWeanError("--known-words: cannot read {}: {}".format(path, e.strerror or e))
    except UnicodeDecodeError:
        raise FairseqWeanError("--known-words: {} is not UTF-8 text".format(path))
    if not words:
        raise FairseqWeanError("--known-words: {} has no words".format(path))
    return words
