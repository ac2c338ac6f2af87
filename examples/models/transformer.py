"""A small sequence classifier: optional token embedding, a stack of nn.TransformerEncoderLayer
(batch_first), mean pooling over the sequence, and a Dense classifier."""
from mycel import nn, ops


class TransformerClassifier(nn.Cell):
    """Input (N, L) int ids when vocab_size is given, else (N, L, d_model) float features;
    output (N, num_classes) logits. Dropout defaults to 0 so that runs are deterministic."""

    def __init__(self, d_model=128, nhead=4, dim_feedforward=512, num_layers=2, num_classes=10,
                 vocab_size=None, dropout=0.0, activation="relu"):
        super().__init__()
        self.use_embedding = vocab_size is not None
        self.embedding = nn.Embedding(vocab_size, d_model) if self.use_embedding else None
        self.layers = nn.SequentialCell([
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=dim_feedforward,
                                       dropout=dropout, activation=activation, batch_first=True)
            for _ in range(num_layers)])
        self.classifier = nn.Dense(d_model, num_classes)

    def construct(self, x):
        if self.use_embedding:
            x = self.embedding(x)
        x = self.layers(x)
        x = ops.mean(x, axis=1)  # mean pool over the sequence: (N, L, E) -> (N, E)
        return self.classifier(x)
