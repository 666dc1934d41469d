// Kernel construction and the kernel specification parser.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "pixelkit/filter.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit {

namespace {

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
  throw Error(Status::invalid_argument, "kernel '" + spec + "': " + why);
}

void check_side(const std::string& spec, const char* which, long n) {
  if (n < 1 || n > Kernel::kMaxSide || n % 2 == 0)
    bad_spec(spec, std::string(which) + " " + std::to_string(n) + " must be odd and between 1 and " +
                       std::to_string(Kernel::kMaxSide));
}

bool parse_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && errno != ERANGE && std::isfinite(out);
}

bool parse_int(const std::string& text, long& out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  out = std::strtol(text.c_str(), nullptr, 10);
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Splits "a,b c" on commas and white space.
std::vector<std::string> split_values(const std::string& row) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : row) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\r') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Parses rows (already split) and an optional divisor into a kernel.
Kernel matrix_kernel(const std::string& spec, const std::vector<std::string>& rows, const std::string& divisor_text,
                     bool has_divisor) {
  std::vector<float> coeffs;
  int width = -1;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto values = split_values(rows[r]);
    if (values.empty()) bad_spec(spec, "row " + std::to_string(r + 1) + " is empty");
    if (width < 0) width = static_cast<int>(values.size());
    if (static_cast<int>(values.size()) != width)
      bad_spec(spec, "row " + std::to_string(r + 1) + " has " + std::to_string(values.size()) +
                         " values but row 1 has " + std::to_string(width));
    for (const auto& v : values) {
      double d;
      if (!parse_double(v, d)) bad_spec(spec, "'" + v + "' is not a number");
      coeffs.push_back(static_cast<float>(d));
    }
  }
  if (rows.empty()) bad_spec(spec, "no rows");
  const int height = static_cast<int>(rows.size());
  check_side(spec, "width", width);
  check_side(spec, "height", height);
  if (has_divisor) {
    double div;
    if (!parse_double(trim(divisor_text), div)) bad_spec(spec, "divisor '" + trim(divisor_text) + "' is not a number");
    if (div == 0.0) bad_spec(spec, "divisor is 0");
    for (auto& c : coeffs) c = static_cast<float>(c / div);
  }
  return Kernel::from_matrix(width, height, std::move(coeffs), spec);
}

Kernel inline_matrix(const std::string& spec, const std::string& text) {
  std::string body = text;
  std::string divisor;
  const auto slash = text.find('/');
  const bool has_div = slash != std::string::npos;
  if (has_div) {
    body = text.substr(0, slash);
    divisor = text.substr(slash + 1);
    if (divisor.find('/') != std::string::npos) bad_spec(spec, "more than one '/'");
  }
  std::vector<std::string> rows;
  std::string cur;
  for (char c : body) {
    if (c == ';') { rows.push_back(cur); cur.clear(); } else cur += c;
  }
  rows.push_back(cur);
  if (rows.size() > 1 && trim(rows.back()).empty()) rows.pop_back();  // trailing ';'
  return matrix_kernel(spec, rows, divisor, has_div);
}

Kernel file_matrix(const std::string& spec, const std::string& path) {
  if (path.empty()) bad_spec(spec, "missing file name after '@'");
  const auto bytes = read_file(path);
  std::string text(bytes.begin(), bytes.end());
  std::vector<std::string> rows;
  std::string divisor;
  bool has_div = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (has_div) bad_spec(spec, "text after the divisor line in '" + path + "'");
    const auto slash = line.find('/');
    if (slash != std::string::npos) {
      has_div = true;
      divisor = line.substr(slash + 1);
      line = trim(line.substr(0, slash));
    }
    std::string cur;
    for (char c : line) {
      if (c == ';') { if (!trim(cur).empty()) rows.push_back(cur); cur.clear(); } else cur += c;
    }
    if (!trim(cur).empty()) rows.push_back(cur);
  }
  if (rows.empty()) bad_spec(spec, "file '" + path + "' holds no kernel rows");
  return matrix_kernel(spec, rows, divisor, has_div);
}

}  // namespace

std::vector<double> gaussian_coefficients(int n, double sigma) {
  PIXELKIT_EXPECTS(n >= 1 && n <= Kernel::kMaxSide && n % 2 == 1, Status::invalid_argument,
                   "gaussian size " + std::to_string(n) + " must be odd and between 1 and 31");
  // OpenCV's small fixed tables, used for n <= 9 when sigma <= 0.
  static const double small[5][9] = {
      {1.0},
      {0.25, 0.5, 0.25},
      {0.0625, 0.25, 0.375, 0.25, 0.0625},
      {0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125},
      {0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875, 0.05078125, 0.015625}};
  std::vector<double> g(static_cast<std::size_t>(n));
  if (sigma <= 0 && n <= 9) {
    for (int i = 0; i < n; ++i) g[i] = small[n / 2][i];
    return g;
  }
  const double s = sigma > 0 ? sigma : ((n - 1) * 0.5 - 1) * 0.3 + 0.8;
  const double scale2 = -0.5 / (s * s);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = i - (n - 1) * 0.5;
    g[i] = std::exp(scale2 * x * x);
    sum += g[i];
  }
  for (auto& v : g) v /= sum;
  return g;
}

Kernel Kernel::from_matrix(int width, int height, std::vector<float> coeffs, std::string name) {
  check_side(name, "width", width);
  check_side(name, "height", height);
  PIXELKIT_EXPECTS(coeffs.size() == static_cast<std::size_t>(width) * height, Status::invalid_argument,
                   "kernel '" + name + "': " + std::to_string(coeffs.size()) + " coefficients for " +
                       std::to_string(width) + "x" + std::to_string(height));
  for (float c : coeffs)
    PIXELKIT_EXPECTS(std::isfinite(c), Status::invalid_argument, "kernel '" + name + "': coefficient is not finite");
  Kernel k;
  k.width = width;
  k.height = height;
  k.coeffs = std::move(coeffs);
  k.name = std::move(name);
  // Rank-1 test: pivot on the largest coefficient, rebuild, compare.
  std::size_t pivot = 0;
  float maxabs = 0;
  for (std::size_t i = 0; i < k.coeffs.size(); ++i)
    if (std::fabs(k.coeffs[i]) > maxabs) { maxabs = std::fabs(k.coeffs[i]); pivot = i; }
  if (maxabs == 0) return k;  // all zero: dense path is fine
  const int py = static_cast<int>(pivot) / width, px = static_cast<int>(pivot) % width;
  std::vector<float> row(width), col(height);
  const double p = k.at(py, px);
  for (int x = 0; x < width; ++x) row[x] = k.at(py, x);
  for (int y = 0; y < height; ++y) col[y] = static_cast<float>(k.at(y, px) / p);
  bool rank1 = true;
  for (int y = 0; y < height && rank1; ++y)
    for (int x = 0; x < width; ++x)
      if (std::fabs(static_cast<double>(col[y]) * row[x] - k.at(y, x)) > 1e-6 * maxabs) { rank1 = false; break; }
  if (rank1 && (width > 1 || height > 1)) {
    k.separable = true;
    k.row = std::move(row);
    k.col = std::move(col);
  }
  return k;
}

Kernel Kernel::from_factors(std::vector<float> row, std::vector<float> col, std::string name) {
  const int w = static_cast<int>(row.size()), h = static_cast<int>(col.size());
  check_side(name, "width", w);
  check_side(name, "height", h);
  Kernel k;
  k.width = w;
  k.height = h;
  k.name = std::move(name);
  k.coeffs.resize(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) k.coeffs[static_cast<std::size_t>(y) * w + x] = static_cast<float>(static_cast<double>(col[y]) * row[x]);
  k.separable = w > 1 || h > 1;
  if (k.separable) {
    k.row = std::move(row);
    k.col = std::move(col);
  }
  return k;
}

Kernel Kernel::box(int n) {
  check_side("box:" + std::to_string(n), "size", n);
  std::vector<float> f(static_cast<std::size_t>(n), 1.0f / static_cast<float>(n));
  Kernel k = from_factors(f, f, "box:" + std::to_string(n));
  for (auto& c : k.coeffs) c = static_cast<float>(1.0 / (static_cast<double>(n) * n));
  return k;
}

Kernel Kernel::gaussian(int n, double sigma) {
  const auto g = gaussian_coefficients(n, sigma);
  std::vector<float> f(g.begin(), g.end());
  std::string name = "gaussian:" + std::to_string(n);
  if (sigma > 0) {
    std::ostringstream s;
    s << sigma;
    name += ":" + s.str();
  }
  Kernel k = from_factors(f, f, name);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) k.coeffs[static_cast<std::size_t>(y) * n + x] = static_cast<float>(g[y] * g[x]);
  return k;
}

Kernel Kernel::sharpen() { return from_matrix(3, 3, {0, -1, 0, -1, 5, -1, 0, -1, 0}, "sharpen"); }
Kernel Kernel::edge() { return from_matrix(3, 3, {-1, -1, -1, -1, 8, -1, -1, -1, -1}, "edge"); }
Kernel Kernel::laplacian() { return from_matrix(3, 3, {0, 1, 0, 1, -4, 1, 0, 1, 0}, "laplacian"); }
Kernel Kernel::emboss() { return from_matrix(3, 3, {-2, -1, 0, -1, 1, 1, 0, 1, 2}, "emboss"); }

Kernel Kernel::unsharp(int n, double amount) {
  PIXELKIT_EXPECTS(std::isfinite(amount), Status::invalid_argument, "unsharp amount is not finite");
  const auto g = gaussian_coefficients(n, 0.0);
  std::vector<float> c(static_cast<std::size_t>(n) * n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      double v = -amount * g[y] * g[x];
      if (y == n / 2 && x == n / 2) v += 1.0 + amount;
      c[static_cast<std::size_t>(y) * n + x] = static_cast<float>(v);
    }
  std::ostringstream name;
  name << "unsharp:" << n << ":" << amount;
  return from_matrix(n, n, std::move(c), name.str());
}

Kernel parse_kernel(const std::string& spec) {
  const std::string s = trim(spec);
  if (s.empty()) bad_spec(spec, "empty specification");
  if (s[0] == '@') return file_matrix(spec, s.substr(1));
  if (s.find_first_of(",;/") != std::string::npos || (s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '.' || s[0] == '+')
    return inline_matrix(spec, s);
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == ':') { parts.push_back(cur); cur.clear(); } else cur += c;
  }
  parts.push_back(cur);
  const std::string& name = parts[0];
  const auto need_args = [&](std::size_t lo, std::size_t hi) {
    if (parts.size() - 1 < lo || parts.size() - 1 > hi)
      bad_spec(spec, name + (lo == 0 && hi == 0 ? " takes no arguments"
                                                  : " takes " + std::string(lo == hi ? "" : "1 or ") + std::to_string(hi) +
                                                        " argument" + (hi > 1 ? "s" : "") + " (" +
                                                        (name == "box" ? "box:N" : name == "gaussian" ? "gaussian:N[:SIGMA]" : "unsharp:N[:AMOUNT]") + ")"));
  };
  const auto size_arg = [&](const std::string& t) {
    long n;
    if (!parse_int(t, n)) bad_spec(spec, "size '" + t + "' is not a whole number");
    check_side(spec, "size", n);
    return static_cast<int>(n);
  };
  const auto real_arg = [&](const std::string& t, const char* what) {
    double v;
    if (!parse_double(t, v)) bad_spec(spec, std::string(what) + " '" + t + "' is not a number");
    return v;
  };
  Kernel k;
  if (name == "box") { need_args(1, 1); k = Kernel::box(size_arg(parts[1])); }
  else if (name == "gaussian") {
    need_args(1, 2);
    k = Kernel::gaussian(size_arg(parts[1]), parts.size() > 2 ? real_arg(parts[2], "sigma") : 0.0);
  } else if (name == "unsharp") {
    need_args(1, 2);
    k = Kernel::unsharp(size_arg(parts[1]), parts.size() > 2 ? real_arg(parts[2], "amount") : 1.0);
  } else if (name == "sharpen") { need_args(0, 0); k = Kernel::sharpen(); }
  else if (name == "edge") { need_args(0, 0); k = Kernel::edge(); }
  else if (name == "laplacian") { need_args(0, 0); k = Kernel::laplacian(); }
  else if (name == "emboss") { need_args(0, 0); k = Kernel::emboss(); }
  else bad_spec(spec, "unknown kernel '" + name + "' (box:N, gaussian:N[:SIGMA], sharpen, edge, laplacian, emboss, unsharp:N[:AMOUNT], an inline matrix \"1,2,1;2,4,2;1,2,1/16\" or @FILE)");
  k.name = s;
  return k;
}

}  // namespace pixelkit
