#pragma once
// Output-file helpers shared by the training logs, plots and traces.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::nn::train {

// Replaced atomically (nn/serialize/atomic_file.h): a reader never sees half a file.
void write_text_file_atomically(const std::string& path, std::string_view contents);
void write_binary_file_atomically(const std::string& path, const std::vector<uint8_t>& contents);

// Creates `dir` (and its parents) if missing and checks that a file can be
// created in it; otherwise throws an anvil::Error naming `what` and the path.
void ensure_writable_directory(const std::string& dir, const std::string& what);
// The same for the folder that will hold `file_path` (the current one when it has none).
void ensure_parent_directory(const std::string& file_path, const std::string& what);

// The lower-cased extension with its dot (".csv"), or "" when there is none.
std::string file_extension(const std::string& path);

}  // namespace anvil::nn::train
