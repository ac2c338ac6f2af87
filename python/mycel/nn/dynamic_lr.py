"""Dynamic learning rates as Python lists, one value per step (MindSpore's nn.dynamic_lr): pass
the list as an optimizer's learning_rate and it is indexed by global_step. Decays here move once
per epoch (`step_per_epoch` steps); `decay_epoch` sets the period."""
import math


def _check(who, arg, value, kind="float", positive=False, non_negative=False):
    kinds = (int,) if kind == "int" else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{who}: argument '{arg}' must be {'an int' if kind == 'int' else 'a float'}, "
                        f"got {type(value).__name__} {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{who}: argument '{arg}' must be > 0, got {value!r}")
    if non_negative and not value >= 0:
        raise ValueError(f"{who}: argument '{arg}' must be >= 0, got {value!r}")
    return value


def _check_steps(who, total_step, step_per_epoch, decay_epoch, decay_arg="decay_epoch"):
    _check(who, "total_step", total_step, "int", positive=True)
    _check(who, "step_per_epoch", step_per_epoch, "int", positive=True)
    _check(who, decay_arg, decay_epoch, "int", positive=True)


def piecewise_constant_lr(milestone, learning_rates):
    """learning_rates[i] for the steps before milestone[i] (milestones strictly increasing); the
    list has milestone[-1] entries."""
    who = "piecewise_constant_lr"
    if not isinstance(milestone, (list, tuple)) or not milestone:
        raise TypeError(f"{who}: argument 'milestone' must be a non-empty list of int, got {milestone!r}")
    if not isinstance(learning_rates, (list, tuple)) or len(learning_rates) != len(milestone):
        raise ValueError(f"{who}: argument 'learning_rates' must be a list of {len(milestone)} floats "
                         f"(one per milestone), got {learning_rates!r}")
    last = 0
    for m in milestone:
        _check(who, "milestone", m, "int", positive=True)
        if m <= last:
            raise ValueError(f"{who}: argument 'milestone' must be strictly increasing, got {list(milestone)}")
        last = m
    for lr in learning_rates:
        _check(who, "learning_rates", lr)
    out, start = [], 0
    for m, lr in zip(milestone, learning_rates):
        out += [float(lr)] * (m - start)
        start = m
    return out


def _epoch_decay(who, learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair, fn):
    _check(who, "learning_rate", learning_rate, positive=True)
    _check(who, "decay_rate", decay_rate, positive=True)
    _check_steps(who, total_step, step_per_epoch, decay_epoch)
    if not isinstance(is_stair, bool):
        raise TypeError(f"{who}: argument 'is_stair' must be a bool, got {type(is_stair).__name__}")
    out = []
    for i in range(total_step):
        p = math.floor(i / step_per_epoch) / decay_epoch
        out.append(fn(float(learning_rate), float(decay_rate), math.floor(p) if is_stair else p))
    return out


def exponential_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False):
    """lr * decay_rate ** (epoch / decay_epoch) per step."""
    return _epoch_decay("exponential_decay_lr", learning_rate, decay_rate, total_step, step_per_epoch,
                        decay_epoch, is_stair, lambda lr, r, p: lr * r ** p)


def natural_exp_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False):
    """lr * exp(-decay_rate * epoch / decay_epoch) per step."""
    return _epoch_decay("natural_exp_decay_lr", learning_rate, decay_rate, total_step, step_per_epoch,
                        decay_epoch, is_stair, lambda lr, r, p: lr * math.exp(-r * p))


def inverse_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False):
    """lr / (1 + decay_rate * epoch / decay_epoch) per step."""
    return _epoch_decay("inverse_decay_lr", learning_rate, decay_rate, total_step, step_per_epoch,
                        decay_epoch, is_stair, lambda lr, r, p: lr / (1.0 + r * p))


def cosine_decay_lr(min_lr, max_lr, total_step, step_per_epoch, decay_epoch):
    """min_lr + (max_lr - min_lr) * (1 + cos(pi * epoch / decay_epoch)) / 2 per step."""
    who = "cosine_decay_lr"
    _check(who, "min_lr", min_lr, non_negative=True)
    _check(who, "max_lr", max_lr, positive=True)
    if min_lr >= max_lr:
        raise ValueError(f"{who}: argument 'min_lr' must be < max_lr ({max_lr}), got {min_lr}")
    _check_steps(who, total_step, step_per_epoch, decay_epoch)
    half = 0.5 * (max_lr - min_lr)
    return [min_lr + half * (1.0 + math.cos(math.pi * math.floor(i / step_per_epoch) / decay_epoch))
            for i in range(total_step)]


def polynomial_decay_lr(learning_rate, end_learning_rate, total_step, step_per_epoch, decay_epoch, power,
                        update_decay_epoch=False):
    """(lr - end_lr) * (1 - epoch / decay_epoch) ** power + end_lr per step, the epoch capped at
    decay_epoch; with update_decay_epoch the horizon grows to the next multiple of decay_epoch."""
    who = "polynomial_decay_lr"
    _check(who, "learning_rate", learning_rate, positive=True)
    _check(who, "end_learning_rate", end_learning_rate, non_negative=True)
    _check(who, "power", power, positive=True)
    _check_steps(who, total_step, step_per_epoch, decay_epoch)
    if not isinstance(update_decay_epoch, bool):
        raise TypeError(f"{who}: argument 'update_decay_epoch' must be a bool, "
                        f"got {type(update_decay_epoch).__name__}")
    out = []
    for i in range(total_step):
        epoch = math.floor(i / step_per_epoch)
        if update_decay_epoch:
            horizon = decay_epoch * max(math.ceil(epoch / decay_epoch), 1)
        else:
            epoch, horizon = min(epoch, decay_epoch), decay_epoch
        out.append((learning_rate - end_learning_rate) * (1.0 - epoch / horizon) ** power + end_learning_rate)
    return out


def warmup_lr(learning_rate, total_step, step_per_epoch, warmup_epoch):
    """lr * min(epoch, warmup_epoch) / warmup_epoch per step (0 in the first epoch)."""
    who = "warmup_lr"
    _check(who, "learning_rate", learning_rate, positive=True)
    _check_steps(who, total_step, step_per_epoch, warmup_epoch, "warmup_epoch")
    return [learning_rate * min(math.floor(i / step_per_epoch), warmup_epoch) / warmup_epoch
            for i in range(total_step)]


__all__ = ["piecewise_constant_lr", "exponential_decay_lr", "natural_exp_decay_lr", "inverse_decay_lr",
           "cosine_decay_lr", "polynomial_decay_lr", "warmup_lr"]
