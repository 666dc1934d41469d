// JSON text for the reports the CLI and the video runner write (match
// results, per-frame video reports): one escaper and one number format, so
// that both spell a string and a non-finite value the same way.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace pixelkit::detail {

/// `s` as a JSON string literal: quotes, backslashes and control characters
/// escaped (RFC 8259, section 7); other bytes, UTF-8 included, as they are.
inline std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += ch;
        }
    }
  }
  return r + "\"";
}

/// `v` printed with the printf format `fmt` (one double conversion), or
/// `null` where it is not finite: JSON has no inf or NaN.
inline std::string json_number(double v, const char* fmt = "%.9g") {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace pixelkit::detail
