#include "ktune/core/paths.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

fs::path env_path(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? fs::path(v) : fs::path();
}

fs::path home() {
  fs::path h = env_path("HOME");
  if (h.empty())
    throw Error(
        "HOME is not set, so ktune has no default data directory: set KTUNE_HOME or pass --db.");
  return h;
}

fs::path ensure(fs::path dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(fmt::format("cannot create directory {}: {}; set KTUNE_HOME to a writable place.",
                            dir.string(), ec.message()));
  return dir;
}

}  // namespace

// Where data_dir() is, without creating it.
fs::path data_dir_path() {
  if (auto p = env_path("KTUNE_HOME"); !p.empty()) return p;
  if (auto p = env_path("XDG_DATA_HOME"); !p.empty()) return p / "ktune";
  return home() / ".local" / "share" / "ktune";
}

fs::path data_dir() {
  return ensure(data_dir_path());
}

fs::path default_db_path() {
  return data_dir_path() / "ktune.db";
}

fs::path cache_dir() {
  if (auto p = env_path("KTUNE_HOME"); !p.empty()) return ensure(p / "cache");
  if (auto p = env_path("XDG_CACHE_HOME"); !p.empty()) return ensure(p / "ktune");
  return ensure(home() / ".cache" / "ktune");
}

namespace {

// What a non-regular file is, for the sentence that refuses to write over it.
const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a named pipe";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// strerror of errno, or a plain phrase when the failing call did not set errno (a stream's
// failbit can come without one) and strerror would say "Success".
std::string errno_text(int err) {
  return err != 0 ? std::strerror(err) : std::string("an unknown I/O error");
}

}  // namespace

void check_output_path(const fs::path& output, std::initializer_list<fs::path> inputs) {
  std::error_code ec;
  const auto st = fs::status(output, ec);
  if (ec || !fs::exists(st)) return;  // a new file (or one we cannot see): nothing to protect
  for (const fs::path& in : inputs) {
    std::error_code same_ec;
    if (!in.empty() && fs::equivalent(output, in, same_ec))
      throw Error(fmt::format(
          "refusing to write {}: it is the input {} itself, which the output would replace; "
          "write the output to another path.",
          output.string(), in.string()));
  }
  if (!fs::is_regular_file(st))
    throw Error(fmt::format(
        "refusing to write {}: it is {}, not a regular file; give the path of a file to "
        "(re)write.",
        output.string(), kind_of(st.type())));
}

void write_file_atomic(const fs::path& path, std::string_view contents) {
  write_file_atomic(path, [contents](std::ostream& out) {
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  });
}

void write_file_atomic(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  check_output_path(path);
  if (path.has_parent_path()) ensure(path.parent_path());
  const fs::path tmp = path.string() + fmt::format(".tmp{}", ::getpid());
  const auto remove_tmp = [&tmp] {
    std::error_code ignore;  // the first error is the one to report
    fs::remove(tmp, ignore);
  };
  const auto fail = [&](const std::string& why) {
    remove_tmp();
    return Error(why);
  };
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    try {
      if (out) write(out);
    } catch (...) {
      out.close();
      remove_tmp();
      throw;
    }
    out.flush();
    if (!out)
      throw fail(fmt::format("cannot write {}: {}; check the directory is writable and has space.",
                             path.string(), errno_text(errno)));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw fail(fmt::format("cannot replace {}: {}.", path.string(), ec.message()));
}

std::string read_file(const fs::path& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(
        fmt::format("cannot read {}: {}; check the path.", path.string(), errno_text(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ktune
