// bench_haar_gpu - the Haar pyramid on the GPU, against its memory floor and
// against the other backends, and seed 000's table re-measured.
//
//   bench_haar_gpu [--quick] [--reps N]
//
// Prints markdown tables (stdout):
//  1. The device, and its measured copy bandwidth (a large device-to-device
//     cudaMemcpy, bytes read + bytes written per second): the ceiling.
//  2. 4096^2 and 8192^2 single-channel f32 at full depth, forward and inverse:
//     cuda device-resident (kernels only) for each launch plan (levels fused
//     per launch 1/2/3, shared-memory tail on/off) and block size; cuda with
//     one upload and one download (pinned and pageable host memory); seed
//     000's v1 (a host round trip per level); cpu (all cores); ref (once).
//     The floor is (input bytes read once + coefficient bytes written once) /
//     copy bandwidth; "x floor" is time / floor.
//  3. Seed 000's images' sizes at the levels it used: ref, cpu, v1 and cuda
//     (with transfers, as the seed measured), with a block-size sweep.
// Every timed result is checked against the cpu backend before it is reported.
// Times are medians; device-resident runs are timed with CUDA events.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "seed_variants.cuh"
#include "core/cuda_check.hpp"
#include "haar/haar_backends.hpp"
#include "pixelkit/haar.hpp"

using namespace pixelkit;

namespace {

int g_reps = 15;

using pixelkit::bench::median;
using pixelkit::bench::time_device;
using pixelkit::bench::time_host;

Image random_f32(int w, int h, int c, unsigned seed) {
  Image img(w, h, c, PixelType::f32);
  unsigned x = seed * 2654435761u + 1;
  for (int y = 0; y < h; ++y) {
    float* r = img.row<float>(y);
    for (int i = 0; i < w * c; ++i) {
      x = x * 1664525u + 1013904223u;
      r[i] = static_cast<float>(x >> 8) * (255.0f / 16777216.0f);
    }
  }
  return img;
}

double max_rel_diff(const ConstImageView& a, const ConstImageView& b) {
  double m = 0, r = 0;
  for (int y = 0; y < a.height; ++y)
    for (int i = 0; i < a.width * a.channels; ++i) {
      const double x = a.row<float>(y)[i], z = b.row<float>(y)[i];
      m = std::max(m, std::isnan(x - z) ? INFINITY : std::fabs(x - z));
      r = std::max(r, std::fabs(z));
    }
  return m / std::max(r, 1.0);
}

Image to_host(const ConstImageView& v) {
  Image h(v.width, v.height, v.channels, v.type);
  copy(v, h.view());
  synchronize(nullptr);
  return h;
}

// Seed 000's v1 (bench/seed_variants.cuh), with this benchmark's normalisation.
void v1_forward(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& l, int block) {
  pixelkit::bench::seed000_v1_forward(src, coeffs, l, block, HaarNormalize::orthonormal);
}
double copy_bandwidth_gbs(cudaStream_t s) {
  const std::size_t bytes = std::size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  PIXELKIT_CUDA_TRY(cudaMalloc(&a, bytes));
  PIXELKIT_CUDA_TRY(cudaMalloc(&b, bytes));
  PIXELKIT_CUDA_TRY(cudaMemset(a, 1, bytes));
  const double ms = time_device([&] { PIXELKIT_CUDA_TRY(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); },
                                s, 10);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (ms * 1e6);
}

struct Row {
  std::string what;
  double ms;
  double err;
};

void big_sizes(int n, double bw, cudaStream_t s, bool quick) {
  const int L = haar_max_levels(n, n);
  const HaarLayout l = haar_layout(n, n, L);
  const double in_bytes = 4.0 * n * n, co_bytes = 4.0 * l.coeff_width * l.coeff_height;
  const double floor_ms = (in_bytes + co_bytes) / (bw * 1e6);
  std::printf("\n### %dx%d f32, 1 channel, %d levels (forward and inverse)\n\n", n, n, L);
  std::printf("floor: %.0f MB read + %.0f MB written at %.0f GB/s = %.3f ms\n\n", in_bytes / 1e6, co_bytes / 1e6, bw,
              floor_ms);
  std::printf("| variant | forward ms | fwd x floor | fwd GB/s | inverse ms | inv x floor | Mpixel/s (fwd) | max rel err |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  const Image src = random_f32(n, n, 1, 7);
  Image want(l.coeff_width, l.coeff_height, 1, PixelType::f32);
  Options cpu_opt;
  cpu_opt.backend = Backend::cpu;
  haar_forward(src, want.view(), L, HaarNormalize::orthonormal, cpu_opt);

  Image d_src(n, n, 1, PixelType::f32, Memory::device), d_co(l.coeff_width, l.coeff_height, 1, PixelType::f32, Memory::device);
  Image d_rec(n, n, 1, PixelType::f32, Memory::device);
  copy(src, d_src.view());
  synchronize(nullptr);
  const auto print = [&](const std::string& what, double f_ms, double i_ms, double err) {
    std::printf("| %s | %.3f | %.2f | %.0f | %s | %s | %.0f | %.1e |\n", what.c_str(), f_ms, f_ms / floor_ms,
                (in_bytes + co_bytes) / (f_ms * 1e6), i_ms > 0 ? std::to_string(i_ms).substr(0, 6).c_str() : "-",
                i_ms > 0 ? std::to_string(i_ms / floor_ms).substr(0, 4).c_str() : "-", double(n) * n / (f_ms * 1e3), err);
    std::fflush(stdout);
  };
  // Device-resident, every launch plan and block size.
  struct Plan { int fuse, tail, block; };
  std::vector<Plan> plans = {{0, 0, 0}, {3, 6144, 256}, {3, 6144, 128}, {3, 6144, 512}, {3, 6144, 64}, {3, 0, 256},
                             {2, 6144, 256}, {1, 6144, 256}, {1, 0, 256}};
  if (quick) plans.resize(2);  // the defaults and one plan
  for (const Plan& p : plans) {
    auto cuda = detail::make_cuda_haar();
    if (p.fuse > 0) cuda->tuning() = {p.block, p.fuse, p.tail, p.fuse};  // {0, 0, 0}: the defaults
    const double f = time_device([&] { cuda->forward(d_src.cview(), d_co.view(), l, HaarNormalize::orthonormal, s); }, s, g_reps);
    const double err = max_rel_diff(to_host(d_co.cview()), want);
    const double i = time_device([&] { cuda->inverse(d_co.cview(), d_rec.view(), l, HaarNormalize::orthonormal, s); }, s, g_reps);
    const double err2 = max_rel_diff(to_host(d_rec.cview()), src);
    const auto& t = cuda->tuning();
    print(std::string(p.fuse == 0 ? "**default** " : "") + "cuda device-resident, fuse " + std::to_string(t.max_fuse) +
              "/" + std::to_string(t.max_fuse_inverse) + (t.tail_elements ? " + tail" : ", no tail") + ", block " +
              std::to_string(t.block_threads),
          f, i, std::max(err, err2));
  }
  // With one upload and one download.
  for (Memory m : {Memory::pinned, Memory::host}) {
    Image hs(n, n, 1, PixelType::f32, m), hc(l.coeff_width, l.coeff_height, 1, PixelType::f32, m);
    Image hr(n, n, 1, PixelType::f32, m);
    copy(src, hs.view());
    auto cuda = detail::make_cuda_haar();
    const double f = time_host([&] { cuda->forward(hs.cview(), hc.view(), l, HaarNormalize::orthonormal, s); }, g_reps);
    const double i = time_host([&] { cuda->inverse(hc.cview(), hr.view(), l, HaarNormalize::orthonormal, s); }, g_reps);
    print(std::string("cuda + transfers (") + to_string(m) + ")", f, i,
          std::max(max_rel_diff(hc, want), max_rel_diff(hr, src)));
  }
  {
    Image hc(l.coeff_width, l.coeff_height, 1, PixelType::f32);
    const double f = time_host([&] { v1_forward(src, hc.view(), l, 256); }, std::max(3, g_reps / 3), 1);
    print("seed v1 (host round trip per level), block 256", f, -1, max_rel_diff(hc, want));
  }
  {
    Image hc(l.coeff_width, l.coeff_height, 1, PixelType::f32), hr(n, n, 1, PixelType::f32);
    const double f = time_host([&] { haar_forward(src, hc.view(), L, HaarNormalize::orthonormal, cpu_opt); }, 5, 1);
    const double i = time_host([&] { haar_inverse(hc, hr.view(), L, HaarNormalize::orthonormal, cpu_opt); }, 5, 1);
    print("cpu (" + std::to_string(resolve_threads(0)) + " threads)", f, i, max_rel_diff(hr, src));
  }
  if (!quick) {
    Options ref;
    ref.backend = Backend::ref;
    Image hc(l.coeff_width, l.coeff_height, 1, PixelType::f32), hr(n, n, 1, PixelType::f32);
    const double f = time_host([&] { haar_forward(src, hc.view(), L, HaarNormalize::orthonormal, ref); }, 1, 0);
    const double i = time_host([&] { haar_inverse(hc, hr.view(), L, HaarNormalize::orthonormal, ref); }, 1, 0);
    print("ref (1 thread, double)", f, i, max_rel_diff(hc, want));
  }
}

void seed_table(cudaStream_t s, bool quick) {
  // Seed 000, section 5.2: image, size as printed there (read as W x H), levels.
  struct Case { const char* name; int w, h, levels; double seed_host, seed_v2_256; };
  const Case cases[] = {{"img3.png", 250, 256, 1, 4.22, 0.29},   {"debbie.jpg", 256, 256, 8, 5.19, 0.48},
                        {"foto1.jpg", 512, 512, 9, 19.08, 1.70}, {"img.png", 512, 512, 9, 21.60, 1.46},
                        {"img5.jpg", 400, 600, 3, 21.22, 0.93},  {"flower.jpg", 400, 620, 3, 23.22, 0.92},
                        {"img4.jpg", 600, 800, 3, 43.65, 1.33},  {"wall3.jpg", 1700, 1000, 2, 140.16, 3.27},
                        {"wall.jpg", 1800, 2880, 3, 458.34, 10.75}};
  std::printf("\n### Seed 000's table re-measured (f32 grey, forward; ms; cuda columns include the upload and download)\n\n");
  std::printf("| image | size | levels | seed host | seed v2 (256) | ref | cpu | v1 (256) | cuda pageable | cuda pinned | cuda kernels only |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<int> blocks = {32, 128, 256, 512};
  std::vector<std::vector<double>> sweep;
  for (const Case& c : cases) {
    const HaarLayout l = haar_layout(c.w, c.h, c.levels);
    const Image src = random_f32(c.w, c.h, 1, 3);
    Image want(l.coeff_width, l.coeff_height, 1, PixelType::f32), hc(l.coeff_width, l.coeff_height, 1, PixelType::f32);
    Options o;
    o.backend = Backend::ref;
    const double t_ref = time_host([&] { haar_forward(src, want.view(), c.levels, HaarNormalize::orthonormal, o); }, 5, 1);
    o.backend = Backend::cpu;
    const double t_cpu = time_host([&] { haar_forward(src, hc.view(), c.levels, HaarNormalize::orthonormal, o); }, g_reps);
    double err = max_rel_diff(hc, want);
    const double t_v1 = time_host([&] { v1_forward(src, hc.view(), l, 256); }, g_reps);
    err = std::max(err, max_rel_diff(hc, want));
    auto cuda = detail::make_cuda_haar();
    const double t_page = time_host([&] { cuda->forward(src, hc.view(), l, HaarNormalize::orthonormal, s); }, g_reps);
    err = std::max(err, max_rel_diff(hc, want));
    Image ps(c.w, c.h, 1, PixelType::f32, Memory::pinned), pc(l.coeff_width, l.coeff_height, 1, PixelType::f32, Memory::pinned);
    copy(src, ps.view());
    const double t_pin = time_host([&] { cuda->forward(ps.cview(), pc.view(), l, HaarNormalize::orthonormal, s); }, g_reps);
    err = std::max(err, max_rel_diff(pc, want));
    Image ds = [&] { Image d(c.w, c.h, 1, PixelType::f32, Memory::device); copy(src, d.view()); synchronize(nullptr); return d; }();
    Image dc(l.coeff_width, l.coeff_height, 1, PixelType::f32, Memory::device);
    const double t_dev = time_device([&] { cuda->forward(ds.cview(), dc.view(), l, HaarNormalize::orthonormal, s); }, s, g_reps);
    err = std::max(err, max_rel_diff(to_host(dc.cview()), want));
    std::printf("| %s | %dx%d | %d | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %.4f |%s\n", c.name, c.w, c.h,
                c.levels, c.seed_host, c.seed_v2_256, t_ref, t_cpu, t_v1, t_page, t_pin, t_dev,
                err > 1e-5 ? "  MISMATCH" : "");
    std::vector<double> row;
    for (int b : blocks) {
      cuda->tuning().block_threads = b;
      const double tp = time_host([&] { cuda->forward(ps.cview(), pc.view(), l, HaarNormalize::orthonormal, s); }, g_reps);
      double tv = -1;
      if (!quick) tv = time_host([&] { v1_forward(src, hc.view(), l, b); }, std::max(3, g_reps / 2));
      row.push_back(tv);
      row.push_back(tp);
    }
    sweep.push_back(row);
    std::fflush(stdout);
  }
  std::printf("\nBlock-size sweep (ms, with transfers; pinned for cuda):\n\n| image |");
  for (int b : blocks) std::printf(" v1 %d | cuda %d |", b, b);
  std::printf("\n| --- |");
  for (std::size_t i = 0; i < blocks.size(); ++i) std::printf(" ---: | ---: |");
  std::printf("\n");
  for (std::size_t r = 0; r < sweep.size(); ++r) {
    std::printf("| %s |", cases[r].name);
    for (double v : sweep[r]) std::printf(v < 0 ? " - |" : " %.3f |", v);
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_haar_gpu [--quick] [--reps N]\n");
      return 2;
    }
  }
  try {
    if (!cuda_available()) {
      std::printf("no usable CUDA device: nothing to measure\n");
      return 0;
    }
    cudaStream_t s;
    PIXELKIT_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaDeviceProp prop{};
    PIXELKIT_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    const double bw = copy_bandwidth_gbs(s);
    std::printf("## bench_haar_gpu\n\ndevice: %s, %d SMs, %.0f GiB; measured copy bandwidth %.0f GB/s "
                "(read + write); host threads %d\n",
                prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, bw, resolve_threads(0));
    for (int n : {4096, 8192}) big_sizes(n, bw, s, quick);
    seed_table(s, quick);
    cudaStreamDestroy(s);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_haar_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
