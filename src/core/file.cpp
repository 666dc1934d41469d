// Whole-file reads and atomic writes (temporary file in the destination's
// folder, then rename), so that a failed write never leaves a partial file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit {

namespace fs = std::filesystem;

std::vector<unsigned char> read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw Error(Status::io, "'" + path + "' is a folder, not a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(Status::io, "cannot open '" + path + "': " + std::strerror(errno));
  std::vector<unsigned char> data;
  unsigned char buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f);
    data.insert(data.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(Status::io, "cannot read '" + path + "'");
  return data;
}

namespace detail {

int make_temp_beside(const std::string& path, std::string& tmp, const char* kind) {
  const fs::path target(path);
  PIXELKIT_EXPECTS(!target.filename().empty(), Status::invalid_argument,
                   "output '" + path + "' names a folder, not a file");
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(Status::io, "output '" + path + "': folder '" + dir.string() + "' does not exist");
  if (fs::is_directory(target, ec)) throw Error(Status::io, "output '" + path + "' is an existing folder");
  const std::string ext = target.extension().string();
  const std::string name = target.filename().string().substr(0, 100);
  const std::string t = (dir / ("." + name + "." + kind + "-XXXXXX" + ext)).string();
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  const int fd = ::mkstemps(buf.data(), static_cast<int>(ext.size()));
  if (fd < 0) throw Error(Status::io, "cannot write '" + path + "': " + std::strerror(errno));
  // mkstemps creates 0600; give the file the usual permissions (umask applies).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
  tmp = buf.data();
  return fd;
}

}  // namespace detail

void write_file_atomic(const std::string& path, const void* data, std::size_t size) {
  std::string tmp;
  const int fd = detail::make_temp_beside(path, tmp);
  const auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(Status::io, "cannot " + std::string(what) + " '" + path + "': " + std::strerror(err));
  };
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL) fail("flush");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(Status::io, "cannot write '" + path + "': " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(Status::io, "cannot write '" + path + "': " + std::strerror(err));
  }
}

}  // namespace pixelkit
