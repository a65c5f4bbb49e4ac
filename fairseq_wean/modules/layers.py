"""Parameter-initialising constructors, in one place (as in ``fairseq/models/lstm.py``)."""
import torch.nn as nn


def Embedding(num_embeddings, embedding_dim, padding_idx):
    """Word embeddings, uniform(-0.1, 0.1) as fairseq's LSTM; the padding row is zero."""
    m = nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx)
    nn.init.uniform_(m.weight, -0.1, 0.1)
    nn.init.constant_(m.weight[padding_idx], 0)
    return m


def Linear(in_features, out_features, bias=True):
    """Linear layer, uniform(-0.1, 0.1) weights and zero bias as fairseq's LSTM."""
    m = nn.Linear(in_features, out_features, bias=bias)
    m.weight.data.uniform_(-0.1, 0.1)
    if bias:
        m.bias.data.zero_()
    return m


def RNN(cell_type, input_size, hidden_size, **kwargs):
    """A multi-layer ``nn.LSTM`` or ``nn.GRU`` with every weight and bias uniform(-0.1, 0.1)."""
    cls = {"lstm": nn.LSTM, "gru": nn.GRU}[cell_type]
    m = cls(input_size, hidden_size, **kwargs)
    for name, param in m.named_parameters():
        if "weight" in name or "bias" in name:
            param.data.uniform_(-0.1, 0.1)
    return m


def RNNCell(cell_type, input_size, hidden_size):
    """A single ``nn.LSTMCell`` or ``nn.GRUCell`` with uniform(-0.1, 0.1) parameters."""
    cls = {"lstm": nn.LSTMCell, "gru": nn.GRUCell}[cell_type]
    m = cls(input_size, hidden_size)
    for name, param in m.named_parameters():
        if "weight" in name or "bias" in name:
            param.data.uniform_(-0.1, 0.1)
    return m
