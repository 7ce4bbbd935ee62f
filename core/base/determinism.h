#pragma once
/// @file
/// use_deterministic_algorithms(true) asks every backend for run-to-run
/// identical results where the fast path is not (like PyTorch's flag of the
/// same name). Today it affects the CUDA backend's index_add (embedding
/// backward) and scatter_add, which otherwise accumulate with atomics in
/// whatever order the threads arrive. Process-wide, off by default.
namespace anvil {

/// Asks every backend for run-to-run identical results (process-wide, off by default).
void use_deterministic_algorithms(bool on);
bool deterministic_algorithms_enabled();  ///< Whether use_deterministic_algorithms(true) is in effect.

}  // namespace anvil
