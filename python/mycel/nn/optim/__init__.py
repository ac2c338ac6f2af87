"""Optimizers (MindSpore's mindspore.nn optimizers): each a Cell whose construct(gradients)
updates its Parameters with ops.assign."""
from mycel.nn.optim.optimizer import Optimizer
from mycel.nn.optim.sgd import SGD
from mycel.nn.optim.momentum import Momentum
from mycel.nn.optim.adam import Adam, AdamOffload, AdamWeightDecay, AdamW
from mycel.nn.optim.rmsprop import RMSProp
from mycel.nn.optim.adagrad import Adagrad
from mycel.nn.optim.lamb import Lamb
from mycel.nn.optim.lars import LARS
from mycel.nn.optim.more import Adadelta, AdaMax, Rprop, ProximalAdagrad, FTRL, ASGD, LazyAdam

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamOffload", "AdamWeightDecay", "AdamW", "RMSProp", "Adagrad", "Lamb", "Adadelta", "AdaMax",
           "Rprop", "ProximalAdagrad", "FTRL", "ASGD", "LazyAdam", "LARS"]
