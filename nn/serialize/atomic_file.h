#pragma once
/// @file
/// Atomic file replacement: readers (and a process restarted after a crash)
/// see either the old file or the complete new one, never a prefix. The bytes
/// go to "<path>.tmp.<pid>", are fsync'ed, and the temporary is renamed over
/// `path` (rename is atomic within a file system); the folder is fsync'ed too
/// so the rename itself survives a power cut.
///
///     atomic_write_file("run/last.ckpt", [&](std::ostream& out) { out.write(data, n); });
///
/// If the callback throws, or a write fails (disk full), the temporary is
/// removed, `path` keeps its previous contents, and the error propagates.
#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace anvil::nn::serialize {

/// Writes `path` atomically: `write` fills the temporary, which then replaces `path`.
void atomic_write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);
/// Writes `bytes` to `path` atomically.
void atomic_write_file(const std::filesystem::path& path, std::string_view bytes);

/// Where atomic_write_file stages the bytes for `path` in this process.
std::filesystem::path temporary_path_for(const std::filesystem::path& path);

}  // namespace anvil::nn::serialize
