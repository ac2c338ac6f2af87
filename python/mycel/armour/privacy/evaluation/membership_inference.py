"""Membership inference (Shokri et al. 2017, in MindArmour's form): the attack models learn to
tell the target model's training samples (members) from others (non-members) by the target's
per-sample loss and logits. train() fits each configured scikit-learn model (knn, lr, mlp, rf;
an optional dependency) by cross-validated grid search on members and non-members; eval()
reports each attack's precision, recall and accuracy on another such pair of sets (membership
1 = member)."""
import numpy as np

from mycel.armour.adv_robustness.attacks.black._common import make_rng
from mycel.armour.adv_robustness.detectors.detector import as_runner
from mycel.armour.privacy.evaluation._data import batches

_METRICS = ("precision", "recall", "accuracy")


def _estimator(method):
    try:
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError as e:  # optional dependency
        raise ImportError("MembershipInference trains scikit-learn models: pip install scikit-learn "
                          "(or mycel[armour])") from e
    make = {"knn": KNeighborsClassifier, "lr": lambda: LogisticRegression(max_iter=1000),
            "mlp": lambda: MLPClassifier(max_iter=500), "rf": RandomForestClassifier}[method]
    # scaled features: the loss and logits have very different ranges
    return make_pipeline(StandardScaler(), make())


def _check_config(attack_config):
    if not isinstance(attack_config, (list, tuple)) or not attack_config:
        raise TypeError(f"MembershipInference: attack_config must be a non-empty list of dicts, got {attack_config!r}")
    out = []
    for c in attack_config:
        if not isinstance(c, dict) or set(c) != {"method", "params"}:
            raise KeyError(f"MembershipInference: each attack_config entry must be a dict with keys 'method' and "
                           f"'params', got {c!r}")
        method = str(c["method"]).lower()
        if method not in ("knn", "lr", "mlp", "rf"):
            raise NameError(f"MembershipInference: method must be one of 'knn', 'lr', 'mlp', 'rf', got {c['method']!r}")
        if not isinstance(c["params"], dict):
            raise TypeError(f"MembershipInference: params of {method} must be a dict, got {c['params']!r}")
        grid = {k: list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v] for k, v in c["params"].items()}
        out.append((method, grid))
    return out


def _ce(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels]


class MembershipInference:
    """MembershipInference(model, n_jobs=-1): model is the target (a mycel Model or Cell mapping inputs
    to logits); n_jobs is the grid search's parallelism (-1: all cores). seed (ours) fixes the
    shuffling and the models' own randomness; None uses numpy's global generator."""

    def __init__(self, model, n_jobs=-1, *, seed=None):
        o = "MembershipInference"
        self._model = as_runner(o, "model", model)
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not (n_jobs == -1 or n_jobs > 0):
            raise ValueError(f"{o}: n_jobs must be -1 or a positive int, got {n_jobs!r}")
        self._n_jobs = n_jobs
        self._rng = make_rng(o, seed)
        self._attack_list = []

    def _features(self, data, name):
        feats = []
        for x, y in batches("MembershipInference", name, data):
            logits = self._model(np.asarray(x, np.float32)).astype(np.float64)
            y = np.asarray(y).astype(np.int64).reshape(-1)
            if logits.ndim != 2 or len(y) != len(logits) or y.min() < 0 or y.max() >= logits.shape[1]:
                raise ValueError(f"MembershipInference: {name} labels must be one class index per input in "
                                 f"[0, {logits.shape[-1]}), got shape {y.shape} for logits {logits.shape}")
            feats.append(np.hstack([_ce(logits, y)[:, None], logits]))
        if not feats:
            raise ValueError(f"MembershipInference: {name} is empty")
        return np.vstack(feats)

    def _transform(self, dataset_train, dataset_test):
        """[loss, logits] per sample with membership 1 (training set) / 0 (test set), shuffled."""
        a = self._features(dataset_train, "dataset_train")
        b = self._features(dataset_test, "dataset_test")
        x = np.vstack([a, b])
        y = np.r_[np.ones(len(a), np.int32), np.zeros(len(b), np.int32)]
        order = self._rng.permutation(len(y))
        return x[order], y[order]

    def train(self, dataset_train, dataset_test, attack_config):
        """Fits one attack model per entry of attack_config, e.g. [{'method': 'lr', 'params': {'C': [0.1, 1]}}]."""
        config = _check_config(attack_config)
        from sklearn.model_selection import GridSearchCV
        x, y = self._transform(dataset_train, dataset_test)
        for method, grid in config:
            est = _estimator(method)
            step = est.steps[-1][0]
            if f"{step}__random_state" in est.get_params():
                est.set_params(**{f"{step}__random_state": int(self._rng.randint(0, 2**31 - 1))})
            search = GridSearchCV(est, {f"{step}__{k}": v for k, v in grid.items()}, cv=3,
                                  n_jobs=None if self._n_jobs == 1 else self._n_jobs)
            self._attack_list.append(search.fit(x, y))

    def eval(self, dataset_train, dataset_test, metrics=("precision",)):
        """[{metric: value} per attack model]; precision (recall) is -1 when nothing is predicted (is) a member."""
        if isinstance(metrics, str) or not isinstance(metrics, (list, tuple)) or not set(metrics) <= set(_METRICS):
            raise ValueError(f"MembershipInference: metrics must be a list of {list(_METRICS)}, got {metrics!r}")
        if not self._attack_list:
            raise ValueError("MembershipInference: call train(...) before eval(...)")
        x, truth = self._transform(dataset_train, dataset_test)
        out = []
        for attack in self._attack_list:
            pred = attack.predict(x).astype(np.int32)
            hit = int((pred & truth).sum())
            vals = {"accuracy": float((pred == truth).mean()),
                    "precision": hit / pred.sum() if pred.sum() else -1.0,
                    "recall": hit / truth.sum() if truth.sum() else -1.0}
            out.append({m: float(vals[m]) for m in metrics})
        return out
