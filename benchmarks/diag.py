"""Diagnose one (shape, config, splits) case in a fresh process: python benchmarks/diag.py B H W CFG SPLITS"""
import sys
import torch
from cute_dsa.api import dsa_decode
from cute_dsa.bench import SOFTMAX_SCALE, check_rows, parse_config
from cute_dsa.bench_inputs import make_bench_problem

b, h, w = map(int, sys.argv[1:4])
cfg = parse_config(sys.argv[4]) if sys.argv[4] != "-" else None
splits = None if sys.argv[5] == "-" else int(sys.argv[5])
p = make_bench_problem(b, h, w, context=int(sys.argv[6]) if len(sys.argv) > 6 else 32768)
torch.cuda.synchronize()
inp = p.inputs
call = lambda: dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE, config=cfg, num_splits=splits)
call()
torch.cuda.synchronize()
print(f"B={b} H={h} W={w} cfg={sys.argv[4]} splits={splits}: rel err {check_rows(call, p):.2e}", flush=True)
