/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_ARCH_H
#define BRISK_ACCEL_KVM_ARCH_H

/* KVM runs guests of the host's own architecture: that picks the header. */
#if defined(__x86_64__)
#include "accel/kvm-x86.h"
#elif defined(__aarch64__)
#include "accel/kvm-arm64.h"
#else
#error "brisk runs on x86-64 and arm64 hosts"
#endif

#endif
