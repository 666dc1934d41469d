// pixelkit integral IN --sum OUT.npy [--sqsum OUT.npy] [--tilted OUT.npy]
//                       [--type u32|i64|f64|f32] [--sqtype u64|f64|f32]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "pixelkit/integral.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit::cli {

namespace {

namespace fs = std::filesystem;

struct IntegralArgs {
  std::string input, sum, sqsum, tilted, type = "auto", sqtype = "auto";
};

NpyType npy_type(TableType t) {
  switch (t) {
    case TableType::u32: return NpyType::u32;
    case TableType::i64: return NpyType::i64;
    case TableType::u64: return NpyType::u64;
    case TableType::f32: return NpyType::f32;
    case TableType::f64: return NpyType::f64;
    case TableType::automatic: break;
  }
  throw Error(Status::internal, "integral: unresolved table type");
}

// Output checks before any work: a .npy name in an existing, writable folder,
// not an input and not another output.
void check_npy_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs,
                      const std::vector<std::pair<std::string, std::string>>& others) {
  check_output(option, path, inputs, /*image=*/false);
  for_option(option, [&] {
    PIXELKIT_EXPECTS(fs::path(path).extension() == ".npy", Status::invalid_argument,
                     "output '" + path + "' must be a .npy file (tables are written as NumPy arrays)");
    std::error_code ec;
    for (const auto& [other_option, other] : others)
      PIXELKIT_EXPECTS(other.empty() || fs::weakly_canonical(other, ec) != fs::weakly_canonical(path, ec),
                       Status::invalid_argument, "output '" + path + "' is the same file as " + other_option);
  });
  // A write that would fail later fails now, before the tables are computed
  // and before any other output is written.
  probe_output_folder(option, path);
}

void write_table(const std::string& path, const IntegralTableView& t) {
  std::vector<std::size_t> shape = {static_cast<std::size_t>(t.height), static_cast<std::size_t>(t.width)};
  if (t.channels > 1) shape.push_back(static_cast<std::size_t>(t.channels));
  const std::size_t row = t.row_bytes();
  if (t.pitch == static_cast<std::ptrdiff_t>(row)) {
    write_npy(path, npy_type(t.type), shape, t.data);
    return;
  }
  std::vector<unsigned char> packed(row * static_cast<std::size_t>(t.height));
  for (int y = 0; y < t.height; ++y)
    std::memcpy(packed.data() + row * y, static_cast<const unsigned char*>(t.data) + t.pitch * y, row);
  write_npy(path, npy_type(t.type), shape, packed.data());
}

Action setup(CLI::App& sub) {
  static IntegralArgs a;
  a = IntegralArgs{};
  sub.add_option("IN", a.input, "input image (PNG, JPEG, BMP, TIFF, PGM/PPM, WebP or .npy), u8 or f32")->required();
  sub.add_option("--sum", a.sum, "output .npy: the sum table, (H+1) x (W+1) [x C]")->required();
  sub.add_option("--sqsum", a.sqsum, "output .npy: the squared-sum table");
  sub.add_option("--tilted", a.tilted, "output .npy: the 45-degree tilted sum table (OpenCV's), of the sum's type");
  sub.add_option("--type", a.type, "sum/tilted type: u32 | i64 | f64 for u8 images (default i64), f64 | f32 for f32 (default f64)")
      ->capture_default_str();
  sub.add_option("--sqtype", a.sqtype, "squared-sum type: u64 | f64 for u8 images (default u64), f64 | f32 for f32 (default f64)")
      ->capture_default_str();
  return [] {
    RunInfo info;
    const Options options = library_options(&info);
    IntegralRequest req;
    req.sum = true;
    req.sqsum = !a.sqsum.empty();
    req.tilted = !a.tilted.empty();
    req.sum_type = for_option("--type", [] { return parse_table_type(a.type); });
    req.sqsum_type = for_option("--sqtype", [] { return parse_table_type(a.sqtype); });
    check_npy_output("--sum", a.sum, {a.input}, {});
    if (req.sqsum) check_npy_output("--sqsum", a.sqsum, {a.input}, {{"--sum", a.sum}});
    if (req.tilted) check_npy_output("--tilted", a.tilted, {a.input}, {{"--sum", a.sum}, {"--sqsum", a.sqsum}});

    const Backend planned = plan_backend(options);
    Timer t_read;
    Image src = read_image(a.input, planned == Backend::cuda ? Memory::pinned : Memory::host);
    verbose("read", a.input + " " + std::to_string(src.width()) + "x" + std::to_string(src.height()) + "x" +
                        std::to_string(src.channels()) + " " + to_string(src.type()),
            t_read.ms());
    // Type combinations are checked against the image's type before any work.
    const IntegralRequest r = [&] {
      try {
        return resolve_request(req, src.type());
      } catch (const Error& e) {
        const bool sq = std::string(e.what()).find("squared-sum") != std::string::npos;
        throw Error(e.status(), std::string(sq ? "--sqtype: " : "--type: ") + e.what());
      }
    }();

    Integral op(r);
    IntegralTables tables;
    Timer t_run;
    op(src, tables, options);
    verbose("integral", std::string(to_string(info.backend)) + ": " + info.path + "; sum " + to_string(r.sum_type) +
                            (r.sqsum ? std::string(", sqsum ") + to_string(r.sqsum_type) : "") +
                            (r.tilted ? std::string(", tilted ") + to_string(r.sum_type) : ""),
            t_run.ms());

    // Write every table or none: each goes to a temporary beside its
    // destination, and only once all are written are they renamed into place.
    Timer t_write;
    std::vector<std::string> written;
    StagedOutputs outputs;
    for (auto [path, table] : {std::pair{&a.sum, &tables.sum}, {&a.sqsum, &tables.sqsum}, {&a.tilted, &tables.tilted}}) {
      if (path->empty()) continue;
      outputs.write(*path, [&, table = table](const std::string& tmp) { write_table(tmp, table->view()); });
      written.push_back(*path);
    }
    outputs.commit();
    std::string names;
    for (const auto& p : written) names += (names.empty() ? "" : ", ") + p;
    verbose("write", names, t_write.ms());
  };
}

const bool registered =
    register_command("integral", "Integral images (summed-area tables) as .npy: sum, squared sum, tilted", setup);

}  // namespace
}  // namespace pixelkit::cli
