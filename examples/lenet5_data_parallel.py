"""LeNet5 on Fashion-MNIST, data parallel over Open MPI: each rank trains on its shard of the
training set and the gradients are averaged across ranks every step, so N ranks with batch 32
each take the steps one process would take with batch 32 * N. The script is examples/lenet5.py
plus the MindSpore data-parallel lines (init, set_auto_parallel_context). Run with

    scripts/mpirun -n 2 .venv/bin/python examples/lenet5_data_parallel.py --epochs 1 --steps 200

(scripts/mpirun adds the flags a container and a small machine need; see docs/parallel.md)."""
import argparse
import os
import sys

import mycel
from mycel import nn
from mycel.communication import get_group_size, get_rank, init
from mycel.parallel import ParallelMode
from mycel.train import LossMonitor, TimeMonitor
from mycel.train.callback import CheckpointConfig, ModelCheckpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenet5 import BATCH_SIZE, LEARNING_RATE, MOMENTUM, LeNet5, build_model, create_dataset  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--mode", choices=("graph", "pynative"), default="graph")
    parser.add_argument("--steps", type=int, default=None, help="at most this many steps per epoch")
    parser.add_argument("--ckpt_dir", default="lenet5_dp_ckpt", help="rank 0 saves checkpoints here")
    args = parser.parse_args(argv)

    init()  # MPI under mpirun; a world of one otherwise
    rank, size = get_rank(), get_group_size()
    mycel.set_context(mode=mycel.GRAPH_MODE if args.mode == "graph" else mycel.PYNATIVE_MODE)
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True,
                                    device_num=size)
    mycel.set_seed(1)  # the same initial weights and the same shuffle on every rank

    train_data = create_dataset("train")  # sharded: num_shards/shard_id default from the context
    if args.steps is not None:
        train_data = train_data.take(args.steps)
    net = LeNet5()
    steps = train_data.get_dataset_size()
    lr = nn.cosine_decay_lr(0.0, LEARNING_RATE, steps * args.epochs, steps, args.epochs)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=MOMENTUM)
    model = build_model(net, optimizer)
    callbacks = [ModelCheckpoint(prefix="lenet5", directory=args.ckpt_dir,  # rank 0 writes
                                 config=CheckpointConfig(save_checkpoint_steps=steps))]
    if rank == 0:
        print(f"LeNet5 data parallel on {size} rank(s): {args.epochs} epoch(s) of {steps} steps, "
              f"batch {BATCH_SIZE} per rank ({BATCH_SIZE * size} global), {args.mode} mode, "
              f"{mycel.get_context('num_threads')} thread(s) per rank")
        callbacks += [LossMonitor(per_print_times=max(steps // 4, 1)), TimeMonitor()]
    model.train(args.epochs, train_data, callbacks=callbacks)

    # Every rank holds the same weights; rank 0 evaluates on the whole test set.
    mycel.reset_auto_parallel_context()
    if rank == 0:
        acc = model.eval(create_dataset("test", shuffle=False))["acc"]
        print(f"test accuracy: {acc:.4f}")
        return acc
    return None


if __name__ == "__main__":
    main()
