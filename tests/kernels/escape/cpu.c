/* Test kernel "escape": computes y = 2*x, and tries two things only root may do: create a file in
 * /etc (root's 0755 folder) and setuid(0). It returns 0 (the trial is `ok`) when either worked, and
 * 1 (`invalid`) when both were refused, as they are for a runner that dropped its privileges
 * (runner/privileges.h). tests/integration/test_security_runner.py removes the file if it appears.
 */
#include <fcntl.h>
#include <unistd.h>

int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *x = buffers[0];
    float *y = buffers[1];
    int escaped = 0;
    int fd = open("/etc/ktune-runner-escape-test", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        escaped = 1;
        close(fd);
    }
    if (setuid(0) == 0)
        escaped = 1;
    for (long long i = 0; i < problem[0]; i++)
        y[i] = 2.0f * x[i];
    return escaped ? 0 : 1;
}
