// pixelkit filter IN OUT --kernel SPEC [--border MODE]
#include <string>

#include "cli/common.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit::cli {

namespace {

struct FilterArgs {
  std::string input, output, kernel, border = "reflect101";
};

Action setup(CLI::App& sub) {
  static FilterArgs a;
  a = FilterArgs{};
  sub.add_option("IN", a.input, "input image (PNG, JPEG, BMP, TIFF, PGM/PPM, WebP or .npy)")->required();
  sub.add_option("OUT", a.output, "output image; the format follows the extension")->required();
  sub.add_option("-k,--kernel", a.kernel,
                 "box:N | gaussian:N[:SIGMA] | sharpen | edge | laplacian | emboss | unsharp:N[:AMOUNT] | "
                 "\"1,2,1;2,4,2;1,2,1/16\" | @FILE")
      ->required();
  sub.add_option("-b,--border", a.border, "constant[:V] | replicate | reflect | reflect101 | wrap")
      ->capture_default_str();
  return [] {
    RunInfo info;
    const Options options = library_options(&info);
    const Kernel kernel = for_option("--kernel", [] { return parse_kernel(a.kernel); });
    const Border border = for_option("--border", [] { return parse_border(a.border); });
    check_output("OUT", a.output, {a.input});

    // Pinned host memory lets the cuda backend overlap transfers with compute.
    const Backend planned = plan_backend(options);
    const Memory mem = planned == Backend::cuda ? Memory::pinned : Memory::host;
    Timer t_read;
    Image src = read_image(a.input, mem);
    verbose("read", a.input + " " + std::to_string(src.width()) + "x" + std::to_string(src.height()) + "x" +
                        std::to_string(src.channels()) + " " + to_string(src.type()),
            t_read.ms());

    Image dst(src.width(), src.height(), src.channels(), src.type(), mem);
    Filter2D filter(kernel, border);
    Timer t_run;
    filter(src, dst, options);
    verbose("filter", std::string(to_string(info.backend)) + ": " + info.path + ", kernel " + kernel.name + " " +
                          std::to_string(kernel.width) + "x" + std::to_string(kernel.height) +
                          (kernel.separable ? " separable" : "") + ", border " + to_string(border),
            t_run.ms());

    Timer t_write;
    write_image(a.output, dst);
    verbose("write", a.output, t_write.ms());
  };
}

const bool registered = register_command("filter", "Convolve an image with a kernel (OpenCV filter2D semantics)", setup);

}  // namespace
}  // namespace pixelkit::cli
