/* The emulator (tests/emu/emu.h) against planted kernel bugs (tests/emu/planted.cu): a correct block
 * reduction gives the exact sum; a reduction without barriers differs between launches (the thread
 * order changes) or from the sum; a read of shared memory nobody wrote is NaN; a barrier reached by
 * half the block aborts (in a child process); dynamic shared memory above 48 KiB without the
 * attribute and a copy in the wrong direction are errors. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

float emu_planted_sum(int which, const float *x);
int emu_planted_bad_copy(void);
int emu_planted_last_error(void);

int main(void) {
    float x[64];
    float exact = 0.0f;
    for (int i = 0; i < 64; i++) x[i] = (float)(i % 7 + 1), exact += x[i];
    CHECK(emu_planted_sum(0, x) == exact, "the correct reduction: %g vs %g", emu_planted_sum(0, x), exact);
    CHECK(!emu_planted_last_error(), "the correct reduction launches");
    int caught = 0;
    for (int run = 0; run < 3; run++) caught += emu_planted_sum(1, x) != exact;
    CHECK(caught > 0, "the race (no barriers) gives the exact sum in every one of 3 runs");
    CHECK(isnan(emu_planted_sum(2, x)), "a read of unwritten shared memory is not NaN");
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        emu_planted_sum(3, x);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "a barrier half the block reaches does not abort");
    emu_planted_sum(4, x);
    CHECK(emu_planted_last_error(), "64 KiB of dynamic shared memory without the attribute launches");
    CHECK(emu_planted_bad_copy(), "a host-to-device copy into host memory is accepted");
    return th_finish("emu_planted");
}
