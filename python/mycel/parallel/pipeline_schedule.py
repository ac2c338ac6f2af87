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

__all__ = ["SCHEDULERS", "stage_actions", "simulate", "interleaved_actions", "simulate_lists"]

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


# ---------------------------------------------------------------------------------------------
# Interleaved 1F1B (pipeline_interleave: virtual stages). Rank r of S holds v model chunks; chunk
# c on rank r is virtual stage c * S + r of V = S * v, so a micro-batch goes around the ranks v
# times. Each rank runs Megatron-LM's interleaved order of computations: forwards of groups of
# S micro-batches chunk by chunk, (S - r - 1) * 2 + (v - 1) * S warm-up forwards, then one
# forward and one backward, then the remaining backwards (backwards take the chunks in reverse).
#
# Sends and receives here name their peer rank, since the neighbour of a virtual stage may be the
# rank itself (S = 1) or wrap around (rank S - 1, chunk c -> rank 0, chunk c + 1). The lists are
# made deadlock-free by construction: one global sequence of events is built in which each send
# is immediately followed by its receive, and each rank's list is that sequence's events on it.
# Executing the lists with rendezvous sends then follows the global sequence.


def interleaved_compute_order(rank, stages, chunks, micro):
    """Rank's computations in Megatron's interleaved order: [("fwd" | "bwd", chunk, micro)]."""
    if micro % stages:
        raise ValueError(f"pipeline_interleave: micro_size ({micro}) must be a multiple of pipeline_stages "
                         f"({stages})")
    total = micro * chunks

    def unit(k, backward):
        group, within = divmod(k, stages * chunks)
        c = within // stages
        return (chunks - 1 - c) if backward else c, group * stages + within % stages

    warm = min((stages - rank - 1) * 2 + (chunks - 1) * stages, total)
    order = [("fwd",) + unit(k, False) for k in range(warm)]
    for k in range(total - warm):
        order += [("fwd",) + unit(warm + k, False), ("bwd",) + unit(k, True)]
    order += [("bwd",) + unit(k, True) for k in range(total - warm, total)]
    return order


def interleaved_actions(stages, chunks, micro):
    """Every rank's action list for interleaved 1F1B: tuples (kind, chunk, micro, peer) with
    kind among fwd, bwd (peer None), send_fwd, recv_fwd, send_bwd, recv_bwd (peer: the other
    rank). Virtual stage 0 receives nothing and the last (chunk v - 1 on rank S - 1) sends
    nothing forward; its forward takes the loss and its gradient at once."""
    V = stages * chunks
    orders = [interleaved_compute_order(r, stages, chunks, micro) for r in range(stages)]
    pos = [0] * stages
    done = set()  # ("fwd" | "bwd", virtual stage, micro) computed
    lists = [[] for _ in range(stages)]

    def rank_of(k):
        return k % stages

    while any(pos[r] < len(orders[r]) for r in range(stages)):
        moved = False
        for r in range(stages):
            if pos[r] >= len(orders[r]):
                continue
            kind, c, i = orders[r][pos[r]]
            k = c * stages + r
            if kind == "fwd":
                need = None if k == 0 else ("fwd", k - 1, i)
            else:
                need = ("fwd", k, i) if k == V - 1 else ("bwd", k + 1, i)
            if need is not None and need not in done:
                continue
            if kind == "fwd" and k > 0:  # the activation, handed over now
                src = rank_of(k - 1)
                lists[src].append(("send_fwd", (k - 1) // stages, i, r))
                lists[r].append(("recv_fwd", c, i, src))
            if kind == "bwd" and k < V - 1:  # the output's gradient
                src = rank_of(k + 1)
                lists[src].append(("send_bwd", (k + 1) // stages, i, r))
                lists[r].append(("recv_bwd", c, i, src))
            lists[r].append((kind, c, i, None))
            done.add((kind, k, i))
            pos[r] += 1
            moved = True
        if not moved:  # cannot happen for Megatron's order; a guard against a wrong one
            raise RuntimeError(f"interleaved schedule stuck: stages {stages}, chunks {chunks}, micro {micro}")
    return lists


_MATCH = {"send_fwd": "recv_fwd", "recv_fwd": "send_fwd", "send_bwd": "recv_bwd", "recv_bwd": "send_bwd"}


def simulate_lists(lists):
    """Runs action lists of the interleaved form with rendezvous sends and receives (a rank may
    be its own peer: its send and receive then follow each other). Returns each rank's peak of
    micro-batch chunks held between forward and backward; raises RuntimeError on a deadlock or a
    mismatched pair."""
    n = len(lists)
    pos, held, peak = [0] * n, [0] * n, [0] * n
    while any(pos[r] < len(lists[r]) for r in range(n)):
        moved = False
        for r in range(n):
            while pos[r] < len(lists[r]):
                kind, c, i, peer = lists[r][pos[r]]
                if kind in ("fwd", "bwd"):
                    held[r] += 1 if kind == "fwd" else -1
                    peak[r] = max(peak[r], held[r])
                    pos[r] += 1
                    moved = True
                    continue
                if peer == r:  # to itself: the pair must be the next two actions
                    nxt = lists[r][pos[r] + 1] if pos[r] + 1 < len(lists[r]) else None
                    if nxt is None or nxt[0] != _MATCH[kind] or nxt[2] != i or nxt[3] != r:
                        raise RuntimeError(f"rank {r}: {kind} to itself not followed by its match: {nxt}")
                    pos[r] += 2
                    moved = True
                    continue
                other = lists[peer][pos[peer]] if pos[peer] < len(lists[peer]) else None
                if other is None or other[0] != _MATCH[kind] or other[3] != r:
                    break
                if other[2] != i:
                    raise RuntimeError(f"rank {r} {kind} micro-batch {i} meets rank {peer} {other}")
                pos[r] += 1
                pos[peer] += 1
                moved = True
        if not moved:
            waiting = {r: lists[r][pos[r]] for r in range(n) if pos[r] < len(lists[r])}
            raise RuntimeError(f"deadlock; waiting: {waiting}")
    return peak
