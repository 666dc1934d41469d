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

std::string backend_list_note() { return cuda_available() ? "ref, cpu, auto, cuda" : "ref, cpu, auto"; }

std::vector<std::string> cli_backends() {
  std::vector<std::string> b = {"ref", "cpu", "auto"};
  if (cuda_available()) b.push_back("cuda");
  return b;
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

}  // namespace
}  // namespace pixelkit::test
