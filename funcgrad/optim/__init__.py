"""``funcgrad.optim``: PyTorch's optimizers and schedulers, each update an optax transform run
as one jitted call per parameter group (see ``optimizer.py``)."""

from __future__ import annotations

from . import lr_scheduler as lr_scheduler
from .adagrad import Adadelta as Adadelta, Adagrad as Adagrad
from .adam import Adam as Adam, Adamax as Adamax, AdamW as AdamW, NAdam as NAdam, RAdam as RAdam
from .lbfgs import LBFGS as LBFGS
from .optimizer import Optimizer as Optimizer
from .optimizer import register_optimizer_step_post_hook as register_optimizer_step_post_hook
from .optimizer import register_optimizer_step_pre_hook as register_optimizer_step_pre_hook
from .rmsprop import RMSprop as RMSprop
from .sgd import SGD as SGD

__all__ = ["Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "NAdam", "Optimizer", "RAdam",
           "RMSprop", "SGD", "lr_scheduler", "register_optimizer_step_post_hook",
           "register_optimizer_step_pre_hook"]
from .rprop import ASGD as ASGD, Rprop as Rprop  # noqa: E402
__all__ += ["ASGD", "Rprop"]
from . import swa_utils as swa_utils  # noqa: E402
