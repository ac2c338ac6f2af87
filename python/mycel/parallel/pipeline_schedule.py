"""Pipeline schedules as per-stage lists of actions, and a simulator that checks them.

A stage's list says, in order, what it does for each micro-batch i: ("recv_fwd", i) receive the
activation from the previous stage, ("fwd", i) run the stage, ("send_fwd", i) send its output on,
("recv_bwd", i) receive the output's gradient from the next stage, ("bwd", i) differentiate the
stage, ("send_bwd", i) send the input's gradient back. The first stage neither receives
activations nor sends gradients; the last neither sends activations nor receives gradients.

- "gpipe": every forward, then every backward (GPipe). A stage holds all micro_size
  micro-batches between their forward and their backward.
- "1f1b": one forward, one backward (PipeDream-flush, Megatron's non-interleaved 1F1B). Stage s
  of S first runs min(S - s - 1, M) forwards (warm-up), then alternates one forward and one
  backward, and finishes the remaining backwards (cool-down); it never holds more than S - s
  micro-batches.

Mycel's Send and Receive are rendezvous: each waits for its peer (the metadata handshake), so a
stage that sends while its neighbour also sends would wait forever. In the steady phase stage s
sends activation i and then receives gradient j, while stage s + 1 would send gradient j and then
receive activation i; so every stage receives its next activation before it sends the gradient
of the micro-batch it just finished. `simulate` runs the lists with rendezvous semantics and
raises on a deadlock or a mismatched pair (tests run it for many stage and micro-batch counts)."""

__all__ = ["SCHEDULERS", "stage_actions", "simulate"]

SCHEDULERS = ("gpipe", "1f1b")


def _forward(i, first, last):
    return ([] if first else [("recv_fwd", i)]) + [("fwd", i)] + ([] if last else [("send_fwd", i)])


def _backward(i, first, last):
    return ([] if last else [("recv_bwd", i)]) + [("bwd", i)] + ([] if first else [("send_bwd", i)])


def stage_actions(scheduler, stage, stages, micro):
    """The ordered actions of `stage` (0-based) of `stages` for `micro` micro-batches."""
    if scheduler not in SCHEDULERS:
        raise ValueError(f"pipeline_scheduler must be one of {SCHEDULERS}, got {scheduler!r}")
    if not 0 <= stage < stages or micro < 1:
        raise ValueError(f"stage_actions: need 0 <= stage ({stage}) < stages ({stages}) and micro >= 1 ({micro})")
    first, last = stage == 0, stage == stages - 1
    if scheduler == "gpipe":
        acts = [a for i in range(micro) for a in _forward(i, first, last)]
        return acts + [a for i in range(micro) for a in _backward(i, first, last)]
    warm = min(stages - stage - 1, micro)
    acts = [a for i in range(warm) for a in _forward(i, first, last)]
    for k in range(micro - warm):
        acts += _forward(warm + k, first, last) + _backward(k, first, last)
    for j in range(micro - warm, micro):
        acts += _backward(j, first, last)
    # Receive the next activation before sending back the gradient just computed (see above).
    for n in range(len(acts) - 1):
        if acts[n][0] == "send_bwd" and acts[n + 1][0] == "recv_fwd":
            acts[n], acts[n + 1] = acts[n + 1], acts[n]
    return acts


_PEER = {"send_fwd": (1, "recv_fwd"), "recv_fwd": (-1, "send_fwd"),
         "send_bwd": (-1, "recv_bwd"), "recv_bwd": (1, "send_bwd")}


def simulate(scheduler, stages, micro):
    """Runs every stage's actions with rendezvous sends and receives. Returns, per stage, the peak
    number of micro-batches held between their forward and their backward. Raises RuntimeError on
    a deadlock or on a send whose receiver expects another micro-batch."""
    acts = [stage_actions(scheduler, s, stages, micro) for s in range(stages)]
    pos, held, peak = [0] * stages, [0] * stages, [0] * stages
    while any(pos[s] < len(acts[s]) for s in range(stages)):
        moved = False
        for s in range(stages):
            while pos[s] < len(acts[s]):
                kind, i = acts[s][pos[s]]
                if kind in ("fwd", "bwd"):
                    held[s] += 1 if kind == "fwd" else -1
                    peak[s] = max(peak[s], held[s])
                    pos[s] += 1
                    moved = True
                    continue
                step, want = _PEER[kind]
                p = s + step
                if pos[p] >= len(acts[p]) or acts[p][pos[p]][0] != want:
                    break
                if acts[p][pos[p]][1] != i:
                    raise RuntimeError(f"{scheduler}: stage {s} {kind} micro-batch {i} meets stage {p} "
                                       f"{want} micro-batch {acts[p][pos[p]][1]}")
                pos[s] += 1
                pos[p] += 1
                moved = True
        if not moved:
            waiting = {s: acts[s][pos[s]] for s in range(stages) if pos[s] < len(acts[s])}
            raise RuntimeError(f"{scheduler}: deadlock with {stages} stages, {micro} micro-batches; waiting: {waiting}")
    return peak
