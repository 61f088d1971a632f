"""DistributedDataParallel communication hooks (`ddp.register_comm_hook(state, hook)`); the built-in
ones are in `default_hooks`."""
