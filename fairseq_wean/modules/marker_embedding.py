"""Word embeddings in which source-position markers ``<unk-N>`` share the ``<unk>`` row."""
import torch
import torch.nn as nn


class MarkerEmbedding(nn.Embedding):
    """Word embeddings in which every ``<unk-N>`` marker reads the ``<unk>`` row.

    As in fairseq's pointer-generator: a marker says "some rare word at source position N"; the
    copy distribution (CoRe eq. 7) distinguishes markers by their ids, the embedding does not need
    to, so a marker for a position never seen in training behaves like the trained ones.

    ``marker_ids``: the dictionary ids of the markers (which words are markers is the data's
    business, not this module's). The table is ``|V| x embedding_dim``, uniform in [-0.1, 0.1],
    with a zero pad row; the marker rows exist but are never read. ``forward``: tokens of any
    shape ``*`` -> ``* x embedding_dim``.
    """

    def __init__(self, dictionary, embedding_dim, marker_ids=()):
        super().__init__(len(dictionary), embedding_dim, padding_idx=dictionary.pad())
        nn.init.uniform_(self.weight, -0.1, 0.1)
        nn.init.constant_(self.weight[dictionary.pad()], 0)
        lookup = torch.arange(len(dictionary))
        markers = list(marker_ids)
        if markers:
            lookup[markers] = dictionary.unk()
        self.has_markers = bool(markers)
        self.register_buffer("lookup", lookup, persistent=False)

    def forward(self, tokens):
        if self.has_markers:
            tokens = self.lookup[tokens]
        return super().forward(tokens)
