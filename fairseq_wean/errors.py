"""User-facing errors: one line that names the problem and the fix, and a non-zero exit.

fairseq's command-line entry points are not ours, so we cannot catch exceptions around
them. Instead ``install_excepthook`` (called when the plugin is imported) makes an uncaught
``FairseqWeanError`` print as ``fairseq-wean: error: <message>`` on stderr, without a
traceback, and exit with status 1. Every other exception keeps Python's normal report.
"""
import hashlib
import sys


class FairseqWeanError(Exception):
    """A problem with the user's input or set-up; the message says what to do."""


def _excepthook(exc_type, exc, tb, _previous=sys.excepthook):
    cause, seen = exc, set()
    # fairseq wraps some exceptions (e.g. while loading a checkpoint); look for ours inside.
    # A chain can loop (an exception raised from itself): stop at the first repeat.
    while cause is not None and not isinstance(cause, FairseqWeanError) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    if cause is not None and not isinstance(cause, FairseqWeanError):
        cause = None
    if cause is not None:
        sys.stderr.write("fairseq-wean: error: {}\n".format(str(cause).replace("\n", " ")))
        sys.stderr.flush()
        return
    _previous(exc_type, exc, tb)


def install_excepthook():
    if sys.excepthook is not _excepthook:
        sys.excepthook = _excepthook


def install_size_filter_message():
    """One line instead of fairseq's traceback for a sentence longer than the model accepts.

    fairseq skips over-long *training* pairs with a warning that counts them ("N samples have
    invalid sizes and will be skipped"), but for validation, fairseq-generate and
    fairseq-interactive it raises ``Exception("Size of sample #i is invalid ...")`` unless
    ``--skip-invalid-size-inputs-valid-test`` is given (then such sentences get no hypothesis).
    We keep that behaviour and only make the message a FairseqWeanError that counts the
    sentences and names the fixes.
    """
    from fairseq.tasks import FairseqTask

    original = FairseqTask.filter_indices_by_size
    if getattr(original, "_fairseq_wean_wrapped", False):
        return

    def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
        try:
            return original(self, indices, dataset, max_positions, ignore_invalid_inputs)
        except Exception as exc:
            if not str(exc).startswith("Size of sample #"):
                raise
            _, ignored = dataset.filter_indices_by_size(indices, max_positions)
            size = dataset.size(ignored[0])
            size = tuple(int(n) for n in size) if hasattr(size, "__len__") else int(size)
            raise FairseqWeanError(
                "{} sentence(s) are longer than the model accepts (max positions {}; e.g. sentence #{} "
                "has length {}): pass --skip-invalid-size-inputs-valid-test to skip them (they get no "
                "hypothesis), raise --max-source-positions / --max-target-positions, or clean the raw "
                "files with python -m preprocess.check_parallel --max-len N before "
                "fairseq-preprocess".format(len(ignored), max_positions, int(ignored[0]), size)
            ) from exc

    filter_indices_by_size._fairseq_wean_wrapped = True
    FairseqTask.filter_indices_by_size = filter_indices_by_size


def require_joined_dictionary(task, arch):
    """Encoder input, decoder input and output share one embedding matrix: one dictionary."""
    src, tgt = task.source_dictionary, task.target_dictionary
    if src is None or tgt is None or src.indices != tgt.indices:
        raise FairseqWeanError(
            "--arch {} shares one embedding matrix between source and target, but the source and "
            "target dictionaries differ: binarize the data with fairseq-preprocess "
            "--joined-dictionary".format(arch)
        )


def dictionary_fingerprint(dictionary, *more):
    """A 56-bit hash of the dictionary's symbols in order (an int64 tensor).

    Models keep it as a buffer, so a checkpoint loaded with a dictionary of the same size
    but another order (data binarized anew) is refused instead of decoding garbage. Models
    with separate source and target dictionaries pass both (``dictionary_fingerprint(src,
    tgt)``); one dictionary hashes as it always did, so older checkpoints keep loading.
    """
    import torch

    text = "\n\0\n".join("\n".join(d.symbols) for d in (dictionary,) + more)
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return torch.tensor(int.from_bytes(digest[:7], "little"), dtype=torch.long)


def check_state_dict_compatible(model, state_dict):
    """Refuse, in one line, a checkpoint whose parameters do not fit ``model``.

    torch's own message for this is a multi-line list of size mismatches; the usual causes
    are a dictionary of another size (data binarized anew) or another architecture.
    """
    own = model.state_dict()
    for name in own:
        # Checkpoints written before a model kept the fingerprint: nothing to compare with.
        if name.endswith("dictionary_fingerprint") and name not in state_dict:
            state_dict[name] = own[name].clone()
    missing = sorted(set(own) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(own))
    if missing or unexpected:
        raise FairseqWeanError(
            "the checkpoint does not fit {}: {} parameter(s) missing (e.g. {}) and {} unexpected "
            "(e.g. {}); it was trained with another --arch or other model options: load it with the "
            "--arch and model options it was trained with".format(
                type(model).__name__, len(missing), missing[:2], len(unexpected), unexpected[:2],
            )
        )
    for name, tensor in state_dict.items():
        if own[name].shape != tensor.shape:
            sizes = {len(part.dictionary) for part in (getattr(model, "encoder", None), getattr(model, "decoder", None))
                     if getattr(part, "dictionary", None) is not None}
            vocab = next((n for n in sizes if n in own[name].shape and n not in tensor.shape), None)
            if vocab is not None:
                raise FairseqWeanError(
                    "the checkpoint was trained with a dictionary of another size than the {} symbols "
                    "of the data given now ({} has shape {} in the checkpoint, {} here): use the "
                    "data-bin (dict.*.txt) the model was trained with".format(
                        vocab, name, tuple(tensor.shape), tuple(own[name].shape)
                    )
                )
            raise FairseqWeanError(
                "the checkpoint does not fit this model: {} has shape {} in the checkpoint and {} "
                "here; train and load with the same architecture options".format(
                    name, tuple(tensor.shape), tuple(own[name].shape)
                )
            )
    for name in own:
        if name.endswith("dictionary_fingerprint") and not own[name].equal(state_dict[name]):
            raise FairseqWeanError(
                "the checkpoint was trained with another dictionary than the one of the data given "
                "now (same size, other symbols or order): use the data-bin (dict.*.txt) the model "
                "was trained with"
            )
