// `pixelkit match` through the command line: the text and JSON output, the
// score map and annotated image it writes, and every bad input of issue 5
// (one-line message naming the option or file, exit code, nothing written, an
// existing output untouched). Inputs are .npy so that the tests also run
// where OpenCV is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pixelkit/io.hpp"
#include "match/match_backends.hpp"
#include "pixelkit/match.hpp"
#include "test_support.hpp"

namespace pixelkit::test {
namespace {

// ---- a small JSON reader: enough to check that --json is one valid document ----

struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
  bool has(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return true;
    return false;
  }
  const Json& operator[](const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return m.second;
    throw std::runtime_error("JSON: no key '" + key + "'");
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  /// The whole text as one value (only whitespace around it); throws on any error.
  Json document() {
    Json v = value();
    ws();
    if (i_ != s_.size()) fail("text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("JSON: " + why + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool eat(const char* word) {
    const std::size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  std::string text() {
    if (s_[i_] != '"') fail("string expected");
    ++i_;
    std::string r;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return r;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        r += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': r += '"'; break;
        case '\\': r += '\\'; break;
        case '/': r += '/'; break;
        case 'b': r += '\b'; break;
        case 'f': r += '\f'; break;
        case 'n': r += '\n'; break;
        case 'r': r += '\r'; break;
        case 't': r += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          const long code = std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          if (code >= 0x80) fail("non-ASCII \\u escape (not needed here)");
          r += static_cast<char>(code);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json value() {
    ws();
    if (i_ >= s_.size()) fail("value expected");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Json::object;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return v;
      }
      while (true) {
        ws();
        std::string key = text();
        ws();
        if (i_ >= s_.size() || s_[i_] != ':') fail("':' expected");
        ++i_;
        if (v.has(key)) fail("duplicate key '" + key + "'");
        v.members.emplace_back(key, value());
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
          return v;
        }
        fail("',' or '}' expected");
      }
    }
    if (c == '[') {
      v.kind = Json::array;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return v;
      }
      while (true) {
        v.items.push_back(value());
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') {
          ++i_;
          return v;
        }
        fail("',' or ']' expected");
      }
    }
    if (c == '"') {
      v.kind = Json::string;
      v.str = text();
      return v;
    }
    if (eat("true")) {
      v.kind = Json::boolean;
      v.b = true;
      return v;
    }
    if (eat("false")) {
      v.kind = Json::boolean;
      return v;
    }
    if (eat("null")) return v;
    // A number: -?digits[.digits][(e|E)[+-]digits], JSON's grammar.
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    const auto digits = [&] {
      const std::size_t d0 = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d0) fail("digits expected");
    };
    digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    v.kind = Json::number;
    v.num = std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
    return v;
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

Json parse_json(const std::string& text) { return JsonReader(text).document(); }

TEST(MatchCliJson, TheTestsReaderAcceptsJsonAndRejectsTheRest) {
  const Json j = parse_json(" {\"a\": [1, -2.5e3, true, null, \"x\\\"y\\u0041\"], \"b\": {}} \n");
  EXPECT_EQ(j["a"].items.size(), 5u);
  EXPECT_EQ(j["a"].items[1].num, -2500);
  EXPECT_EQ(j["a"].items[4].str, "x\"yA");
  EXPECT_EQ(j["b"].kind, Json::object);
  for (const char* bad : {"", "{", "{\"a\" 1}", "{\"a\": 1,}", "[1 2]", "{\"a\": nan}", "{} {}", "{\"a\": 1, \"a\": 2}",
                          "{\"a\": .5}", "{\"a\": inf}"})
    EXPECT_THROW(parse_json(bad), std::runtime_error) << bad;
}

/// The library's answer for the CLI's default run (ref: every backend agrees bit for bit).
MatchResult library_result(const ConstImageView& image, const ConstImageView& templ, const MatchParams& p,
                           const ConstImageView& mask = {}) {
  Options o;
  o.backend = Backend::ref;
  return Matcher(templ, p, mask)(image, o);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> cli_backends() {
  std::vector<std::string> b = {"ref", "cpu", "auto"};
  if (cuda_available()) b.push_back("cuda");
  return b;
}

/// False where the cpu backend is asked for the fft strategy in a build
/// without OpenCV (no cv::dft): the CLI must then refuse with exit code 1 and
/// a message saying why, which this checks before the caller skips the case.
bool strategy_available(const CliResult& r, const std::string& backend, const std::string& strategy) {
  const bool cpu = backend == "cpu" || (backend == "auto" && !cuda_available());
  if (!(cpu && strategy == "fft" && !detail::cpu_match_fft_available())) return true;
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("fft strategy on the cpu backend needs a build with OpenCV"), std::string::npos) << r.err;
  return false;
}

class MatchCli : public CliFixture {
 protected:
  MatchCli() : CliFixture("match_cli_") {}
  void SetUp() override {
    CliFixture::SetUp();  // in.npy: 37x23x3 u8 random
    image = read_image(input);
    templ_path = dir + "/t.npy";
    write_npy(templ_path, image.cview().sub(9, 5, 8, 6));
    gray_path = dir + "/gray.npy";
    gray = random_image(37, 23, 1, PixelType::u8, 8);
    write_npy(gray_path, gray.cview());
  }
  std::string args(const std::string& rest) const { return "match '" + input + "' '" + templ_path + "' " + rest; }
  Image image, gray;
  std::string templ_path, gray_path;
};

TEST_F(MatchCli, PrintsOneLinePerMatchBestFirst) {
  const CliResult r = run_cli(args("--top 2 --backend cpu"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_EQ(r.out.rfind("x=9 y=5 score=0", 0), 0u) << r.out;  // the exact copy, sqdiff 0
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << r.out;
}

TEST_F(MatchCli, ColourCheckPrintsCountFractionAndVerdict) {
  const CliResult r = run_cli(args("--hsv-range 0,0,0:179,255,255 --min-fraction 0.5 --backend ref"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The full range holds every pixel of the 8x6 window.
  EXPECT_NE(r.out.find("x=9 y=5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("count=48"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fraction=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict=pass"), std::string::npos) << r.out;
}

TEST_F(MatchCli, JsonHasTheResultAndWhatRan) {
  const CliResult r = run_cli(args("--json --method ccoeff_normed --top 3 --hsv-range 170,50,50:10,255,255 --backend cpu"));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key : {"\"image\"", "\"template\"", "\"method\": \"ccoeff_normed\"", "\"strategy\"",
                          "\"backend\": \"cpu\"", "\"matches\"", "\"x\": 9", "\"y\": 5", "\"count\"", "\"fraction\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " missing in " << r.out;
  // One document: balanced braces, nothing after the closing one but a newline.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '{'), std::count(r.out.begin(), r.out.end(), '}'));
  EXPECT_EQ(r.out.find_last_not_of("\n"), r.out.rfind('}'));
}

TEST_F(MatchCli, ScoresFileEqualsTheLibrarysMap) {
  const std::string scores = dir + "/s.npy";
  const CliResult r = run_cli(args("--method sqdiff_normed --scores '" + scores + "' --backend cpu"));
  ASSERT_EQ(r.code, 0) << r.err;
  const NpyArray a = read_npy(scores);
  ASSERT_EQ(a.type, NpyType::f32);
  ASSERT_EQ(a.shape, (std::vector<std::size_t>{23 - 6 + 1, 37 - 8 + 1}));
  MatchParams p;
  p.method = MatchMethod::sqdiff_normed;
  Matcher m(read_image(templ_path), p);
  Image map(30, 18, 1, PixelType::f32);
  Options o;
  o.backend = Backend::ref;
  m(image, map, o);
  for (int y = 0; y < 18; ++y)
    EXPECT_EQ(std::memcmp(map.row<float>(y), a.bytes.data() + static_cast<std::size_t>(y) * 30 * 4, 30 * 4), 0)
        << "row " << y;
}

TEST_F(MatchCli, OutDrawsAGreenRectangleAtTheMatch) {
  const std::string out = dir + "/annotated.npy";
  const CliResult r = run_cli(args("--out '" + out + "' --backend cpu"));
  ASSERT_EQ(r.code, 0) << r.err;
  const Image a = read_image(out);
  ASSERT_EQ(a.width(), 37);
  ASSERT_EQ(a.height(), 23);
  const auto green = [&](int x, int y) {
    const std::uint8_t* p = a.row<std::uint8_t>(y) + 3 * x;
    return p[0] == 0 && p[1] == 255 && p[2] == 0;
  };
  // The rectangle's corners and edges (top-left 9,5; 8x6).
  EXPECT_TRUE(green(9, 5));
  EXPECT_TRUE(green(16, 5));
  EXPECT_TRUE(green(9, 10));
  EXPECT_TRUE(green(16, 10));
  EXPECT_TRUE(green(12, 5));
  // Far from it the picture is untouched.
  EXPECT_EQ(std::memcmp(a.row<std::uint8_t>(20) + 30 * 3, image.row<std::uint8_t>(20) + 30 * 3, 6), 0);
}

TEST_F(MatchCli, BadInputsFailClearlyAndWriteNothing) {
  const std::string scores = "--scores '" + dir + "/s.npy'";
  // The template larger than the image (arguments swapped).
  expect_failure("match '" + templ_path + "' '" + input + "' " + scores, 2, "larger than the image");
  // Channel and type mismatches.
  expect_failure("match '" + input + "' '" + gray_path + "' " + scores, 2, "channels");
  Image f(8, 6, 3, PixelType::f32);
  for (int y = 0; y < 6; ++y) std::fill_n(f.row<float>(y), 24, 0.5f);
  write_npy(dir + "/f.npy", f.cview());
  expect_failure("match '" + input + "' '" + dir + "/f.npy' " + scores, 2, "f32");
  // An empty image.
  {
    std::vector<std::uint8_t> none;
    write_npy(dir + "/empty.npy", NpyType::u8, {0, 5, 3}, none.data());
  }
  expect_failure("match '" + dir + "/empty.npy' '" + templ_path + "' " + scores, 2, "empty.npy");
  // A mask of the wrong size.
  write_npy(dir + "/mask.npy", random_image(5, 5, 1, PixelType::u8, 3).cview());
  expect_failure(args("--mask '" + dir + "/mask.npy' " + scores), 2, "--mask");
  // Malformed HSV ranges, and the colour check on a grey image.
  expect_failure(args("--hsv-range 1,2 " + scores), 2, "--hsv-range");
  expect_failure(args("--hsv-range 180,0,0:10,255,255 " + scores), 2, "--hsv-range");
  expect_failure(args("--hsv-range 1,200,0:10,100,255 " + scores), 2, "S1");
  expect_failure("match '" + gray_path + "' '" + gray_path + "' --hsv-range 0,0,0:10,255,255 " + scores, 2, "3-channel");
  // K < 1, a fraction outside [0, 1] or without a range, unknown names.
  expect_failure(args("--top 0 " + scores), 2, "--top");
  expect_failure(args("--hsv-range 0,0,0:10,255,255 --min-fraction 1.5 " + scores), 2, "--min-fraction");
  expect_failure(args("--min-fraction 0.5 " + scores), 2, "--min-fraction");
  expect_failure(args("--method foo " + scores), 2, "--method");
  expect_failure(args("--strategy bar " + scores), 2, "--strategy");
  expect_failure(args("--min-distance 0 " + scores), 2, "distance");
  // Outputs: an input as output, a missing folder, a wrong extension.
  expect_failure(args("--scores '" + input + "'"), 2, "input");
  expect_failure(args("--out '" + dir + "/no/such/dir/o.npy' " + scores), 1, "does not exist");
  expect_failure(args("--scores '" + dir + "/s.txt'"), 2, ".npy");
  // A missing input file.
  expect_failure("match '" + dir + "/missing.npy' '" + templ_path + "' " + scores, 1, "missing.npy");
}

TEST_F(MatchCli, AFailedRunLeavesAnExistingOutputUntouched) {
  const std::string scores = dir + "/s.npy";
  {
    std::ofstream f(scores);
    f << "precious";
  }
  const CliResult r = run_cli(args("--top 0 --scores '" + scores + "'"));
  EXPECT_EQ(r.code, 2);
  std::ifstream f(scores);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
}

TEST_F(MatchCli, TextLinesEqualTheLibraryOnEveryBackendAndStrategy) {
  MatchParams p;
  p.method = MatchMethod::ccorr_normed;
  p.top_k = 4;
  p.color_check = true;
  p.hsv = parse_hsv_range("170,50,50:10,255,255");
  p.min_fraction = 0.1;
  const Image templ = read_image(templ_path);
  const MatchResult want = library_result(image, templ, p);
  ASSERT_EQ(want.matches.size(), 4u);
  std::string first;
  for (const auto& b : cli_backends())
    for (const char* strategy : {"auto", "direct", "fft"}) {
      SCOPED_TRACE(b + " " + strategy);
      const CliResult r = run_cli(args("--method ccorr_normed --top 4 --hsv-range 170,50,50:10,255,255 "
                                       "--min-fraction 0.1 --backend " + b + " --strategy " + strategy));
      if (!strategy_available(r, b, strategy)) continue;
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(r.err, "");  // nothing on stderr without --verbose
      const auto lines = lines_of(r.out);
      ASSERT_EQ(lines.size(), want.matches.size()) << r.out;
      for (std::size_t i = 0; i < lines.size(); ++i) {
        const Match& m = want.matches[i];
        int x = -1, y = -1;
        long long count = -1;
        double fraction = -1;
        char score[64] = {}, verdict[16] = {};
        ASSERT_EQ(std::sscanf(lines[i].c_str(), "x=%d y=%d score=%63s count=%lld fraction=%lf verdict=%15s", &x, &y,
                              score, &count, &fraction, verdict),
                  6)
            << lines[i];
        EXPECT_EQ(x, m.x) << lines[i];
        EXPECT_EQ(y, m.y) << lines[i];
        EXPECT_EQ(std::strtof(score, nullptr), m.score) << lines[i];  // printed with all of a float's digits
        EXPECT_EQ(count, m.color_count) << lines[i];
        EXPECT_NEAR(fraction, m.color_fraction, 5e-7) << lines[i];
        EXPECT_STREQ(verdict, to_string(m.verdict)) << lines[i];
      }
      // u8 maps are bit-identical everywhere: so is the text.
      if (first.empty()) first = r.out;
      EXPECT_EQ(r.out, first);
    }
}

TEST_F(MatchCli, WithoutTheColourCheckALineIsJustXYScore) {
  const CliResult r = run_cli(args("--method sqdiff --top 3 --backend cpu"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], "x=9 y=5 score=0");
  for (const auto& line : lines) {
    int x, y, used = 0;
    float score;
    ASSERT_EQ(std::sscanf(line.c_str(), "x=%d y=%d score=%f%n", &x, &y, &score, &used), 3) << line;
    EXPECT_EQ(static_cast<std::size_t>(used), line.size()) << "nothing after the score: " << line;
  }
  // Colour check without a verdict: count and fraction, no verdict.
  const CliResult c = run_cli(args("--hsv-range 0,0,0:179,255,255"));
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, "x=9 y=5 score=0 count=48 fraction=1.000000\n");
}

TEST_F(MatchCli, JsonParsesAndHoldsTheLibrarysResult) {
  const std::string mask_path = dir + "/mask.npy";
  Image mask(8, 6, 1, PixelType::u8);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 8; ++x) mask.row<std::uint8_t>(y)[x] = (x + y) % 4 ? 255 : 0;
  write_npy(mask_path, mask.cview());
  const CliResult r = run_cli(args("--json --method ccoeff_normed --top 3 --min-distance 3 --mask '" + mask_path +
                                   "' --hsv-range 170,50,50:10,255,255 --min-fraction 0.05 --backend cpu --strategy direct"));
  ASSERT_EQ(r.code, 0) << r.err;
  Json j;
  ASSERT_NO_THROW(j = parse_json(r.out)) << r.out;
  ASSERT_EQ(j.kind, Json::object);
  for (const char* key : {"image", "template", "mask", "method", "strategy", "backend", "path", "top", "min_distance",
                          "hsv_range", "min_fraction", "matches"})
    EXPECT_TRUE(j.has(key)) << key << " missing in " << r.out;
  EXPECT_EQ(j["image"]["path"].str, input);
  EXPECT_EQ(j["image"]["width"].num, 37);
  EXPECT_EQ(j["image"]["height"].num, 23);
  EXPECT_EQ(j["image"]["channels"].num, 3);
  EXPECT_EQ(j["image"]["type"].str, "u8");
  EXPECT_EQ(j["template"]["path"].str, templ_path);
  EXPECT_EQ(j["template"]["width"].num, 8);
  EXPECT_EQ(j["template"]["height"].num, 6);
  EXPECT_EQ(j["mask"].str, mask_path);
  EXPECT_EQ(j["method"].str, "ccoeff_normed");
  EXPECT_EQ(j["strategy"].str, "direct");
  EXPECT_EQ(j["backend"].str, "cpu");
  EXPECT_EQ(j["path"].kind, Json::string);
  EXPECT_EQ(j["top"].num, 3);
  EXPECT_EQ(j["min_distance"].num, 3);
  EXPECT_EQ(j["hsv_range"].str, "170,50,50:10,255,255");
  EXPECT_EQ(j["min_fraction"].num, 0.05);
  MatchParams p;
  p.method = MatchMethod::ccoeff_normed;
  p.top_k = 3;
  p.min_distance = 3;
  p.color_check = true;
  p.hsv = parse_hsv_range("170,50,50:10,255,255");
  p.min_fraction = 0.05;
  const MatchResult want = library_result(image, read_image(templ_path), p, mask);
  const Json& ms = j["matches"];
  ASSERT_EQ(ms.kind, Json::array);
  ASSERT_EQ(ms.items.size(), want.matches.size());
  for (std::size_t i = 0; i < ms.items.size(); ++i) {
    const Json& m = ms.items[i];
    EXPECT_EQ(m["x"].num, want.matches[i].x);
    EXPECT_EQ(m["y"].num, want.matches[i].y);
    EXPECT_EQ(static_cast<float>(m["score"].num), want.matches[i].score);
    EXPECT_EQ(m["count"].num, static_cast<double>(want.matches[i].color_count));
    EXPECT_NEAR(m["fraction"].num, want.matches[i].color_fraction, 1e-8);
    EXPECT_EQ(m["verdict"].str, to_string(want.matches[i].verdict));
  }
  // Without a mask, colour check or verdict: nulls, and matches with x, y, score only.
  const CliResult plain = run_cli(args("--json --backend ref"));
  ASSERT_EQ(plain.code, 0) << plain.err;
  Json q;
  ASSERT_NO_THROW(q = parse_json(plain.out)) << plain.out;
  EXPECT_EQ(q["mask"].kind, Json::null);
  EXPECT_EQ(q["hsv_range"].kind, Json::null);
  EXPECT_EQ(q["min_fraction"].kind, Json::null);
  EXPECT_EQ(q["method"].str, "sqdiff");
  EXPECT_EQ(q["backend"].str, "ref");
  EXPECT_EQ(q["strategy"].str, "direct");
  EXPECT_EQ(q["min_distance"].num, 3);  // max(1, min(8, 6) / 2)
  ASSERT_EQ(q["matches"].items.size(), 1u);
  const Json& m0 = q["matches"].items[0];
  EXPECT_EQ(m0.members.size(), 3u);
  EXPECT_EQ(m0["x"].num, 9);
  EXPECT_EQ(m0["y"].num, 5);
  EXPECT_EQ(m0["score"].num, 0);
}

TEST_F(MatchCli, JsonEscapesPaths) {
  const std::string odd = dir + "/a \"quoted\" name.npy";
  write_npy(odd, image.cview());
  const CliResult r = run_cli("match '" + odd + "' '" + templ_path + "' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  Json j;
  ASSERT_NO_THROW(j = parse_json(r.out)) << r.out;
  EXPECT_EQ(j["image"]["path"].str, odd);
}

TEST_F(MatchCli, ScoresOnEveryBackendAndStrategyEqualTheLibrarysMap) {
  const Image mask = random_image(8, 6, 1, PixelType::u8, 12);
  const std::string mask_path = dir + "/m.npy";
  write_npy(mask_path, mask.cview());
  MatchParams p;
  p.method = MatchMethod::ccoeff;
  Matcher m(read_image(templ_path), p, mask);
  Image map(30, 18, 1, PixelType::f32);
  Options o;
  o.backend = Backend::ref;
  m(image, map, o);
  for (const auto& b : cli_backends())
    for (const char* strategy : {"direct", "fft"}) {
      SCOPED_TRACE(b + " " + strategy);
      const std::string scores = dir + "/s_" + b + strategy + ".npy";
      const CliResult r = run_cli(args("--method ccoeff --mask '" + mask_path + "' --scores '" + scores +
                                       "' --backend " + b + " --strategy " + strategy));
      if (!strategy_available(r, b, strategy)) continue;
      ASSERT_EQ(r.code, 0) << r.err;
      const NpyArray a = read_npy(scores);
      ASSERT_EQ(a.type, NpyType::f32);
      ASSERT_EQ(a.shape, (std::vector<std::size_t>{18, 30}));
      for (int y = 0; y < 18; ++y)
        ASSERT_EQ(std::memcmp(map.row<float>(y), a.bytes.data() + static_cast<std::size_t>(y) * 30 * 4, 30 * 4), 0)
            << "row " << y;
    }
}

// The rectangle: 2 pixels wide, inside the w x h window, green (RGB 0,255,0);
// everything else as in the image.
void expect_annotation(const Image& a, const Image& src, const std::vector<std::pair<int, int>>& at, int w, int h) {
  ASSERT_EQ(a.width(), src.width());
  ASSERT_EQ(a.height(), src.height());
  ASSERT_EQ(a.channels(), 3);
  ASSERT_EQ(a.type(), PixelType::u8);
  long long bad = 0;
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x) {
      bool on = false;
      for (const auto& [mx, my] : at) {
        const bool inside = x >= mx && x < mx + w && y >= my && y < my + h;
        const bool border = x < mx + 2 || x >= mx + w - 2 || y < my + 2 || y >= my + h - 2;
        on = on || (inside && border);
      }
      const std::uint8_t* p = a.row<std::uint8_t>(y) + 3 * x;
      const std::uint8_t* s = src.row<std::uint8_t>(y) + static_cast<std::ptrdiff_t>(x) * src.channels();
      const bool ok = on ? (p[0] == 0 && p[1] == 255 && p[2] == 0)
                         : src.channels() == 3 ? std::memcmp(p, s, 3) == 0 : (p[0] == s[0] && p[1] == s[0] && p[2] == s[0]);
      if (!ok && bad++ < 5) ADD_FAILURE() << "pixel " << x << "," << y << (on ? " should be green" : " should be untouched");
    }
  EXPECT_EQ(bad, 0);
}

TEST_F(MatchCli, OutDrawsTwoPixelRectanglesOnEveryMatch) {
  const std::string out = dir + "/annotated.npy";
  MatchParams p;
  p.top_k = 3;
  const MatchResult want = library_result(image, read_image(templ_path), p);
  const CliResult r = run_cli(args("--top 3 --out '" + out + "' --backend cpu"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::pair<int, int>> at;
  for (const Match& m : want.matches) at.emplace_back(m.x, m.y);
  EXPECT_EQ(at[0], (std::pair<int, int>{9, 5}));
  expect_annotation(read_image(out), image, at, 8, 6);
  // A grey image is annotated in colour: its grey level in all three channels.
  const std::string gout = dir + "/gray_annotated.npy", gt = dir + "/gt.npy";
  write_npy(gt, gray.cview().sub(20, 10, 7, 9));
  const CliResult g = run_cli("match '" + gray_path + "' '" + gt + "' --out '" + gout + "'");
  ASSERT_EQ(g.code, 0) << g.err;
  expect_annotation(read_image(gout), gray, {{20, 10}}, 7, 9);
  // A 1x1 and a 3x3 template: the rectangle fills the window.
  const std::string o1 = dir + "/o1.npy", t1 = dir + "/t1.npy";
  write_npy(t1, image.cview().sub(36, 22, 1, 1));
  ASSERT_EQ(run_cli("match '" + input + "' '" + t1 + "' --method sqdiff --out '" + o1 + "'").code, 0);
  const Image a1 = read_image(o1);
  const MatchResult w1 = library_result(image, read_image(t1), MatchParams{});
  expect_annotation(a1, image, {{w1.matches[0].x, w1.matches[0].y}}, 1, 1);
}

TEST_F(MatchCli, OutWritesPngAndTheFullImageTemplate) {
  PIXELKIT_REQUIRE_PNG();
  const std::string out = dir + "/annotated.png";
  const CliResult r = run_cli(args("--out '" + out + "'"));
  ASSERT_EQ(r.code, 0) << r.err;
  expect_annotation(read_image(out), image, {{9, 5}}, 8, 6);
  // The photo and its bundled template crop (PNG in, PNG out).
  const std::string photo_out = dir + "/photo.png";
  const CliResult p = run_cli("match '" + data_path("astronaut.png") + "' '" + data_path("templates/astronaut_patch.png") +
                              "' --method ccoeff_normed --out '" + photo_out + "' --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const Json j = parse_json(p.out);
  EXPECT_EQ(j["matches"].items[0]["x"].num, 132);
  EXPECT_EQ(j["matches"].items[0]["y"].num, 346);
  EXPECT_EQ(j["matches"].items[0]["score"].num, 1);
  expect_annotation(read_image(photo_out), read_image(data_path("astronaut.png")), {{132, 346}}, 82, 80);
  // The template as large as the image: one match at (0, 0), a 1x1 map.
  const std::string s = dir + "/s.npy";
  ASSERT_EQ(run_cli("match '" + input + "' '" + input + "' --scores '" + s + "'").code, 0);
  EXPECT_EQ(read_npy(s).shape, (std::vector<std::size_t>{1, 1}));
}

TEST_F(MatchCli, VerboseSaysBackendStrategyAndTiming) {
  for (const char* strategy : {"direct", "fft"}) {
    const CliResult r = run_cli(args(std::string("--backend cpu --verbose --strategy ") + strategy));
    if (!strategy_available(r, "cpu", strategy)) continue;
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("match"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cpu"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(std::string("strategy ") + strategy), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" ms"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "x=9 y=5 score=0\n");  // stdout is unchanged by --verbose
  }
}

TEST_F(MatchCli, MoreBadInputsFailClearlyAndWriteNothing) {
  const std::string scores = "--scores '" + dir + "/s.npy'";
  const std::string mask_path = dir + "/mask.npy";
  // Masks: f32, 3 channels on a grey template, all zero; missing files.
  write_npy(dir + "/fmask.npy", random_image(8, 6, 1, PixelType::f32, 4).cview());
  expect_failure(args("--mask '" + dir + "/fmask.npy' " + scores), 2, "--mask");
  write_npy(dir + "/gt.npy", gray.cview().sub(0, 0, 8, 6));
  write_npy(dir + "/m3.npy", random_image(8, 6, 3, PixelType::u8, 5).cview());
  expect_failure("match '" + gray_path + "' '" + dir + "/gt.npy' --mask '" + dir + "/m3.npy' " + scores, 2,
                 "--mask");
  {
    Image zero(8, 6, 1, PixelType::u8);
    for (int y = 0; y < 6; ++y) std::fill_n(zero.row<std::uint8_t>(y), 8, std::uint8_t{0});
    write_npy(mask_path, zero.cview());
  }
  expect_failure(args("--mask '" + mask_path + "' " + scores), 2, "no non-zero");
  expect_failure(args("--mask '" + dir + "/nomask.npy' " + scores), 1, "nomask.npy");
  expect_failure("match '" + input + "' '" + dir + "/notempl.npy' " + scores, 1, "notempl.npy");
  // A 4-channel image.
  write_npy(dir + "/rgba.npy", random_image(37, 23, 4, PixelType::u8, 6).cview());
  write_npy(dir + "/rgba_t.npy", random_image(8, 6, 4, PixelType::u8, 7).cview());
  expect_failure("match '" + dir + "/rgba.npy' '" + dir + "/rgba_t.npy' " + scores, 2, "channels");
  // Numbers out of range or not numbers.
  expect_failure(args("--top -2 " + scores), 2, "--top");
  expect_failure(args("--top many " + scores), 2, "--top");
  expect_failure(args("--min-distance -1 " + scores), 2, "--min-distance");
  for (const char* f : {"-0.1", "1.0001", "nan"})
    expect_failure(args(std::string("--hsv-range 0,0,0:10,255,255 --min-fraction ") + f + " " + scores), 2,
                   "--min-fraction");
  expect_failure(args("--hsv-range '' " + scores), 2, "--hsv-range");
  expect_failure(args("--hsv-range 0,0,0:10,255 " + scores), 2, "--hsv-range");
  // The colour check on an f32 colour image.
  write_npy(dir + "/fimg.npy", random_image(37, 23, 3, PixelType::f32, 8).cview());
  write_npy(dir + "/ftempl.npy", random_image(8, 6, 3, PixelType::f32, 9).cview());
  expect_failure("match '" + dir + "/fimg.npy' '" + dir + "/ftempl.npy' --hsv-range 0,0,0:10,255,255 " + scores, 2,
                 "3-channel u8");
  // Outputs that are inputs, or each other; bad extensions.
  write_npy(mask_path, random_image(8, 6, 1, PixelType::u8, 10).cview());
  expect_failure(args("--out '" + templ_path + "'"), 2, "refusing to overwrite an input");
  expect_failure(args("--mask '" + mask_path + "' --scores '" + mask_path + "'"), 2, "refusing to overwrite an input");
  expect_failure(args("--out '" + input + "'"), 2, "refusing to overwrite an input");
  expect_failure(args("--scores '" + dir + "/same.npy' --out '" + dir + "/same.npy'"), 2, "same file as --scores");
  expect_failure(args("--out '" + dir + "/o.xyz'"), 2, "unsupported extension '.xyz'");
  expect_failure(args("--scores '" + dir + "/s.png'"), 2, "--scores");
  // Backends.
  expect_failure(args("--backend gpu " + scores), 2, "--backend");
  if (!built_with_cuda()) expect_failure(args("--backend cuda " + scores), 1, "no CUDA backend");
  // A missing argument.
  expect_failure("match '" + input + "'", 2, "TEMPLATE");
}

TEST_F(MatchCli, FailuresFoundAfterReadingLeaveExistingOutputsUntouched) {
  const std::string out = dir + "/o.npy", scores = dir + "/s.npy";
  for (const auto& p : {out, scores}) {
    std::ofstream f(p);
    f << "precious " << p;
  }
  const auto unchanged = [&] {
    for (const auto& p : {out, scores}) {
      std::ifstream f(p);
      const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      EXPECT_EQ(text, "precious " + p);
    }
  };
  const std::string outs = " --out '" + out + "' --scores '" + scores + "'";
  // Each is detected only once the files are read.
  expect_failure("match '" + templ_path + "' '" + input + "'" + outs, 2, "larger than the image");
  unchanged();
  expect_failure("match '" + input + "' '" + gray_path + "'" + outs, 2, "channels");
  unchanged();
  write_npy(dir + "/m.npy", random_image(3, 3, 1, PixelType::u8, 1).cview());
  expect_failure(args("--mask '" + dir + "/m.npy'" + outs), 2, "--mask");
  unchanged();
  expect_failure("match '" + gray_path + "' '" + gray_path + "' --hsv-range 0,0,0:1,1,1" + outs, 2, "--hsv-range");
  unchanged();
  // A successful run replaces both.
  const CliResult r = run_cli(args(outs.substr(1)));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy(scores).shape, (std::vector<std::size_t>{18, 30}));
  EXPECT_EQ(read_image(out).width(), 37);
}

}  // namespace
}  // namespace pixelkit::test
