# NCCL's own all-reduce between the GPUs of one node (torch.distributed, blocking communicator), the
# sizes of gmi_drl bench-reduce, each run followed by a stream synchronisation; median microseconds.
# On the GPU machine: torchrun --standalone --nproc_per_node 2 postprocess/peers/nccl_allreduce.py OUT.json
import os, time, json, sys, torch, torch.distributed as dist
dist.init_process_group("nccl")
r = dist.get_rank(); torch.cuda.set_device(r)
out = {}
for n in (9216, 102400, 1048576, 10485760):
    x = torch.ones(n, device="cuda")
    for _ in range(10): dist.all_reduce(x); torch.cuda.synchronize()
    ts = []
    for _ in range(100):
        t = time.perf_counter(); dist.all_reduce(x); torch.cuda.synchronize(); ts.append((time.perf_counter() - t) * 1e6)
    ts.sort(); out[n] = ts[len(ts) // 2]
if r == 0:
    print("TORCH_NCCL", json.dumps(out)); json.dump(out, open(sys.argv[1], "w"))
dist.destroy_process_group()
