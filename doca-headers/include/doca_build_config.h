/*
 * dpakit soft device: the machine a program is built for.
 *
 * Programs branch on these with #ifdef only: DOCA_ARCH_HOST for the host's side of a
 * host/BlueField pair, DOCA_ARCH_DPU (with DOCA_ARCH_ARM) for the BlueField Arm's. This is
 * the host's file, which names the host's processor; `cargo xtask soft-sdk --side arm` lays
 * out a prefix whose file is the BlueField Arm's.
 */
#pragma once

#undef DOCA_ARCH_DPU
#define DOCA_ARCH_DPU_BF2 false
#define DOCA_ARCH_HOST

#if defined(__aarch64__) || defined(__arm__)
#define DOCA_ARCH_ARM
#else
#undef DOCA_ARCH_ARM
#define DOCA_ARCH_X86
#endif
