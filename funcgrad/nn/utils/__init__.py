"""``funcgrad.nn.utils``: gradient clipping and parameter/vector conversion (``rnn`` has the
packed-sequence helpers, ``parametrize``/``parametrizations`` the parametrizations — orthogonal,
spectral_norm, weight_norm — and ``prune`` the pruning methods)."""

from __future__ import annotations

from .clip_grad import (clip_grad_norm as clip_grad_norm, clip_grad_norm_ as clip_grad_norm_,  # noqa: F401
                        clip_grad_value_ as clip_grad_value_, clip_grads_with_norm_ as clip_grads_with_norm_,
                        get_total_norm as get_total_norm)
from .convert_parameters import (parameters_to_vector as parameters_to_vector,  # noqa: F401
                                 vector_to_parameters as vector_to_parameters)

# ---- rnn helpers (their own module) -------------------------------------------------------------
from . import rnn as rnn  # noqa: F401,E402
from .weight_norm import remove_weight_norm as remove_weight_norm, weight_norm as weight_norm  # noqa: F401,E402
from . import parametrize as parametrize  # noqa: F401,E402
from . import parametrizations as parametrizations  # noqa: F401,E402
from .spectral_norm import remove_spectral_norm as remove_spectral_norm  # noqa: F401,E402
from .spectral_norm import spectral_norm as spectral_norm  # noqa: F401,E402
from . import prune as prune  # noqa: F401,E402
from .fusion import (fuse_conv_bn_eval as fuse_conv_bn_eval,  # noqa: F401,E402
                     fuse_conv_bn_weights as fuse_conv_bn_weights, fuse_linear_bn_eval as fuse_linear_bn_eval,
                     fuse_linear_bn_weights as fuse_linear_bn_weights)
from .init import skip_init as skip_init  # noqa: F401,E402
from . import stateless as stateless  # noqa: F401,E402
