/* Preloaded by .ci/narrow: MindSpore's own CPU kernels (nnacl) ask this function, through the
 * PLT, whether to run their AVX-512 code, and fall back to AVX2 when it says no. nnacl reads
 * cpuid itself and has no environment switch, so this is the only way to narrow it. */
#include <stdbool.h>

const bool X86_Avx512_Support(void) { return false; }
