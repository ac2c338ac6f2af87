"""DPOptimizerClassFactory: optimizer classes (SGD, Momentum, Adam) that add the DP noise of a
mechanism to the gradients they are given, divided by micro_batches: given DPModel's mean of the
clipped group gradients, the update is (sum of clipped + N(0, (C sigma)^2)) / micro_batches."""
from mycel import nn
from mycel.armour._checks import check_number
from mycel.armour.privacy.diff_privacy.mechanisms import NoiseMechanismsFactory

class _DPOptimizer(nn.Cell):
    """An optimizer Cell that wraps a plain one (`inner`): noise is added to the gradients, then
    the inner optimizer applies them. (Wrapping, not subclassing: graph mode compiles the call of
    a Cell, not a base-class construct called on a subclass.)"""
    _base = None
    _dp_make_mech = None
    _dp_micro = 1

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.inner = type(self)._base(*args, **kwargs)
        self.parameters = self.inner.parameters
        self._dp_mech = type(self)._dp_make_mech()
        self._dp_micro_batches = type(self)._dp_micro

    def construct(self, gradients):
        noise = self._dp_mech(gradients)
        noisy = ()
        for g, n in zip(gradients, noise):
            noisy = noisy + (g + n / self._dp_micro_batches,)
        return self.inner(noisy)


_BASES = {"SGD": nn.SGD, "Momentum": nn.Momentum, "Adam": nn.Adam}


class DPOptimizerClassFactory:
    """factory = DPOptimizerClassFactory(micro_batches); factory.set_mechanisms('Gaussian',
    norm_bound=..., initial_noise_multiplier=...); Opt = factory.create('SGD' | 'Momentum' | 'Adam');
    opt = Opt(params, learning_rate=...)."""

    def __init__(self, micro_batches=2):
        self._micro_batches = check_number("DPOptimizerClassFactory", "micro_batches", micro_batches, lo=1,
                                           integer=True)
        self._mech_args = None

    def set_mechanisms(self, policy, *args, **kwargs):
        NoiseMechanismsFactory.create(policy, *args, **kwargs)  # check the arguments now
        self._mech_args = (policy, args, kwargs)

    def create(self, policy):
        if policy not in _BASES:
            raise ValueError(f"DPOptimizerClassFactory.create: policy must be one of {list(_BASES)}, got {policy!r}")
        if self._mech_args is None:
            raise ValueError("DPOptimizerClassFactory.create: call set_mechanisms(...) first")
        name, args, kwargs = self._mech_args
        return type(f"DP{policy}", (_DPOptimizer,), {
            "_base": _BASES[policy],
            "_dp_make_mech": staticmethod(lambda: NoiseMechanismsFactory.create(name, *args, **kwargs)),
            "_dp_micro": self._micro_batches})
