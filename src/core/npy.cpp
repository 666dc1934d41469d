// NumPy .npy and .npz (stored zip) reading and writing: pixelkit's own code,
// so that arrays cross to and from Python without OpenCV. The parsers treat
// their input as untrusted: every size is checked before it is used.
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "pixelkit/io.hpp"

namespace pixelkit {

const char* to_string(NpyType type) noexcept {
  switch (type) {
    case NpyType::u8: return "u8";
    case NpyType::u32: return "u32";
    case NpyType::i32: return "i32";
    case NpyType::i64: return "i64";
    case NpyType::u64: return "u64";
    case NpyType::f32: return "f32";
    case NpyType::f64: return "f64";
  }
  return "?";
}

std::size_t element_size(NpyType type) noexcept {
  switch (type) {
    case NpyType::u8: return 1;
    case NpyType::u32: case NpyType::i32: case NpyType::f32: return 4;
    default: return 8;
  }
}

std::size_t NpyArray::count() const noexcept {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

const char* descr_of(NpyType t) {
  switch (t) {
    case NpyType::u8: return "|u1";
    case NpyType::u32: return "<u4";
    case NpyType::i32: return "<i4";
    case NpyType::i64: return "<i8";
    case NpyType::u64: return "<u8";
    case NpyType::f32: return "<f4";
    case NpyType::f64: return "<f8";
  }
  return "";
}

bool type_of_descr(const std::string& d, NpyType& t) {
  static const std::pair<const char*, NpyType> table[] = {
      {"|u1", NpyType::u8},  {"<u1", NpyType::u8},  {"u1", NpyType::u8},  {"|b1", NpyType::u8},
      {"<u4", NpyType::u32}, {"<i4", NpyType::i32}, {"<i8", NpyType::i64}, {"<u8", NpyType::u64},
      {"<f4", NpyType::f32}, {"<f8", NpyType::f64}};
  for (const auto& [name, type] : table)
    if (d == name) { t = type; return true; }
  return false;
}

// A tiny parser for the Python dict literal in a .npy header:
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
struct HeaderParser {
  const std::string& s;
  std::size_t i = 0;
  const std::string& what;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(Status::io, what + ": not a valid .npy file (" + why + ")");
  }
  void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i; }
  bool eat(char c) { ws(); if (i < s.size() && s[i] == c) { ++i; return true; } return false; }
  void expect(char c) { if (!eat(c)) fail(std::string("expected '") + c + "' in header"); }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) fail("expected a string in header");
    const char q = s[i++];
    const auto end = s.find(q, i);
    if (end == std::string::npos) fail("unterminated string in header");
    std::string r = s.substr(i, end - i);
    i = end + 1;
    return r;
  }
  std::string word() {
    ws();
    const std::size_t b = i;
    while (i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) ++i;
    return s.substr(b, i - b);
  }
  std::size_t number() {
    ws();
    if (i >= s.size() || s[i] < '0' || s[i] > '9') fail("expected a dimension in shape");
    std::size_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      const std::size_t digit = static_cast<std::size_t>(s[i++] - '0');
      if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("dimension too large");
      v = v * 10 + digit;
    }
    return v;
  }
};

}  // namespace

NpyArray parse_npy(const unsigned char* data, std::size_t size, const std::string& what) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, magic, 6) != 0)
    throw Error(Status::io, what + ": not a .npy file (bad magic)");
  const unsigned major = data[6];
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = data[8] | (static_cast<std::size_t>(data[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(Status::io, what + ": truncated .npy header");
    header_len = data[8] | (static_cast<std::size_t>(data[9]) << 8) | (static_cast<std::size_t>(data[10]) << 16) |
                 (static_cast<std::size_t>(data[11]) << 24);
    offset = 12;
  } else {
    throw Error(Status::io, what + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > size - offset) throw Error(Status::io, what + ": truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(data + offset), header_len);
  HeaderParser p{header, 0, what};
  NpyArray a;
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  p.expect('{');
  while (!p.eat('}')) {
    const std::string key = p.str();
    p.expect(':');
    if (key == "descr") {
      const std::string d = p.str();
      if (!type_of_descr(d, a.type))
        throw Error(Status::unsupported, what + ": .npy element type '" + d +
                                             "' is not supported (u1, u4, i4, i8, u8, f4, f8, little-endian)");
      have_descr = true;
    } else if (key == "fortran_order") {
      const std::string w = p.word();
      if (w != "True" && w != "False") p.fail("fortran_order is not True or False");
      fortran = w == "True";
      have_order = true;
    } else if (key == "shape") {
      p.expect('(');
      while (!p.eat(')')) {
        a.shape.push_back(p.number());
        if (a.shape.size() > 8) p.fail("more than 8 dimensions");
        if (!p.eat(',')) { p.expect(')'); break; }
      }
      have_shape = true;
    } else {
      p.fail("unknown header key '" + key + "'");
    }
    if (!p.eat(',')) { p.expect('}'); break; }
  }
  if (!have_descr || !have_order || !have_shape) p.fail("header lacks descr, fortran_order or shape");
  if (fortran) throw Error(Status::unsupported, what + ": Fortran-ordered .npy arrays are not supported");
  std::size_t count = 1;
  for (auto d : a.shape) {
    if (d != 0 && count > std::numeric_limits<std::size_t>::max() / d) p.fail("shape overflows");
    count *= d;
  }
  const std::size_t esize = element_size(a.type);
  if (count > std::numeric_limits<std::size_t>::max() / esize) p.fail("shape overflows");
  const std::size_t bytes = count * esize;
  const std::size_t body = offset + header_len;
  if (size - body < bytes)
    throw Error(Status::io, what + ": truncated .npy data (" + std::to_string(size - body) + " of " +
                                std::to_string(bytes) + " bytes)");
  a.bytes.assign(data + body, data + body + bytes);
  return a;
}

std::vector<unsigned char> serialize_npy(NpyType type, const std::vector<std::size_t>& shape, const void* data) {
  std::string dict = std::string("{'descr': '") + descr_of(type) + "', 'fortran_order': False, 'shape': (";
  std::size_t count = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    dict += std::to_string(shape[k]);
    if (shape.size() == 1 || k + 1 < shape.size()) dict += ",";
    if (k + 1 < shape.size()) dict += " ";
    count *= shape[k];
  }
  dict += "), }";
  // Pad with spaces so that magic + length + header + '\n' is a multiple of 64.
  const bool v2 = dict.size() + 11 > 65535;
  const std::size_t pre = v2 ? 12 : 10;
  std::size_t total = pre + dict.size() + 1;
  const std::size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(v2 ? 2 : 1), 0};
  const std::size_t hl = dict.size();
  out.push_back(static_cast<unsigned char>(hl & 0xff));
  out.push_back(static_cast<unsigned char>((hl >> 8) & 0xff));
  if (v2) {
    out.push_back(static_cast<unsigned char>((hl >> 16) & 0xff));
    out.push_back(static_cast<unsigned char>((hl >> 24) & 0xff));
  }
  out.insert(out.end(), dict.begin(), dict.end());
  const auto* p = static_cast<const unsigned char*>(data);
  out.insert(out.end(), p, p + count * element_size(type));
  return out;
}

NpyArray read_npy(const std::string& path) {
  const auto bytes = read_file(path);
  return parse_npy(bytes.data(), bytes.size(), "'" + path + "'");
}

void write_npy(const std::string& path, NpyType type, const std::vector<std::size_t>& shape, const void* data) {
  const auto bytes = serialize_npy(type, shape, data);
  write_file_atomic(path, bytes.data(), bytes.size());
}

void write_npy(const std::string& path, const ConstImageView& image) {
  PIXELKIT_EXPECTS(is_host(image.memory), Status::invalid_argument, "write_npy: image must be in host memory");
  std::vector<unsigned char> packed(image.row_bytes() * static_cast<std::size_t>(image.height));
  for (int y = 0; y < image.height; ++y)
    std::memcpy(packed.data() + image.row_bytes() * y, image.row<unsigned char>(y), image.row_bytes());
  std::vector<std::size_t> shape = {static_cast<std::size_t>(image.height), static_cast<std::size_t>(image.width)};
  if (image.channels > 1) shape.push_back(static_cast<std::size_t>(image.channels));
  write_npy(path, image.type == PixelType::u8 ? NpyType::u8 : NpyType::f32, shape, packed.data());
}

Image image_from_npy(const NpyArray& a, const std::string& what, Memory memory) {
  PIXELKIT_EXPECTS(a.type == NpyType::u8 || a.type == NpyType::f32, Status::unsupported,
                   what + ": array of " + to_string(a.type) + " is not an image (u8 or f32 expected)");
  PIXELKIT_EXPECTS(a.shape.size() == 2 || a.shape.size() == 3, Status::invalid_argument,
                   what + ": array of " + std::to_string(a.shape.size()) + " dimensions is not an image (HxW or HxWxC)");
  const std::size_t c = a.shape.size() == 3 ? a.shape[2] : 1;
  PIXELKIT_EXPECTS(c == 1 || c == 3 || c == 4, Status::invalid_argument,
                   what + ": " + std::to_string(c) + " channels (1, 3 or 4 supported)");
  PIXELKIT_EXPECTS(a.shape[0] > 0 && a.shape[1] > 0 && a.shape[0] <= (1u << 30) && a.shape[1] <= (1u << 30),
                   Status::invalid_argument,
                   what + ": an array of " + std::to_string(a.shape[0]) + " rows and " + std::to_string(a.shape[1]) +
                       " columns is " + (a.shape[0] > 0 && a.shape[1] > 0 ? "too large" : "empty") +
                       " (1 to 2^30 per side)");
  const PixelType t = a.type == NpyType::u8 ? PixelType::u8 : PixelType::f32;
  Image img(static_cast<int>(a.shape[1]), static_cast<int>(a.shape[0]), static_cast<int>(c), t, memory);
  const std::size_t row = img.view().row_bytes();
  for (int y = 0; y < img.height(); ++y) std::memcpy(img.row<unsigned char>(y), a.bytes.data() + row * y, row);
  return img;
}

// ---- .npz: a zip archive of .npy members, stored (not deflated) ----------------

namespace {

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::vector<unsigned char>& o, unsigned v) { o.push_back(v & 0xff); o.push_back((v >> 8) & 0xff); }
void put32(std::vector<unsigned char>& o, std::uint32_t v) { put16(o, v & 0xffff); put16(o, v >> 16); }
void put64(std::vector<unsigned char>& o, std::uint64_t v) { put32(o, v & 0xffffffffu); put32(o, static_cast<std::uint32_t>(v >> 32)); }
std::uint64_t get(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

void write_npz(const std::string& path, const std::vector<NpzMember>& members) {
  // Zip64 records are always written, as numpy does, so members may exceed 4 GiB.
  std::vector<unsigned char> out, central;
  for (const auto& m : members) {
    const auto body = serialize_npy(m.array.type, m.array.shape, m.array.bytes.data());
    const std::string name = m.name + ".npy";
    const std::uint32_t crc = crc32(body.data(), body.size());
    const std::uint64_t local_offset = out.size();
    put32(out, 0x04034b50); put16(out, 45); put16(out, 0); put16(out, 0); put16(out, 0); put16(out, 0x21);
    put32(out, crc); put32(out, 0xffffffffu); put32(out, 0xffffffffu);
    put16(out, static_cast<unsigned>(name.size())); put16(out, 20);
    out.insert(out.end(), name.begin(), name.end());
    put16(out, 1); put16(out, 16); put64(out, body.size()); put64(out, body.size());
    out.insert(out.end(), body.begin(), body.end());
    put32(central, 0x02014b50); put16(central, 45); put16(central, 45); put16(central, 0); put16(central, 0);
    put16(central, 0); put16(central, 0x21); put32(central, crc); put32(central, 0xffffffffu); put32(central, 0xffffffffu);
    put16(central, static_cast<unsigned>(name.size())); put16(central, 28); put16(central, 0); put16(central, 0);
    put16(central, 0); put32(central, 0); put32(central, 0xffffffffu);
    central.insert(central.end(), name.begin(), name.end());
    put16(central, 1); put16(central, 24); put64(central, body.size()); put64(central, body.size()); put64(central, local_offset);
  }
  const std::uint64_t cd_offset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  const std::uint64_t z64_offset = out.size();
  put32(out, 0x06064b50); put64(out, 44); put16(out, 45); put16(out, 45); put32(out, 0); put32(out, 0);
  put64(out, members.size()); put64(out, members.size()); put64(out, central.size()); put64(out, cd_offset);
  put32(out, 0x07064b50); put32(out, 0); put64(out, z64_offset); put32(out, 1);
  put32(out, 0x06054b50); put16(out, 0); put16(out, 0); put16(out, 0xffff); put16(out, 0xffff);
  put32(out, 0xffffffffu); put32(out, 0xffffffffu); put16(out, 0);
  write_file_atomic(path, out.data(), out.size());
}

std::vector<NpzMember> read_npz(const std::string& path) {
  const auto data = read_file(path);
  return parse_npz(data.data(), data.size(), "'" + path + "'");
}

std::vector<NpzMember> parse_npz(const unsigned char* d, std::size_t n, const std::string& what) {
  const auto bad = [&](const std::string& why) { return Error(Status::io, what + ": not a valid .npz file (" + why + ")"); };
  // Walk the local file headers in order; every member must be stored.
  std::vector<NpzMember> members;
  std::size_t pos = 0;
  while (pos + 4 <= n && get(d + pos, 4) == 0x04034b50) {
    if (n - pos < 30) throw bad("truncated member header");
    const unsigned flags = static_cast<unsigned>(get(d + pos + 6, 2));
    const unsigned method = static_cast<unsigned>(get(d + pos + 8, 2));
    std::uint64_t csize = get(d + pos + 18, 4);
    std::uint64_t usize = get(d + pos + 22, 4);
    const std::size_t name_len = static_cast<std::size_t>(get(d + pos + 26, 2));
    const std::size_t extra_len = static_cast<std::size_t>(get(d + pos + 28, 2));
    if (n - pos - 30 < name_len + extra_len) throw bad("truncated member header");
    std::string name(reinterpret_cast<const char*>(d + pos + 30), name_len);
    const unsigned char* extra = d + pos + 30 + name_len;
    for (std::size_t e = 0; e + 4 <= extra_len;) {
      const unsigned id = static_cast<unsigned>(get(extra + e, 2));
      const std::size_t len = static_cast<std::size_t>(get(extra + e + 2, 2));
      if (e + 4 + len > extra_len) break;
      if (id == 1) {
        std::size_t q = e + 4;
        if (usize == 0xffffffffu && q + 8 <= e + 4 + len) { usize = get(extra + q, 8); q += 8; }
        if (csize == 0xffffffffu && q + 8 <= e + 4 + len) { csize = get(extra + q, 8); q += 8; }
      }
      e += 4 + len;
    }
    if (method != 0) throw Error(Status::unsupported, what + ": compressed .npz members are not supported (use numpy.savez, not savez_compressed)");
    if (flags & 0x8) throw bad("streamed member without sizes");
    if (csize != usize) throw bad("member sizes disagree");
    const std::size_t body = pos + 30 + name_len + extra_len;
    if (csize > n - body) throw bad("truncated member '" + name + "'");
    const std::uint32_t want = static_cast<std::uint32_t>(get(d + pos + 14, 4));
    if (crc32(d + body, static_cast<std::size_t>(csize)) != want) throw bad("checksum mismatch in member '" + name + "'");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    members.push_back({name, parse_npy(d + body, static_cast<std::size_t>(csize), what + " member '" + name + "'")});
    pos = body + static_cast<std::size_t>(csize);
  }
  if (members.empty()) throw bad("no members");
  if (pos + 4 > n || (get(d + pos, 4) != 0x02014b50)) throw bad("truncated archive");
  // The archive must end with its end-of-central-directory record (22 bytes
  // plus a comment of at most 64 KiB): a file cut short inside its trailing
  // records is refused too.
  bool have_end = false;
  for (std::size_t back = 22; back <= n - pos && back <= 22 + 65535 && !have_end; ++back)
    have_end = get(d + n - back, 4) == 0x06054b50 && get(d + n - back + 20, 2) == back - 22;
  if (!have_end) throw bad("truncated archive (no end record)");
  return members;
}

}  // namespace pixelkit
