#pragma once
// Where ktune keeps its files by default, and how it writes them without leaving halves behind.
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <string_view>

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

// Whole file as a string; ktune::Error naming the path if it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace ktune
