#include "pixelkit/border.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "pixelkit/error.hpp"

namespace pixelkit {

const char* to_string(BorderMode mode) noexcept {
  switch (mode) {
    case BorderMode::constant: return "constant";
    case BorderMode::replicate: return "replicate";
    case BorderMode::reflect: return "reflect";
    case BorderMode::reflect101: return "reflect101";
    case BorderMode::wrap: return "wrap";
  }
  return "?";
}

std::string to_string(const Border& border) {
  std::string s = to_string(border.mode);
  if (border.mode == BorderMode::constant && border.value != 0.0f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ":%g", static_cast<double>(border.value));
    s += buf;
  }
  return s;
}

Border parse_border(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error(Status::invalid_argument,
                 "border '" + text + "': " + why +
                     " (expected constant[:V], replicate, reflect, reflect101 or wrap)");
  };
  Border b;
  std::string name = text;
  std::string arg;
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    name = text.substr(0, colon);
    arg = text.substr(colon + 1);
  }
  if (name == "constant") {
    b.mode = BorderMode::constant;
    if (colon != std::string::npos) {
      if (arg.empty()) throw bad("missing value after ':'");
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(arg.c_str(), &end);
      if (end == arg.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
        throw bad("'" + arg + "' is not a number");
      b.value = static_cast<float>(v);
    }
    return b;
  }
  if (colon != std::string::npos) throw bad("only constant takes a value");
  if (name == "replicate") b.mode = BorderMode::replicate;
  else if (name == "reflect") b.mode = BorderMode::reflect;
  else if (name == "reflect101" || name == "reflect_101" || name == "mirror") b.mode = BorderMode::reflect101;
  else if (name == "wrap") b.mode = BorderMode::wrap;
  else throw bad("unknown border mode");
  return b;
}

}  // namespace pixelkit
