// The temporary files behind every atomic output (write_file_atomic, the
// frame sinks, the CLI's staged outputs): one name scheme and one set of
// checks, so that a failed write leaves no partial destination.
#pragma once

#include <string>

namespace pixelkit::detail {

/// Creates a fresh, empty temporary file in the folder of `path`, named
/// ".NAME.tmp-XXXXXX.EXT": NAME is up to 100 bytes of path's file name (so
/// that a temporary made beside this one stays within the usual 255-byte
/// limit on a name, as does one for a file name of 255 bytes), EXT its
/// extension (kept, as writers choose the format by it). The file gets the
/// usual permissions (0666 less the umask). Returns the open descriptor and
/// puts the name in `tmp`. Throws Error:
/// invalid_argument where `path` names no file ("out/"), io where its folder
/// does not exist, where it is an existing folder, or where the file cannot
/// be created.
/// `kind` replaces "tmp" in the name: the CLI's start-up probe of an output
/// folder is ".NAME.probe-XXXXXX.EXT", so that it is never taken for a
/// temporary that holds (part of) an output.
int make_temp_beside(const std::string& path, std::string& tmp, const char* kind = "tmp");

}  // namespace pixelkit::detail
