/* Test kernel "hostile": computes y = 2*x, and tries one thing a kernel submitted by somebody else
 * must not be able to do, chosen by ATTACK (tests/integration/test_security_runner.py):
 *   0  open a TCP connection to 127.0.0.1:port (ktuned's API, whose port is the problem's `port`)
 *   1  send a UDP datagram off the machine (192.0.2.1, TEST-NET-1: never answered)
 *   2  start more processes than the runner's cap (RLIMIT_NPROC of its user; 1,200 without one)
 *   3  signal ktuned (the problem's `pid`; 0: the runner's parent, which a runner under a pid
 *      namespace's init, issue 27, is that init)
 *   4  read ktuned's environment (/proc/<pid>/environ: tokens, the database password)
 * It returns 0 (the trial is `ok`) when the attempt worked and 1 (`invalid`) when it was refused.
 * The attempt is made once per process: the measurement calls the kernel many times. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int ktune_kernel(float *const *buffers, const long long *problem);

static int tcp_to_loopback(long long port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || port <= 0)
        return fd < 0 ? 0 : (close(fd), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static int udp_off_machine(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, "192.0.2.1", &a.sin_addr);
    int ok = sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof a) == 1;
    close(fd);
    return ok;
}

/* Children wait for the end of a pipe, so that all are alive together, then exit. */
static int fork_past_cap(void)
{
    struct rlimit cap;
    long attempts = 1200;
    if (getrlimit(RLIMIT_NPROC, &cap) == 0 && cap.rlim_cur != RLIM_INFINITY &&
        cap.rlim_cur < 100000)
        attempts = (long)cap.rlim_cur + 16;
    int p[2];
    long made = 0;
    if (pipe(p) != 0)
        return 0;
    for (; made < attempts; made++) {
        pid_t pid = fork();
        if (pid < 0)
            break;
        if (pid == 0) {
            char c;
            close(p[1]);
            ssize_t n = read(p[0], &c, 1);
            _exit(n < 0);
        }
    }
    close(p[1]);
    close(p[0]);
    while (wait(NULL) > 0)
        ;
    return made == attempts;
}

static int read_environment(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char c;
    int ok = fd >= 0 && read(fd, &c, 1) >= 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int ktune_kernel(float *const *buffers, const long long *problem)
{
    static int tried, escaped;
    int ktuned = problem[2] > 0 ? (int)problem[2] : (int)getppid();
    if (!tried) {
        tried = 1;
        switch (ATTACK) {
        case 0:
            escaped = tcp_to_loopback(problem[1]);
            break;
        case 1:
            escaped = udp_off_machine();
            break;
        case 2:
            escaped = fork_past_cap();
            break;
        case 3:
            escaped = kill(ktuned, 0) == 0;
            break;
        default:
            escaped = read_environment(ktuned);
            break;
        }
    }
    const float *x = buffers[0];
    float *y = buffers[1];
    for (long long i = 0; i < problem[0]; i++)
        y[i] = 2.0f * x[i];
    return escaped ? 0 : 1;
}
