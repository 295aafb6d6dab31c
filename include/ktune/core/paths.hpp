#pragma once
// Where ktune keeps its files by default, and how it writes them without leaving halves behind.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

// $KTUNE_HOME, else $XDG_DATA_HOME/ktune, else ~/.local/share/ktune. Created on first use.
std::filesystem::path data_dir();

// The embedded store used when no --db is given: data_dir()/ktune.db. Creates nothing, so a
// command that only reads the store leaves a fresh machine as it found it.
std::filesystem::path default_db_path();

// $XDG_CACHE_HOME/ktune (else ~/.cache/ktune): the compiled-kernel cache and other re-creatable
// files.
std::filesystem::path cache_dir();

// Every command that writes an output file checks it here first: the output must not be one of
// the command's `inputs` (the same file under any name: `ktune report T -o T` would replace the
// trace it reads) and, if it exists, must be a regular file (renaming over /dev/null or a
// directory is never what was meant). Throws ktune::Error naming both paths.
void check_output_path(const std::filesystem::path& output,
                       std::initializer_list<std::filesystem::path> inputs = {});

// Writes to a temporary sibling and renames it over `path`, so readers see the old file or the new
// one, never a half. Checks `path` with check_output_path first. Throws ktune::Error naming the
// path on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);
// The same for an output too large to hold in memory: `write` streams it into the temporary file.
// Whatever `write` throws propagates, and the temporary file is removed.
void write_file_atomic(const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& write);

// What read_file reads at most unless its caller says more: every file ktune reads whole (specs,
// kernel sources, packs) is far smaller, and a path to a huge file must not take the memory.
inline constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// Whole file as a string. ktune::Error naming the path when it cannot be read, is not a regular
// file (a FIFO would block for ever, /dev/zero never ends, a directory is no file), or holds more
// than max_bytes. Never blocks on what the path names.
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = kMaxFileBytes);
// The same for a stream (stdin): at most max_bytes, else ktune::Error naming `what`.
std::string read_stream(std::istream& in, const std::string& what,
                        std::size_t max_bytes = kMaxFileBytes);

// A private folder for one command's scratch files (a PyTorch trace converted to a .ktrace): made
// in the temporary directory with mode 0700, so a scratch copy of a private trace is no one
// else's to read, and removed with what it holds when it goes out of scope or when a fatal signal
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT) ends the process. ktune::Error when TMPDIR names no usable
// directory.
class ScratchDir {
 public:
  // `prefix` starts the folder's name ("ktune-torch"); `files` are the names the signal handler
  // removes inside it before the folder (it cannot list a folder).
  ScratchDir(std::string_view prefix, std::initializer_list<std::string_view> files);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::vector<std::unique_ptr<class TempFileGuard>> guards_;
};

// --- Files a spec names (KernelFile, DataSource, headers, include options) ---
// A spec may come from someone else (a queued job, a shared folder), so the files it names are
// read only inside its own folder tree, or inside a folder the user allowed (--allow-path,
// KTUNE_ALLOW_PATH), after ".." and symbolic links are resolved.
void set_allowed_folders(const std::vector<std::filesystem::path>& folders);
const std::vector<std::filesystem::path>& allowed_folders();
// `given` (relative to `base`, or absolute), resolved; ktune::Error when it lies outside `root`
// and every allowed folder. `what` names the field for the sentence ("spec.json: field
// KernelSpecification.KernelFile"). An empty root is the current directory.
std::filesystem::path confined_path(const std::filesystem::path& root,
                                    const std::filesystem::path& base,
                                    const std::filesystem::path& given, const std::string& what);
// Whether `path` (resolved) is inside `root` or an allowed folder.
bool inside_allowed(const std::filesystem::path& root, const std::filesystem::path& path);

}  // namespace ktune
