"""The encoder-decoder base class of the three models: checkpoints that do not fit are refused."""
from fairseq.models import FairseqEncoderDecoderModel

from fairseq_wean.errors import check_state_dict_compatible, dictionary_fingerprint


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
