/* Shared by the test programs: keep every hot function a function of its
 * own, with a frame of its own.
 *
 * NOINLINE: noipa also stops cloning (".constprop") and identical-code
 * folding, so each function keeps its name and frames. clang (the
 * sanitizer builds, BUILD/sanitize/) has no noipa and, by default, neither
 * clones nor folds: noinline is enough there.
 *
 * KEEP_FRAME(): gcc 12 sets up no frame pointer in a leaf function that
 * needs no stack, even with -fno-omit-frame-pointer
 * -mno-omit-leaf-frame-pointer; a frame-pointer walk from such a leaf skips
 * its caller. Asking for the frame address makes gcc build the frame, so the
 * ground-truth chains the tests check are really in the stack. */
#ifndef NPROF_TEST_PROGS_H
#define NPROF_TEST_PROGS_H

/* Chunks of work repeated until a clock says enough: work.h. */
#include "work.h"

#if __has_attribute(noipa)
#define NOINLINE __attribute__((noinline, noipa))
#else
#define NOINLINE __attribute__((noinline))
#endif
/* The no-frame-pointer variants (build/tests/progs/nofp/, -DNPROF_NOFP)
 * must have no frames at all: there asking for one would build it. */
#ifdef NPROF_NOFP
#define KEEP_FRAME() ((void)0)
#else
#define KEEP_FRAME() __asm__ volatile("" ::"r"(__builtin_frame_address(0)))
#endif

#endif
