// Probe (session 30): what a launch costs in the benchmark's timing (graph of B
// launches rotating among buffer sets that exceed 4x L2; median of replays / B),
// for an empty kernel and for copies, with and without programmatic dependent
// launch (PDL), at 1080p, 4K and 8K RGB u8.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1);} } while (0)

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_launch() { asm volatile("griddepcontrol.launch_dependents;"); }

template <bool PDL> __global__ void empty_kernel(int* p) { if (PDL) { pdl_launch(); pdl_wait(); } if (p && threadIdx.x == 1 << 20) *p = 0; }

template <bool PDL> __global__ void copy_rows(const char* __restrict__ a, size_t pa, char* __restrict__ b, size_t pb, int units, int rows) {
  if (PDL) { pdl_launch(); pdl_wait(); }
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = i / units, u = i - y * units;
  if (y < rows) reinterpret_cast<uint4*>(b + y * pb)[u] = reinterpret_cast<const uint4*>(a + y * pa)[u];
}
// One wave, grid-stride, U loads in flight per thread.
template <bool PDL, int U> __global__ void copy_wave(const uint4* __restrict__ a, uint4* __restrict__ b, size_t n) {
  if (PDL) { pdl_launch(); pdl_wait(); }
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = a[i + k * stride];
#pragma unroll
    for (int k = 0; k < U; ++k) b[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) b[i] = a[i];
}

template <typename F> void launch(bool pdl, dim3 g, dim3 blk, cudaStream_t s, F kern, auto... args) {
  cudaLaunchConfig_t cfg{}; cfg.gridDim = g; cfg.blockDim = blk; cfg.stream = s;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at; cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, kern, args...));
}

double time_launches(const std::function<void(int, cudaStream_t)>& enq, cudaStream_t s, int runs, int batch) {
  for (int i = 0; i < 3; ++i) enq(i, s);
  CK(cudaStreamSynchronize(s));
  cudaGraph_t g; cudaGraphExec_t ex;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < batch; ++i) enq(i, s);
  CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ex, g, 0));
  std::vector<cudaEvent_t> ev(2 * runs); for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int r = 0; r < 5; ++r) CK(cudaGraphLaunch(ex, s));
  CK(cudaStreamSynchronize(s));
  for (int r = 0; r < runs; ++r) { CK(cudaEventRecord(ev[2*r], s)); CK(cudaGraphLaunch(ex, s)); CK(cudaEventRecord(ev[2*r+1], s)); }
  CK(cudaStreamSynchronize(s));
  std::vector<double> t(runs);
  for (int r = 0; r < runs; ++r) { float ms; CK(cudaEventElapsedTime(&ms, ev[2*r], ev[2*r+1])); t[r] = ms / batch; }
  std::nth_element(t.begin(), t.begin() + runs / 2, t.end());
  return t[runs / 2];
}

int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int l2 = 0, sms = 0; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0)); CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, sms, l2 >> 20);
  const int runs = 30, batch = 10;
  int pairs[3][2] = {{1920, 1080}, {3840, 2160}, {7680, 4320}};
  for (auto& wh : pairs) {
    const int w = wh[0], h = wh[1];
    const size_t bytes = (size_t)w * h * 3;
    const int nbuf = bytes * 2 < (size_t)l2 * 2 ? (int)std::min<size_t>(16, (4ull * l2 + bytes - 1) / bytes) : (bytes < (size_t)l2 * 2 ? 2 : 1);
    std::vector<char*> src(nbuf), dst(nbuf);
    for (int i = 0; i < nbuf; ++i) { CK(cudaMalloc(&src[i], bytes)); CK(cudaMalloc(&dst[i], bytes)); CK(cudaMemset(src[i], 1, bytes)); }
    const int units = w * 3 / 16; const unsigned blocks = (unsigned)(((long long)units * h + 255) / 256);
    const size_t n16 = bytes / 16;
    std::printf("%dx%d RGB (%.1f MB, %d buffer sets):\n", w, h, bytes / 1e6, nbuf);
    for (int pdl = 0; pdl < 2; ++pdl) {
      double e1 = time_launches([&](int i, cudaStream_t st) { if (pdl) launch(true, 1, 32, st, empty_kernel<true>, (int*)dst[i % nbuf]); else launch(false, 1, 32, st, empty_kernel<false>, (int*)dst[i % nbuf]); }, s, runs, batch);
      double ew = time_launches([&](int i, cudaStream_t st) { if (pdl) launch(true, sms * 5, 128, st, empty_kernel<true>, (int*)dst[i % nbuf]); else launch(false, sms * 5, 128, st, empty_kernel<false>, (int*)dst[i % nbuf]); }, s, runs, batch);
      double cr = time_launches([&](int i, cudaStream_t st) { const char* a = src[i % nbuf]; char* b = dst[i % nbuf]; size_t p = w * 3; if (pdl) launch(true, blocks, 256, st, copy_rows<true>, a, p, b, p, units, h); else launch(false, blocks, 256, st, copy_rows<false>, a, p, b, p, units, h); }, s, runs, batch);
      std::printf("  pdl %d: empty 1 block %.4f ms, empty one wave %.4f ms, copy_rows %.4f ms", pdl, e1, ew, cr);
      for (int u : {1, 2, 4}) for (int bpsm : {4, 8, 16}) {
        double cw = time_launches([&](int i, cudaStream_t st) {
          const uint4* a = (const uint4*)src[i % nbuf]; uint4* b = (uint4*)dst[i % nbuf]; unsigned g = sms * bpsm;
          if (u == 1) { if (pdl) launch(true, g, 256, st, copy_wave<true, 1>, a, b, n16); else launch(false, g, 256, st, copy_wave<false, 1>, a, b, n16); }
          if (u == 2) { if (pdl) launch(true, g, 256, st, copy_wave<true, 2>, a, b, n16); else launch(false, g, 256, st, copy_wave<false, 2>, a, b, n16); }
          if (u == 4) { if (pdl) launch(true, g, 256, st, copy_wave<true, 4>, a, b, n16); else launch(false, g, 256, st, copy_wave<false, 4>, a, b, n16); }
        }, s, runs, batch);
        std::printf(", wave u%d x%d %.4f", u, bpsm, cw);
      }
      std::printf("\n");
    }
    for (int i = 0; i < nbuf; ++i) { CK(cudaFree(src[i])); CK(cudaFree(dst[i])); }
  }
  CK(cudaGetLastError());
  return 0;
}
