// match_cuda.cu - the CUDA backend of template matching: the CudaMatcher
// (template words and spectra, cuFFT plans and scratch kept per image size),
// its launchers, and the cost model that chooses between the direct and the
// FFT strategy. The kernels and the algorithm are described in
// match_cuda_kernels.cuh; measurements and the cost model's constants in
// docs/notes-match-cuda.md.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/view2d.hpp"
#include "integral/integral_backends.hpp"
#include "match/match_backends.hpp"
#include "match/match_cuda_kernels.cuh"

namespace pixelkit::detail {

namespace {

// ---- cuFFT errors and plans ----------------------------------------------------------

const char* cufft_name(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cuFFT error";
  }
}

[[noreturn]] void throw_cufft(cufftResult r, const char* call) {
  (void)cudaGetLastError();
  const std::string message = std::string(call) + ": " + cufft_name(r) + " (" + std::to_string(static_cast<int>(r)) + ")";
  throw Error(r == CUFFT_ALLOC_FAILED ? Status::out_of_memory : Status::cuda, message);
}

#define PIXELKIT_CUFFT_TRY(call)                                                  \
  do {                                                                            \
    const cufftResult pixelkit_fft_ = (call);                                     \
    if (pixelkit_fft_ != CUFFT_SUCCESS) throw_cufft(pixelkit_fft_, #call);        \
  } while (0)

/// An owned cuFFT plan (created without its own work area).
class CufftPlan {
 public:
  CufftPlan() = default;
  ~CufftPlan() { reset(); }
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  void reset() noexcept {
    if (valid_) cufftDestroy(handle_);
    valid_ = false;
  }
  /// A batched 2-D plan of Py x Px, D2Z or Z2D, contiguous planes. Returns the work size.
  std::size_t make(int Px, int Py, cufftType type, int batch) {
    reset();
    PIXELKIT_CUFFT_TRY(cufftCreate(&handle_));
    valid_ = true;
    PIXELKIT_CUFFT_TRY(cufftSetAutoAllocation(handle_, 0));
    int n[2] = {Py, Px};
    int real_embed[2] = {Py, Px};
    int cplx_embed[2] = {Py, Px / 2 + 1};
    const int real_dist = Py * Px, cplx_dist = Py * (Px / 2 + 1);
    std::size_t work = 0;
    if (type == CUFFT_D2Z)
      PIXELKIT_CUFFT_TRY(cufftMakePlanMany(handle_, 2, n, real_embed, 1, real_dist, cplx_embed, 1, cplx_dist, type,
                                           batch, &work));
    else
      PIXELKIT_CUFFT_TRY(cufftMakePlanMany(handle_, 2, n, cplx_embed, 1, cplx_dist, real_embed, 1, real_dist, type,
                                           batch, &work));
    return work;
  }
  cufftHandle get() const noexcept { return handle_; }

 private:
  cufftHandle handle_ = 0;
  bool valid_ = false;
};

// ---- sizes and choices --------------------------------------------------------------------

bool reads_s1(MatchMethod m) { return m == MatchMethod::ccoeff || m == MatchMethod::ccoeff_normed; }
bool reads_s2(MatchMethod m) {
  return m == MatchMethod::sqdiff || m == MatchMethod::sqdiff_normed || m == MatchMethod::ccorr_normed ||
         m == MatchMethod::ccoeff_normed;
}

/// The smallest size >= n whose prime factors are 2, 3, 5, 7 (even if asked:
/// the D2Z row length).
int fft_size(int n, bool even) {
  for (long long m = std::max(1, n);; ++m) {
    if (even && (m & 1)) continue;
    long long r = m;
    for (int p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return static_cast<int>(m);
  }
}

constexpr int kKWs[] = {4, 8, 9, 16};

/// Words per template chunk: the least padding of the row's words, ties to the larger chunk.
int choose_kw(int nw) {
  int best = kKWs[0];
  long long best_pad = LLONG_MAX;
  for (int kw : kKWs) {
    const long long pad = (static_cast<long long>(nw) + kw - 1) / kw * kw;
    if (pad < best_pad || (pad == best_pad && kw > best)) {
      best = kw;
      best_pad = pad;
    }
  }
  return best;
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

/// The direct path's template layout.
struct WordLayout {
  int P = 1;    ///< windows per word
  int nw = 0;   ///< words a row needs
  int KW = 4;   ///< words per chunk
  int nwc = 0;  ///< chunks per row
  int nwp = 0;  ///< words per row, padded
  int nhc = 0;  ///< row chunks per channel
};
WordLayout word_layout(int w, int h, PixelType type) {
  WordLayout L;
  L.P = type == PixelType::u8 ? DirectTraits<std::uint8_t>::kPer : DirectTraits<float>::kPer;
  L.nw = type == PixelType::u8 ? (w + 6) / 4 : w;  // u8: shifts 0..3 need ceil((w + 3) / 4) words
  L.KW = choose_kw(L.nw);
  L.nwc = static_cast<int>(ceil_div(L.nw, L.KW));
  L.nwp = L.nwc * L.KW;
  L.nhc = static_cast<int>(ceil_div(h, MatchTuning::kKH));
  return L;
}

struct TileSize {
  int w, h;
};
TileSize direct_tile(PixelType type, bool s1, bool s2) {
  auto pick = [&](auto tag) -> TileSize {
    using T = decltype(tag);
    if (s1 && s2) return {DirectGeom<T, true, true>::TILE_W, DirectGeom<T, true, true>::TILE_H};
    if (s1) return {DirectGeom<T, true, false>::TILE_W, DirectGeom<T, true, false>::TILE_H};
    if (s2) return {DirectGeom<T, false, true>::TILE_W, DirectGeom<T, false, true>::TILE_H};
    return {DirectGeom<T, false, false>::TILE_W, DirectGeom<T, false, false>::TILE_H};
  };
  return type == PixelType::u8 ? pick(std::uint8_t{}) : pick(float{});
}

/// How the template's chunks are split over blockIdx.z.
struct SliceSplit {
  int nslices = 1;
  int chunks_per_slice = 1;
  int slices_per_channel = 0;  ///< > 0 with a mask
};
SliceSplit split_slices(const WordLayout& L, int C, bool masked, PixelType type, long long tiles, int sms) {
  SliceSplit s;
  const long long per = static_cast<long long>(L.nhc) * L.nwc;
  const long long cap =
      type == PixelType::u8 ? std::max<long long>(1, MatchTuning::kU8Products / (4LL * MatchTuning::kKH * L.KW)) : LLONG_MAX;
  const long long target = static_cast<long long>(MatchTuning::kWavesPerSM) * sms;
  if (masked) {
    const long long want = ceil_div(target, tiles * C);
    long long spc = std::max(ceil_div(per, cap), want);
    spc = std::min(std::max<long long>(spc, 1), per);
    const long long cps = ceil_div(per, spc);
    spc = ceil_div(per, cps);
    s.slices_per_channel = static_cast<int>(spc);
    s.chunks_per_slice = static_cast<int>(cps);
    s.nslices = static_cast<int>(spc * C);
  } else {
    const long long total = per * C;
    const long long want = ceil_div(target, tiles);
    long long ns = std::max(ceil_div(total, cap), want);
    ns = std::min(std::max<long long>(ns, 1), total);
    const long long cps = ceil_div(total, ns);
    ns = ceil_div(total, cps);
    s.nslices = static_cast<int>(ns);
    s.chunks_per_slice = static_cast<int>(cps);
    s.slices_per_channel = 0;
  }
  return s;
}

int sm_count() {
  int dev = 0, n = 0;
  PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return std::max(1, n);
}

// ---- launchers ---------------------------------------------------------------------------

template <typename T, bool S1, bool S2>
void launch_direct_kw(int KW, dim3 grid, const DirectArgs<T>& a, cudaStream_t s) {
  constexpr int NT = MatchTuning::kDirectThreads;
  switch (KW) {
    case 4: direct_kernel<T, 4, S1, S2><<<grid, NT, 0, s>>>(a); break;
    case 8: direct_kernel<T, 8, S1, S2><<<grid, NT, 0, s>>>(a); break;
    case 9: direct_kernel<T, 9, S1, S2><<<grid, NT, 0, s>>>(a); break;
    case 16: direct_kernel<T, 16, S1, S2><<<grid, NT, 0, s>>>(a); break;
    default: throw Error(Status::internal, "match cuda: no direct kernel for " + std::to_string(KW) + "-word chunks");
  }
  PIXELKIT_CUDA_CHECK_LAUNCH("direct_kernel");
}
template <typename T>
void launch_direct(int KW, bool s1, bool s2, dim3 grid, const DirectArgs<T>& a, cudaStream_t s) {
  if (s1 && s2) launch_direct_kw<T, true, true>(KW, grid, a, s);
  else if (s1) launch_direct_kw<T, true, false>(KW, grid, a, s);
  else if (s2) launch_direct_kw<T, false, true>(KW, grid, a, s);
  else launch_direct_kw<T, false, false>(KW, grid, a, s);
}

// ---- benchmark hook state ----------------------------------------------------------------

bool g_profiling = false;
bool g_force_tables = false;
MatchCudaStages g_last_stages;

// ---- the matcher ---------------------------------------------------------------------------

class CudaMatcherImpl final : public CudaMatcher {
 public:
  explicit CudaMatcherImpl(const PreparedTemplate& t)
      : method_(t.method), st_(t.stats), type_(t.templ.type()), w_(t.stats.width), h_(t.stats.height),
        C_(t.stats.channels), masked_(t.stats.masked), s1_(reads_s1(t.method)), s2_(reads_s2(t.method)),
        layout_(word_layout(t.stats.width, t.stats.height, t.templ.type())), sms_(sm_count()) {
    if (type_ == PixelType::u8) build_words<std::uint8_t>(t);
    else build_words<float>(t);
    build_fft_planes(t);
    int dev = 0, optin = 0;
    PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
    PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    smem_optin_ = optin > 4096 ? static_cast<std::size_t>(optin) - 4096 : 0;  // room for the static shared arrays
  }

  void reserve(int width, int height, MatchStrategy strategy, stream_t stream) override {
    if (strategy == MatchStrategy::automatic) strategy = choose(width, height);
    prepare(width, height, strategy, stream);
  }

  std::string run(const ConstImageView& image, const ImageView& scores, MatchStrategy strategy,
                  const MatchSelect& select, std::vector<Match>& matches, stream_t stream) override {
    const int W = image.width, H = image.height;
    const int Wo = W - w_ + 1, Ho = H - h_ + 1;
    if (strategy == MatchStrategy::automatic) strategy = choose(W, H);
    prepare(W, H, strategy, stream);
    const cudaStream_t s = stream;
    ImageView map = scores;
    if (map.data == nullptr || map.empty()) {
      own_map_.reserve(static_cast<std::size_t>(Wo) * Ho * sizeof(float));
      map = make_view(own_map_.get(), Wo, Ho, 1, PixelType::f32, Memory::device);
    }
    const int K = std::max(1, select.top_k);
    results_.reserve(sizeof(DeviceMatch) * K);
    host_results_.reserve(sizeof(DeviceMatch) * K);

    if (g_profiling) {
      while (events_.size() < 5) events_.emplace_back(cudaEventDefault);
      PIXELKIT_CUDA_TRY(cudaEventRecord(events_[0], s));
    }
    // 1. window sums without a mask: column sums (u8), or integral tables.
    const bool sums = !masked_ && (s1_ || s2_);
    const bool tables = sums && !rows_;
    if (sums && rows_) {
      const int WC = W * C_;
      const int rows = static_cast<int>(std::min<long long>(
          MatchTuning::kColMaxRows,
          std::max<long long>(MatchTuning::kColMinRows,
                              static_cast<long long>(WC) * Ho / MatchTuning::kColThreadsWanted)));
      const dim3 grid(static_cast<unsigned>(ceil_div(WC, MatchTuning::kColThreads)),
                      static_cast<unsigned>(ceil_div(Ho, rows)));
      auto* v1 = v1_.as<std::uint32_t>();
      auto* v2 = v2_.as<std::uint32_t>();
      const View2D<const std::uint8_t> img = view2d<std::uint8_t>(image);
      if (s1_ && s2_)
        column_sums_kernel<true, true><<<grid, MatchTuning::kColThreads, 0, s>>>(img, WC, h_, Ho, rows, v1, v2);
      else if (s1_)
        column_sums_kernel<true, false><<<grid, MatchTuning::kColThreads, 0, s>>>(img, WC, h_, Ho, rows, v1, v2);
      else
        column_sums_kernel<false, true><<<grid, MatchTuning::kColThreads, 0, s>>>(img, WC, h_, Ho, rows, v1, v2);
      PIXELKIT_CUDA_CHECK_LAUNCH("column_sums_kernel");
    }
    if (tables) {
      IntegralViews v;
      if (s1_) v.sum = tsum_view(W, H);
      if (s2_) v.sqsum = tsq_view(W, H);
      integral_->run_device(image, v, stream);
    }
    if (g_profiling) PIXELKIT_CUDA_TRY(cudaEventRecord(events_[1], s));
    // 2. the correlation, 3. the score map (and each block's best).
    std::string path;
    if (type_ == PixelType::u8) path = correlate_and_score<std::uint8_t>(image, map, strategy, select.lower_is_better, s);
    else path = correlate_and_score<float>(image, map, strategy, select.lower_is_better, s);
    // 4. selection and the colour check.
    const long long n = static_cast<long long>(Wo) * Ho;
    final_best_kernel<<<1, MatchTuning::kFinalThreads, 0, s>>>(best_.as<BestPos>(), score_blocks_,
                                                                  select.lower_is_better, Wo, results_.as<DeviceMatch>(), 0);
    PIXELKIT_CUDA_CHECK_LAUNCH("final_best_kernel");
    if (K > 1) {
      work_map_.reserve(static_cast<std::size_t>(n) * sizeof(float));
      PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(work_map_.get(), static_cast<std::size_t>(Wo) * sizeof(float), map.data,
                                          static_cast<std::size_t>(map.pitch), static_cast<std::size_t>(Wo) * sizeof(float),
                                          Ho, cudaMemcpyDeviceToDevice, s));
      const int d = std::max(1, select.min_distance);
      const int sx = static_cast<int>(std::min<long long>(2LL * d - 1, Wo));
      const int sy = static_cast<int>(std::min<long long>(2LL * d - 1, Ho));
      const dim3 sblock(MatchTuning::kSuppressBX, MatchTuning::kSuppressBY);
      const dim3 sgrid(static_cast<unsigned>(ceil_div(sx, sblock.x)), static_cast<unsigned>(ceil_div(sy, sblock.y)));
      const int sel_blocks = static_cast<int>(
          std::min<long long>(ceil_div(n, MatchTuning::kSelectThreads), static_cast<long long>(MatchTuning::kSelectBlocksPerSM) * sms_));
      for (int k = 0; k < K; ++k) {
        if (k > 0) {
          argbest_kernel<<<sel_blocks, MatchTuning::kSelectThreads, 0, s>>>(work_map_.as<float>(), n,
                                                                            select.lower_is_better, best_.as<BestPos>());
          PIXELKIT_CUDA_CHECK_LAUNCH("argbest_kernel");
          final_best_kernel<<<1, MatchTuning::kFinalThreads, 0, s>>>(best_.as<BestPos>(), sel_blocks,
                                                                        select.lower_is_better, Wo,
                                                                        results_.as<DeviceMatch>(), k);
          PIXELKIT_CUDA_CHECK_LAUNCH("final_best_kernel");
        }
        if (k + 1 < K) {
          suppress_kernel<<<sgrid, sblock, 0, s>>>(work_map_.as<float>(), Wo, Ho, d, results_.as<DeviceMatch>(), k);
          PIXELKIT_CUDA_CHECK_LAUNCH("suppress_kernel");
        }
      }
    }
    if (select.color_check) {
      if (image.channels != 3 || image.type != PixelType::u8)
        throw Error(Status::invalid_argument, "match: the colour check needs a 3-channel u8 (RGB) image, got " +
                                                  describe(image));
      const long long px = static_cast<long long>(w_) * h_;
      const unsigned bx = static_cast<unsigned>(
          std::min<long long>(std::max<long long>(1, ceil_div(px, MatchTuning::kColorPixelsPerBlock)), 2LL * sms_));
      const dim3 grid(bx, static_cast<unsigned>(std::min(K, 65535)));
      color_count_kernel<<<grid, MatchTuning::kColorThreads, 0, s>>>(view2d<std::uint8_t>(image), w_, h_, select.hsv,
                                                                     results_.as<DeviceMatch>(), K);
      PIXELKIT_CUDA_CHECK_LAUNCH("color_count_kernel");
    }
    PIXELKIT_CUDA_TRY(cudaMemcpyAsync(host_results_.get(), results_.get(), sizeof(DeviceMatch) * K,
                                      cudaMemcpyDeviceToHost, s));
    if (g_profiling) PIXELKIT_CUDA_TRY(cudaEventRecord(events_[4], s));
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));

    matches.clear();
    const DeviceMatch* r = host_results_.as<DeviceMatch>();
    for (int k = 0; k < K && r[k].valid; ++k) {
      Match m;
      m.x = r[k].x;
      m.y = r[k].y;
      m.score = r[k].score;
      m.color_count = select.color_check ? static_cast<std::int64_t>(r[k].count) : -1;
      matches.push_back(m);
    }
    if (g_profiling) {
      auto ms = [&](int a, int b) {
        float t = 0;
        PIXELKIT_CUDA_TRY(cudaEventElapsedTime(&t, events_[a], events_[b]));
        return static_cast<double>(t);
      };
      g_last_stages.sums_ms = ms(0, 1);
      g_last_stages.corr_ms = ms(1, 2);
      g_last_stages.score_ms = ms(2, 3);
      g_last_stages.select_ms = ms(3, 4);
      g_last_stages.slices = strategy == MatchStrategy::direct ? split_.nslices : 0;
      g_last_stages.padded_w = strategy == MatchStrategy::fft ? Px_ : 0;
      g_last_stages.padded_h = strategy == MatchStrategy::fft ? Py_ : 0;
      g_last_stages.window_sums = tables ? 1 : (sums ? 2 : 0);
    }
    if (tables) path += "; window sums from integral tables";
    if (sums && rows_) path += "; window sums from column sums + row prefix sums";
    if (K > 1) path += "; top " + std::to_string(K) + " by NMS on the device";
    if (select.color_check) path += "; colour check on the device";
    return path;
  }

 private:
  MatchStrategy choose(int W, int H) const {
    const double d = cuda_match_cost_ms(MatchStrategy::direct, W, H, st_, type_);
    const double f = cuda_match_cost_ms(MatchStrategy::fft, W, H, st_, type_);
    return f < d ? MatchStrategy::fft : MatchStrategy::direct;
  }

  // ---- the template, built once ----

  /// Direct path: the template (times the mask) as words [C][h][nwp], u8 in 4
  /// shifted copies; and the mask's 0/1 words.
  template <typename T>
  void build_words(const PreparedTemplate& t) {
    using TWord = typename DirectTraits<T>::TWord;
    const WordLayout& L = layout_;
    const std::size_t n = static_cast<std::size_t>(C_) * h_ * L.nwp;
    std::vector<TWord> tw(n), mw(masked_ ? n : 0);
    auto value = [&](int j, int i, int c) -> double {
      const double m = masked_ ? t.mask.row<std::uint8_t>(j)[i * C_ + c] : 1;
      return static_cast<double>(t.templ.row<T>(j)[i * C_ + c]) * m;
    };
    auto mask01 = [&](int j, int i, int c) -> unsigned { return t.mask.row<std::uint8_t>(j)[i * C_ + c] ? 1u : 0u; };
    for (int c = 0; c < C_; ++c)
      for (int j = 0; j < h_; ++j)
        for (int M = 0; M < L.nwp; ++M) {
          const std::size_t at = (static_cast<std::size_t>(c) * h_ + j) * L.nwp + M;
          if constexpr (std::is_same<T, std::uint8_t>::value) {
            unsigned tv[4] = {0, 0, 0, 0}, mv[4] = {0, 0, 0, 0};
            for (int s = 0; s < 4; ++s)
              for (int b = 0; b < 4; ++b) {
                const int i = 4 * M + b - s;
                if (i < 0 || i >= w_) continue;
                tv[s] |= static_cast<unsigned>(value(j, i, c)) << (8 * b);
                if (masked_) mv[s] |= mask01(j, i, c) << (8 * b);
              }
            tw[at] = make_uint4(tv[0], tv[1], tv[2], tv[3]);
            if (masked_) mw[at] = make_uint4(mv[0], mv[1], mv[2], mv[3]);
          } else {
            tw[at] = M < w_ ? value(j, M, c) : 0.0;
            if (masked_) mw[at] = M < w_ ? static_cast<double>(mask01(j, M, c)) : 0.0;
          }
        }
    const std::size_t bytes = n * sizeof(TWord);
    host_words_.resize(bytes);
    std::memcpy(host_words_.data(), tw.data(), bytes);
    if (masked_) {
      host_mask_words_.resize(bytes);
      std::memcpy(host_mask_words_.data(), mw.data(), bytes);
    }
  }

  /// FFT path: the planes whose spectra are kept, [NT][h][w] f64: M_c T_c for
  /// each channel, then (with a mask) M_c.
  void build_fft_planes(const PreparedTemplate& t) {
    nt_ = masked_ ? 2 * C_ : C_;
    host_planes_.assign(static_cast<std::size_t>(nt_) * h_ * w_, 0.0);
    for (int c = 0; c < C_; ++c)
      for (int j = 0; j < h_; ++j)
        for (int i = 0; i < w_; ++i) {
          const double m = masked_ ? (t.mask.row<std::uint8_t>(j)[i * C_ + c] ? 1.0 : 0.0) : 1.0;
          const double v = type_ == PixelType::u8 ? static_cast<double>(t.templ.row<std::uint8_t>(j)[i * C_ + c])
                                                  : static_cast<double>(t.templ.row<float>(j)[i * C_ + c]);
          host_planes_[(static_cast<std::size_t>(c) * h_ + j) * w_ + i] = v * m;
          if (masked_) host_planes_[(static_cast<std::size_t>(C_ + c) * h_ + j) * w_ + i] = m;
        }
  }

  // ---- per image size ----

  void prepare(int W, int H, MatchStrategy strategy, cudaStream_t s) {
    const int Wo = W - w_ + 1, Ho = H - h_ + 1;
    if (Wo < 1 || Ho < 1)
      throw Error(Status::internal, "match cuda: the image is smaller than the template");
    rows_ = rows_eligible(W, H);
    if (!masked_ && (s1_ || s2_)) {
      if (rows_) prepare_rows(W, H);
      else prepare_tables(W, H, s);
    }
    const long long score_blocks = rows_ ? ceil_div(Wo, MatchTuning::kRowChunk) * Ho
                                         : ceil_div(Wo, MatchTuning::kScoreBX) * ceil_div(Ho, MatchTuning::kScoreBY);
    const long long sel_blocks = static_cast<long long>(MatchTuning::kSelectBlocksPerSM) * sms_;
    best_.reserve(static_cast<std::size_t>(std::max(score_blocks, sel_blocks)) * sizeof(BestPos));
    score_blocks_ = static_cast<int>(score_blocks);
    if (strategy == MatchStrategy::fft) prepare_fft(W, H, s);
    else prepare_direct(W, H);
  }

  /// Column + row sums (u8 without a mask): exact in u32 columns for h <= 66051,
  /// one block row per output row, the row's prefix sums in shared memory.
  std::size_t rows_smem() const {
    const int npairs = ((s1_ ? 1 : 0) + (s2_ ? 1 : 0)) * C_;
    return static_cast<std::size_t>(npairs) * (MatchTuning::kRowChunk + w_) * sizeof(unsigned long long);
  }
  /// Measured (docs/notes-match-cuda.md): the column sums win everywhere except
  /// on one channel with a tall template (h = 432: 0.177 ms with tables, 0.208
  /// without), where each column's h-row start dominates.
  bool rows_eligible(int W, int H) const {
    (void)W;
    const int Ho = H - h_ + 1;
    return type_ == PixelType::u8 && !masked_ && (s1_ || s2_) && !g_force_tables && h_ <= 66051 && Ho <= 65535 &&
           (C_ > 1 || h_ <= kRowsMaxHeight1) && rows_smem() <= std::min<std::size_t>(kRowsSmemLimit, smem_optin_);
  }
  void prepare_rows(int W, int H) {
    const int Ho = H - h_ + 1;
    const std::size_t bytes = static_cast<std::size_t>(Ho) * W * C_ * sizeof(std::uint32_t);
    if (s1_) v1_.reserve(bytes);
    if (s2_) v2_.reserve(bytes);
    const std::size_t smem = rows_smem();
    if (smem > rows_smem_set_) {
      PIXELKIT_CUDA_TRY(cudaFuncSetAttribute(score_rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem)));
      rows_smem_set_ = smem;
    }
  }

  void prepare_tables(int W, int H, cudaStream_t s) {
    if (tables_w_ == W && tables_h_ == H) return;
    if (!integral_) integral_ = make_cuda_integral();
    const std::size_t elem = 8;  // i64 / u64 (u8) or f64 (f32)
    table_pitch_ = (static_cast<std::size_t>(W + 1) * C_ * elem + 255) / 256 * 256;
    if (s1_) tsum_.reserve(table_pitch_ * (H + 1));
    if (s2_) tsq_.reserve(table_pitch_ * (H + 1));
    tables_w_ = W;
    tables_h_ = H;
    // One run over a zeroed image of this size grows the integral's own
    // scratch now rather than on the first frame.
    const std::size_t row = static_cast<std::size_t>(W) * C_ * element_size(type_);
    DeviceBuffer dummy(row * H);
    PIXELKIT_CUDA_TRY(cudaMemsetAsync(dummy.get(), 0, row * H, s));
    IntegralViews v;
    if (s1_) v.sum = tsum_view(W, H);
    if (s2_) v.sqsum = tsq_view(W, H);
    integral_->run_device(make_view(dummy.get(), W, H, C_, type_, Memory::device), v, s);
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
  }
  IntegralTableView tsum_view(int W, int H) const {
    IntegralTableView v;
    v.data = tsum_.get();
    v.width = W + 1;
    v.height = H + 1;
    v.channels = C_;
    v.type = type_ == PixelType::u8 ? TableType::i64 : TableType::f64;
    v.memory = Memory::device;
    v.pitch = static_cast<std::ptrdiff_t>(table_pitch_);
    return v;
  }
  IntegralTableView tsq_view(int W, int H) const {
    IntegralTableView v = tsum_view(W, H);
    v.data = tsq_.get();
    v.type = type_ == PixelType::u8 ? TableType::u64 : TableType::f64;
    return v;
  }

  void prepare_direct(int W, int H) {
    if (!words_uploaded_) {
      d_words_.reserve(host_words_.size());
      // Once per matcher, on the calling thread's default stream (the caller's
      // streams do not wait for it, nor it for other threads' work).
      PIXELKIT_CUDA_TRY(cudaMemcpyAsync(d_words_.get(), host_words_.data(), host_words_.size(), cudaMemcpyHostToDevice,
                                        cudaStreamPerThread));
      if (masked_) {
        d_mask_words_.reserve(host_mask_words_.size());
        PIXELKIT_CUDA_TRY(cudaMemcpyAsync(d_mask_words_.get(), host_mask_words_.data(), host_mask_words_.size(),
                                          cudaMemcpyHostToDevice, cudaStreamPerThread));
      }
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(cudaStreamPerThread));
      words_uploaded_ = true;
    }
    if (direct_w_ == W && direct_h_ == H) return;
    const int Wo = W - w_ + 1, Ho = H - h_ + 1;
    const TileSize tile = direct_tile(type_, masked_ && s1_, masked_ && s2_);
    const long long tiles = ceil_div(Wo, tile.w) * ceil_div(Ho, tile.h);
    split_ = split_slices(layout_, C_, masked_, type_, tiles, sms_);
    const std::size_t part = type_ == PixelType::u8 ? sizeof(std::uint32_t) : sizeof(double);
    const std::size_t bytes = static_cast<std::size_t>(split_.nslices) * Wo * Ho * part;
    px_.reserve(bytes);
    if (masked_ && s1_) ps1_.reserve(bytes);
    if (masked_ && s2_) ps2_.reserve(bytes);
    direct_grid_ = dim3(static_cast<unsigned>(ceil_div(Wo, tile.w)), static_cast<unsigned>(ceil_div(Ho, tile.h)),
                        static_cast<unsigned>(split_.nslices));
    if (direct_grid_.y > 65535u || direct_grid_.z > 65535u)
      throw Error(Status::unsupported, "match cuda: a " + std::to_string(W) + "x" + std::to_string(H) +
                                           " image is too tall for the direct kernel's grid; use the fft strategy");
    direct_w_ = W;
    direct_h_ = H;
  }

  void prepare_fft(int W, int H, cudaStream_t s) {
    if (fft_w_ == W && fft_h_ == H) return;
    fft_w_ = fft_h_ = -1;
    Px_ = fft_size(W, true);
    Py_ = fft_size(H, false);
    nfwd_ = masked_ ? C_ * (s2_ ? 2 : 1) : C_;
    nout_ = masked_ ? 1 + (s1_ ? C_ : 0) + (s2_ ? C_ : 0) : 1;
    const long long rplane = static_cast<long long>(Px_) * Py_;
    const long long cplane = static_cast<long long>(Px_ / 2 + 1) * Py_;
    if (rplane > INT_MAX)
      throw Error(Status::unsupported, "match cuda: a " + std::to_string(Px_) + "x" + std::to_string(Py_) +
                                           " transform is too large for the fft strategy; use direct");
    const int rplanes = std::max({nfwd_, nout_, nt_});
    real_.reserve(static_cast<std::size_t>(rplanes) * rplane * sizeof(double));
    spec_.reserve(static_cast<std::size_t>(std::max(nfwd_, nout_)) * cplane * sizeof(double2));
    tspec_.reserve(static_cast<std::size_t>(nt_) * cplane * sizeof(double2));
    const std::size_t wf = fwd_.make(Px_, Py_, CUFFT_D2Z, nfwd_);
    const std::size_t wi = inv_.make(Px_, Py_, CUFFT_Z2D, nout_);
    work_.reserve(std::max<std::size_t>(std::max(wf, wi), 16));
    PIXELKIT_CUFFT_TRY(cufftSetWorkArea(fwd_.get(), work_.get()));
    PIXELKIT_CUFFT_TRY(cufftSetWorkArea(inv_.get(), work_.get()));
    // The template's spectra for this size.
    d_planes_.reserve(host_planes_.size() * sizeof(double));
    PIXELKIT_CUDA_TRY(cudaMemcpyAsync(d_planes_.get(), host_planes_.data(), host_planes_.size() * sizeof(double),
                                      cudaMemcpyHostToDevice, s));
    const dim3 block(MatchTuning::kFftBX, MatchTuning::kFftBY);
    const dim3 grid(static_cast<unsigned>(ceil_div(Px_, block.x)), static_cast<unsigned>(ceil_div(Py_, block.y)));
    fft_pad_planes_kernel<<<grid, block, 0, s>>>(d_planes_.as<double>(), w_, h_, nt_, real_.as<double>(), Px_, Py_, rplane);
    PIXELKIT_CUDA_CHECK_LAUNCH("fft_pad_planes_kernel");
    PIXELKIT_CUFFT_TRY(cufftSetStream(fwd_.get(), s));
    for (int b = 0; b < nt_; b += nfwd_)
      PIXELKIT_CUFFT_TRY(cufftExecD2Z(fwd_.get(), real_.as<double>() + b * rplane,
                                      reinterpret_cast<cufftDoubleComplex*>(tspec_.as<double2>() + b * cplane)));
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));  // host_planes_ is pageable: keep the upload simple
    round_ = type_ == PixelType::u8 && fft_rounds_exactly(Px_, Py_, W, H, st_);
    fft_w_ = W;
    fft_h_ = H;
  }

  // ---- per call ----

  template <typename T>
  std::string correlate_and_score(const ConstImageView& image, const ImageView& map, MatchStrategy strategy, bool lower,
                                  cudaStream_t s) {
    using Part = typename DirectTraits<T>::Part;
    const int W = image.width, H = image.height, Wo = W - w_ + 1, Ho = H - h_ + 1;
    ScoreArgs<T> sa{};
    sa.method = method_;
    sa.t = st_;
    sa.Wo = Wo;
    sa.Ho = Ho;
    sa.C = C_;
    sa.w = w_;
    sa.h = h_;
    sa.need_s1 = s1_;
    sa.need_s2 = s2_;
    sa.lower = lower;
    sa.plane = static_cast<long long>(Wo) * Ho;
    sa.ssrc = !(s1_ || s2_) ? SumSource::none : (masked_ ? SumSource::slices : SumSource::tables);
    sa.tsum = static_cast<const unsigned char*>(tsum_.get());
    sa.tsum_pitch = static_cast<std::ptrdiff_t>(table_pitch_);
    sa.tsq = static_cast<const unsigned char*>(tsq_.get());
    sa.tsq_pitch = static_cast<std::ptrdiff_t>(table_pitch_);
    sa.out = static_cast<float*>(map.data);
    sa.out_pitch = map.pitch;
    sa.best = best_.as<BestPos>();
    std::string path;
    if (strategy == MatchStrategy::fft) {
      const long long rplane = static_cast<long long>(Px_) * Py_;
      const long long cplane = static_cast<long long>(Px_ / 2 + 1) * Py_;
      const dim3 block(MatchTuning::kFftBX, MatchTuning::kFftBY);
      const dim3 grid(static_cast<unsigned>(ceil_div(Px_, block.x)), static_cast<unsigned>(ceil_div(Py_, block.y)));
      fft_pad_kernel<T><<<grid, block, 0, s>>>(view2d<T>(image), real_.as<double>(), Px_, Py_, rplane, masked_ && s2_);
      PIXELKIT_CUDA_CHECK_LAUNCH("fft_pad_kernel");
      PIXELKIT_CUFFT_TRY(cufftSetStream(fwd_.get(), s));
      PIXELKIT_CUFFT_TRY(cufftSetStream(inv_.get(), s));
      PIXELKIT_CUFFT_TRY(cufftExecD2Z(fwd_.get(), real_.as<double>(), reinterpret_cast<cufftDoubleComplex*>(spec_.get())));
      const int pblocks = static_cast<int>(
          std::min<long long>(ceil_div(cplane, MatchTuning::kProductThreads), 8LL * sms_));
      const bool ps1 = masked_ && s1_, ps2 = masked_ && s2_;
      if (C_ == 1)
        fft_product_kernel<1><<<pblocks, MatchTuning::kProductThreads, 0, s>>>(spec_.as<double2>(), tspec_.as<double2>(),
                                                                               cplane, ps1, ps2);
      else
        fft_product_kernel<3><<<pblocks, MatchTuning::kProductThreads, 0, s>>>(spec_.as<double2>(), tspec_.as<double2>(),
                                                                               cplane, ps1, ps2);
      PIXELKIT_CUDA_CHECK_LAUNCH("fft_product_kernel");
      PIXELKIT_CUFFT_TRY(cufftExecZ2D(inv_.get(), reinterpret_cast<cufftDoubleComplex*>(spec_.get()), real_.as<double>()));
      sa.xsrc = SumSource::fft;
      if (masked_ && (s1_ || s2_)) sa.ssrc = SumSource::fft;
      sa.fft = real_.as<double>();
      sa.fft_plane = rplane;
      sa.fft_pitch = Px_;
      sa.inv_n = 1.0 / static_cast<double>(rplane);
      sa.round = round_;
      sa.s1_plane = 1;
      sa.s2_plane = 1 + (s1_ ? C_ : 0);
      path = "fft: cuFFT f64 " + std::to_string(Px_) + "x" + std::to_string(Py_) + ", " + std::to_string(nfwd_) +
             " forward + " + std::to_string(nout_) + " inverse";
      if (type_ == PixelType::u8)
        path += round_ ? ", rounded to the exact sums" : ", NOT rounded (error bound too large for exact sums)";
    } else {
      DirectArgs<T> a{};
      a.image = view2d<T>(image);
      a.tmpl = d_words_.as<typename DirectTraits<T>::TWord>();
      a.mask = masked_ ? d_mask_words_.as<typename DirectTraits<T>::TWord>() : nullptr;
      a.h = h_;
      a.C = C_;
      a.nwp = layout_.nwp;
      a.nwc = layout_.nwc;
      a.nhc = layout_.nhc;
      a.Wo = Wo;
      a.Ho = Ho;
      a.chunks_per_slice = split_.chunks_per_slice;
      a.slices_per_channel = split_.slices_per_channel;
      a.plane = static_cast<long long>(Wo) * Ho;
      a.px = px_.as<Part>();
      a.ps1 = ps1_.as<Part>();
      a.ps2 = ps2_.as<Part>();
      launch_direct<T>(layout_.KW, masked_ && s1_, masked_ && s2_, direct_grid_, a, s);
      sa.xsrc = SumSource::slices;
      sa.px = px_.as<Part>();
      sa.ps1 = ps1_.as<Part>();
      sa.ps2 = ps2_.as<Part>();
      sa.nslices = split_.nslices;
      sa.slices_per_channel = split_.slices_per_channel;
      path = std::string("direct: shared-memory tiles, ") +
             (type_ == PixelType::u8 ? "u8 dp4a exact integer sums" : "f32 in f64") + ", " +
             std::to_string(layout_.KW) + "-word chunks, " + std::to_string(split_.nslices) + " slice" +
             (split_.nslices > 1 ? "s" : "");
      if (masked_ && (s1_ || s2_)) path += ", masked window sums in the same pass";
    }
    if (g_profiling) PIXELKIT_CUDA_TRY(cudaEventRecord(events_[2], s));
    if constexpr (std::is_same<T, std::uint8_t>::value) {
      if (rows_) {
        const dim3 grid(static_cast<unsigned>(ceil_div(Wo, MatchTuning::kRowChunk)), static_cast<unsigned>(Ho));
        score_rows_kernel<<<grid, MatchTuning::kRowThreads, rows_smem(), s>>>(sa, v1_.as<std::uint32_t>(),
                                                                             v2_.as<std::uint32_t>());
        PIXELKIT_CUDA_CHECK_LAUNCH("score_rows_kernel");
        if (g_profiling) PIXELKIT_CUDA_TRY(cudaEventRecord(events_[3], s));
        return path;
      }
    }
    const dim3 grid(static_cast<unsigned>(ceil_div(Wo, MatchTuning::kScoreBX)),
                    static_cast<unsigned>(ceil_div(Ho, MatchTuning::kScoreBY)));
    score_kernel<T><<<grid, MatchTuning::kScoreThreads, 0, s>>>(sa);
    PIXELKIT_CUDA_CHECK_LAUNCH("score_kernel");
    if (g_profiling) PIXELKIT_CUDA_TRY(cudaEventRecord(events_[3], s));
    return path;
  }

  // template
  MatchMethod method_;
  TemplateStats st_;
  PixelType type_;
  int w_, h_, C_;
  bool masked_, s1_, s2_;
  WordLayout layout_;
  int sms_;
  std::vector<unsigned char> host_words_, host_mask_words_;
  std::vector<double> host_planes_;
  int nt_ = 0;
  DeviceBuffer d_words_, d_mask_words_, d_planes_;
  bool words_uploaded_ = false;
  // window sums (no mask): column + row sums (u8), or integral tables
  static constexpr std::size_t kRowsSmemLimit = 160 * 1024;
  static constexpr int kRowsMaxHeight1 = 256;  ///< 1 channel: column sums up to this template height
  std::size_t smem_optin_ = 0, rows_smem_set_ = 48 * 1024;
  bool rows_ = false;
  DeviceBuffer v1_, v2_;
  std::unique_ptr<CudaIntegral> integral_;
  DeviceBuffer tsum_, tsq_;
  std::size_t table_pitch_ = 0;
  int tables_w_ = -1, tables_h_ = -1;
  // direct, per size
  int direct_w_ = -1, direct_h_ = -1;
  SliceSplit split_;
  dim3 direct_grid_;
  DeviceBuffer px_, ps1_, ps2_;
  // fft, per size
  int fft_w_ = -1, fft_h_ = -1, Px_ = 0, Py_ = 0, nfwd_ = 0, nout_ = 0;
  bool round_ = false;
  CufftPlan fwd_, inv_;
  DeviceBuffer real_, spec_, tspec_, work_;
  // score and selection
  int score_blocks_ = 0;
  DeviceBuffer best_, own_map_, work_map_, results_;
  PinnedBuffer host_results_;
  std::vector<Event> events_;
};

}  // namespace

std::unique_ptr<CudaMatcher> make_cuda_matcher(const PreparedTemplate& t) {
  return std::make_unique<CudaMatcherImpl>(t);
}

void set_match_cuda_profiling(bool on) { g_profiling = on; }
void set_match_cuda_force_tables(bool on) { g_force_tables = on; }
MatchCudaStages match_cuda_last_stages() { return g_last_stages; }

// ---- the cost model ------------------------------------------------------------------------
//
// Predicted device time of one call (device-resident image, result download
// included), from constants measured by bench/bench_match_gpu.cu on an H100
// (docs/notes-match-cuda.md):
//   direct = fixed + products * per_product * (1 + mask terms)
//            [+ window sums] + score
//   fft    = fixed + transforms * Px Py log2(Px Py) * per_point_log
//            [+ window sums] + score
// where products counts the padded template words (u8: 4 shifts per word,
// so w + 3 rounded up to the chunk), and the mask adds S1 / S2 work.

namespace {

struct CudaCost {
  double fixed_ms = 0.015;                ///< launches, final reduce, download, synchronise
  double u8_ms_per_product = 2.37e-11;    ///< direct, u8 (dp4a): about 42e12 products/s
  double f32_ms_per_product = 1.92e-10;   ///< direct, f32 (f64 fma): about 5.2e12 products/s
  double mask_s1 = 1.0, mask_s2 = 1.09;   ///< extra direct work of the masked window sums, relative to X
  double fft_ms_per_point_log = 1.70e-9;  ///< per f64 transform and Px Py log2(Px Py), pad + products included
  double sums_ms_per_value = 1.3e-8;      ///< window sums without a mask, per pixel and channel
  double score_ms_per_window = 3.3e-8;    ///< score map, per window and channel
};
constexpr CudaCost kCost{};

}  // namespace

double cuda_match_cost_ms(MatchStrategy strategy, int image_width, int image_height, const TemplateStats& t,
                          PixelType type) {
  const int w = t.width, h = t.height, C = std::max(1, t.channels);
  const double Wo = std::max(1, image_width - w + 1), Ho = std::max(1, image_height - h + 1);
  // The method is not part of the stats: assume the costliest (both window
  // sums). The window sums and the score cost the same on both strategies
  // without a mask; they are kept so that the estimate is a time.
  double ms = kCost.fixed_ms + kCost.score_ms_per_window * Wo * Ho * C;
  if (!t.masked) ms += kCost.sums_ms_per_value * static_cast<double>(image_width) * image_height * C;
  if (strategy == MatchStrategy::fft) {
    const double n = static_cast<double>(fft_size(image_width, true)) * fft_size(image_height, false);
    const int transforms = t.masked ? 4 * C + 1 : C + 1;  // forward: I (and I^2); inverse: X (and S1, S2 per channel)
    return ms + transforms * n * std::log2(std::max(2.0, n)) * kCost.fft_ms_per_point_log;
  }
  const WordLayout L = word_layout(w, h, type);
  const double products = Wo * Ho * C * static_cast<double>(h) * L.nwp * L.P;
  const double per = type == PixelType::u8 ? kCost.u8_ms_per_product : kCost.f32_ms_per_product;
  const double mask = t.masked ? 1.0 + kCost.mask_s1 + kCost.mask_s2 : 1.0;
  return ms + products * per * mask;
}

}  // namespace pixelkit::detail
