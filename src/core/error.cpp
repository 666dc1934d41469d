#include "pixelkit/error.hpp"

namespace pixelkit {

const char* to_string(Status status) noexcept {
  switch (status) {
    case Status::invalid_argument: return "invalid argument";
    case Status::unsupported: return "unsupported";
    case Status::out_of_memory: return "out of memory";
    case Status::io: return "i/o error";
    case Status::cuda: return "cuda error";
    case Status::internal: return "internal error";
  }
  return "unknown";
}

}  // namespace pixelkit
