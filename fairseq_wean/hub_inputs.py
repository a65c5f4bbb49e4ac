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
fairseq's methods by introspection). fairseq's BART hub (``BARTHubInterface``) has its own table
(:data:`BART_METHODS`: its overrides and fill_mask, extract_features, predict, register_classification_head); any
other subclass (speech_dlm's, a user's) is left as fairseq has it (:func:`hub_classes`, tests/test_hub_subclasses.py).
Only the user's call is checked, the outermost hub method of the thread: what fairseq's own code hands a hub
method inside one (BART's generate gives the base class' generate a 2-D batch) is fairseq's, so importing the
plugin changes no result of fairseq's hubs. Also one line: ``inference_step_args`` (its ``prefix_tokens``: one
row of target ids for one sentence), ``skip_invalid_size_inputs=True`` (fewer outputs than inputs, silently),
ids of a dtype the embedding does not take (uint8), a sentence with no visible character or holding NUL
(``input_form.text_problem``), ``remove_bpe`` text its BPE's decode cannot read.
"""
import functools
import inspect
import threading

from fairseq_wean.errors import FairseqWeanError

SENTENCES = "a str or a list of str, each holding a word"  # translate, sample, score
SENTENCE = "a str holding a word"  # encode, binarize: what is decoded
TEXT = "a str"  # tokenize, detokenize, apply_bpe, remove_bpe: text in, text out ("" gives "")
TOKENS = "an integer tensor (or a list of ints) of the target dictionary's ids"  # decode, string
TOKENIZED = "a list of 1-D integer tensors of the source dictionary's ids (e.g. [hub.encode(s)])"  # generate
METHODS = {"translate": SENTENCES, "sample": SENTENCES, "score": SENTENCES, "generate": TOKENIZED,
           "encode": SENTENCE, "binarize": SENTENCE, "tokenize": TEXT, "detokenize": TEXT, "apply_bpe": TEXT,
           "remove_bpe": TEXT, "decode": TOKENS, "string": TOKENS}
# BART's hub (fairseq's BARTHubInterface): its overrides and its own methods
SOURCE_TOKENS = "a non-empty 1-D integer tensor of the dictionary's ids (e.g. bart.encode(s))"  # decode
SOURCE_BATCH = "a non-empty 1-D or 2-D integer tensor of the dictionary's ids (e.g. bart.encode(s))"
MASKED = "a list of str, each holding '<mask>'"  # fill_mask
HEAD = "the name of a classification head given to register_classification_head()"  # predict
NAME = "a str (the head's name)"  # register_classification_head
BART_METHODS = dict(METHODS, decode=SOURCE_TOKENS, fill_mask=MASKED, extract_features=SOURCE_BATCH, predict=HEAD,
                    register_classification_head=NAME)
# the methods that decode (their keyword arguments reach generate's generation configuration)
DECODING = ("translate", "sample", "score", "generate", "fill_mask")
# the integer dtypes fairseq's embeddings take (torch's index_select: Long, Int); a decode takes any integer
EMBEDDABLE = ("int64", "int32")
INFERENCE_STEP_KEYS = ("prefix_tokens", "constraints")  # what FairseqTask.inference_step takes
# the GeneratorHubInterface subclasses of fairseq whose inputs are not the base class' (speech_dlm's take dicts of
# channels): left as fairseq has them, as is any subclass of a user's
UNCHECKED = ("MultichannelGeneratorHubInterface",)

_calls = threading.local()  # how deep in hub methods this thread is: only the outermost call's input is the user's


def hub_classes():
    """{hub class: its table of inputs} for the hub classes whose inputs are checked (the class exactly, not a
    subclass: a subclass' methods take their own inputs)."""
    from fairseq.hub_utils import GeneratorHubInterface

    classes = {GeneratorHubInterface: METHODS}
    try:
        from fairseq.models.bart.hub_interface import BARTHubInterface
    except ImportError:  # pragma: no cover - every fairseq the plugin installs with has it
        return classes
    classes[BARTHubInterface] = BART_METHODS
    return classes


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


def _text_problem(where, name, value):
    """An empty sentence (no visible character) or one holding NUL: ``input_form.text_problem``."""
    from fairseq_wean.input_form import text_problem

    return text_problem(value, "{}: {}".format(where, name))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _ids_problem(where, name, value, dictionary, dims, kind, dtypes=None):
    """An integer tensor of ``dims`` dimensions (``dtypes``: the dtype names taken; None: any integer) or, for a
    decode, a list/tuple of ints; every id one of ``dictionary``'s."""
    import torch

    if torch.is_tensor(value):
        integer = not value.dtype.is_floating_point and not value.dtype.is_complex and value.dtype != torch.bool
        if not integer or value.dim() not in dims or (dtypes and str(value.dtype)[6:] not in dtypes):
            return "{}: {} is a {}-D {} tensor: give {}{}".format(
                where, name, value.dim(), value.dtype, kind, " (dtype torch.long)" if integer and dtypes else "")
        ids = value.flatten().tolist()
    elif kind == TOKENS and isinstance(value, (list, tuple)) and all(_is_int(v) for v in value):
        ids = list(value)
    else:
        return _type_problem(where, name, value, kind)
    wrong = [i for i in ids if not 0 <= i < len(dictionary)]
    if wrong:
        return "{}: {} holds id {}, and the dictionary's ids are 0 to {}".format(where, name, wrong[0],
                                                                                 len(dictionary) - 1)
    return None


def _sentences_problem(where, value, kind):
    if isinstance(value, str):
        return _text_problem(where, "the sentence {!r}".format(value), value)
    if not isinstance(value, (list, tuple)):
        return _type_problem(where, "its input", value, kind)
    for i, sentence in enumerate(value):
        if not isinstance(sentence, str):
            return _type_problem(where, "sentences[{}]".format(i), sentence, "a str")
        problem = _text_problem(where, "sentences[{}] {!r}".format(i, sentence), sentence)
        if problem is None and kind == MASKED and "<mask>" not in sentence:
            problem = "{}: sentences[{}] {!r} holds no '<mask>': give {}".format(where, i, sentence, kind)
        if problem is not None:
            return problem
    return None


def _tokenized_problem(hub, where, value):
    if not isinstance(value, (list, tuple)):
        return _type_problem(where, "its input", value, TOKENIZED)
    import torch

    for i, tokens in enumerate(value):
        if not torch.is_tensor(tokens):
            return _type_problem(where, "tokenized_sentences[{}]".format(i), tokens, "a 1-D integer tensor")
        problem = _ids_problem(where, "tokenized_sentences[{}]".format(i), tokens, hub.src_dict, (1,), TOKENIZED,
                               EMBEDDABLE)
        if problem is not None:
            return problem
        if not [t for t in tokens.tolist() if t not in (hub.src_dict.eos(), hub.src_dict.pad(), hub.src_dict.bos())]:
            return _blank_tokens(where, "tokenized_sentences[{}] (no token but </s>)".format(i))
    return None


def _blank_tokens(where, name):
    from fairseq_wean.input_form import empty_problem

    return empty_problem("{}: {}".format(where, name))


def _bpe_text_problem(hub, where, value):
    """``remove_bpe``'s text in a form the hub's BPE's decode reads (``input_form.DECODED_FORMS``): gpt2's decode
    of words was a ValueError traceback, sentencepiece's joined words into one."""
    from fairseq_wean import input_form

    bpe = input_form.bpe_name(getattr(hub, "cfg", None))
    tokens = value.split()
    if bpe not in input_form.DECODED_FORMS or not tokens:
        return None
    forms = input_form.DECODED_FORMS[bpe][0]
    if input_form.IDS in forms:
        found = input_form.IDS if all(input_form.NUMBER.match(t) or t.startswith("<") for t in tokens) else None
    else:
        found = input_form.line_form(tokens)[0]
    if found in forms:
        return None
    return "{}: its input {!r} is not in the form --bpe {}'s decode reads ({}): give what apply_bpe() wrote".format(
        where, _shown(value), bpe, " or ".join(input_form.name(form) for form in forms))


def input_problem(hub, method, value, table=METHODS):
    """The one line for ``value`` given as the first argument of the hub's ``method`` (``table``: the hub class'
    inputs, :data:`METHODS`), or None."""
    kind = table.get(method)
    where = "hub {}()".format(method)
    if kind is None:  # a method fairseq added that the table does not know
        return "{}: fairseq-wean does not know this hub method's input; use translate, sample or generate".format(where)
    if kind in (TEXT, SENTENCE, NAME):
        if not isinstance(value, str):
            return _type_problem(where, "its input", value, kind)
        if kind == SENTENCE:
            return _text_problem(where, "its input {!r}".format(value), value)
        return _bpe_text_problem(hub, where, value) if method == "remove_bpe" else None
    if kind in (SENTENCES, MASKED):
        if kind == MASKED and isinstance(value, str):
            return _type_problem(where, "its input", value, kind)
        return _sentences_problem(where, value, kind)
    if kind == HEAD:
        heads = getattr(getattr(hub, "model", None), "classification_heads", {}) or {}
        if not isinstance(value, str) or value not in heads:
            return "{}: no classification head {!r}: give {} ({})".format(
                where, value, kind, ", ".join(sorted(heads)) or "none is")
        return None
    if kind == TOKENS:
        return _ids_problem(where, "its input", value, hub.tgt_dict, (1, 2), kind)
    if kind in (SOURCE_TOKENS, SOURCE_BATCH):
        problem = _ids_problem(where, "its input", value, hub.src_dict, (1,) if kind == SOURCE_TOKENS else (1, 2),
                               kind, EMBEDDABLE if kind == SOURCE_BATCH else None)
        if problem is None and not value.numel():
            problem = "{}: its input is an empty tensor: give {}".format(where, kind)
        return problem
    return _tokenized_problem(hub, where, value)


def keyword_problem(method, kwargs):
    """The one line for a decoding keyword the hub's ``method`` does nothing with (``from_pretrained``: the
    generation configuration it sets), or None: ``nbest`` > 1, ``prefix_size`` > 0, ``print_alignment``,
    ``skip_invalid_size_inputs``."""
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
    if kwargs.get("skip_invalid_size_inputs") and method != "from_pretrained":
        return ("keyword skip_invalid_size_inputs={!r}: fairseq would return fewer outputs than inputs, and nothing "
                "would say which sentences it dropped; leave it out (a sentence longer than the model's "
                "max_positions is then one line naming it), and shorten or drop such sentences yourself".format(
                    kwargs["skip_invalid_size_inputs"]))
    return None


def _count(method, value):
    """How many sentences a decoding method's first argument holds (None: not a sequence)."""
    if method != "generate" and isinstance(value, str):
        return 1
    return len(value) if isinstance(value, (list, tuple)) else None


def inference_step_problem(hub, method, value, kwargs):
    """``inference_step_args`` (FairseqTask.inference_step's keywords, which fairseq hands to every batch): a dict of
    :data:`INFERENCE_STEP_KEYS`; its ``prefix_tokens`` a 2-D torch.long tensor of the target dictionary's ids, one
    row, for one sentence (fairseq gives the same tensor to each batch, whose rows are sorted by length: its rows
    are no sentence's with several). Was a RuntimeError traceback inside fairseq's beam search."""
    import torch

    args = kwargs.get("inference_step_args")
    where = "hub {}(): inference_step_args".format(method)
    if args is None:
        return None
    if not isinstance(args, dict):
        return "{} is {}: give a dict of {}".format(where, type(args).__name__, ", ".join(INFERENCE_STEP_KEYS))
    unknown = sorted(str(key) for key in args if key not in INFERENCE_STEP_KEYS)
    if unknown:
        return "{}: {!r} is no keyword of fairseq's inference_step (it takes {})".format(
            where, unknown[0], ", ".join(INFERENCE_STEP_KEYS))
    prefix = args.get("prefix_tokens")
    if prefix is None:
        return None
    if not torch.is_tensor(prefix) or prefix.dtype != torch.long or prefix.dim() != 2 or not prefix.numel():
        return "{}['prefix_tokens'] is {}: give a 2-D torch.long tensor of one row (e.g. hub.binarize(p)[:-1][None])"\
            .format(where, _shown(prefix) if not torch.is_tensor(prefix) else "a {}-D {} tensor of shape {}".format(
                prefix.dim(), prefix.dtype, tuple(prefix.shape)))
    count = _count(method, value)
    if prefix.size(0) != 1 or count != 1:
        return ("{}['prefix_tokens'] has {} rows for {} sentences: give one sentence and one row per call (fairseq "
                "gives the same tensor to every batch, whose sentences it sorts by length)".format(
                    where, prefix.size(0), count))
    dictionary = hub.tgt_dict
    wrong = [i for i in prefix.flatten().tolist() if not 0 <= i < len(dictionary) or i == dictionary.pad()]
    if wrong:
        return "{}['prefix_tokens'] holds id {}, and the target dictionary's ids are 0 to {} (not <pad>, {})".format(
            where, wrong[0], len(dictionary) - 1, dictionary.pad())
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


def call_problem(hub, method, signature, args, kwargs):
    """The one line for a user's call of the hub's ``method`` (``signature``: fairseq's), or None. A hub whose class
    is not in :func:`hub_classes` (a subclass: its methods take their own inputs) is not checked."""
    table = hub_classes().get(type(hub))
    if table is None:
        return None
    try:
        bound = signature.bind_partial(hub, *args, **kwargs).arguments
    except TypeError:  # fairseq's own TypeError names the argument
        return None
    params = list(signature.parameters.values())
    named = {}
    for param in params[1:]:
        if param.name in bound:
            value = bound[param.name]
            named.update(value if param.kind == param.VAR_KEYWORD else {param.name: value})
    problem = score_problem(hub) if method == "score" else None
    if problem is None and method in DECODING:
        problem = keyword_problem(method, named)
    first = params[1].name if len(params) > 1 else None
    if problem is None and first in bound:
        problem = input_problem(hub, method, bound[first], table)
        if problem is None and method == "encode":  # BART's encode(sentence, *addl_sentences)
            extra = [value for param in params[2:] if param.kind == param.VAR_POSITIONAL
                     for value in bound.get(param.name, ())]
            for sentence in extra:
                problem = problem or input_problem(hub, method, sentence, table)
        if problem is None and method == "predict" and len(params) > 2 and params[2].name in bound:
            problem = input_problem(hub, "extract_features", bound[params[2].name], table)
    if problem is None and method in DECODING and first in bound:
        problem = inference_step_problem(hub, method, bound[first], named)
    return problem


def _wrapped(method):
    def make(original):
        signature = inspect.signature(inspect.unwrap(original))

        @functools.wraps(original)
        def checked(self, *args, **kwargs):
            """fairseq's, after the checks of :mod:`fairseq_wean.hub_inputs`: its input, its keywords (the user's
            call only: what fairseq's own code passes to a hub method inside one is fairseq's)."""
            depth = getattr(_calls, "depth", 0)
            if depth == 0:
                problem = call_problem(self, method, signature, args, kwargs)
                if problem is not None:
                    raise FairseqWeanError(problem)
            _calls.depth = depth + 1
            try:
                return original(self, *args, **kwargs)
            finally:
                _calls.depth = depth

        return checked

    return make


def install():
    """Wrap every public method of each hub class of :func:`hub_classes` with the checks of its input (a method the
    table lacks: refused in one line)."""
    from fairseq_wean.patching import wrap_once

    for cls, table in hub_classes().items():
        for name in public_methods(cls):
            wrap_once(cls, name, _wrapped(name), key="fairseq_wean.hub_inputs." + name)
