// The filter's one dispatch: check arguments, choose the backend, run it,
// say what ran.
#include <string>

#include "filter/filter_backends.hpp"
#include "integral/integral_backends.hpp"
#include "pixelkit/config.hpp"

namespace pixelkit {

struct Filter2D::State {
  Kernel kernel;
  Border border;
  std::unique_ptr<detail::CudaFilter> cuda;  // created on the first cuda call
  detail::BoxScratch box;                    // large boxes through the integral image (cpu)
};

namespace {

void check_kernel(const Kernel& k) {
  PIXELKIT_EXPECTS(k.width >= 1 && k.width <= Kernel::kMaxSide && k.width % 2 == 1 && k.height >= 1 &&
                       k.height <= Kernel::kMaxSide && k.height % 2 == 1 &&
                       k.coeffs.size() == static_cast<std::size_t>(k.width) * k.height,
                   Status::invalid_argument,
                   "kernel " + std::to_string(k.width) + "x" + std::to_string(k.height) +
                       ": sides must be odd and between 1 and 31");
  PIXELKIT_EXPECTS(!k.separable || (k.row.size() == static_cast<std::size_t>(k.width) &&
                                    k.col.size() == static_cast<std::size_t>(k.height)),
                   Status::invalid_argument, "kernel: separable factors do not match its size");
}

}  // namespace

Filter2D::Filter2D(const Kernel& kernel, const Border& border) : state_(std::make_unique<State>()) {
  check_kernel(kernel);
  state_->kernel = kernel;
  state_->border = border;
}
Filter2D::~Filter2D() = default;
Filter2D::Filter2D(Filter2D&&) noexcept = default;
Filter2D& Filter2D::operator=(Filter2D&&) noexcept = default;
const Kernel& Filter2D::kernel() const noexcept { return state_->kernel; }
const Border& Filter2D::border() const noexcept { return state_->border; }

void Filter2D::operator()(const ConstImageView& src, const ImageView& dst, const Options& options) {
  PIXELKIT_EXPECTS(state_ != nullptr, Status::invalid_argument, "filter: use of a moved-from Filter2D");
  PIXELKIT_EXPECTS(!src.empty() && src.data != nullptr, Status::invalid_argument, "filter: source image is empty");
  PIXELKIT_EXPECTS(src.channels == 1 || src.channels == 3 || src.channels == 4, Status::invalid_argument,
                   "filter: " + std::to_string(src.channels) + " channels (1, 3 or 4 supported)");
  PIXELKIT_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels &&
                       src.type == dst.type && dst.data != nullptr,
                   Status::invalid_argument,
                   "filter: source " + describe(src) + " and destination " + describe(dst) + " differ");
  PIXELKIT_EXPECTS(is_host(src.memory) == is_host(dst.memory), Status::invalid_argument,
                   std::string("filter: source in ") + to_string(src.memory) + " memory but destination in " +
                       to_string(dst.memory) + " memory");
  PIXELKIT_EXPECTS(!overlaps(src, dst), Status::invalid_argument,
                   "filter: source and destination overlap (in-place filtering is not supported)");
  const Backend backend = resolve_backend(options.backend, src.memory);
  const Kernel& k = state_->kernel;
  std::string path;
  // Large boxes through the integral image: the cost stops growing with N.
  if (detail::box_via_integral_pays(k, backend)) {
    path = detail::box_filter_via_integral(src, dst, k, state_->border, backend, options, &state_->box);
    if (options.info) {
      options.info->backend = backend;
      options.info->path = std::move(path);
    }
    return;
  }
  switch (backend) {
    case Backend::ref:
      detail::filter_ref(src, dst, k, state_->border);
      path = "ref scalar loops, double accumulation";
      break;
    case Backend::cpu:
      path = detail::filter_cpu(src, dst, k, state_->border, resolve_threads(options.threads));
      break;
    case Backend::cuda:
#if PIXELKIT_WITH_CUDA
      if (!state_->cuda) state_->cuda = detail::make_cuda_filter(k, state_->border);
      path = src.memory == Memory::device ? state_->cuda->run_device(src, dst, options.stream)
                                          : state_->cuda->run_host(src, dst, options.stream);
      break;
#else
      throw Error(Status::unsupported, "backend cuda: this build of pixelkit has no CUDA backend");
#endif
    case Backend::automatic:
      throw Error(Status::internal, "filter: backend was not resolved");
  }
  if (options.info) {
    options.info->backend = backend;
    options.info->path = std::move(path);
  }
}

void filter2d(const ConstImageView& src, const ImageView& dst, const Kernel& kernel, const Border& border,
              const Options& options) {
  Filter2D(kernel, border)(src, dst, options);
}

}  // namespace pixelkit
