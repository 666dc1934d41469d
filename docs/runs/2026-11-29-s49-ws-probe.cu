// Session 49 probe: the streaming tensor-core separable filter with its warps
// specialised (producer warps load and convert, consumer warps run the two
// passes), interior of an 8K RGB u8 image only. A measurement, not library
// code: does decoupling the load/convert chain from the product chain (more
// warps a SM, mbarrier stages instead of one block barrier a step) take the
// 8K RGB gaussian:11..17 cells to 1.5x the memory floor?
//
// Same arithmetic as the library's F16 instances (filter_cuda_mma_stream.cuh):
// bytes as fp16 subnormals, pass 1 D1^T = H X on m16n8k16, D1 rounded to fp16,
// pass 2 D2 = V^T D1, outputs packed two at a time (pack2_u8).
//
// Block: NC consumer warps (16 output pixels each: a strip of 16 NC pixels)
// and NP producer warps. An item is (strip, band of BAND output blocks of 16
// rows); blocks walk items blockIdx.x, + gridDim.x, ... The producers stream
// the D1 blocks of the items in order through NS shared stages (full/empty
// mbarriers); the consumers follow. Output staged per warp, 16-byte stores.
//
// Build (dev box): nvcc -O3 -DNDEBUG -arch=sm_90a -std=c++17 --expt-relaxed-constexpr \
//   -Iinclude -Ibuild/devbin/include -Isrc -Xptxas -v docs/runs/2026-11-29-s49-ws-probe.cu -o build/s49/ws_probe
// Run: ws_probe [radius=5]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "filter/filter_cuda_mma.cuh"

using namespace pixelkit::detail::cuda_filter;

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

constexpr int C = 3;
constexpr int kX0 = 64;  // first output pixel: 192 B, so rows of outputs start on a sector and tile rows on 16 B

struct Params {
  const unsigned char* in;
  unsigned char* out;
  long long pitch;
  int strips, bands, band_blocks, y_first, y_end;  // output rows [y_first, y_end)
  float row[17], col[17];
  int n;  // taps
};

__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
  asm volatile(
      "{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }" ::"r"(smem_addr(b)),
      "r"(parity)
      : "memory");
}

template <int NC>
struct Geo {
  static constexpr int kTilePx = 16 * NC + 32;
  static constexpr int kChunks = kTilePx / 16;       // 48-byte chunks a tile row
  static constexpr int kUnits = kTilePx / 4;         // 12-byte units a tile row
  static constexpr int kRS = kTilePx + 8;  // row stride (halves): 80 mod 128 bytes, ldmatrix rows conflict-free
  static_assert(NC % 4 == 0, "kRS");
  static constexpr int kPlane = 16 * kRS;            // halves
  static constexpr int kStage = C * kPlane;          // halves
  static constexpr int kOutStride = 48;              // bytes a staged row (16 px RGB)
  static constexpr int kOutWarp = 16 * kOutStride;   // bytes a warp's staging
  static constexpr int kRawRow = kTilePx * 3;         // bytes of a raw input row
  static constexpr int kRawSlot = 16 * kRawRow;
};

// Number of D1 blocks of item it (one more than its output blocks).
__device__ __forceinline__ int item_out_blocks(const Params& p, int it) {
  const int band = it / p.strips;
  const int y0 = p.y_first + 16 * p.band_blocks * band;
  return min(p.band_blocks, (p.y_end - y0) / 16);
}

template <int NC, int NP, int NS, int NR, int MINB, bool UNITS>
__global__ void __launch_bounds__(32 * (NC + NP), MINB) ws_kernel(const __grid_constant__ Params p) {
  static_assert(NS * 2 + NR <= 30, "barriers fit in 256 bytes");
  using G = Geo<NC>;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem);
  unsigned long long* empty = full + NS;
  unsigned long long* raw_full = empty + NS;
  __half* tiles = reinterpret_cast<__half*>(smem + 256);
  unsigned char* stage_out = smem + 256 + NS * G::kStage * 2;
  unsigned char* raw = stage_out + NC * G::kOutWarp;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < NS; ++s) {
      mbar_init(full + s, 32 * NP);
      mbar_init(empty + s, NC);
    }
    for (int s = 0; s < NR; ++s) mbar_init(raw_full + s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int items = p.strips * p.bands;

  if (warp >= NC) {
    // ---------------- producer ----------------
    // Raw rows arrive by bulk copies (lanes 0..15 of the first producer warp,
    // NR steps ahead, complete_tx on raw_full); every producer thread then
    // converts its chunks from the raw slot into the fp16 tile stage.
    const int pt = threadIdx.x - 32 * NC;
    struct Cursor {
      int it, b, nb;
    };
    auto first = [&](Cursor& c) {
      c.it = blockIdx.x;
      c.b = 0;
      c.nb = c.it < items ? item_out_blocks(p, c.it) + 1 : 0;
    };
    auto next = [&](Cursor& c) {
      if (++c.b == c.nb) {
        c.it += gridDim.x;
        c.b = 0;
        c.nb = c.it < items ? item_out_blocks(p, c.it) + 1 : 0;
      }
    };
    auto src_row = [&](const Cursor& c, int rr) {
      const int strip = c.it % p.strips, band = c.it / p.strips;
      const int x0 = kX0 + 16 * NC * strip;
      const int y0 = p.y_first + 16 * p.band_blocks * band;
      return p.in + (long long)(y0 - 8 + 16 * c.b + rr) * p.pitch + (long long)(x0 - 16) * C;
    };
    auto issue = [&](const Cursor& c, int slot) {  // first producer warp only
      if (lane == 0) {
        asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(
                         smem_addr(raw_full + slot)),
                     "r"(16 * G::kRawRow)
                     : "memory");
      }
      if (lane < 16) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                smem_addr(raw + slot * G::kRawSlot + lane * G::kRawRow)),
            "l"(src_row(c, lane)), "r"(G::kRawRow), "r"(smem_addr(raw_full + slot))
            : "memory");
      }
    };
    Cursor ci;
    first(ci);
    if (warp == NC) {
      for (int k = 0; k < NR && ci.it < items; ++k, next(ci)) issue(ci, k);
    }
    Cursor cc_;
    first(cc_);
    for (int i = 0; cc_.it < items; ++i, next(cc_)) {
      const int st = i % NS, rs = i % NR;
      mbar_wait(raw_full + rs, (i / NR) & 1);
      if (i >= NS) mbar_wait(empty + st, ((i / NS) - 1) & 1);
      __half* tile = tiles + st * G::kStage;
      const unsigned char* rslot = raw + rs * G::kRawSlot;
      if constexpr (UNITS) {  // 4-pixel units, evenly over the producer threads
        for (int q = pt; q < 16 * G::kUnits; q += 32 * NP) {
          const int rr = q / G::kUnits, u = q % G::kUnits;
          const unsigned* s = reinterpret_cast<const unsigned*>(rslot + rr * G::kRawRow + 12 * u);
          const unsigned w[3] = {s[0], s[1], s[2]};
          __half* dst = tile + rr * G::kRS + 4 * u;
          *reinterpret_cast<uint2*>(dst) = unit_channel<3, 0, true>(w);
          *reinterpret_cast<uint2*>(dst + G::kPlane) = unit_channel<3, 1, true>(w);
          *reinterpret_cast<uint2*>(dst + 2 * G::kPlane) = unit_channel<3, 2, true>(w);
        }
      } else {
      for (int q = pt; q < 16 * G::kChunks; q += 32 * NP) {
        const int rr = q / G::kChunks, cc = q % G::kChunks;
        const uint4* s = reinterpret_cast<const uint4*>(rslot + rr * G::kRawRow + 48 * cc);
        const uint4 v0 = s[0], v1 = s[1], v2 = s[2];
        const unsigned w[12] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w, v2.x, v2.y, v2.z, v2.w};
        __half* dst = tile + rr * G::kRS + 16 * cc;
#pragma unroll
        for (int u = 0; u < 4; u += 2) {  // two 4-pixel units at a time: 8 pixels of each plane
          const unsigned wa[3] = {w[3 * u], w[3 * u + 1], w[3 * u + 2]};
          const unsigned wb[3] = {w[3 * u + 3], w[3 * u + 4], w[3 * u + 5]};
          const uint2 r0 = unit_channel<3, 0, true>(wa), r1 = unit_channel<3, 0, true>(wb);
          const uint2 g0 = unit_channel<3, 1, true>(wa), g1 = unit_channel<3, 1, true>(wb);
          const uint2 b0 = unit_channel<3, 2, true>(wa), b1 = unit_channel<3, 2, true>(wb);
          *reinterpret_cast<uint4*>(dst + 4 * u) = make_uint4(r0.x, r0.y, r1.x, r1.y);
          *reinterpret_cast<uint4*>(dst + G::kPlane + 4 * u) = make_uint4(g0.x, g0.y, g1.x, g1.y);
          *reinterpret_cast<uint4*>(dst + 2 * G::kPlane + 4 * u) = make_uint4(b0.x, b0.y, b1.x, b1.y);
        }
      }
      }
      mbar_arrive(full + st);
      // Every producer thread has read raw slot rs: refill it NR steps ahead.
      asm volatile("bar.sync 1, %0;" ::"n"(32 * NP) : "memory");
      if (warp == NC && ci.it < items) {
        issue(ci, rs);
        next(ci);
      }
    }
    return;
  }

  // ---------------- consumer ----------------
  const int g = lane >> 2, t = lane & 3;
  const int shift = 8 - (p.n >> 1);
  unsigned hh[2][4], va[2][4];
  {
    unsigned lo[4];
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      toeplitz_fragment(hh[s], lo, p.row, p.n, s, shift, lane);
      toeplitz_fragment(va[s], lo, p.col, p.n, s, shift, lane);
    }
  }
  // ldmatrix lane offset: matrix m = lane >> 3: rows (lane & 7) + 8 (m >> 1), columns + 8 (m & 1).
  const int m = lane >> 3;
  const int lane_off = ((lane & 7) + 8 * (m >> 1)) * G::kRS + 16 * warp + 8 + 8 * (m & 1);
  unsigned char* so = stage_out + warp * G::kOutWarp;

  unsigned wh[2][C][4];
  int i = 0;
  auto pass1 = [&](int st, auto slot_c) {
    constexpr int SLOT = decltype(slot_c)::value;
    const __half* base = tiles + st * G::kStage + lane_off;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float d0[4] = {0.f, 0.f, 0.f, 0.f}, d1[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(b0, b1, b2, b3, base + c * G::kPlane + 16 * s);
        mma_16816(d0, hh[s], b0, b1);
        mma_16816(d1, hh[s], b2, b3);
      }
      wh[SLOT][c][0] = half2_bits(__floats2half2_rn(d0[0], d0[1]));
      wh[SLOT][c][1] = half2_bits(__floats2half2_rn(d0[2], d0[3]));
      wh[SLOT][c][2] = half2_bits(__floats2half2_rn(d1[0], d1[1]));
      wh[SLOT][c][3] = half2_bits(__floats2half2_rn(d1[2], d1[3]));
    }
  };
  // Output block from window slots P (rows 0..15) and 1 - P (16..31).
  auto pass2 = [&](auto p_c, unsigned char* dst) {
    constexpr int P = decltype(p_c)::value;
    __syncwarp();  // the staging rows' previous 16-byte reads are done
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      float d[C][4];
#pragma unroll
      for (int c = 0; c < C; ++c) {
#pragma unroll
        for (int e = 0; e < 4; ++e) d[c][e] = 0.f;
        mma_16816(d[c], va[0], wh[P][c][nt], wh[P][c][2 + nt]);
        mma_16816(d[c], va[1], wh[1 - P][c][nt], wh[1 - P][c][2 + nt]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // rows g, g + 8
        unsigned short* o = reinterpret_cast<unsigned short*>(so + (g + 8 * h) * G::kOutStride + 3 * (8 * nt + 2 * t));
        o[0] = static_cast<unsigned short>(pack2_u8(d[0][2 * h], d[1][2 * h], 0u));
        o[1] = static_cast<unsigned short>(pack2_u8(d[2][2 * h], d[0][2 * h + 1], 0u));
        o[2] = static_cast<unsigned short>(pack2_u8(d[1][2 * h + 1], d[2][2 * h + 1], 0u));
      }
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int q = lane + 32 * k;
      if (q < 48) {
        const int r = q / 3, part = q % 3;
        const uint4 v = *reinterpret_cast<const uint4*>(so + r * G::kOutStride + 16 * part);
        *reinterpret_cast<uint4*>(dst + (long long)r * p.pitch + 16 * part) = v;
      }
    }
  };

  for (int it = blockIdx.x; it < items; it += gridDim.x) {
    const int strip = it % p.strips, band = it / p.strips;
    const int x0 = kX0 + 16 * NC * strip;
    const int y0 = p.y_first + 16 * p.band_blocks * band;
    const int nb = item_out_blocks(p, it) + 1;
    unsigned char* dst0 = p.out + (long long)y0 * p.pitch + (long long)(x0 + 16 * warp) * C;
    // D1 block b goes to slot (i + b) & 1; output block b - 1 reads slots of b - 1 and b.
    for (int b = 0; b < nb; ++b, ++i) {
      const int st = i % NS;
      mbar_wait(full + st, (i / NS) & 1);
      if ((i & 1) == 0) {
        pass1(st, std::integral_constant<int, 0>{});
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + st);
        if (b > 0) pass2(std::integral_constant<int, 1>{}, dst0 + (long long)(16 * (b - 1)) * p.pitch);
      } else {
        pass1(st, std::integral_constant<int, 1>{});
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + st);
        if (b > 0) pass2(std::integral_constant<int, 0>{}, dst0 + (long long)(16 * (b - 1)) * p.pitch);
      }
    }
  }
}

std::vector<double> gaussian(int n) {
  std::vector<double> g(n);
  const double sigma = 0.3 * ((n - 1) * 0.5 - 1) + 0.8;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    const double x = i - (n - 1) / 2.0;
    g[i] = std::exp(-x * x / (2 * sigma * sigma));
    s += g[i];
  }
  for (auto& v : g) v /= s;
  return g;
}

template <int NC, int NP, int NS, int NR, int MINB, bool UNITS = false>
struct Variant {
  static constexpr int smem() {
    return 256 + NS * Geo<NC>::kStage * 2 + NC * Geo<NC>::kOutWarp + NR * Geo<NC>::kRawSlot;
  }
  static void run(const char* name, Params base, int W, int H, const unsigned char* const* din, unsigned char* const* dout,
                  const std::vector<unsigned char>& host_in, const std::vector<double>& g, int band_blocks) {
    auto k = ws_kernel<NC, NP, NS, NR, MINB, UNITS>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem()));
    int per_sm = 0, sms = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 32 * (NC + NP), smem()));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Params p = base;
    p.strips = (W - kX0 - 16) / (16 * NC);
    p.band_blocks = band_blocks;
    const int out_blocks = (p.y_end - p.y_first) / 16;
    p.bands = (out_blocks + band_blocks - 1) / band_blocks;
    const int items = p.strips * p.bands;
    const int grid = std::min(items, per_sm * sms);
    auto launch = [&](int j) {
      p.in = din[j & 1];
      p.out = dout[j & 1];
      k<<<grid, 32 * (NC + NP), smem()>>>(p);
    };
    for (int j = 0; j < 6; ++j) launch(j);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ts;
    for (int r = 0; r < 30; ++r) {
      CK(cudaEventRecord(a));
      for (int j = 0; j < 10; ++j) launch(j);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      ts.push_back(ms / 10);
    }
    std::sort(ts.begin(), ts.end());
    const double med = ts[ts.size() / 2];
    // Check buffer 0's result (launch 0 of the last round wrote set 0; same input).
    launch(0);
    CK(cudaDeviceSynchronize());
    const int x_end = kX0 + 16 * NC * p.strips;
    std::vector<unsigned char> o((size_t)p.pitch * H);
    CK(cudaMemcpy(o.data(), dout[0], o.size(), cudaMemcpyDeviceToHost));
    const int n = static_cast<int>(g.size()), r = n / 2;
    std::vector<long long> bad(16, 0), maxd(16, 0);
    std::vector<std::thread> th;
    for (int tid = 0; tid < 16; ++tid)
      th.emplace_back([&, tid] {
        std::vector<double> hrow((size_t)W * C);
        for (int y = p.y_first + tid; y < p.y_end; y += 16) {
          std::fill(hrow.begin(), hrow.end(), 0.0);
          for (int ky = 0; ky < n; ++ky) {
            const unsigned char* src = host_in.data() + (size_t)(y + ky - r) * p.pitch;
            for (int x = kX0; x < x_end; ++x)
              for (int c = 0; c < C; ++c) {
                double s = 0;
                for (int kx = 0; kx < n; ++kx) s += g[kx] * src[(x + kx - r) * C + c];
                hrow[x * C + c] += g[ky] * s;
              }
          }
          for (int x = kX0; x < x_end; ++x)
            for (int c = 0; c < C; ++c) {
              const long long ref = std::lround(hrow[x * C + c]);
              const long long d = std::llabs(ref - o[(size_t)y * p.pitch + x * C + c]);
              maxd[tid] = std::max(maxd[tid], d);
              if (d > 1) ++bad[tid];
            }
        }
      });
    for (auto& x : th) x.join();
    long long nbad = 0, md = 0;
    for (int tid = 0; tid < 16; ++tid) nbad += bad[tid], md = std::max(md, maxd[tid]);
    const double frac = double(x_end - kX0) * (p.y_end - p.y_first) / (double(W) * H);
    std::printf("%-22s band %3d: grid %4d (%d/SM), items %5d, %.4f ms interior, %.4f ms per full image; max diff %lld, >1: %lld\n",
                name, band_blocks, grid, per_sm, items, med, med / frac, md, nbad);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int radius = argc > 1 ? std::atoi(argv[1]) : 5;
  const int n = 2 * radius + 1;
  const int W = 7680, H = 4320;
  const long long pitch = (long long)W * C;
  std::vector<unsigned char> host((size_t)pitch * H);
  std::mt19937 rng(49);
  for (auto& v : host) v = static_cast<unsigned char>(rng() >> 24);
  unsigned char *din[2], *dout[2];
  for (int j = 0; j < 2; ++j) {
    CK(cudaMalloc(&din[j], host.size()));
    CK(cudaMalloc(&dout[j], host.size()));
    CK(cudaMemcpy(din[j], host.data(), host.size(), cudaMemcpyHostToDevice));
    CK(cudaMemset(dout[j], 0, host.size()));
  }
  const auto g = gaussian(n);
  Params base{};
  base.pitch = pitch;
  base.y_first = 16;
  base.y_end = H - 16;
  base.n = n;
  for (int i = 0; i < n; ++i) {
    base.row[i] = static_cast<float>(g[i] * 65536.0);
    base.col[i] = static_cast<float>(g[i] * 256.0);
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, gaussian:%d, 8K RGB interior (x 16..16+strips*16NC, y 16..%d)\n", prop.name, n, H - 16);
  const char* only = argc > 2 ? argv[2] : "";
  auto want = [&](const char* s) { return !*only || std::string(only).find(s) != std::string::npos; };
  for (int band : {12, 67}) {
    if (want("a")) Variant<8, 4, 3, 3, 2>::run("NC8 NP4 NS3 NR3 chunks", base, W, H, din, dout, host, g, band);
    if (want("b")) Variant<8, 4, 3, 3, 2, true>::run("NC8 NP4 NS3 NR3 units", base, W, H, din, dout, host, g, band);
    if (want("c")) Variant<8, 4, 4, 4, 2, true>::run("NC8 NP4 NS4 NR4 units", base, W, H, din, dout, host, g, band);
    if (want("d")) Variant<4, 4, 3, 3, 3, true>::run("NC4 NP4 NS3 NR3 units 3/SM", base, W, H, din, dout, host, g, band);
  }
  return 0;
}
