#include "ktune/core/paths.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <istream>
#include <iterator>
#include <mutex>
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

namespace {

// The temporary files being written now, for the signal handler to remove: an interrupted write
// (Ctrl-C, SIGTERM, `timeout`) left OUT.tmpPID files of up to 14 GB behind. Slots of fixed size,
// so the handler reads them without allocating or locking.
struct TempSlot {
  std::atomic<bool> used{false};
  char path[4096] = {};
};
TempSlot g_temp_slots[32];
constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ};
struct sigaction g_previous[NSIG];
std::mutex g_temp_mutex;  // registration, never taken by the handler
int g_temp_count = 0;

// A signal that would end the process: the temporary files go first, then the signal does what
// it did before (the default ends the process; a program's own handler, such as a session's
// graceful stop, runs instead and the write ends through its normal path).
extern "C" void remove_temp_files(int sig, siginfo_t* info, void* context) {
  const struct sigaction& before = g_previous[sig];
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction) before.sa_sigaction(sig, info, context);
    return;
  }
  if (before.sa_handler == SIG_IGN) return;
  if (before.sa_handler != SIG_DFL) {
    before.sa_handler(sig);
    return;
  }
  for (TempSlot& slot : g_temp_slots)
    if (slot.used.load()) ::unlink(slot.path);
  for (TempSlot& slot : g_temp_slots)  // scratch folders (ScratchDir), their files gone now
    if (slot.used.load()) ::rmdir(slot.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

// Registers `path` for removal on a fatal signal while it lives (a folder is removed once empty).
class TempFileGuard {
 public:
  explicit TempFileGuard(const fs::path& path) {
    const std::string text = fs::absolute(path).string();
    if (text.size() >= sizeof(TempSlot::path)) return;  // not removable by the handler; rare
    std::lock_guard lock(g_temp_mutex);
    for (TempSlot& s : g_temp_slots)
      if (!s.used.load()) {
        std::memcpy(s.path, text.c_str(), text.size() + 1);
        s.used = true;
        slot_ = &s;
        break;
      }
    if (slot_ && g_temp_count++ == 0)
      for (int sig : kFatalSignals) {
        struct sigaction sa = {};
        sa.sa_sigaction = remove_temp_files;
        sa.sa_flags = SA_SIGINFO;
        ::sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, &g_previous[sig]);
      }
  }
  ~TempFileGuard() {
    if (!slot_) return;
    std::lock_guard lock(g_temp_mutex);
    slot_->used = false;
    if (--g_temp_count == 0)
      for (int sig : kFatalSignals) ::sigaction(sig, &g_previous[sig], nullptr);
  }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  TempSlot* slot_ = nullptr;
};

ScratchDir::ScratchDir(std::string_view prefix, std::initializer_list<std::string_view> files) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  const char* tmpdir = std::getenv("TMPDIR");
  if (ec)
    throw Error(
        fmt::format("the temporary directory {} cannot be used ({}); set TMPDIR to a "
                    "writable directory.",
                    tmpdir ? tmpdir : "/tmp", ec.message()));
  std::string pattern = (tmp / (std::string(prefix) + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))  // mode 0700
    throw Error(
        fmt::format("cannot create a scratch folder in {}: {}; set TMPDIR to a writable "
                    "directory with space.",
                    tmp.string(), errno_text(errno)));
  path_ = pattern;
  for (std::string_view f : files) guards_.push_back(std::make_unique<TempFileGuard>(path_ / f));
  guards_.push_back(std::make_unique<TempFileGuard>(path_));
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file_atomic(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  check_output_path(path);
  if (path.has_parent_path()) ensure(path.parent_path());
  const fs::path tmp = path.string() + fmt::format(".tmp{}", ::getpid());
  const TempFileGuard guard(tmp);
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

namespace {

std::string size_text(std::size_t bytes) {
  return bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

}  // namespace

std::string read_file(const fs::path& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer would wait for one for ever. Only a regular file
  // is read, so the flag changes nothing else.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw Error(
        fmt::format("cannot read {}: {}; check the path.", path.string(), errno_text(errno)));
  struct stat st = {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    std::error_code ec;
    throw Error(fmt::format("cannot read {}: it is {}; give the path of a regular file.",
                            path.string(), kind_of(fs::status(path, ec).type())));
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(fmt::format(
        "cannot read {}: it holds {}, more than the {} ktune reads from a file of this kind; "
        "check the path.",
        path.string(), size_text(static_cast<std::size_t>(st.st_size)), size_text(max_bytes)));
  }
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(fmt::format("cannot read {}: {}.", path.string(), errno_text(err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {  // a file that grew while read
      ::close(fd);
      throw Error(fmt::format(
          "cannot read {}: it holds more than the {} ktune reads from a file of this kind; check "
          "the path.",
          path.string(), size_text(max_bytes)));
    }
  }
  ::close(fd);
  return out;
}

std::string read_stream(std::istream& in, const std::string& what, std::size_t max_bytes) {
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes)
      throw Error(fmt::format("{} holds more than the {} ktune reads; check what is piped in.",
                              what, size_text(max_bytes)));
  }
  return out;
}

namespace {

std::vector<fs::path>& allowed() {
  static std::vector<fs::path> folders;
  return folders;
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  fs::path r = fs::weakly_canonical(abs, ec);
  return (ec ? abs : r).lexically_normal();
}

bool is_within(const fs::path& folder, const fs::path& path) {
  auto f = folder.begin(), p = path.begin();
  for (; f != folder.end(); ++f, ++p) {
    if (f->empty() && std::next(f) == folder.end()) break;  // a trailing "/"
    if (p == path.end() || *f != *p) return false;
  }
  return true;
}

}  // namespace

void set_allowed_folders(const std::vector<fs::path>& folders) {
  allowed().clear();
  for (const fs::path& f : folders)
    if (!f.empty()) allowed().push_back(resolved(f));
}

const std::vector<fs::path>& allowed_folders() {
  return allowed();
}

bool inside_allowed(const fs::path& root, const fs::path& path) {
  const fs::path p = resolved(path);
  if (is_within(resolved(root.empty() ? fs::path(".") : root), p)) return true;
  for (const fs::path& f : allowed())
    if (is_within(f, p)) return true;
  return false;
}

fs::path confined_path(const fs::path& root, const fs::path& base, const fs::path& given,
                       const std::string& what) {
  const fs::path p = given.is_absolute() ? given : base / given;
  if (inside_allowed(root, p)) return p;
  const fs::path r = resolved(root.empty() ? fs::path(".") : root);
  throw Error(fmt::format(
      "{} names {}, which is outside the spec's folder {}; ktune reads only files beside a spec: "
      "move the file there, or allow its folder with --allow-path {} (KTUNE_ALLOW_PATH).",
      what, given.string(), r.string(), resolved(p).parent_path().string()));
}

}  // namespace ktune
