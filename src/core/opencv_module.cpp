// Loads the OpenCV codec module (core/opencv_module.hpp) on first use.
//
// Where it looks, first match wins:
//   1. $PIXELKIT_OPENCV_MODULE, a path to the module (tests; relocated installs);
//   2. beside the program: <dir of the executable or shared libpixelkit>/
//      <bin-to-lib path>/pixelkit/, i.e. <prefix>/lib/pixelkit/ for an
//      installed <prefix>/bin/pixelkit, even after the prefix moved;
//   3. the build tree's copy (PIXELKIT_OPENCV_MODULE_BUILD_PATH), so that the
//      tests and build/release/pixelkit load the module built with them;
//   4. the install path configured at build time.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/opencv_module.hpp"
#include "pixelkit/error.hpp"
#include "pixelkit/image.hpp"

#ifndef PIXELKIT_OPENCV_MODULE_NAME
#error "PIXELKIT_OPENCV_MODULE_NAME is set by CMakeLists.txt"
#endif

namespace pixelkit::detail::cvmod {

namespace {

namespace fs = std::filesystem;

struct Loaded {
  const Api* api = nullptr;
  std::string where;  ///< the file, or why none could be loaded
};

void add_beside(std::vector<std::string>& out, const fs::path& object) {
  if (object.empty()) return;
  const fs::path dir = object.parent_path();
  // A static libpixelkit lives in the executable (bin/), a shared one in lib/.
  out.push_back((dir / PIXELKIT_OPENCV_MODULE_BIN_TO_LIB / "pixelkit" / PIXELKIT_OPENCV_MODULE_NAME)
                    .lexically_normal()
                    .string());
  out.push_back((dir / "pixelkit" / PIXELKIT_OPENCV_MODULE_NAME).lexically_normal().string());
}

std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char* env = std::getenv("PIXELKIT_OPENCV_MODULE"); env && *env) {
    c.emplace_back(env);
    return c;  // an explicit choice: nothing else
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&candidates), &info) && info.dli_fname && *info.dli_fname) {
    std::error_code ec;
    const fs::path self = fs::canonical(info.dli_fname, ec);
    if (!ec) add_beside(c, self);
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) add_beside(c, exe);
  c.emplace_back(PIXELKIT_OPENCV_MODULE_BUILD_PATH);
  c.emplace_back(PIXELKIT_OPENCV_MODULE_INSTALL_PATH);
  return c;
}

Loaded load() {
  Loaded r;
  std::string first_error;
  for (const std::string& path : candidates()) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      if (first_error.empty() && std::getenv("PIXELKIT_OPENCV_MODULE")) first_error = "'" + path + "' does not exist";
      continue;
    }
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      if (first_error.empty()) first_error = e ? e : "dlopen failed";
      continue;
    }
    using Entry = const Api* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(h, "pixelkit_opencv_module"));
    const Api* api = entry ? entry() : nullptr;
    if (!api || api->abi != kOpenCvModuleAbi || api->api_size != sizeof(Api)) {
      if (first_error.empty()) first_error = "'" + path + "' is not this build's OpenCV module (version mismatch)";
      ::dlclose(h);
      continue;
    }
    r.api = api;  // never unloaded: the objects it made may outlive any caller
    r.where = path;
    return r;
  }
  r.where = first_error.empty() ? std::string(PIXELKIT_OPENCV_MODULE_NAME) + " was not found beside the program, in "
                                      "the build tree or in the install folder"
                                : first_error;
  return r;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Api& opencv_module(const std::string& what) {
  const Loaded& l = loaded();
  if (!l.api)
    throw Error(Status::unsupported, what + ": cannot load pixelkit's OpenCV codec module (" + l.where +
                                         "); reinstall pixelkit, or set PIXELKIT_OPENCV_MODULE to the file");
  return *l.api;
}

Pixels pixels_of(const ConstImageView& view) {
  Pixels p;
  p.width = view.width;
  p.height = view.height;
  p.channels = view.channels;
  p.depth = view.type == PixelType::u8 ? kDepthU8 : kDepthF32;
  p.data = static_cast<unsigned char*>(const_cast<void*>(view.data));  // the module only reads or fills it
  p.pitch = static_cast<std::size_t>(view.pitch);
  return p;
}

bool opencv_module_available(std::string* where) {
  const Loaded& l = loaded();
  *where = l.where;
  return l.api != nullptr;
}

}  // namespace pixelkit::detail::cvmod
