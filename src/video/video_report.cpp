// The per-frame report of a video run, as CSV or JSON by the file's
// extension, written atomically (write_file_atomic).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/json_text.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/video.hpp"

namespace pixelkit {

namespace {

using detail::json_number;
using detail::json_string;

std::string extension_of(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

std::string csv(const VideoReport& r) {
  const bool match = r.op == VideoOp::match;
  const bool color = match && r.match.color_check;
  const bool verdict = color && r.match.min_fraction >= 0;
  const int k = match ? std::max(1, r.match.top_k) : 0;
  std::string s = "frame,timestamp_ms";
  for (int i = 0; i < k; ++i) {
    const std::string n = k > 1 ? std::to_string(i + 1) : std::string();
    s += ",x" + n + ",y" + n + ",score" + n;
    if (color) s += ",count" + n + ",fraction" + n;
    if (verdict) s += ",verdict" + n;
  }
  s += "\n";
  for (const FrameRecord& f : r.frames) {
    s += std::to_string(f.index) + "," + json_number(f.timestamp_ms, "%.3f");
    for (int i = 0; i < k; ++i) {
      if (static_cast<std::size_t>(i) < f.matches.size()) {
        const Match& m = f.matches[static_cast<std::size_t>(i)];
        s += "," + std::to_string(m.x) + "," + std::to_string(m.y) + "," + json_number(m.score, "%.9g");
        if (color) s += "," + std::to_string(m.color_count) + "," + json_number(m.color_fraction, "%.6f");
        if (verdict) s += std::string(",") + to_string(m.verdict);
      } else {
        s += ",,,";
        if (color) s += ",,";
        if (verdict) s += ",";
      }
    }
    s += "\n";
  }
  return s;
}

std::string json(const VideoReport& r) {
  const bool match = r.op == VideoOp::match;
  const bool color = match && r.match.color_check;
  const bool verdict = color && r.match.min_fraction >= 0;
  const VideoSummary& sm = r.summary;
  std::string s = "{\n";
  s += "  \"input\": " + json_string(r.input) + ",\n";
  s += "  \"op\": " + json_string(to_string(r.op)) + ",\n";
  s += "  \"width\": " + std::to_string(r.format.width) + ",\n";
  s += "  \"height\": " + std::to_string(r.format.height) + ",\n";
  s += "  \"channels\": " + std::to_string(r.format.channels) + ",\n";
  s += "  \"fps\": " + json_number(r.format.fps, "%.9g") + ",\n";
  s += "  \"frames\": " + std::to_string(r.frames.size()) + ",\n";
  s += "  \"backend\": " + json_string(to_string(sm.backend)) + ",\n";
  s += "  \"stop\": " + json_string(to_string(sm.stop)) + ",\n";
  s += "  \"error\": " + (sm.stop == VideoStop::input_error ? json_string(sm.message) : std::string("null")) + ",\n";
  if (match) {
    s += "  \"method\": " + json_string(to_string(r.match.method)) + ",\n";
    s += "  \"top\": " + std::to_string(r.match.top_k) + ",\n";
    s += "  \"hsv_range\": " + (color ? json_string(to_string(r.match.hsv)) : std::string("null")) + ",\n";
    s += "  \"min_fraction\": " + (verdict ? json_number(r.match.min_fraction, "%.9g") : std::string("null")) + ",\n";
  }
  s += "  \"rows\": [";
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    const FrameRecord& f = r.frames[i];
    s += i ? ",\n    " : "\n    ";
    s += "{\"frame\": " + std::to_string(f.index) + ", \"timestamp_ms\": " + json_number(f.timestamp_ms, "%.3f");
    if (match) {
      s += ", \"matches\": [";
      for (std::size_t j = 0; j < f.matches.size(); ++j) {
        const Match& m = f.matches[j];
        s += j ? ", " : "";
        s += "{\"x\": " + std::to_string(m.x) + ", \"y\": " + std::to_string(m.y) +
             ", \"score\": " + json_number(m.score, "%.9g");
        if (color)
          s += ", \"count\": " + std::to_string(m.color_count) + ", \"fraction\": " + json_number(m.color_fraction, "%.9g");
        if (verdict) s += ", \"verdict\": " + json_string(to_string(m.verdict));
        s += "}";
      }
      s += "]";
    }
    s += "}";
  }
  s += r.frames.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return s;
}

}  // namespace

void check_video_report_path(const std::string& path) {
  const std::string e = extension_of(path);
  PIXELKIT_EXPECTS(e == ".csv" || e == ".json", Status::invalid_argument,
                   "report '" + path + "': the extension must be .csv or .json");
}

void write_video_report(const std::string& path, const VideoReport& report) {
  check_video_report_path(path);
  const std::string text = extension_of(path) == ".csv" ? csv(report) : json(report);
  write_file_atomic(path, text.data(), text.size());
}

}  // namespace pixelkit
