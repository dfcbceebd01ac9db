"""``torch.nn.modules.rnn`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.rnn import RNNBase as RNNBase  # noqa: F401
from ..layers.rnn import RNN as RNN  # noqa: F401
from ..layers.rnn import LSTM as LSTM  # noqa: F401
from ..layers.rnn import GRU as GRU  # noqa: F401
from ..layers.rnn import RNNCellBase as RNNCellBase  # noqa: F401
from ..layers.rnn import RNNCell as RNNCell  # noqa: F401
from ..layers.rnn import LSTMCell as LSTMCell  # noqa: F401
from ..layers.rnn import GRUCell as GRUCell  # noqa: F401

__all__ = ['RNNBase', 'RNN', 'LSTM', 'GRU', 'RNNCellBase', 'RNNCell', 'LSTMCell', 'GRUCell']
