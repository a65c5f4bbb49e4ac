"""The encoder-decoder base class of the three models: checkpoints that do not fit are refused."""
import hashlib

from fairseq.models import FairseqEncoderDecoderModel

from fairseq_wean.errors import FairseqWeanError


class CheckedEncoderDecoderModel(FairseqEncoderDecoderModel):
    """``FairseqEncoderDecoderModel`` that keeps a fingerprint of its dictionaries and checks it.

    A checkpoint of another dictionary (size or order) or of another architecture gets a
    one-line ``FairseqWeanError`` instead of torch's size-mismatch report, or silently wrong
    outputs when only the order of the dictionary differs.
    """

    def __init__(self, encoder, decoder, *dictionaries):
        """``dictionaries``: the one joined dictionary, or the source and target dictionaries."""
        super().__init__(encoder, decoder)
        self.register_buffer("dictionary_fingerprint", dictionary_fingerprint(*dictionaries))

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        if strict:
            check_state_dict_compatible(self, state_dict)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)


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
