"""Knowledge distillation (Hinton et al.): a small student learns from a trained teacher's
softened outputs as well as from the labels.

    loss = alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * hard(student, labels)

KL is averaged over the batch; T^2 keeps the soft term's gradient scale independent of T.
DistillationLoss is the loss; DistillationCell wraps student, frozen teacher and loss into the
(data, label) -> loss cell that nn.TrainOneStepCell and Model train, like nn.WithLossCell."""
from mycel import nn, ops


class DistillationLoss(nn.Cell):
    """alpha * T^2 * KL(teacher_T || student_T) + (1 - alpha) * hard_loss(student_logits, labels);
    hard_loss defaults to sparse softmax cross entropy (mean). The teacher's logits carry no
    gradient."""

    def __init__(self, temperature=4.0, alpha=0.9, hard_loss=None):
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"DistillationLoss: temperature must be > 0, got {temperature!r}")
        if not 0 <= alpha <= 1:
            raise ValueError(f"DistillationLoss: alpha must be in [0, 1], got {alpha!r}")
        self.temperature = float(temperature)
        self.alpha = float(alpha)
        self.hard_loss = hard_loss if hard_loss is not None else nn.SoftmaxCrossEntropyWithLogits(
            sparse=True, reduction="mean")

    def construct(self, student_logits, teacher_logits, labels):
        t = self.temperature
        teacher = ops.stop_gradient(teacher_logits) / t
        log_p_s = ops.log_softmax(student_logits / t, axis=-1)
        log_p_t = ops.log_softmax(teacher, axis=-1)
        kl = ops.sum(ops.exp(log_p_t) * (log_p_t - log_p_s)) / student_logits.shape[0]
        soft = kl * (t * t)
        return self.alpha * soft + (1.0 - self.alpha) * self.hard_loss(student_logits, labels)


_FROZEN = {}


def _freeze_in_inference(teacher):
    """Keeps every cell of teacher in inference mode for good: set_train() of an enclosing cell
    (TrainOneStepCell, Model) writes `training` on each sub-cell, and a BatchNorm teacher in
    training mode would normalize with batch statistics and move its running statistics. Each
    cell gets a subclass of its own class whose `training` is a read-only False."""
    for _, cell in teacher.cells_and_names():
        cls = type(cell)
        if cls not in _FROZEN.values():
            if cls not in _FROZEN:
                _FROZEN[cls] = type(cls.__name__, (cls,), {
                    "__module__": cls.__module__, "__doc__": cls.__doc__,
                    "training": property(lambda self: False, lambda self, mode: None)})
            cell.__class__ = _FROZEN[cls]
        object.__setattr__(cell, "_compiled", None)


class DistillationCell(nn.Cell):
    """(data, label) -> distillation loss of `student` against the frozen `teacher` (always in
    inference mode; its parameters take no gradient). Train it with an optimizer over
    student.trainable_params()."""

    def __init__(self, student, teacher, loss=None):
        super().__init__()
        self.student = student
        self.teacher = teacher
        self.loss = loss if loss is not None else DistillationLoss()
        for p in teacher.get_parameters():
            p.requires_grad = False
        _freeze_in_inference(teacher)

    def construct(self, data, label):
        teacher_logits = ops.stop_gradient(self.teacher(data))
        return self.loss(self.student(data), teacher_logits, label)
