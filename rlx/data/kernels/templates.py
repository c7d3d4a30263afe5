"""Source templates for the bundled kernel problems: one KernelBench-format task file per problem
(`Model`, size constants, `get_inputs`, `get_init_inputs`) and one Triton answer (`ModelNew`).

Shapes are CPU-friendly (a few programs per launch) because on a CPU machine kernels run under
TRITON_INTERPRET=1, whose cost grows with the number of program instances.
"""

from __future__ import annotations

IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """{doc}"""

    def __init__(self{init_args}):
        super().__init__()
{init_body}
    def forward(self, {inputs}):
        return {torch_expr}


{constants}


def get_inputs():
    return [{make_inputs}]


def get_init_inputs():
    return [{init_values}]
'''

ELEMENTWISE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def {name}_kernel({ptr_args}, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
{loads}
    tl.store(out_ptr + offs, {triton_expr}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self{init_args}):
        super().__init__()
{init_body}
    def forward(self, {inputs}):
        out = torch.empty_like({first})
        n = out.numel()
        {name}_kernel[(triton.cdiv(n, 256),)]({call_args}, out, n, BLOCK=256)
        return out
'''

ROWWISE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def {name}_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other={other})
{body}
    tl.store(out_ptr + {out_offset}, {result}{out_mask})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty({out_shape}, dtype=x.dtype)
        {name}_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
'''

MATMUL = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=a.dtype)
        matmul_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K, BM=16, BN=16, BK=16)
        return c
'''

# The same answers in compact form (one-space indents, no spaces, short names, no empty __init__): about half the
# characters, which is what lets the tiny model (1024 positions, SFT on 2 CPU cores) learn them in minutes.
# The kernels are identical in behaviour; tests score every compact answer like the readable one.
COMPACT_ELEMENTWISE = '''@triton.jit
def kernel({ptr_args},o,n,B:tl.constexpr):
 offs=tl.program_id(0)*B+tl.arange(0,B)
 mask=offs<n
{loads}
 tl.store(o+offs,{triton_expr},mask=mask)
class ModelNew(nn.Module):
 def forward(self,{inputs}):
  out=torch.empty_like({first})
  n=out.numel()
  kernel[(triton.cdiv(n,256),)]({call_args},out,n,B=256)
  return out
'''

COMPACT_ROWWISE = '''@triton.jit
def kernel(xp,o,n_cols,B:tl.constexpr):
 row=tl.program_id(0)
 cols=tl.arange(0,B)
 mask=cols<n_cols
 x=tl.load(xp+row*n_cols+cols,mask=mask,other={other})
{body} tl.store(o+{out_offset},{result}{out_mask})
class ModelNew(nn.Module):
 def forward(self,x):
  x=x.contiguous()
  rows,cols=x.shape
  out=torch.empty({out_shape},dtype=x.dtype)
  kernel[(rows,)](x,out,cols,B=triton.next_power_of_2(cols))
  return out
'''

COMPACT_MATMUL = '''@triton.jit
def kernel(ap,bp,cp,M,N,K,BM:tl.constexpr,BN:tl.constexpr,BK:tl.constexpr):
 rm=tl.program_id(0)*BM+tl.arange(0,BM)
 rn=tl.program_id(1)*BN+tl.arange(0,BN)
 rk=tl.arange(0,BK)
 acc=tl.zeros((BM,BN),dtype=tl.float32)
 for k in range(0,K,BK):
  a=tl.load(ap+rm[:,None]*K+(k+rk)[None,:],mask=(rm[:,None]<M)&((k+rk)[None,:]<K),other=0.0)
  b=tl.load(bp+(k+rk)[:,None]*N+rn[None,:],mask=((k+rk)[:,None]<K)&(rn[None,:]<N),other=0.0)
  acc+=tl.dot(a,b)
 tl.store(cp+rm[:,None]*N+rn[None,:],acc,mask=(rm[:,None]<M)&(rn[None,:]<N))
class ModelNew(nn.Module):
 def forward(self,a,b):
  a=a.contiguous()
  b=b.contiguous()
  M,K=a.shape
  N=b.shape[1]
  c=torch.empty((M,N),dtype=a.dtype)
  kernel[(triton.cdiv(M,16),triton.cdiv(N,16))](a,b,c,M,N,K,BM=16,BN=16,BK=16)
  return c
'''
