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
    cause = exc
    # fairseq wraps some exceptions (e.g. while loading a checkpoint); look for ours inside.
    while cause is not None and not isinstance(cause, FairseqWeanError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None:
        sys.stderr.write("fairseq-wean: error: {}\n".format(str(cause).replace("\n", " ")))
        sys.stderr.flush()
        return
    _previous(exc_type, exc, tb)


def install_excepthook():
    if sys.excepthook is not _excepthook:
        sys.excepthook = _excepthook


def require_joined_dictionary(task, arch):
    """Encoder input, decoder input and output share one embedding matrix: one dictionary."""
    src, tgt = task.source_dictionary, task.target_dictionary
    if src is None or tgt is None or src.indices != tgt.indices:
        raise FairseqWeanError(
            "--arch {} shares one embedding matrix between source and target, but the source and "
            "target dictionaries differ: binarize the data with fairseq-preprocess "
            "--joined-dictionary".format(arch)
        )


def dictionary_fingerprint(dictionary):
    """A 56-bit hash of the dictionary's symbols in order (an int64 tensor).

    Models keep it as a buffer, so a checkpoint loaded with a dictionary of the same size
    but another order (data binarized anew) is refused instead of decoding garbage.
    """
    import torch

    digest = hashlib.sha256("\n".join(dictionary.symbols).encode("utf-8")).digest()
    return torch.tensor(int.from_bytes(digest[:7], "little"), dtype=torch.long)


def check_state_dict_compatible(model, state_dict):
    """Refuse, in one line, a checkpoint whose parameters do not fit ``model``.

    torch's own message for this is a multi-line list of size mismatches; the usual causes
    are a dictionary of another size (data binarized anew) or another architecture.
    """
    own = model.state_dict()
    missing = sorted(set(own) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(own))
    if missing or unexpected:
        raise FairseqWeanError(
            "the checkpoint does not fit {}: {} parameter(s) missing (e.g. {}) and {} unexpected "
            "(e.g. {}); it was trained with another --arch or other options".format(
                type(model).__name__, len(missing), missing[:2], len(unexpected), unexpected[:2],
            )
        )
    for name, tensor in state_dict.items():
        if own[name].shape != tensor.shape:
            vocab = len(model.encoder.dictionary) if hasattr(model, "encoder") else None
            if vocab in own[name].shape and vocab not in tensor.shape:
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
