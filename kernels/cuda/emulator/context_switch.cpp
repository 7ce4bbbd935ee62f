// A minimal x86-64 context switch for the fibers: save the callee-saved
// registers and the floating-point control words on the current stack, swap
// stack pointers, restore. ucontext's swapcontext would do the same plus a
// signal-mask system call per switch, which made it about ten times slower.
#include "kernels/cuda/emulator/execution.h"

#if !defined(__x86_64__)
#error "the emulated GPU's fiber switch is written for x86-64"
#endif

extern "C" void anvil_emu_switch(void** save_sp, void* to_sp);
extern "C" void anvil_emu_fiber_start();

asm(R"(
  .text
  .globl anvil_emu_switch
  .type anvil_emu_switch,@function
anvil_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size anvil_emu_switch,.-anvil_emu_switch

  .globl anvil_emu_fiber_start
  .type anvil_emu_fiber_start,@function
anvil_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size anvil_emu_fiber_start,.-anvil_emu_fiber_start
  .section .note.GNU-stack,"",@progbits
  .text
)");

namespace anvil::emulator {

// Lays out a fresh stack so that the first switch to it "returns" into
// anvil_emu_fiber_start, which calls entry(arg) (r12 -> rdi, r13 -> target).
void* prepare_fiber_stack(char* stack, size_t stack_bytes, void (*entry)(void*), void* arg) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + stack_bytes - 64) & ~uintptr_t(15);
  auto* w = reinterpret_cast<uint64_t*>(top);
  w[-1] = reinterpret_cast<uint64_t>(&anvil_emu_fiber_start);  // ret address
  w[-2] = 0;  // rbp
  w[-3] = 0;  // rbx
  w[-4] = reinterpret_cast<uint64_t>(arg);  // r12
  w[-5] = reinterpret_cast<uint64_t>(entry);  // r13
  w[-6] = 0;  // r14
  w[-7] = 0;  // r15
  w[-8] = 0x1F80 | (uint64_t(0x037F) << 32);  // default mxcsr, x87 control word
  return &w[-8];
}

void switch_stack(void** save_sp, void* to_sp) { anvil_emu_switch(save_sp, to_sp); }

}  // namespace anvil::emulator
