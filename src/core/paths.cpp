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

fs::path data_dir() {
  if (auto p = env_path("KTUNE_HOME"); !p.empty()) return ensure(p);
  if (auto p = env_path("XDG_DATA_HOME"); !p.empty()) return ensure(p / "ktune");
  return ensure(home() / ".local" / "share" / "ktune");
}

fs::path default_db_path() {
  return data_dir() / "ktune.db";
}

fs::path cache_dir() {
  if (auto p = env_path("KTUNE_HOME"); !p.empty()) return ensure(p / "cache");
  if (auto p = env_path("XDG_CACHE_HOME"); !p.empty()) return ensure(p / "ktune");
  return ensure(home() / ".cache" / "ktune");
}

void write_file_atomic(const fs::path& path, std::string_view contents) {
  if (path.has_parent_path()) ensure(path.parent_path());
  const fs::path tmp = path.string() + fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::error_code ignore;
      fs::remove(tmp, ignore);
      throw Error(fmt::format("cannot write {}: {}; check the directory exists and is writable.",
                              path.string(), std::strerror(errno)));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(fmt::format("cannot replace {}: {}.", path.string(), ec.message()));
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(
        fmt::format("cannot read {}: {}; check the path.", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ktune
