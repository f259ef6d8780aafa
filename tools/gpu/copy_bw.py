"""Device-to-device copy bandwidth through PyTorch: the ceiling the
decode benchmarks compare their achieved weight bandwidth with."""
import torch

n = 2 << 30  # bytes per buffer
a = torch.empty(n, dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)
a.random_(0, 255)
for _ in range(3):
    b.copy_(a)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for _ in range(20):
    s.record()
    b.copy_(a)
    e.record()
    e.synchronize()
    times.append(s.elapsed_time(e))
times.sort()
ms = times[len(times) // 2]
print(f"copy bandwidth (read+write, median of 20): {2 * n / ms / 1e6:.0f} GB/s")
