// Device side of the CUDA filter: parameter blocks, element helpers and the two
// kernels (dense shared-memory tile; separable, both passes fused). The host
// launchers are in filter_cuda.cu, the launch sizes in filter_tuning.hpp.
//
// Layout. Images are interleaved, so a row is an array of width*C elements and
// the horizontal neighbour kx of element e is element e + (kx - rx)*C. Both
// kernels work in this element domain: tiles are kTileElems elements wide
// whatever C is, a thread owns consecutive elements (mixed channels), and the
// only place C appears is the tap stride. The shared tile holds floats: u8
// input is converted once when the tile is filled, not once per tap.
//
// Coefficients travel in the kernel's parameter block (`__grid_constant__`),
// which the hardware keeps in a constant bank: with the tap loops unrolled,
// every FFMA reads its coefficient straight from the bank (c[0x0][imm]). Each
// launch carries its own copy, so two filters queued on different streams at
// the same time cannot see each other's coefficients (a single __constant__
// array would need a copy per stream and ordering on each update).
//
// Borders cost nothing in the interior: a block first asks whether everything
// it will read lies inside the image (one block-uniform test); if so it loads
// with plain (16-byte where aligned) loads, and only edge blocks map each
// coordinate through border_index.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/view2d.hpp"
#include "filter/filter_tuning.hpp"
#include "pixelkit/border.hpp"

namespace pixelkit::detail::cuda_filter {

constexpr int kMaxSide = 31;

template <typename T>
struct FilterArgs {
  View2D<const T> src;  ///< the whole source image (borders are relative to it)
  View2D<T> dst;
  int y_begin;          ///< output rows [y_begin, y_end) are computed by this launch
  int y_end;
  float border_value;
  BorderMode mode;
  bool vec_src;         ///< src base and pitch allow 4-element (4 B / 16 B) loads
  bool vec_dst;         ///< dst base and pitch allow the kernel's vector stores
};

/// The border as the byte kernels hold it (the row-streaming and streaming
/// tensor-core kernels load rows as bytes): false for a constant value that
/// is not a whole grey level 0..255; else `word` is that value in each byte
/// (0 for the other modes).
inline bool byte_border_word(const Border& border, unsigned* word) {
  *word = 0u;
  if (border.mode != BorderMode::constant) return true;
  const float v = border.value;
  if (!(v >= 0.0f && v <= 255.0f) || static_cast<float>(static_cast<int>(v)) != v) return false;
  *word = static_cast<unsigned>(v) * 0x01010101u;
  return true;
}

struct DenseCoeffs {
  int kw, kh;
  float c[kMaxSide * kMaxSide];  ///< row-major kh x kw
};

struct SepCoeffs {
  int nx, ny;
  float row[32];  ///< horizontal factors, zero beyond nx
  float col[32];  ///< vertical factors, zero beyond ny
};

template <typename T>
struct DenseParams {
  FilterArgs<T> a;
  DenseCoeffs k;
};

template <typename T>
struct SepParams {
  FilterArgs<T> a;
  SepCoeffs k;
  int seg_rows;  ///< rows swept by one block (a multiple of kChunkRows)
};

// ---- geometry shared by host and device ---------------------------------------

/// Apron of a tile in elements: rx*C rounded up to a whole float4.
__host__ __device__ constexpr int apron_elems(int rx, int channels) { return (rx * channels + 3) & ~3; }

struct DenseGeom {
  int apron;    // elements each side
  int w4;       // float4 units per shared row
  int stride;   // floats per shared row
  int rows;     // shared rows
  __host__ __device__ constexpr DenseGeom(int kw, int kh, int channels, int rows_per_thread)
      : apron(apron_elems(kw / 2, channels)),
        w4(filter_tuning::Dense::kTileElems / 4 + apron / 2),
        stride(4 * w4),
        rows(filter_tuning::Dense::kThreadsY * rows_per_thread + kh - 1) {}
  __host__ __device__ constexpr int smem_bytes() const { return rows * stride * 4; }
};

struct SepGeom {
  int apron;
  int w4;          // float4 units per raw row
  int raw_stride;  // floats; = 4 (mod 32) so that 8 rows at one column hit 8 bank groups
  static constexpr int kRingStride = filter_tuning::Separable::kTileElems + 4;  // = 4 (mod 32) too
  __host__ __device__ constexpr SepGeom(int nx, int channels)
      : apron(apron_elems(nx / 2, channels)),
        w4(filter_tuning::Separable::kTileElems / 4 + apron / 2),
        raw_stride(((4 * w4 - 4 + 31) & ~31) + 4) {}
  __host__ __device__ constexpr int raw_floats() const { return filter_tuning::Separable::kChunkRows * raw_stride; }
  __host__ __device__ constexpr int smem_bytes() const {
    return (raw_floats() + filter_tuning::Separable::kRingRows * kRingStride) * 4;
  }
};

// ---- programmatic dependent launch --------------------------------------------

/// Programmatic dependent launch (sm_90 up; notes, run 31). The host launches
/// every filter kernel with
/// cudaLaunchAttributeProgrammaticStreamSerialization (CudaFilterImpl::launch_kernel), so
/// that a kernel may be scheduled while the kernel before it on the stream
/// drains. Each of them calls this once, after its prologue (fragments from
/// the parameter block, shared memory) and before its first global memory
/// access: it lets the next such kernel be scheduled
/// (griddepcontrol.launch_dependents; that kernel still waits here for this
/// one), then waits until the kernels this one depends on have completed and
/// their writes are visible (griddepcontrol.wait). Launched without the
/// attribute, or before sm_90, it does nothing.
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;\n" ::: "memory");
#endif
}

/// L2 prefetch of the bytes [x_lo, x_hi) of rows [y_lo, y_hi) of `img`
/// (clipped to the image), by `nthreads` threads of which this is thread
/// `tid`; a 128-byte line per prefetch. The streaming kernels call it before
/// pdl_begin, for the rows their first work item reads: while the kernel
/// before them on the stream drains, those lines travel from DRAM to L2, so
/// that the first loads after pdl_begin wait on L2 instead of DRAM (notes,
/// run 37). A prefetch only moves a line into L2, where the earlier kernel's
/// writes land too (L2 is the point of coherence of global memory), and
/// fills no L1: nothing stale can be read after the wait.
__device__ __forceinline__ void prefetch_rows_l2(const View2D<const std::uint8_t>& img, int y_lo, int y_hi, int x_lo,
                                                 int x_hi, int tid, int nthreads) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  y_lo = max(y_lo, 0);
  y_hi = min(y_hi, img.height);
  x_lo = max(x_lo, 0);
  x_hi = min(x_hi, img.width * img.channels);
  if (y_lo >= y_hi || x_lo >= x_hi) return;
  // A row's lines: offsets x_lo, x_lo + 128, ... and its last byte (the
  // line it ends in), at most one line twice.
  const int per_row = (x_hi - x_lo + 127) / 128 + 1;
  const int n = (y_hi - y_lo) * per_row;
  for (int i = tid; i < n; i += nthreads) {
    const int r = i / per_row, l = i - r * per_row;
    const int x = min(x_lo + 128 * l, x_hi - 1);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(img.row(y_lo + r) + x));
  }
#endif
}

// ---- element conversions ------------------------------------------------------

/// Byte I of w as an exact float: PRMT drops the byte into the mantissa of
/// 2^23, one FADD removes 2^23 (two full-rate instructions instead of the
/// quarter-rate I2F).
template <int I>
__device__ __forceinline__ float byte_as_float(unsigned w) {
  return __int_as_float(static_cast<int>(__byte_perm(w, 0x4B000000u, 0x7540u | I))) - 8388608.0f;
}

/// Round to nearest even and saturate to 0..255: __float2int_rn followed by a
/// clamp, done by the one conversion instruction (NaN gives 0, as the clamp of
/// __float2int_rn's 0 would).
__device__ __forceinline__ unsigned float_to_u8(float v) {
  unsigned r;
  asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

/// (c << 16) | float_to_u8(hi) << 8 | float_to_u8(lo): two values rounded to
/// the nearest integer (ties to even), saturated to 0..255 and packed above
/// the low half of c, in one instruction on sm_90 (F2IP with two sources:
/// ptxas fuses the two conversions and the pack). The same bytes as
/// float_to_u8 (cvt.rni.s32 saturates to the s32 range and gives 0 for NaN,
/// as cvt.rni.sat.u8 does).
__device__ __forceinline__ unsigned pack2_u8(float lo, float hi, unsigned c) {
  unsigned d;
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(__float2int_rn(hi)), "r"(__float2int_rn(lo)), "r"(c));
  return d;
}

template <typename T>
struct Elem;

template <>
struct Elem<std::uint8_t> {
  using Vec4 = unsigned;  // 4 elements in one 32-bit word
  __device__ static float to_float(std::uint8_t v) { return byte_as_float<0>(v); }
  __device__ static Vec4 load4(const std::uint8_t* p) { return __ldg(reinterpret_cast<const unsigned*>(p)); }
  __device__ static Vec4 load4_scalar(const std::uint8_t* p) {
    return static_cast<unsigned>(__ldg(p)) | (static_cast<unsigned>(__ldg(p + 1)) << 8) |
           (static_cast<unsigned>(__ldg(p + 2)) << 16) | (static_cast<unsigned>(__ldg(p + 3)) << 24);
  }
  __device__ static float4 to_float4(Vec4 w) {
    return make_float4(byte_as_float<0>(w), byte_as_float<1>(w), byte_as_float<2>(w), byte_as_float<3>(w));
  }
  __device__ static void store(std::uint8_t* p, float v) { *p = static_cast<std::uint8_t>(float_to_u8(v)); }
  __device__ static void store4(std::uint8_t* p, float a, float b, float c, float d) {
    const unsigned lo = __byte_perm(float_to_u8(a), float_to_u8(b), 0x0040u);
    const unsigned hi = __byte_perm(float_to_u8(c), float_to_u8(d), 0x0040u);
    *reinterpret_cast<unsigned*>(p) = __byte_perm(lo, hi, 0x5410u);
  }
  __device__ static void store2(std::uint8_t* p, float a, float b) {
    *reinterpret_cast<unsigned short*>(p) =
        static_cast<unsigned short>(__byte_perm(float_to_u8(a), float_to_u8(b), 0x0040u));
  }
};

template <>
struct Elem<float> {
  using Vec4 = float4;
  __device__ static float to_float(float v) { return v; }
  __device__ static Vec4 load4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
  __device__ static Vec4 load4_scalar(const float* p) {
    return make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
  }
  __device__ static float4 to_float4(Vec4 v) { return v; }
  __device__ static void store(float* p, float v) { *p = v; }
  __device__ static void store4(float* p, float a, float b, float c, float d) {
    *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
  }
  __device__ static void store2(float* p, float a, float b) { *reinterpret_cast<float2*>(p) = make_float2(a, b); }
};

/// One element of the source with the border applied. `sy` is the row already
/// mapped by border_index (-1: a constant-border row). e may lie outside the
/// row by up to 64 pixels on the left and anything on the right.
template <typename T, int C>
__device__ __forceinline__ float load_border(const FilterArgs<T>& a, int sy, int e) {
  if (sy < 0) return a.border_value;
  const int x = (e + C * 64) / C - 64;  // floor(e / C) for e >= -64*C
  const int c = e - x * C;
  const int sx = detail::border_index_near(x, a.src.width, a.mode);
  if (sx < 0) return a.border_value;
  return Elem<T>::to_float(a.src.row(sy)[sx * C + c]);
}

/// Fills shared rows [0, nrows) (stride floats apart) with image elements
/// [ebase, ebase + 4*w4) of rows ybase.. . `interior` (block-uniform): every
/// element read lies inside the image, so no border mapping is needed. The
/// specialised kernels fill interior tiles through Prefetch (all loads first,
/// geometry at compile time); this is the edge path and the generic kernels'.
template <typename T, int C, int NT>
__device__ __forceinline__ void fill_tile(float* __restrict__ tile, int stride, int nrows, int w4, int ebase,
                                          int ybase, bool interior, const FilterArgs<T>& a, int tid) {
  using E = Elem<T>;
  const int units = nrows * w4;
  if (interior) {
    for (int u = tid; u < units; u += NT) {
      const int r = u / w4, q = u - r * w4;
      const T* p = a.src.row(ybase + r) + ebase + 4 * q;
      *reinterpret_cast<float4*>(tile + r * stride + 4 * q) = E::to_float4(a.vec_src ? E::load4(p) : E::load4_scalar(p));
    }
  } else {
    for (int u = tid; u < units; u += NT) {
      const int r = u / w4, q = u - r * w4;
      const int sy = detail::border_index_near(ybase + r, a.src.height, a.mode);
      const int e = ebase + 4 * q;
      *reinterpret_cast<float4*>(tile + r * stride + 4 * q) =
          make_float4(load_border<T, C>(a, sy, e), load_border<T, C>(a, sy, e + 1), load_border<T, C>(a, sy, e + 2),
                      load_border<T, C>(a, sy, e + 3));
    }
  }
}

/// Calls f(integral_constant<int, I>) for I in [B, E): a loop the compiler
/// cannot decline to unroll (the 31-tap passes exceed nvcc's unroll budget
/// for `#pragma unroll` and then fall back to a slow rolled loop).
template <int B, int E, typename F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (B < E) {
    f(std::integral_constant<int, B>{});
    static_for<B + 1, E>(f);
  }
}

/// Registers holding one future chunk of interior rows (4 elements per unit,
/// raw u8 words or float4s): the loads are issued a chunk or two ahead and
/// only converted and written to shared memory when that chunk's turn comes,
/// so global loads stay in flight while the current chunk is computed.
/// W4 > 0: units per row known at compile time (division by a constant).
template <typename T, int PER, int NT, int W4>
struct Prefetch {
  typename Elem<T>::Vec4 v[PER];

  __device__ __forceinline__ void load(const FilterArgs<T>& a, int ebase, int ybase, int w4_rt, int units,
                                       int tid) {
    const int w4 = W4 > 0 ? W4 : w4_rt;
    // One 64-bit base per chunk; per unit a 32x32->64 multiply (pitch < 2^31
    // is checked by the host).
    const char* base = reinterpret_cast<const char*>(a.src.data) + static_cast<std::ptrdiff_t>(ybase) * a.src.pitch +
                       static_cast<std::ptrdiff_t>(ebase) * static_cast<std::ptrdiff_t>(sizeof(T));
    const int pitch = static_cast<int>(a.src.pitch);
    if (a.vec_src) {
#pragma unroll
      for (int k = 0; k < PER; ++k) {
        const int u = tid + k * NT;
        if (u < units) {
          const int r = u / w4, q = u - r * w4;
          v[k] = Elem<T>::load4(reinterpret_cast<const T*>(
              base + static_cast<long long>(r) * pitch + q * static_cast<int>(4 * sizeof(T))));
        }
      }
    } else {
#pragma unroll
      for (int k = 0; k < PER; ++k) {
        const int u = tid + k * NT;
        if (u < units) {
          const int r = u / w4, q = u - r * w4;
          v[k] = Elem<T>::load4_scalar(reinterpret_cast<const T*>(
              base + static_cast<long long>(r) * pitch + q * static_cast<int>(4 * sizeof(T))));
        }
      }
    }
  }

  __device__ __forceinline__ void store(float* __restrict__ tile, int stride, int w4_rt, int units, int tid) const {
    const int w4 = W4 > 0 ? W4 : w4_rt;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int u = tid + k * NT;
      if (u < units) {
        const int r = u / w4, q = u - r * w4;
        *reinterpret_cast<float4*>(tile + r * stride + 4 * q) = Elem<T>::to_float4(v[k]);
      }
    }
  }
};

// ---- dense: shared-memory tile, register-blocked --------------------------------------

/// The tuning's blocks per SM, capped at what the architecture being compiled
/// holds (threads per SM: 1024 on sm_75, 1536 on sm_86/87/89, 2048 on sm_80
/// and sm_90), so that __launch_bounds__ stays in range on every target.
__host__ __device__ constexpr int fit_blocks_per_sm(int blocks, int threads) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
  constexpr int max_threads = 1024;
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
  constexpr int max_threads = 1536;
#else
  constexpr int max_threads = 2048;
#endif
  return blocks * threads <= max_threads ? blocks : (max_threads / threads > 0 ? max_threads / threads : 1);
}

/// Dense correlation. A block computes a tile of 128 elements x (8*R) rows:
/// the input rows it needs (8R + KH - 1, apron included) are converted to
/// floats in shared memory once; thread (tx, ty) then computes elements
/// 4tx..4tx+3 of rows ty*R..ty*R+R-1. It walks the R+KH-1 input rows its
/// outputs need, loads each row's window once (float4 loads) and feeds every
/// output that row touches, so a loaded value serves up to R*min(4,KW) FMAs.
/// KW = KH = 0: sizes at run time.
/// (Run 2 tried a sweeping variant - one block walking down a segment with the
/// next tiles' loads in flight in registers - and it was slower: see
/// docs/notes-filter-cuda.md.)
template <typename T, int C, int KW, int KH, int R>
__global__ void __launch_bounds__(filter_tuning::Dense::kThreads,
                                  fit_blocks_per_sm(filter_tuning::Dense::min_blocks_per_sm(KW),
                                                    filter_tuning::Dense::kThreads))
    dense_tiled_kernel(const __grid_constant__ DenseParams<T> p) {
  using D = filter_tuning::Dense;
  constexpr bool kSpec = KW > 0;
  constexpr int TH = D::kThreadsY * R;
  constexpr int NT = D::kThreads;
  extern __shared__ float4 smem4[];
  float* const tile = reinterpret_cast<float*>(smem4);
  const FilterArgs<T>& a = p.a;

  const int kw = kSpec ? KW : p.k.kw;
  const int kh = kSpec ? KH : p.k.kh;
  const DenseGeom g(kw, kh, C, R);
  const int rx = kw / 2, ry = kh / 2;
  const int wc = a.src.width * C;
  const int e0 = blockIdx.x * D::kTileElems;
  const int y0 = a.y_begin + blockIdx.y * TH;
  const int tid = threadIdx.y * D::kThreadsX + threadIdx.x;
  const bool interior = e0 - g.apron >= 0 && e0 + D::kTileElems + g.apron <= wc && y0 - ry >= 0 &&
                        y0 + TH + ry <= a.src.height;
  pdl_begin();  // no global memory access before this line

  float acc[R][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[r][j] = 0.0f;

  if constexpr (kSpec) {
    constexpr DenseGeom cg(KW, KH, C, R);
    constexpr int kRxc = (KW / 2) * C;
    constexpr int kOff = cg.apron - kRxc;                // 0..3: first tap of output 0 in the window
    constexpr int kWin = (kOff + 4 + 2 * kRxc + 3) / 4;  // float4 loads per window row
    if (interior) {
      // All loads issued first, then converted and stored (one round trip).
      Prefetch<T, (cg.rows * cg.w4 + NT - 1) / NT, NT, cg.w4> pre;
      pre.load(a, e0 - cg.apron, y0 - KH / 2, cg.w4, cg.rows * cg.w4, tid);
      pre.store(tile, cg.stride, cg.w4, cg.rows * cg.w4, tid);
    } else {
      fill_tile<T, C, NT>(tile, cg.stride, cg.rows, cg.w4, e0 - cg.apron, y0 - KH / 2, false, a, tid);
    }
    __syncthreads();
    const float* win = tile + threadIdx.y * R * cg.stride + 4 * threadIdx.x;
    static_for<0, R + KH - 1>([&](auto iyc) {
      constexpr int iy = decltype(iyc)::value;
      float w[kWin * 4];
#pragma unroll
      for (int q = 0; q < kWin; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(win + iy * cg.stride + 4 * q);
        w[4 * q] = v.x;
        w[4 * q + 1] = v.y;
        w[4 * q + 2] = v.z;
        w[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int ky = iy - r;
        if (ky >= 0 && ky < KH) {
#pragma unroll
          for (int kx = 0; kx < KW; ++kx) {
            const float c = p.k.c[ky * KW + kx];
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[r][j] = fmaf(c, w[kOff + j + kx * C], acc[r][j]);
          }
        }
      }
    });
  } else {
    fill_tile<T, C, NT>(tile, g.stride, g.rows, g.w4, e0 - g.apron, y0 - ry, interior, a, tid);
    __syncthreads();
    // Any size: one coefficient (a constant-bank load) feeds R*4 FMAs, each
    // with its own shared load; slower, but it is the fallback.
    const int off = g.apron - rx * C;
    const float* win = tile + threadIdx.y * R * g.stride + 4 * threadIdx.x + off;
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx) {
        const float c = p.k.c[ky * kw + kx];
        const float* s = win + ky * g.stride + kx * C;
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[r][j] = fmaf(c, s[r * g.stride + j], acc[r][j]);
      }
  }

  // Store: whole 4-element vectors when the tile is inside and dst aligned.
  const int ex = e0 + 4 * threadIdx.x;
  const int yt = y0 + threadIdx.y * R;
  const bool full = e0 + D::kTileElems <= wc && y0 + TH <= a.y_end;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int y = yt + r;
    if (!full && y >= a.y_end) break;
    T* out = a.dst.row(y) + ex;
    if (full && a.vec_dst) {
      Elem<T>::store4(out, acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (ex + j < wc) Elem<T>::store(out + j, acc[r][j]);
    }
  }
}

// ---- separable: both passes fused, sweeping down a segment ---------------------------

/// Separable correlation, both passes in one kernel. A block owns elements
/// [e0, e0+128) of rows [y0, y1) (a segment) and sweeps down it in chunks of
/// 32 rows:
///   1. raw chunk c (32 input rows + horizontal apron) -> shared `raw` (floats),
///      from registers loaded one or two chunks earlier (interior chunks) or
///      straight from global memory through border_index (edge chunks); the
///      loads of a later chunk are issued right after;
///   2. horizontal pass of chunk c -> 32 rows of the shared `ring` (64 rows);
///   3. vertical pass of output chunk c-1 (it needs 2*ry <= 30 rows of chunk c)
///      from the ring -> global.
/// Each input row's horizontal pass thus runs once per segment; a segment
/// costs 2*ry extra rows, not 2*ry per 32-row tile.
/// Horizontal pass: a thread makes 16 consecutive elements of one row (window
/// of 16 + 2*rx*C floats, float4 loads). Vertical pass: a thread makes 2
/// elements x 8 rows, each loaded float2 serving up to 8 outputs.
/// N > 0: square N x N (the tap loops unrolled); N = 0: nx, ny at run time.
template <typename T, int C, int N>
__global__ void __launch_bounds__(filter_tuning::Separable::kThreads,
                                  fit_blocks_per_sm(filter_tuning::Separable::min_blocks_per_sm(N),
                                                    filter_tuning::Separable::kThreads))
    separable_fused_kernel(const __grid_constant__ SepParams<T> p) {
  using S = filter_tuning::Separable;
  constexpr bool kSpec = N > 0;
  constexpr int NT = S::kThreads;
  constexpr int TW = S::kTileElems;
  constexpr int TH = S::kChunkRows;
  constexpr int RH = S::kRingRows;
  constexpr int SV = SepGeom::kRingStride;
  static_assert(TW == 8 * S::kHElems && TH * 8 == NT, "horizontal pass: 32 rows x 8 groups of 16 elements");
  static_assert(TW == 64 * S::kVElems && TH == 4 * S::kVRows, "vertical pass: 64 columns x 4 groups of 8 rows");
  static_assert((RH & (RH - 1)) == 0 && RH == 2 * TH, "ring index is a mask");
  constexpr int kW4 = kSpec ? SepGeom(N, C).w4 : 0;
  constexpr int kPer = (TH * (kSpec ? SepGeom(N, C).w4 : SepGeom(kMaxSide, C).w4) + NT - 1) / NT;
  constexpr int kDist = sizeof(T) == 1 ? S::kPrefetchU8 : S::kPrefetchF32;

  extern __shared__ float4 smem4[];
  const FilterArgs<T>& a = p.a;
  const int nx = kSpec ? N : p.k.nx;
  const int ny = kSpec ? N : p.k.ny;
  const int rx = nx / 2, ry = ny / 2;
  const SepGeom g(nx, C);
  float* const raw = reinterpret_cast<float*>(smem4);
  float* const ring = raw + g.raw_floats();

  const int wc = a.src.width * C;
  const int hgt = a.src.height;
  const int e0 = blockIdx.x * TW;
  const int y0 = a.y_begin + blockIdx.y * p.seg_rows;
  const int y1 = min(y0 + p.seg_rows, a.y_end);
  const int n_out = (y1 - y0 + TH - 1) / TH;  // output chunks
  pdl_begin();  // no global memory access before this line
  const int lag = ry > 0 ? 1 : 0;             // output chunk k is computed after input chunk k + lag
  const int n_in = n_out + lag;
  const int units = TH * g.w4;
  const int tid = threadIdx.x;
  const bool x_inside = e0 - g.apron >= 0 && e0 + TW + g.apron <= wc;
  auto chunk_inside = [&](int c) {
    const int yb = y0 - ry + c * TH;
    return x_inside && yb >= 0 && yb + TH <= hgt;
  };

  // Thread roles (fixed for the whole sweep).
  const int lane = tid & 31, warp = tid >> 5;
  const int h_row = (lane & 7) + 8 * (warp & 3);  // 8 lanes of a quarter-warp: 8 rows, one column
  const int h_grp = (lane >> 3) + 4 * (warp >> 2);
  const int v_col = tid & 63;
  const int v_grp = tid >> 6;

  auto hpass = [&](int c) {  // ring row (c*TH + h_row) mod RH, elements 16*h_grp..+15
    float acc[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] = 0.0f;
    const float* src = raw + h_row * g.raw_stride + 16 * h_grp;
    if constexpr (kSpec) {
      constexpr int kRxc = (N / 2) * C;
      constexpr int kOff = apron_elems(N / 2, C) - kRxc;
      constexpr int kWin = (kOff + 16 + 2 * kRxc + 3) / 4;
      static_for<0, kWin>([&](auto qc) {
        constexpr int q = decltype(qc)::value;
        const float4 v4 = *reinterpret_cast<const float4*>(src + 4 * q);
        const float vv[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            const int t = 4 * q + i - kOff - j;  // = kx * C for a tap of output j
            if (t >= 0 && t % C == 0 && t / C < N) acc[j] = fmaf(p.k.row[t / C], vv[i], acc[j]);
          }
      });
    } else {
      const float* s0 = src + g.apron - rx * C;
      for (int kx = 0; kx < nx; ++kx) {
        const float cf = p.k.row[kx];
        const float* s = s0 + kx * C;
#pragma unroll
        for (int j = 0; j < 16; ++j) acc[j] = fmaf(cf, s[j], acc[j]);
      }
    }
    float* d = ring + ((c & 1) * TH + h_row) * SV + 16 * h_grp;
#pragma unroll
    for (int q = 0; q < 4; ++q)
      *reinterpret_cast<float4*>(d + 4 * q) = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
  };

  auto vpass = [&](int k) {  // output rows y0 + k*TH + 8*v_grp + r, elements e0 + 2*v_col + {0,1}
    const int base = (k & 1) * TH + 8 * v_grp;  // ring row of h-row k*TH + 8*v_grp
    const float* col0 = ring + 2 * v_col;
    float2 acc[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) acc[r] = make_float2(0.0f, 0.0f);
    if constexpr (kSpec) {
      static_for<0, 8 + N - 1>([&](auto iyc) {
        constexpr int iy = decltype(iyc)::value;
        const float2 v = *reinterpret_cast<const float2*>(col0 + ((base + iy) & (RH - 1)) * SV);
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          const int ky = iy - r;
          if (ky >= 0 && ky < N) {
            acc[r].x = fmaf(p.k.col[ky], v.x, acc[r].x);
            acc[r].y = fmaf(p.k.col[ky], v.y, acc[r].y);
          }
        }
      });
    } else {
      for (int ky = 0; ky < ny; ++ky) {
        const float cf = p.k.col[ky];
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          const float2 v = *reinterpret_cast<const float2*>(col0 + ((base + r + ky) & (RH - 1)) * SV);
          acc[r].x = fmaf(cf, v.x, acc[r].x);
          acc[r].y = fmaf(cf, v.y, acc[r].y);
        }
      }
    }
    const int ex = e0 + 2 * v_col;
    const int yt = y0 + k * TH + 8 * v_grp;
    const bool full = e0 + TW <= wc && y0 + (k + 1) * TH <= y1;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      const int y = yt + r;
      if (!full && y >= y1) break;
      T* out = a.dst.row(y) + ex;
      if (full && a.vec_dst) {
        Elem<T>::store2(out, acc[r].x, acc[r].y);
      } else {
        if (ex < wc) Elem<T>::store(out, acc[r].x);
        if (ex + 1 < wc) Elem<T>::store(out + 1, acc[r].y);
      }
    }
  };

  Prefetch<T, kPer, NT, kW4> pre0, pre1;
  auto step = [&](int c, auto& pre) {
    const int yb = y0 - ry + c * TH;
    // 1. raw rows of chunk c (the previous horizontal pass finished reading
    //    `raw` before the last barrier).
    if (chunk_inside(c)) pre.store(raw, g.raw_stride, g.w4, units, tid);
    else fill_tile<T, C, NT>(raw, g.raw_stride, TH, g.w4, e0 - g.apron, yb, false, a, tid);
    __syncthreads();  // raw ready; the previous vertical pass is done with the ring slots we overwrite
    if (c + kDist < n_in && chunk_inside(c + kDist)) pre.load(a, e0 - g.apron, yb + kDist * TH, g.w4, units, tid);
    hpass(c);
    __syncthreads();  // ring rows of chunk c ready; raw free for the next chunk
    if (c >= lag) vpass(c - lag);
  };
  if (chunk_inside(0)) pre0.load(a, e0 - g.apron, y0 - ry, g.w4, units, tid);
  if (kDist == 2 && n_in > 1 && chunk_inside(1)) pre1.load(a, e0 - g.apron, y0 - ry + TH, g.w4, units, tid);
  for (int c = 0; c < n_in; c += kDist) {
    step(c, pre0);
    if (kDist == 2 && c + 1 < n_in) step(c + 1, pre1);
  }
}

}  // namespace pixelkit::detail::cuda_filter
