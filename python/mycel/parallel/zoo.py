"""Model descriptions of well-known networks for the strategy search and its simulation:
ResNet-50 (the paper's Fig. 12 model, with a classifier of any width) and a BERT-style
transformer encoder."""
from mycel.parallel.description import ModelDescription

__all__ = ["resnet50", "transformer"]


def _bottleneck(m, x, name, width, stride, downsample):
    y = m.conv2d(f"{name}.conv1", x, width, 1)
    y = m.elementwise(f"{name}.relu1", "relu", m.batch_norm(f"{name}.bn1", y))
    y = m.conv2d(f"{name}.conv2", y, width, 3, stride)
    y = m.elementwise(f"{name}.relu2", "relu", m.batch_norm(f"{name}.bn2", y))
    y = m.batch_norm(f"{name}.bn3", m.conv2d(f"{name}.conv3", y, 4 * width, 1))
    if downsample:
        x = m.batch_norm(f"{name}.down_bn", m.conv2d(f"{name}.down_conv", x, 4 * width, 1, stride))
    return m.elementwise(f"{name}.relu3", "relu", m.elementwise(f"{name}.add", "add", y, x))


def resnet50(batch=256, num_classes=1000, image=224, optimizer_slots=1):
    """ResNet-50 v1.5 (NCHW) with a `num_classes` classifier and softmax cross-entropy: 177 ops."""
    m = ModelDescription(f"resnet50_{num_classes}", optimizer_slots=optimizer_slots)
    x = m.input((batch, 3, image, image))
    x = m.elementwise("relu", "relu", m.batch_norm("bn1", m.conv2d("conv1", x, 64, 7, 2)))
    x = m.pool("max_pool", x, 3, 2)
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for b in range(blocks):
            x = _bottleneck(m, x, f"layer{stage + 1}.{b}", width, 2 if b == 0 and stage > 0 else 1, b == 0)
    x = m.global_avg_pool("avg_pool", x)
    logits = m.dense("fc", x, num_classes)
    m.softmax_cross_entropy("loss", logits)
    return m


def _encoder_layer(m, x, name, heads):
    b, s, h = x.shape
    dh = h // heads
    ln = m.layer_norm(f"{name}.ln1", x)

    def split_heads(t, tag):
        dims = [("b", b, True, True), ("s", s, False, False), ("a", heads, True, False), ("d", dh, False, False)]
        t = m.reshape(f"{name}.{tag}.reshape", t, ["b", "s", ["a", "d"]], ["b", "s", "a", "d"], dims)
        return m.reshape(f"{name}.{tag}.transpose", t, ["b", "s", "a", "d"], ["b", "a", "s", "d"], dims)

    def dense(t, tag, out):  # mixed precision: the matmul reads a float16 cast of its input
        return m.dense(f"{name}.{tag}.matmul", m.elementwise(f"{name}.{tag}.cast", "cast", t), out, bias=False)

    qkv = []
    for tag in ("q", "k", "v"):
        t = dense(ln, tag, h)
        t = m.elementwise(f"{name}.{tag}.bias_add", "bias_add", t, params=(2,))
        qkv.append(split_heads(t, tag))
    q, k, v = qkv
    dims = [("b", b, True, True), ("a", heads, True, False), ("s", s, False, False),
            ("t", s, False, False), ("d", dh, False, False)]
    scores = m.op(f"{name}.scores", "batch_matmul", dims, [(q, ["b", "a", "s", "d"]), (k, ["b", "a", "t", "d"])],
                  ["b", "a", "s", "t"], 2 * b * heads * s * s * dh)
    scores = m.elementwise(f"{name}.scale", "mul", scores)
    scores = m.elementwise(f"{name}.mask_add", "add", scores)
    probs = m.elementwise(f"{name}.softmax", "softmax", scores, flops_per_element=5)
    probs = m.elementwise(f"{name}.attn_dropout", "dropout", probs, flops_per_element=2)
    ctx = m.op(f"{name}.context", "batch_matmul", dims, [(probs, ["b", "a", "s", "t"]), (v, ["b", "a", "t", "d"])],
               ["b", "a", "s", "d"], 2 * b * heads * s * s * dh)
    mdims = [("b", b, True, True), ("a", heads, True, False), ("s", s, False, False), ("d", dh, False, False)]
    ctx = m.reshape(f"{name}.merge.transpose", ctx, ["b", "a", "s", "d"], ["b", "s", "a", "d"], mdims)
    ctx = m.reshape(f"{name}.merge.reshape", ctx, ["b", "s", "a", "d"], ["b", "s", ["a", "d"]], mdims)
    out = m.elementwise(f"{name}.out.bias_add", "bias_add", dense(ctx, "out", h),
                        params=(2,))
    out = m.elementwise(f"{name}.out_dropout", "dropout", out, flops_per_element=2)
    x = m.elementwise(f"{name}.residual1", "add", out, x)
    ln = m.layer_norm(f"{name}.ln2", x)
    f = m.elementwise(f"{name}.ffn1.bias_add", "bias_add", dense(ln, "ffn1", 4 * h),
                      params=(2,))
    f = m.elementwise(f"{name}.gelu", "gelu", f, flops_per_element=8)
    f = m.elementwise(f"{name}.ffn2.bias_add", "bias_add", dense(f, "ffn2", h),
                      params=(2,))
    f = m.elementwise(f"{name}.ffn_dropout", "dropout", f, flops_per_element=2)
    return m.elementwise(f"{name}.residual2", "add", f, x)


def transformer(layers=24, batch=128, seq=512, hidden=1024, heads=16, vocab=30522, optimizer_slots=2):
    """A BERT-style encoder (pre-norm, Adam): embedding, `layers` blocks of 39 ops, LM head and
    loss: 24 layers give 943 ops."""
    m = ModelDescription(f"transformer_{layers}", optimizer_slots=optimizer_slots)
    ids = m.input((batch, seq))
    dims = [("b", batch, True, True), ("s", seq, False, False), ("v", vocab, True, False), ("e", hidden, True, False)]
    x = m.op("embedding", "gather", dims, [(ids, ["b", "s"]), (None, ["v", "e"])], ["b", "s", "e"], batch * seq * hidden)
    x = m.elementwise("pos_add", "add", x, params=(2,))
    for i in range(layers):
        x = _encoder_layer(m, x, f"layer{i}", heads)
    x = m.layer_norm("final_ln", x)
    logits = m.dense("lm_head", x, vocab, bias=False)
    dims = [("b", batch, True, True), ("s", seq, False, False), ("k", vocab, True, False)]
    m.op("loss", "softmax_cross_entropy", dims, [(logits, ["b", "s", "k"]), (m.input((batch, seq)), ["b", "s"])],
         ["b", "s"], 5 * batch * seq * vocab)
    return m
