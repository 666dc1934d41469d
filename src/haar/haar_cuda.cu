// haar_cuda.cu - the cuda backend of the Haar transform.
//
// Layers: device helpers (wide loads and stores), kernels, host launchers, and
// the CudaHaar object that owns grow-only scratch.
//
// Seed 000's v2 kept the transform on the device but ran two kernels per level
// (a rearrangement for coalescing, then the transform) and copied the new
// approximation back into the input buffer. Here:
//  * One upload, one download (host images); device images need neither.
//  * No rearrangement pass: each thread owns whole 2x2 blocks, reading rows
//    of its patch with 16-byte loads; consecutive threads own consecutive
//    patches, so a warp reads and writes contiguous runs.
//  * Several levels per launch, in registers: a thread loads a P x P patch
//    (P = 2^F) of the current approximation and computes F levels of it; the
//    details of each level go straight to their bands (float4/float2 stores
//    for the fine levels), only the group's last approximation (1/4^F of the
//    input) goes to scratch. F = 3 for 1 channel, 2 for 3 or 4 channels.
//    8192^2 f32 at 13 levels: 3 fused launches (3 levels each) + 1 tail launch.
//  * The small remainder (an approximation of at most tail_elements floats)
//    finishes in one block in shared memory, all its levels in one launch.
//  * The inverse mirrors it: the tail first, then fused groups from coarse to
//    fine, the last writing the destination (u8: rounded, saturated). It
//    fuses 2 levels by default: measured faster than 3 on an H200 (8192^2
//    f32: 0.162 ms against 0.189 ms), where the 3-level patch (8 x 8 outputs
//    per thread, ~100 registers) loses occupancy.
// Odd sides: level 1 of a launch pads by clamping its loads (repeat the last
// sample); inside a patch the last valid approximation entry is copied
// forward (same rule); stores and detail loads outside a band are skipped.
// Traffic for the full forward pyramid of N floats: N read + ~N written +
// N/32 scratch, against a floor of N read + N written.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "haar/haar_backends.hpp"

namespace pixelkit::detail {
namespace {

constexpr int kMaxFuse = 3;
constexpr int kMaxFusedThreads = 512;  // __launch_bounds__ of the fused kernels: up to 128 registers
constexpr int kMaxLevels = 32;  // a side of 2^31 has 31 levels
constexpr std::size_t kTailSharedBytes = 48 * 1024;

struct Geom {
  int w, h;    // band size
  int x0, y0;  // band origin
};

// ---- device helpers -----------------------------------------------------------

template <typename T>
__device__ __forceinline__ bool aligned_to(const T* p, unsigned bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(std::uint8_t v) { return static_cast<float>(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ std::uint8_t from_float<std::uint8_t>(float v) {
  const int r = __float2int_rn(v);  // nearest, ties to even; saturates at the int range
  return static_cast<std::uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
}

// N consecutive elements -> floats, as wide as alignment allows.
template <int N>
__device__ __forceinline__ void load_row(const float* p, float* v) {
  if constexpr (N % 4 == 0) {
    if (aligned_to(p, 16)) {
#pragma unroll
      for (int q = 0; q < N / 4; ++q) {
        const float4 t = reinterpret_cast<const float4*>(p)[q];
        v[4 * q] = t.x; v[4 * q + 1] = t.y; v[4 * q + 2] = t.z; v[4 * q + 3] = t.w;
      }
      return;
    }
  }
  if constexpr (N % 2 == 0) {
    if (aligned_to(p, 8)) {
#pragma unroll
      for (int q = 0; q < N / 2; ++q) {
        const float2 t = reinterpret_cast<const float2*>(p)[q];
        v[2 * q] = t.x; v[2 * q + 1] = t.y;
      }
      return;
    }
  }
#pragma unroll
  for (int q = 0; q < N; ++q) v[q] = p[q];
}

template <int N>
__device__ __forceinline__ void load_row(const std::uint8_t* p, float* v) {
  if constexpr (N % 4 == 0) {
    if (aligned_to(p, 4)) {
#pragma unroll
      for (int q = 0; q < N / 4; ++q) {
        const uchar4 t = reinterpret_cast<const uchar4*>(p)[q];
        v[4 * q] = t.x; v[4 * q + 1] = t.y; v[4 * q + 2] = t.z; v[4 * q + 3] = t.w;
      }
      return;
    }
  }
#pragma unroll
  for (int q = 0; q < N; ++q) v[q] = p[q];
}

template <int N>
__device__ __forceinline__ void store_row(float* p, const float* v) {
  if constexpr (N % 4 == 0) {
    if (aligned_to(p, 16)) {
#pragma unroll
      for (int q = 0; q < N / 4; ++q)
        reinterpret_cast<float4*>(p)[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
      return;
    }
  }
  if constexpr (N % 2 == 0) {
    if (aligned_to(p, 8)) {
#pragma unroll
      for (int q = 0; q < N / 2; ++q) reinterpret_cast<float2*>(p)[q] = make_float2(v[2 * q], v[2 * q + 1]);
      return;
    }
  }
#pragma unroll
  for (int q = 0; q < N; ++q) p[q] = v[q];
}

template <int N>
__device__ __forceinline__ void store_row(std::uint8_t* p, const float* v) {
  if constexpr (N % 4 == 0) {
    if (aligned_to(p, 4)) {
#pragma unroll
      for (int q = 0; q < N / 4; ++q)
        reinterpret_cast<uchar4*>(p)[q] =
            make_uchar4(from_float<std::uint8_t>(v[4 * q]), from_float<std::uint8_t>(v[4 * q + 1]),
                        from_float<std::uint8_t>(v[4 * q + 2]), from_float<std::uint8_t>(v[4 * q + 3]));
      return;
    }
  }
#pragma unroll
  for (int q = 0; q < N; ++q) p[q] = from_float<std::uint8_t>(v[q]);
}

template <typename T>
__device__ __forceinline__ T* row_ptr(T* base, std::ptrdiff_t pitch, int y) {
  using B = typename std::conditional<std::is_const<T>::value, const char, char>::type;
  return reinterpret_cast<T*>(reinterpret_cast<B*>(base) + static_cast<std::ptrdiff_t>(y) * pitch);
}

// ---- forward ------------------------------------------------------------------

struct FwdParams {
  const void* src;  // the approximation entering the group (level k-1), Tin
  std::ptrdiff_t src_pitch;
  int w0, h0;
  float* co;  // the coefficient array
  std::ptrdiff_t co_pitch;
  float* ll;  // where the group's last approximation goes
  std::ptrdiff_t ll_pitch;
  Geom lv[kMaxFuse];  // the group's levels, finest first
  float s;            // 0.5 orthonormal, 0.25 average
};

// One level inside a patch: in (N x N entries of C floats) -> out (N/2 x N/2),
// details stored to their bands. L = level within the group; (tx, ty) the
// thread's patch at the group's last level.
template <int N, int C, int L>
__device__ __forceinline__ void fwd_step(const FwdParams& p, int tx, int ty, float (&in)[N][N * C],
                                         float (&out)[N / 2][N / 2 * C]) {
  constexpr int S = N / 2;
  if constexpr (L > 0) {
    // Repeat the last valid entry of this level's input over the patch's
    // tail (level 1's loads were clamped already).
    const int nw = p.lv[L - 1].w, nh = p.lv[L - 1].h;
    const int gx = tx * N, gy = ty * N;
#pragma unroll
    for (int j = 1; j < N; ++j)
      if (gx + j >= nw) {
#pragma unroll
        for (int r = 0; r < N; ++r)
#pragma unroll
          for (int c = 0; c < C; ++c) in[r][j * C + c] = in[r][(j - 1) * C + c];
      }
#pragma unroll
    for (int r = 1; r < N; ++r)
      if (gy + r >= nh) {
#pragma unroll
        for (int e = 0; e < N * C; ++e) in[r][e] = in[r - 1][e];
      }
  }
  const Geom b = p.lv[L];
  const int bx = tx * S, by = ty * S;
  const bool full = bx + S <= b.w;
#pragma unroll
  for (int i = 0; i < S; ++i) {
    float xd[S * C], yd[S * C], dd[S * C];
#pragma unroll
    for (int j = 0; j < S; ++j)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const float a = in[2 * i][2 * j * C + c], bb = in[2 * i][(2 * j + 1) * C + c];
        const float cc = in[2 * i + 1][2 * j * C + c], d = in[2 * i + 1][(2 * j + 1) * C + c];
        const float s0 = a + bb, d0 = a - bb, s1 = cc + d, d1 = cc - d;
        out[i][j * C + c] = (s0 + s1) * p.s;
        xd[j * C + c] = (d0 + d1) * p.s;
        yd[j * C + c] = (s0 - s1) * p.s;
        dd[j * C + c] = (d0 - d1) * p.s;
      }
    const int gy = by + i;
    if (gy >= b.h) continue;
    float* rx = row_ptr(p.co, p.co_pitch, gy) + (b.x0 + bx) * C;
    float* ry = row_ptr(p.co, p.co_pitch, b.y0 + gy) + bx * C;
    float* rd = row_ptr(p.co, p.co_pitch, b.y0 + gy) + (b.x0 + bx) * C;
    if (full) {
      store_row<S * C>(rx, xd);
      store_row<S * C>(ry, yd);
      store_row<S * C>(rd, dd);
    } else {
#pragma unroll
      for (int j = 0; j < S; ++j)
        if (bx + j < b.w)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            rx[j * C + c] = xd[j * C + c];
            ry[j * C + c] = yd[j * C + c];
            rd[j * C + c] = dd[j * C + c];
          }
    }
  }
}

template <int N, int C, int L, int F>
__device__ __forceinline__ void fwd_levels(const FwdParams& p, int tx, int ty, float (&in)[N][N * C]) {
  float out[N / 2][N / 2 * C];
  fwd_step<N, C, L>(p, tx, ty, in, out);
  if constexpr (L + 1 < F) {
    fwd_levels<N / 2, C, L + 1, F>(p, tx, ty, out);
  } else {
    float* r = row_ptr(p.ll, p.ll_pitch, ty) + tx * C;
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = out[0][c];
  }
}

template <int F, int C, typename Tin>
__global__ void __launch_bounds__(kMaxFusedThreads) haar_forward_fused(const FwdParams p) {
  constexpr int P = 1 << F;
  const int nx = p.lv[F - 1].w, ny = p.lv[F - 1].h;
  const int tx = blockIdx.x * blockDim.x + threadIdx.x;
  if (tx >= nx) return;
  const Tin* src = static_cast<const Tin*>(p.src);
  const int gx = tx * P;
  const bool full = gx + P <= p.w0;
  for (int ty = blockIdx.y * blockDim.y + threadIdx.y; ty < ny; ty += gridDim.y * blockDim.y) {
    float v[P][P * C];
#pragma unroll
    for (int r = 0; r < P; ++r) {
      const Tin* row = row_ptr(src, p.src_pitch, min(ty * P + r, p.h0 - 1));
      if (full) {
        load_row<P * C>(row + gx * C, v[r]);
      } else {
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const int x = min(gx + j, p.w0 - 1);
#pragma unroll
          for (int c = 0; c < C; ++c) v[r][j * C + c] = to_float(row[x * C + c]);
        }
      }
    }
    fwd_levels<P, C, 0, F>(p, tx, ty, v);
  }
}

// The remaining levels of a small approximation, in one block, in shared memory.
struct TailParams {
  const void* src;  // Tin (forward: the approximation; inverse: unused)
  std::ptrdiff_t src_pitch;
  void* dst;  // inverse: the output (Tout)
  std::ptrdiff_t dst_pitch;
  int w0, h0;  // level k-1's approximation
  float* co;
  std::ptrdiff_t co_pitch;
  int levels;         // levels k..k+levels-1 (the last is the transform's last)
  int cap0;           // floats of shared buffer 0 (buffer 1 follows)
  Geom lv[kMaxLevels];
  float s;
};

template <int C, typename Tin>
__global__ void __launch_bounds__(1024) haar_forward_tail(const TailParams p) {
  extern __shared__ float sm[];
  float* const buf1 = sm + p.cap0;  // buffer 0 is sm; selected, not indexed, so no local array
  const Tin* src = static_cast<const Tin*>(p.src);
  const int n0 = p.w0 * C;
  for (int e = threadIdx.x; e < n0 * p.h0; e += blockDim.x)
    sm[e] = to_float(row_ptr(src, p.src_pitch, e / n0)[e % n0]);
  __syncthreads();
  int wi = p.w0, hi = p.h0;
  for (int l = 0; l < p.levels; ++l) {
    const Geom b = p.lv[l];
    const float* in = l % 2 ? buf1 : sm;
    float* out = l % 2 ? sm : buf1;
    const bool last = l + 1 == p.levels;
    const int n = b.w * b.h * C;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int c = e % C, j = (e / C) % b.w, i = e / (C * b.w);
      const int x0 = 2 * j, x1 = min(2 * j + 1, wi - 1), y0 = 2 * i, y1 = min(2 * i + 1, hi - 1);
      const float a = in[(y0 * wi + x0) * C + c], bb = in[(y0 * wi + x1) * C + c];
      const float cc = in[(y1 * wi + x0) * C + c], d = in[(y1 * wi + x1) * C + c];
      const float s0 = a + bb, d0 = a - bb, s1 = cc + d, d1 = cc - d;
      const float ll = (s0 + s1) * p.s;
      row_ptr(p.co, p.co_pitch, i)[(b.x0 + j) * C + c] = (d0 + d1) * p.s;
      row_ptr(p.co, p.co_pitch, b.y0 + i)[j * C + c] = (s0 - s1) * p.s;
      row_ptr(p.co, p.co_pitch, b.y0 + i)[(b.x0 + j) * C + c] = (d0 - d1) * p.s;
      if (last) row_ptr(p.co, p.co_pitch, i)[j * C + c] = ll;
      else out[e] = ll;
    }
    __syncthreads();
    wi = b.w;
    hi = b.h;
  }
}

// ---- inverse ------------------------------------------------------------------

struct InvParams {
  const float* ll;  // the group's coarsest approximation (level k+F-1)
  std::ptrdiff_t ll_pitch;
  const float* co;
  std::ptrdiff_t co_pitch;
  void* dst;  // level k-1's approximation (Tout), w0 x h0
  std::ptrdiff_t dst_pitch;
  int w0, h0;
  Geom lv[kMaxFuse];  // finest first
  float s;            // 0.5 orthonormal, 1 average
};

// Level L of the group: in (N x N approximation entries) + details -> out (2N x 2N).
template <int N, int C, int L>
__device__ __forceinline__ void inv_step(const InvParams& p, int tx, int ty, const float (&in)[N][N * C],
                                         float (&out)[2 * N][2 * N * C]) {
  const Geom b = p.lv[L];
  const int bx = tx * N, by = ty * N;
  const bool full = bx + N <= b.w;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float xd[N * C], yd[N * C], dd[N * C];
    const int gy = by + i;
    if (gy < b.h) {
      const float* rx = row_ptr(p.co, p.co_pitch, gy) + (b.x0 + bx) * C;
      const float* ry = row_ptr(p.co, p.co_pitch, b.y0 + gy) + bx * C;
      const float* rd = row_ptr(p.co, p.co_pitch, b.y0 + gy) + (b.x0 + bx) * C;
      if (full) {
        load_row<N * C>(rx, xd);
        load_row<N * C>(ry, yd);
        load_row<N * C>(rd, dd);
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const bool ok = bx + j < b.w;
#pragma unroll
          for (int c = 0; c < C; ++c) {
            xd[j * C + c] = ok ? rx[j * C + c] : 0.0f;
            yd[j * C + c] = ok ? ry[j * C + c] : 0.0f;
            dd[j * C + c] = ok ? rd[j * C + c] : 0.0f;
          }
        }
      }
    } else {
#pragma unroll
      for (int e = 0; e < N * C; ++e) xd[e] = yd[e] = dd[e] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < N; ++j)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int k = j * C + c;
        const float ll = in[i][k];
        const float q0 = ll + yd[k], q1 = ll - yd[k], u = xd[k] + dd[k], v = xd[k] - dd[k];
        out[2 * i][2 * j * C + c] = (q0 + u) * p.s;
        out[2 * i][(2 * j + 1) * C + c] = (q0 - u) * p.s;
        out[2 * i + 1][2 * j * C + c] = (q1 + v) * p.s;
        out[2 * i + 1][(2 * j + 1) * C + c] = (q1 - v) * p.s;
      }
  }
}

template <int N, int C, int L, typename Tout>
__device__ __forceinline__ void inv_levels(const InvParams& p, int tx, int ty, const float (&in)[N][N * C]) {
  float out[2 * N][2 * N * C];
  inv_step<N, C, L>(p, tx, ty, in, out);
  if constexpr (L > 0) {
    inv_levels<2 * N, C, L - 1, Tout>(p, tx, ty, out);
  } else {
    constexpr int P = 2 * N;
    Tout* dst = static_cast<Tout*>(p.dst);
    const int gx = tx * P;
    const bool full = gx + P <= p.w0;
#pragma unroll
    for (int r = 0; r < P; ++r) {
      const int y = ty * P + r;
      if (y >= p.h0) break;
      Tout* row = row_ptr(dst, p.dst_pitch, y) + gx * C;
      if (full) {
        store_row<P * C>(row, out[r]);
      } else {
#pragma unroll
        for (int j = 0; j < P; ++j)
          if (gx + j < p.w0)
#pragma unroll
            for (int c = 0; c < C; ++c) row[j * C + c] = from_float<Tout>(out[r][j * C + c]);
      }
    }
  }
}

template <int F, int C, typename Tout>
__global__ void __launch_bounds__(kMaxFusedThreads) haar_inverse_fused(const InvParams p) {
  const int nx = p.lv[F - 1].w, ny = p.lv[F - 1].h;
  const int tx = blockIdx.x * blockDim.x + threadIdx.x;
  if (tx >= nx) return;
  for (int ty = blockIdx.y * blockDim.y + threadIdx.y; ty < ny; ty += gridDim.y * blockDim.y) {
    float v[1][C];
    const float* r = row_ptr(p.ll, p.ll_pitch, ty) + tx * C;
#pragma unroll
    for (int c = 0; c < C; ++c) v[0][c] = r[c];
    inv_levels<1, C, F - 1, Tout>(p, tx, ty, v);
  }
}

// Levels k..k+levels-1 of the inverse in one block: the approximation of the
// last level (the array's top-left corner) up to level k-1's, written to dst.
template <int C, typename Tout>
__global__ void __launch_bounds__(1024) haar_inverse_tail(const TailParams p) {
  extern __shared__ float sm[];
  float* const buf1 = sm + p.cap0;
  const int top = p.levels - 1;
  {
    const Geom b = p.lv[top];
    // Level m's approximation lives in buffer (m - (k-1)) % 2; buffer 0 (sm)
    // is the larger, for level k-1.
    float* a = (top + 1) % 2 ? buf1 : sm;
    const int n = b.w * C;
    for (int e = threadIdx.x; e < n * b.h; e += blockDim.x) a[e] = row_ptr(p.co, p.co_pitch, e / n)[e % n];
  }
  __syncthreads();
  Tout* dst = static_cast<Tout*>(p.dst);
  for (int l = top; l >= 0; --l) {
    const Geom b = p.lv[l];
    const int wo = l > 0 ? p.lv[l - 1].w : p.w0, ho = l > 0 ? p.lv[l - 1].h : p.h0;
    const float* in = (l + 1) % 2 ? buf1 : sm;
    float* out = l % 2 ? buf1 : sm;
    const int n = b.w * b.h * C;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int c = e % C, j = (e / C) % b.w, i = e / (C * b.w);
      const float ll = in[e];
      const float xd = row_ptr(p.co, p.co_pitch, i)[(b.x0 + j) * C + c];
      const float yd = row_ptr(p.co, p.co_pitch, b.y0 + i)[j * C + c];
      const float dd = row_ptr(p.co, p.co_pitch, b.y0 + i)[(b.x0 + j) * C + c];
      const float q0 = ll + yd, q1 = ll - yd, u = xd + dd, v = xd - dd;
      const float o[4] = {(q0 + u) * p.s, (q0 - u) * p.s, (q1 + v) * p.s, (q1 - v) * p.s};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int y = 2 * i + q / 2, x = 2 * j + q % 2;
        if (y >= ho || x >= wo) continue;
        if (l == 0) row_ptr(dst, p.dst_pitch, y)[x * C + c] = from_float<Tout>(o[q]);
        else out[(y * wo + x) * C + c] = o[q];
      }
    }
    __syncthreads();
  }
}

// ---- host side ----------------------------------------------------------------

std::ptrdiff_t aligned_pitch(int width, int channels, std::size_t elem) {
  const std::size_t row = static_cast<std::size_t>(width) * channels * elem;
  return static_cast<std::ptrdiff_t>((row + 255) / 256 * 256);
}

Geom geom(const HaarLayout::Band& b) { return {b.width, b.height, b.x0, b.y0}; }

// A run of consecutive levels done by one launch.
struct Group {
  int first, last;  // levels, 1-based, inclusive
  bool tail;
};

dim3 block_shape(int threads, int nx) {
  const int bx = std::min(threads, std::max(32, (nx + 31) / 32 * 32));
  return dim3(bx, std::max(1, threads / bx), 1);
}

dim3 grid_shape(dim3 block, int nx, int ny) {
  const unsigned gx = static_cast<unsigned>((nx + block.x - 1) / block.x);
  const unsigned gy = static_cast<unsigned>(std::min<long long>((ny + block.y - 1) / block.y, 65535));
  return dim3(gx, std::max(1u, gy), 1);
}

class CudaHaarImpl final : public CudaHaar {
 public:
  HaarCudaTuning& tuning() override { return tuning_; }

  std::string forward(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& l, HaarNormalize n,
                      stream_t stream_) override {
    check_tuning();
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_);
    const int C = src.channels;
    const bool host = is_host(src.memory);
    const void* in = src.data;
    std::ptrdiff_t in_pitch = src.pitch;
    float* co = static_cast<float*>(coeffs.data);
    std::ptrdiff_t co_pitch = coeffs.pitch;
    if (host) {
      // One upload of the image, one download of the coefficients.
      const std::size_t es = element_size(src.type);
      in_pitch = aligned_pitch(src.width, C, es);
      stage_in_.reserve(static_cast<std::size_t>(in_pitch) * src.height);
      PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(stage_in_.get(), in_pitch, src.data, src.pitch, src.row_bytes(),
                                          src.height, cudaMemcpyHostToDevice, stream));
      in = stage_in_.get();
      co_pitch = aligned_pitch(l.coeff_width, C, sizeof(float));
      stage_out_.reserve(static_cast<std::size_t>(co_pitch) * l.coeff_height);
      co = stage_out_.as<float>();
    }
    const float s = n == HaarNormalize::average ? 0.25f : 0.5f;
    zero_gaps(co, co_pitch, C, l, stream);
    const std::vector<Group> groups = plan(l, C, tuning_.max_fuse);
    reserve_scratch(l, C, groups);
    int w0 = l.width, h0 = l.height;
    bool first = true;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const Group& gr = groups[g];
      if (gr.tail) {
        TailParams p{};
        p.src = in;
        p.src_pitch = in_pitch;
        p.w0 = w0;
        p.h0 = h0;
        p.co = co;
        p.co_pitch = co_pitch;
        p.levels = gr.last - gr.first + 1;
        for (int k = gr.first; k <= gr.last; ++k) p.lv[k - gr.first] = geom(l.band[k]);
        p.s = s;
        const std::size_t shm = tail_shared(l, gr, C, p.cap0);
        launch_forward_tail(p, C, first ? src.type : PixelType::f32, shm, stream);
      } else {
        FwdParams p{};
        p.src = in;
        p.src_pitch = in_pitch;
        p.w0 = w0;
        p.h0 = h0;
        p.co = co;
        p.co_pitch = co_pitch;
        const int F = gr.last - gr.first + 1;
        for (int k = gr.first; k <= gr.last; ++k) p.lv[k - gr.first] = geom(l.band[k]);
        if (gr.last == l.levels) {
          p.ll = co;
          p.ll_pitch = co_pitch;
        } else {
          p.ll = scratch_[g % 2].as<float>();
          p.ll_pitch = scratch_pitch(l, C, gr.last);
        }
        p.s = s;
        launch_forward_fused(p, F, C, first ? src.type : PixelType::f32, stream);
        in = p.ll;
        in_pitch = p.ll_pitch;
      }
      w0 = l.band[gr.last].width;
      h0 = l.band[gr.last].height;
      first = false;
    }
    if (host) {
      PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(coeffs.data, coeffs.pitch, co, co_pitch, coeffs.row_bytes(),
                                          coeffs.height, cudaMemcpyDeviceToHost, stream));
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    return describe("forward", groups, host);
  }

  std::string inverse(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& l, HaarNormalize n,
                      stream_t stream_) override {
    check_tuning();
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_);
    const int C = dst.channels;
    const bool host = is_host(dst.memory);
    const float* co = static_cast<const float*>(coeffs.data);
    std::ptrdiff_t co_pitch = coeffs.pitch;
    void* out = dst.data;
    std::ptrdiff_t out_pitch = dst.pitch;
    if (host) {
      co_pitch = aligned_pitch(l.coeff_width, C, sizeof(float));
      stage_in_.reserve(static_cast<std::size_t>(co_pitch) * l.coeff_height);
      PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(stage_in_.get(), co_pitch, coeffs.data, coeffs.pitch, coeffs.row_bytes(),
                                          coeffs.height, cudaMemcpyHostToDevice, stream));
      co = stage_in_.as<float>();
      out_pitch = aligned_pitch(dst.width, C, element_size(dst.type));
      stage_out_.reserve(static_cast<std::size_t>(out_pitch) * dst.height);
      out = stage_out_.get();
    }
    const float s = n == HaarNormalize::average ? 1.0f : 0.5f;
    const std::vector<Group> groups = plan(l, C, tuning_.max_fuse_inverse);
    reserve_scratch(l, C, groups);
    // Coarse to fine. Group g's output (level first-1) goes to scratch g % 2,
    // the same buffer the forward pass used for level first-1 of group g-1.
    const float* ll = co;
    std::ptrdiff_t ll_pitch = co_pitch;
    for (std::size_t gi = groups.size(); gi-- > 0;) {
      const Group& gr = groups[gi];
      const bool last = gr.first == 1;
      void* o = last ? out : scratch_[(gi + 1) % 2].get();
      const std::ptrdiff_t o_pitch = last ? out_pitch : scratch_pitch(l, C, gr.first - 1);
      const PixelType ot = last ? dst.type : PixelType::f32;
      const int w0 = l.band[gr.first - 1].width, h0 = l.band[gr.first - 1].height;
      if (gr.tail) {
        TailParams p{};
        p.dst = o;
        p.dst_pitch = o_pitch;
        p.w0 = w0;
        p.h0 = h0;
        p.co = const_cast<float*>(co);
        p.co_pitch = co_pitch;
        p.levels = gr.last - gr.first + 1;
        for (int k = gr.first; k <= gr.last; ++k) p.lv[k - gr.first] = geom(l.band[k]);
        p.s = s;
        const std::size_t shm = tail_shared(l, gr, C, p.cap0);
        launch_inverse_tail(p, C, ot, shm, stream);
      } else {
        InvParams p{};
        p.ll = ll;
        p.ll_pitch = ll_pitch;
        p.co = co;
        p.co_pitch = co_pitch;
        p.dst = o;
        p.dst_pitch = o_pitch;
        p.w0 = w0;
        p.h0 = h0;
        for (int k = gr.first; k <= gr.last; ++k) p.lv[k - gr.first] = geom(l.band[k]);
        p.s = s;
        launch_inverse_fused(p, gr.last - gr.first + 1, C, ot, stream);
      }
      ll = static_cast<const float*>(o);
      ll_pitch = o_pitch;
    }
    if (host) {
      PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(dst.data, dst.pitch, out, out_pitch, dst.row_bytes(), dst.height,
                                          cudaMemcpyDeviceToHost, stream));
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    return describe("inverse", groups, host);
  }

 private:
  void check_tuning() const {
    PIXELKIT_EXPECTS(tuning_.block_threads >= 32 && tuning_.block_threads <= kMaxFusedThreads &&
                         tuning_.block_threads % 32 == 0,
                     Status::invalid_argument,
                     "haar cuda: block_threads " + std::to_string(tuning_.block_threads) +
                         " must be a multiple of 32 in 32.." + std::to_string(kMaxFusedThreads));
    PIXELKIT_EXPECTS(tuning_.max_fuse >= 1 && tuning_.max_fuse <= kMaxFuse && tuning_.max_fuse_inverse >= 1 &&
                         tuning_.max_fuse_inverse <= kMaxFuse,
                     Status::invalid_argument,
                     "haar cuda: max_fuse " + std::to_string(tuning_.max_fuse) + " and max_fuse_inverse " +
                         std::to_string(tuning_.max_fuse_inverse) + " must be 1..3");
  }

  // Splits the levels into launches: fused groups while the approximation is
  // large, then one tail group once it fits in a block's shared memory.
  std::vector<Group> plan(const HaarLayout& l, int C, int max_fuse) const {
    std::vector<Group> groups;
    const int fmax = C == 1 ? max_fuse : std::min(max_fuse, 2);
    int k = 1;
    while (k <= l.levels) {
      const auto& in = l.band[k - 1];
      const long long n = static_cast<long long>(in.width) * in.height * C;
      if (n <= tuning_.tail_elements) {
        int cap0 = 0;
        if (tail_shared(l, {k, l.levels, true}, C, cap0) <= kTailSharedBytes) {
          groups.push_back({k, l.levels, true});
          break;
        }
      }
      const int f = std::min(fmax, l.levels - k + 1);
      groups.push_back({k, k + f - 1, false});
      k += f;
    }
    return groups;
  }

  // Shared memory of a tail group: level first-1's approximation plus level first's.
  static std::size_t tail_shared(const HaarLayout& l, const Group& g, int C, int& cap0) {
    const auto& a = l.band[g.first - 1];
    const auto& b = l.band[g.first];
    cap0 = a.width * a.height * C;
    return (static_cast<std::size_t>(cap0) + static_cast<std::size_t>(b.width) * b.height * C) * sizeof(float);
  }

  static std::ptrdiff_t scratch_pitch(const HaarLayout& l, int C, int level) {
    return aligned_pitch(l.band[level].width, C, sizeof(float));
  }

  // Both scratch buffers hold the largest approximation that goes through
  // scratch: the first group's last level.
  void reserve_scratch(const HaarLayout& l, int C, const std::vector<Group>& groups) {
    if (groups.size() < 2) return;
    const int k = groups[0].last;
    const std::size_t bytes = static_cast<std::size_t>(scratch_pitch(l, C, k)) * l.band[k].height;
    scratch_[0].reserve(bytes);
    scratch_[1].reserve(bytes);
  }

  static void zero_gaps(float* co, std::ptrdiff_t pitch, int C, const HaarLayout& l, cudaStream_t stream) {
    const auto ptr = [&](int y, int x) {
      return reinterpret_cast<char*>(co) + static_cast<std::ptrdiff_t>(y) * pitch +
             static_cast<std::ptrdiff_t>(x) * C * sizeof(float);
    };
    for (int k = 1; k <= l.levels; ++k) {
      const auto& b = l.band[k];
      if (b.y0 > b.height)
        PIXELKIT_CUDA_TRY(cudaMemset2DAsync(ptr(b.height, b.x0), pitch, 0, b.width * C * sizeof(float),
                                            b.y0 - b.height, stream));
      if (b.x0 > b.width)
        PIXELKIT_CUDA_TRY(cudaMemset2DAsync(ptr(b.y0, b.width), pitch, 0, (b.x0 - b.width) * C * sizeof(float),
                                            b.height, stream));
    }
  }

  // The kernels' template arguments from run-time values:
  // with_channels_and_type calls f(channels, pixel), channels an
  // integral_constant of 1, 3 or 4 and pixel a value of the pixel type (u8 or
  // f32); with_fused_levels calls f(levels), levels an integral_constant of
  // the levels one launch fuses (1 or 2, and 3 for one channel only).
  template <typename Fn>
  static void with_channels_and_type(int C, PixelType type, Fn&& f) {
    const auto with_channels = [&](auto pixel) {
      if (C == 1) f(std::integral_constant<int, 1>{}, pixel);
      else if (C == 3) f(std::integral_constant<int, 3>{}, pixel);
      else f(std::integral_constant<int, 4>{}, pixel);
    };
    if (type == PixelType::u8) with_channels(std::uint8_t{});
    else with_channels(float{});
  }
  template <typename Channels, typename Fn>
  static void with_fused_levels(Channels, int F, Fn&& f) {
    if constexpr (Channels::value == 1) {
      if (F == 3) return f(std::integral_constant<int, 3>{});
    }
    if (F == 2) return f(std::integral_constant<int, 2>{});
    f(std::integral_constant<int, 1>{});
  }

  // One launch of kernel_of(levels, channels, pixel), the fused forward or
  // inverse kernel of those template arguments, over the first level it fuses.
  template <typename Params, typename KernelOf>
  void launch_fused(const Params& p, int F, int C, PixelType type, cudaStream_t stream, KernelOf kernel_of) {
    with_channels_and_type(C, type, [&](auto channels, auto pixel) {
      with_fused_levels(channels, F, [&](auto levels) {
        const int nx = p.lv[levels - 1].w, ny = p.lv[levels - 1].h;
        const dim3 block = block_shape(tuning_.block_threads, nx);
        kernel_of(levels, channels, pixel)<<<grid_shape(block, nx, ny), block, 0, stream>>>(p);
      });
    });
  }

  void launch_forward_fused(const FwdParams& p, int F, int C, PixelType in, cudaStream_t stream) {
    launch_fused(p, F, C, in, stream, [](auto levels, auto channels, auto pixel) {
      return &haar_forward_fused<decltype(levels)::value, decltype(channels)::value, decltype(pixel)>;
    });
    PIXELKIT_CUDA_CHECK_LAUNCH("haar_forward_fused");
  }

  void launch_forward_tail(const TailParams& p, int C, PixelType in, std::size_t shm, cudaStream_t stream) {
    with_channels_and_type(C, in, [&](auto channels, auto pixel) {
      haar_forward_tail<decltype(channels)::value, decltype(pixel)><<<1, tail_threads(), shm, stream>>>(p);
    });
    PIXELKIT_CUDA_CHECK_LAUNCH("haar_forward_tail");
  }

  void launch_inverse_fused(const InvParams& p, int F, int C, PixelType out, cudaStream_t stream) {
    launch_fused(p, F, C, out, stream, [](auto levels, auto channels, auto pixel) {
      return &haar_inverse_fused<decltype(levels)::value, decltype(channels)::value, decltype(pixel)>;
    });
    PIXELKIT_CUDA_CHECK_LAUNCH("haar_inverse_fused");
  }

  void launch_inverse_tail(const TailParams& p, int C, PixelType out, std::size_t shm, cudaStream_t stream) {
    with_channels_and_type(C, out, [&](auto channels, auto pixel) {
      haar_inverse_tail<decltype(channels)::value, decltype(pixel)><<<1, tail_threads(), shm, stream>>>(p);
    });
    PIXELKIT_CUDA_CHECK_LAUNCH("haar_inverse_tail");
  }

  // The tail is latency-bound: one block as wide as allowed.
  static int tail_threads() { return 1024; }

  std::string describe(const char* what, const std::vector<Group>& groups, bool host) const {
    std::string s = std::string("cuda ") + what + (host ? ", 1 upload + 1 download" : ", device-resident") + ", " +
                    std::to_string(groups.size()) + " launch" + (groups.size() == 1 ? "" : "es") + " (";
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (i) s += ", ";
      s += (groups[i].tail ? "tail " : "fused ") + std::to_string(groups[i].last - groups[i].first + 1);
    }
    return s + " levels), block " + std::to_string(tuning_.block_threads);
  }

  HaarCudaTuning tuning_;
  DeviceBuffer stage_in_, stage_out_;  // host images: the upload and the download
  DeviceBuffer scratch_[2];            // approximations between launches
};

}  // namespace

std::unique_ptr<CudaHaar> make_cuda_haar() { return std::make_unique<CudaHaarImpl>(); }

}  // namespace pixelkit::detail
