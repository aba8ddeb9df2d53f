"""Checks `kernel_interop` (this crate's extension) against PyTorch: results equal torch's,
inputs are viewed in place (the imported view's address is the tensor's `data_ptr()`), outputs
come back without a copy (`torch.from_dlpack(result).data_ptr() == result.data_ptr()`), and
the kernels run on the caller's stream with no host copy (the profiler sees no memcpy).

    KERNEL_PTX_DIR=<dir with examples.ptx> PYTHONPATH=<dir with kernel_interop.so> python3 check.py

Runs on the GPU when torch sees one, and on the CPU backend in every case. Prints one line
per check and `N passed, 0 failed` at the end; exits non-zero on the first failure.
"""

import sys

import torch

import kernel_interop as ki

passed = 0


def check(name, cond, detail=""):
    global passed
    if not cond:
        print(f"FAIL {name} {detail}")
        print(f"{passed} passed, 1 failed")
        sys.exit(1)
    passed += 1
    print(f"ok   {name}")


def stream_of(device):
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0


def leaky_relu(device, s):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(4096 * 33 + 7, dtype=torch.float16, device=device, generator=g) * 4
    ref = torch.nn.functional.leaky_relu(x.double(), 0.01)
    before = x.data_ptr()
    check(f"{device}: leaky_relu_ input viewed in place", ki.view_ptr(x, s) == before)
    ki.leaky_relu_(x, s)
    check(f"{device}: leaky_relu_ kept the tensor's memory", x.data_ptr() == before)
    torch.testing.assert_close(x.double(), ref, rtol=1e-3, atol=1e-3)
    check(f"{device}: leaky_relu_ matches torch", True)
    # An offset view is updated at its offset, the rest untouched.
    y = torch.randn(1000, dtype=torch.float16, device=device, generator=g)
    want = y.clone()
    want[100:] = torch.nn.functional.leaky_relu(want[100:].float(), 0.01).half()
    ki.leaky_relu_(y[100:], s)
    torch.testing.assert_close(y.float(), want.float(), rtol=1e-3, atol=1e-3)
    check(f"{device}: leaky_relu_ on an offset view", True)
    # A transposed view is refused with the typed error, not updated in the wrong places.
    m = torch.randn(64, 32, dtype=torch.float16, device=device, generator=g)
    saved = m.clone()
    try:
        ki.leaky_relu_(m.t(), s)
        check(f"{device}: leaky_relu_ refuses a transposed view", False, "no error")
    except RuntimeError as e:
        check(f"{device}: leaky_relu_ refuses a transposed view", "contiguous" in str(e), str(e))
    check(f"{device}: refused view untouched", torch.equal(m, saved))
    # Wrong dtype: a typed error.
    try:
        ki.leaky_relu_(torch.zeros(4, device=device), s)
        check(f"{device}: wrong dtype refused", False, "no error")
    except ValueError as e:
        check(f"{device}: wrong dtype refused", "float32 elements" in str(e), str(e))


def add_and_softmax(device, s):
    g = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(300, 200, device=device, generator=g)
    y = torch.randn(200, 300, device=device, generator=g).t()  # strided
    check(f"{device}: strided input viewed in place", ki.view_ptr(y, s) == y.data_ptr())
    r = ki.add(x, y, s)
    out = torch.from_dlpack(r)
    check(f"{device}: add result exported without a copy", out.data_ptr() == r.data_ptr())
    check(f"{device}: add result on {device}", out.device.type == device.type and list(out.shape) == [300, 200])
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    check(f"{device}: add matches torch", True)
    xs = torch.randn(123, 781, device=device, generator=g) * 3
    sm = torch.from_dlpack(ki.softmax(xs[3:], s))
    torch.testing.assert_close(sm.double(), torch.softmax(xs[3:].double(), dim=1), rtol=1e-5, atol=1e-6)
    check(f"{device}: softmax of an offset view matches torch", True)
    # The result outlives the Rust object it came from.
    r2 = ki.add(x, x, s)
    keep = torch.from_dlpack(r2)
    del r2
    torch.testing.assert_close(keep, 2 * x, rtol=0, atol=0)
    check(f"{device}: exported memory lives with the consumer", True)


def on_side_stream(device):
    """Everything queued on a non-default stream, with no synchronization until the end."""
    side = torch.cuda.Stream(device)
    with torch.cuda.stream(side):
        s = side.cuda_stream
        x = torch.randn(1 << 22, device=device)
        y = torch.full((1 << 22,), 0.5, device=device)
        xh = x.half()
        out = torch.from_dlpack(ki.add(x, y, s)) * 2  # torch reads the kernel's result on `side`
        ki.leaky_relu_(xh, s)
        ref_h = torch.nn.functional.leaky_relu(x, 0.01).half()
    side.synchronize()
    torch.testing.assert_close(out, (x + 0.5) * 2, rtol=0, atol=0)
    torch.testing.assert_close(xh.float(), ref_h.float(), rtol=1e-3, atol=1e-3)
    check(f"{device}: kernels ordered on the caller's stream", True)


def no_host_copies(device):
    x = torch.randn(1 << 20, device=device)
    y = torch.randn(1 << 20, device=device)
    ki.add(x, y)  # warm up: module loading, first allocations
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        out = torch.from_dlpack(ki.add(x, y))
        torch.cuda.synchronize()
    names = [e.name for e in prof.events()]
    copies = [n for n in names if "Memcpy" in n and ("HtoD" in n or "DtoH" in n)]
    kernels = [n for n in names if "add_kernel" in n]
    print(f"     profiler: {len(names)} events, kernels {sorted(set(kernels))}, host copies {copies}")
    check(f"{device}: the kernel ran, with no host<->device copy", kernels and not copies)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


devices = [torch.device("cpu")]
if torch.cuda.is_available():
    devices.insert(0, torch.device("cuda", 0))
for dev in devices:
    s = stream_of(dev)
    leaky_relu(dev, s)
    add_and_softmax(dev, s)
    if dev.type == "cuda":
        on_side_stream(dev)
        no_host_copies(dev)
print(f"{passed} passed, 0 failed")
