// pixelkit/error.hpp - the one exception type the library throws.
//
// Every failure inside pixelkit is reported as a pixelkit::Error carrying a
// Status. User mistakes (invalid_argument, unsupported, io) are kept apart
// from environment failures (out_of_memory, cuda) and from pixelkit's own
// bugs (internal). The library never prints and never exits.
#pragma once

#include <stdexcept>
#include <string>

namespace pixelkit {

enum class Status {
  invalid_argument,  ///< a caller-supplied value is out of its domain
  unsupported,       ///< valid, but not available in this build or on this backend
  out_of_memory,     ///< host or device allocation failed
  io,                ///< a file could not be read or written, or is malformed
  cuda,              ///< the CUDA runtime or a CUDA library reported an error
  internal,          ///< a broken invariant inside pixelkit (a bug: please report it)
};

/// Short lower-case name of a status ("invalid argument", "cuda", ...).
const char* to_string(Status status) noexcept;

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

}  // namespace pixelkit

/// Throws pixelkit::Error(status, message) unless cond holds. message may be
/// any expression convertible to std::string; it is evaluated only on failure.
#define PIXELKIT_EXPECTS(cond, status, message)                  \
  do {                                                           \
    if (!(cond)) throw ::pixelkit::Error((status), (message));   \
  } while (0)
