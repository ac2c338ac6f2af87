"""ModelInversionAttack (He, Zhang and Lee 2019, as MindArmour's, for split learning): the
features a network computes up to split_layer leave the client; the attacker trains an inverse
network that maps them back to the inputs (Adam on the reconstruction MSE) and evaluates the
reconstructions by SSIM and PSNR. split_layer names a child of a SequentialCell (its features
are those after that child), or is passed to the network's get_layer_output if it has one."""
import numpy as np

from mycel import Tensor, nn
from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.evaluations.attack_evaluation import _SSIM_WIN, _ssim
from mycel.armour.privacy.evaluation._data import batches
from mycel.train.serialization import load_checkpoint, load_param_into_net


class _Prefix(nn.Cell):
    """The children of a SequentialCell up to and including one."""

    def __init__(self, cells):
        super().__init__()
        self.prefix = nn.SequentialCell(cells)

    def construct(self, x):
        return self.prefix(x)


class _LayerOutput(nn.Cell):
    def __init__(self, network, layer):
        super().__init__()
        self.network, self.layer = network, layer

    def construct(self, x):
        return self.network.get_layer_output(x, self.layer)


def _feature_cell(network, split_layer):
    if hasattr(network, "get_layer_output"):
        return _LayerOutput(network, split_layer)
    if isinstance(network, nn.SequentialCell):
        names = [name for name, _ in network.name_cells().items()]
        if split_layer in names:
            cells = list(network.name_cells().values())
            return _Prefix(cells[:names.index(split_layer) + 1])
        raise ValueError(f"ModelInversionAttack: split_layer must name a child of the SequentialCell, one of "
                         f"{names}, got {split_layer!r}")
    raise TypeError(f"ModelInversionAttack: network must be a SequentialCell or define get_layer_output(x, name), "
                    f"got {type(network).__name__}")


class _ReconstructionLoss(nn.Cell):
    def __init__(self, features, invnet):
        super().__init__()
        self.features, self.invnet = features, invnet

    def construct(self, x):
        d = self.invnet(self.features(x)) - x
        return (d * d).mean()


def _psnr(a, b, peak=1.0):
    mse = ((a - b) ** 2).mean()
    return float("inf") if mse == 0 else float(10.0 * np.log10(peak * peak / mse))


class ModelInversionAttack:
    def __init__(self, network, inv_network, input_shape, ckpoint_path=None, split_layer="conv1"):
        o = "ModelInversionAttack"
        for name, cell in (("network", network), ("inv_network", inv_network)):
            if not isinstance(cell, nn.Cell):
                raise TypeError(f"{o}: {name} must be a Cell, got {type(cell).__name__}")
        if not isinstance(input_shape, tuple) or not all(isinstance(d, int) and d > 0 for d in input_shape):
            raise ValueError(f"{o}: input_shape must be a tuple of positive ints, got {input_shape!r}")
        self._network, self._invnet, self._split_layer = network, inv_network, split_layer
        self._features = _feature_cell(network, split_layer)
        self._network.set_train(False)
        probe = np.ones((1,) + input_shape, np.float32)
        out = self._invnet(self._features(Tensor(probe))).asnumpy()
        if out.shape != probe.shape:
            raise ValueError(f"{o}: inv_network must map the features back to the input shape {probe.shape}, "
                             f"got {out.shape}")
        if ckpoint_path is not None:
            load_param_into_net(self._invnet, load_checkpoint(ckpoint_path))

    def train_inversion_model(self, dataset, epochs=50, learningrate=1e-3, eps=1e-3, apply_ams=True):
        """Adam (AMSGrad when apply_ams) on the inverse network's reconstruction MSE; returns the
        last epoch's mean loss."""
        o = "ModelInversionAttack"
        check_number(o, "epochs", epochs, lo=1, integer=True)
        check_number(o, "learningrate", learningrate, lo=0.0, lo_open=True)
        check_number(o, "eps", eps, lo=0.0, lo_open=True)
        if not isinstance(apply_ams, bool):
            raise TypeError(f"{o}: apply_ams must be a bool, got {type(apply_ams).__name__}")
        self._invnet.set_train(True)
        opt = nn.Adam(self._invnet.trainable_params(), learning_rate=learningrate, eps=eps, use_amsgrad=apply_ams)
        step = nn.TrainOneStepCell(_ReconstructionLoss(self._features, self._invnet), opt)
        step.set_train()
        mean = float("nan")
        for _ in range(epochs):
            losses = [float(step(Tensor(np.asarray(x, np.float32))).asnumpy())
                      for x, _ in batches(o, "dataset", dataset)]
            mean = float(np.mean(losses))
        self._invnet.set_train(False)
        return mean

    def inverse(self, target_feature):
        """The inverse network's reconstruction of the features (a Tensor)."""
        return self._invnet(target_feature if isinstance(target_feature, Tensor) else Tensor(target_feature))

    def evaluate(self, dataset):
        """(mean SSIM, mean PSNR) of the reconstructions (clipped to [0, 1]) against the inputs."""
        self._invnet.set_train(False)
        ssim, psnr = [], []
        for x, _ in batches("ModelInversionAttack", "dataset", dataset):
            x = np.asarray(x, np.float32)
            rec = np.clip(self._invnet(self._features(Tensor(x))).asnumpy(), 0.0, 1.0)
            for a, b in zip(x.astype(np.float64), rec.astype(np.float64)):
                if a.ndim < 2 or min(a.shape[-2:]) < _SSIM_WIN:
                    raise ValueError(f"ModelInversionAttack.evaluate: inputs must be images with H, W >= {_SSIM_WIN}, "
                                     f"got shape {a.shape}")
                ssim.append(_ssim(a, b, 1.0))
                psnr.append(_psnr(a, b))
        return (float(np.mean(ssim)), float(np.mean(psnr))) if ssim else (0.0, 0.0)
