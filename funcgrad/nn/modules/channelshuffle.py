"""``torch.nn.modules.channelshuffle`` import path: re-exports of funcgrad's layers (defined in ``funcgrad/nn/layers``)."""

from ..layers.extra import ChannelShuffle as ChannelShuffle  # noqa: F401

__all__ = ['ChannelShuffle']
