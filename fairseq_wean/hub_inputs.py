"""The inputs of every public method of fairseq's ``GeneratorHubInterface`` (what ``fairseq_wean.hub.from_pretrained``
and the models' ``from_pretrained`` return), checked before fairseq uses them.

fairseq's methods take what they are given: ``translate(b"ein hund")`` reached the form check as a list of ints
(an AttributeError), ``translate(5)`` a TypeError in fairseq, ``tokenize(None)`` returned None, ``generate(tensor)``
decoded each token as a sentence, an empty or whitespace-only sentence (alone or in a list) was decoded into a
hypothesis of the maximum length, ``score()`` (fairseq's scoring of a sentence by a language model) was a TypeError
in a translation model's forward, ``print_alignment=True`` an AttributeError in fairseq's aligning generator, and
``prefix_size`` / ``nbest`` did nothing. Each is one line (:class:`FairseqWeanError`) before any work.

:data:`METHODS` names the input each public method takes (its first argument); :func:`install` wraps every one of
them, and a public method fairseq adds that the table lacks is refused when called (tests/test_hub_inputs.py lists
fairseq's methods by introspection).
"""
import functools
import inspect

from fairseq_wean.errors import FairseqWeanError

SENTENCES = "a str or a list of str, each holding a word"  # translate, sample, score
SENTENCE = "a str holding a word"  # encode, binarize: what is decoded
TEXT = "a str"  # tokenize, detokenize, apply_bpe, remove_bpe: text in, text out ("" gives "")
TOKENS = "an integer tensor (or a list of ints) of the target dictionary's ids"  # decode, string
TOKENIZED = "a list of 1-D integer tensors of the source dictionary's ids (e.g. [hub.encode(s)])"  # generate
METHODS = {"translate": SENTENCES, "sample": SENTENCES, "score": SENTENCES, "generate": TOKENIZED,
           "encode": SENTENCE, "binarize": SENTENCE, "tokenize": TEXT, "detokenize": TEXT, "apply_bpe": TEXT,
           "remove_bpe": TEXT, "decode": TOKENS, "string": TOKENS}
# the methods that decode (their keyword arguments reach generate's generation configuration)
DECODING = ("translate", "sample", "score", "generate")


def public_methods(cls):
    """The public methods ``cls`` itself defines (fairseq's GeneratorHubInterface: not torch's Module's)."""
    return sorted(name for name, value in vars(cls).items() if not name.startswith("_") and callable(value))


def _shown(value):
    text = " ".join(repr(value).split())  # one line (a tensor's repr has several)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_problem(where, name, value, kind):
    return "{} is {} ({}): give {}{}".format(
        "{}: {}".format(where, name), type(value).__name__, _shown(value), kind,
        " (bytes: decode them first, e.g. data.decode('utf-8'))" if isinstance(value, (bytes, bytearray)) else "")


def _blank_problem(where, name):
    from fairseq_wean.input_form import empty_problem

    return empty_problem("{}: {}".format(where, name))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _ids_problem(where, name, value, dictionary, dims):
    """An integer tensor of ``dims`` dimensions or a list/tuple of ints, every id one of ``dictionary``'s."""
    import torch

    if torch.is_tensor(value):
        integer = value.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
        if not integer or value.dim() not in dims:
            return "{}: {} is a {}-D {} tensor: give {}".format(where, name, value.dim(), value.dtype,
                                                               TOKENS if 2 in dims else TOKENIZED)
        ids = value.flatten().tolist()
    elif isinstance(value, (list, tuple)) and all(_is_int(v) for v in value):
        ids = list(value)
    else:
        return _type_problem(where, name, value, TOKENS if 2 in dims else TOKENIZED)
    wrong = [i for i in ids if not 0 <= i < len(dictionary)]
    if wrong:
        return "{}: {} holds id {}, and the dictionary's ids are 0 to {}".format(where, name, wrong[0],
                                                                                 len(dictionary) - 1)
    return None


def input_problem(hub, method, value):
    """The one line for ``value`` given as the first argument of the hub's ``method`` (:data:`METHODS`), or None."""
    kind = METHODS.get(method)
    where = "hub {}()".format(method)
    if kind is None:  # a method fairseq added that the table does not know
        return "{}: fairseq-wean does not know this hub method's input; use translate, sample or generate".format(where)
    if kind in (TEXT, SENTENCE):
        if not isinstance(value, str):
            return _type_problem(where, "its input", value, kind)
        return _blank_problem(where, "its input {!r}".format(value)) if kind == SENTENCE and not value.strip() else None
    if kind == SENTENCES:
        if isinstance(value, str):
            return None if value.strip() else _blank_problem(where, "the sentence {!r}".format(value))
        if not isinstance(value, (list, tuple)):
            return _type_problem(where, "its input", value, kind)
        for i, sentence in enumerate(value):
            if not isinstance(sentence, str):
                return _type_problem(where, "sentences[{}]".format(i), sentence, "a str")
            if not sentence.strip():
                return _blank_problem(where, "sentences[{}] {!r}".format(i, sentence))
        return None
    if kind == TOKENS:
        return _ids_problem(where, "its input", value, hub.tgt_dict, (1, 2))
    if not isinstance(value, (list, tuple)):
        return _type_problem(where, "its input", value, kind)
    import torch

    for i, tokens in enumerate(value):
        if not torch.is_tensor(tokens):
            return _type_problem(where, "tokenized_sentences[{}]".format(i), tokens, "a 1-D integer tensor")
        problem = _ids_problem(where, "tokenized_sentences[{}]".format(i), tokens, hub.src_dict, (1,))
        if problem is not None:
            return problem
        if not [t for t in tokens.tolist() if t not in (hub.src_dict.eos(), hub.src_dict.pad())]:
            return _blank_problem(where, "tokenized_sentences[{}] (no token but </s>)".format(i))
    return None


def keyword_problem(method, kwargs):
    """The one line for a decoding keyword the hub's ``method`` does nothing with (``from_pretrained``: the
    generation configuration it sets), or None: ``nbest`` > 1, ``prefix_size`` > 0, ``print_alignment``."""
    problem = _keyword_problem(method, kwargs)
    return problem if problem is None or method == "from_pretrained" else "hub generation: " + problem


def _keyword_problem(method, kwargs):
    nbest, prefix, align = kwargs.get("nbest"), kwargs.get("prefix_size"), kwargs.get("print_alignment")
    if _is_int(nbest) and nbest > 1 and method != "from_pretrained":
        return ("keyword nbest={} does nothing in translate(), sample() or generate(): the first two "
                "return each sentence's best hypothesis, generate([hub.encode(s)], beam) all beam hypotheses, best "
                "first (take the first {})".format(nbest, nbest))
    if _is_int(prefix) and prefix > 0:
        return ("keyword prefix_size={} does nothing in the hub: it has no reference to take a prefix "
                "from (fairseq-generate's --prefix-size); give the prefix's tokens as generate([...], beam, "
                "inference_step_args={{'prefix_tokens': tensor}}) (one row per sentence)".format(prefix))
    if align not in (None, False) and (method != "generate" or align not in ("hard", "soft")):
        return ("keyword print_alignment={!r} {}: generate([hub.encode(s)], beam, print_alignment="
                "'hard' or 'soft') gives each hypothesis' 'alignment'".format(
                    align, "is neither 'hard' nor 'soft'" if method == "generate" else
                    "does nothing in translate(), sample() or score(): they return no alignment"))
    return None


def score_problem(hub):
    """``score()`` is fairseq's scoring of a sentence by a language model (generate with score_reference, the
    sentence as its own reference): a model with an encoder has no such score."""
    from fairseq_wean.checkpoint_kind import is_language_model

    if all(is_language_model(type(m)) for m in hub.models):
        return None
    return ("hub score(): fairseq's hub scores a sentence with a language model (a decoder-only model), and this "
            "model translates (it has an encoder): score a translation against its source with fairseq-generate "
            "--score-reference or fairseq-validate")


def _wrapped(method):
    def make(original):
        root = inspect.unwrap(original)
        params = list(inspect.signature(root).parameters)
        first = params[1] if len(params) > 1 else None

        @functools.wraps(original)
        def checked(self, *args, **kwargs):
            """fairseq's, after the checks of :mod:`fairseq_wean.hub_inputs`: its input, its keywords."""
            problem = score_problem(self) if method == "score" else None
            if problem is None and method in DECODING:
                problem = keyword_problem(method, kwargs)
            if problem is None and (args or first in kwargs):
                problem = input_problem(self, method, args[0] if args else kwargs[first])
            if problem is not None:
                raise FairseqWeanError(problem)
            return original(self, *args, **kwargs)

        return checked

    return make


def install():
    """Wrap every public method of fairseq's GeneratorHubInterface with the checks of its input (a method the
    table lacks: refused in one line)."""
    from fairseq.hub_utils import GeneratorHubInterface

    from fairseq_wean.patching import wrap_once

    for name in public_methods(GeneratorHubInterface):
        wrap_once(GeneratorHubInterface, name, _wrapped(name), key="fairseq_wean.hub_inputs." + name)
