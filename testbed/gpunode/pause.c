/* The pod sandbox's process (the image registry.k8s.io/pause:3.10.1 stands for): it holds the
 * pod's namespaces, reaps the children a shared PID namespace hands it, and exits 0 on SIGINT or
 * SIGTERM. As PID 1 it gets no signal it has no handler for, so both get one. build.sh: gcc -static. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig) { (void)sig; stop = 1; }

static void on_child(int sig) {
    int saved = errno;
    (void)sig;
    while (waitpid(-1, 0, WNOHANG) > 0) {}
    errno = saved;
}

int main(void) {
    struct sigaction sa = {0};
    sigset_t stops, old;
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, 0);
    sa.sa_handler = on_stop;
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, 0);
    sigaction(SIGTERM, &sa, 0);
    /* blocked outside sigsuspend, so a stop between the test and the wait is not lost */
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, &old);
    while (!stop)
        sigsuspend(&old);
    return 0;
}
