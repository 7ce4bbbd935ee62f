#pragma once
// Internal to the emulator: the devices' memory and the global-memory
// checkers. Every device's memory is one slice of a single reserved address
// range, so "is this a device address, and whose" is a subtraction. Beside
// it lie two shadows, one entry per byte of device memory:
//   state   unaddressable (never allocated, freed, or a red zone between
//           allocations) / cached by anvil's caching allocator but not handed
//           out / handed out but never written / written;
//   writer  the launch and global thread that last wrote the byte, so two
//           threads of one launch writing it without atomics are found.
// Pages of all three are only touched when used.
#include <cstddef>
#include <cstdint>
#include <string>

namespace anvil::emulator {

enum MemoryState : uint8_t { kUnaddressable = 0, kCached = 1, kUninitialized = 2, kInitialized = 3 };

void* device_malloc(int device, size_t nbytes);  // null when the device is full
bool device_free(const void* ptr);  // false: not the start of a live allocation
size_t device_bytes_in_use(int device);
int device_of(const void* ptr);  // -1: not device memory

// For copies and memsets: null when [ptr, ptr + n) is usable device memory,
// else what is wrong with it.
const char* unusable_range(const void* ptr, size_t nbytes, std::string* detail);
void set_state(const void* ptr, size_t nbytes, MemoryState state);
void copy_state(void* dst, const void* src, size_t nbytes);  // a device-to-device copy keeps initcheck's view
void poison(void* ptr, size_t nbytes);  // fresh memory reads as NaN / -1, as garbage would

// The kernels' instrumented accesses (access_hooks.cpp), on a fiber.
void check_global_access(const void* ptr, size_t nbytes, bool write, bool atomic, const void* pc);

// "256 bytes past the end of a 1024-byte allocation at 0x..." and the like.
std::string describe_address(const void* ptr);

}  // namespace anvil::emulator
