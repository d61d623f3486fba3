/* bench/pmi_fence.c: a bare PMI-1 client over PMI_FD for bench/steps.sh.
 * Every rank does `init`, one put, then ROUNDS barriers (each a fence
 * across every node of the step, through srun), timing each; rank 0 prints
 * "fence_us min median max" over the rounds. No MPI library involved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd;
static char buf[4096];

static void req(const char *line) {
    size_t n = strlen(line);
    if (write(fd, line, n) != (ssize_t)n) { perror("pmi write"); exit(2); }
    size_t got = 0;
    while (got == 0 || buf[got - 1] != '\n') {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r <= 0) { fprintf(stderr, "pmi: connection closed\n"); exit(2); }
        got += (size_t)r;
    }
    buf[got] = 0;
    if (!strstr(buf, "rc=0")) { fprintf(stderr, "pmi: %s", buf); exit(2); }
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *s = getenv("PMI_FD"), *r = getenv("PMI_RANK");
    if (!s || !r) { fprintf(stderr, "no PMI_FD: run with srun --mpi=pmi2\n"); return 2; }
    fd = atoi(s);
    int rank = atoi(r), rounds = argc > 1 ? atoi(argv[1]) : 20;
    req("cmd=init pmi_version=1 pmi_subversion=1\n");
    req("cmd=get_my_kvsname\n");
    char kvs[256] = "";
    char *k = strstr(buf, "kvsname=");
    if (k) sscanf(k + 8, "%255s", kvs);
    char line[512];
    snprintf(line, sizeof line, "cmd=put kvsname=%s key=k%d value=v%d\n", kvs, rank, rank);
    req(line);
    double *t = calloc((size_t)rounds, sizeof *t);
    for (int i = 0; i < rounds; i++) {
        double t0 = now_us();
        req("cmd=barrier_in\n");
        t[i] = now_us() - t0;
    }
    req("cmd=finalize\n");
    if (rank == 0) {
        qsort(t, (size_t)rounds, sizeof *t, cmp);
        printf("fence_us %.0f %.0f %.0f\n", t[0], t[rounds / 2], t[rounds - 1]);
    }
    return 0;
}
