/* A regular file mapped a window at a time (src/in_map.c, io.h's ml_in_map): the bytes are the
 * file's from the handle's position, a pipe is not mapped, a file that grows is followed, and a
 * file cut shorter while mapped reads as NULs past the cut instead of killing the process. */
#include "ml_test.h"

#include "io.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int temp_file(char *name, const char *fill, size_t n)
{
    strcpy(name, "/tmp/test_in_map.XXXXXX");
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(write(fd, &fill[i % strlen(fill)], 1), 1);
    return fd;
}

static void test_bytes_from_position(void **state)
{
    (void)state;
    char name[64];
    const char *fill = "0123456789abcdefghijklmnopqrstuvwxyz\n";
    size_t n = 3 * 65536 + 123;
    int fd = temp_file(name, fill, n);
    assert_int_equal(lseek(fd, 5, SEEK_SET), 5);
    size_t at = 5;
    const char *p;
    long got;
    while ((got = ml_in_map(fd, 65536, &p)) > 0) {
        assert_true(got <= 65536);
        for (long i = 0; i < got; i++)
            assert_int_equal(p[i], fill[(at + (size_t)i) % strlen(fill)]);
        at += (size_t)got;
    }
    ml_in_unmap();
    assert_int_equal(at, n);
    char c;
    assert_int_equal(read(fd, &c, 1), 0); /* the position is past what was mapped */
    close(fd);
    unlink(name);
}

/* The window before the last stays mapped (another thread may read it while the next is mapped). */
static void test_two_windows_held(void **state)
{
    (void)state;
    char name[64];
    const char *fill = "0123456789abcdefghijklmnopqrstuvwxyz\n";
    size_t n = 4 * 65536;
    int fd = temp_file(name, fill, n);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    const char *p0, *p1, *p2;
    assert_int_equal(ml_in_map(fd, 65536, &p0), 65536);
    assert_int_equal(ml_in_map(fd, 65536, &p1), 65536);
    for (size_t i = 0; i < 65536; i++) { /* both read */
        assert_int_equal(p0[i], fill[i % strlen(fill)]);
        assert_int_equal(p1[i], fill[(65536 + i) % strlen(fill)]);
    }
    assert_int_equal(ml_in_map(fd, 65536, &p2), 65536); /* (p0's window is gone now) */
    for (size_t i = 0; i < 65536; i++)
        assert_int_equal(p1[i], fill[(65536 + i) % strlen(fill)]);
    ml_in_unmap();
    close(fd);
    unlink(name);
}

static void test_pipe_not_mapped(void **state)
{
    (void)state;
    int pp[2];
    assert_int_equal(pipe(pp), 0);
    assert_int_equal(write(pp[1], "x\n", 2), 2);
    const char *p;
    assert_int_equal(ml_in_map(pp[0], 65536, &p), 0);
    char b[4];
    assert_int_equal(read(pp[0], b, sizeof(b)), 2); /* nothing was taken from it */
    close(pp[0]);
    close(pp[1]);
}

static void test_growth_followed(void **state)
{
    (void)state;
    char name[64];
    int fd = temp_file(name, "a", 10);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    const char *p;
    assert_int_equal(ml_in_map(fd, 65536, &p), 10);
    assert_int_equal(ml_in_map(fd, 65536, &p), 0);
    assert_int_equal(pwrite(fd, "bbbbb", 5, 10), 5); /* (another writer: the position stays) */
    assert_int_equal(ml_in_map(fd, 65536, &p), 5);
    assert_memory_equal(p, "bbbbb", 5);
    ml_in_unmap();
    close(fd);
    unlink(name);
}

static void test_cut_while_mapped(void **state)
{
    (void)state;
    char name[64];
    size_t n = 1 << 20, keep = 4096 + 10;
    int fd = temp_file(name, "a", 0);
    char *buf = malloc(n);
    assert_non_null(buf);
    memset(buf, 'a', n);
    assert_int_equal(write(fd, buf, n), (ssize_t)n);
    free(buf);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    const char *p;
    assert_int_equal(ml_in_map(fd, n, &p), (long)n);
    assert_int_equal(ftruncate(fd, (off_t)keep), 0);
    size_t as = 0, zeros = 0;
    for (size_t i = 0; i < n; i++) { /* the pages past the cut would raise SIGBUS */
        as += p[i] == 'a';
        zeros += p[i] == 0;
    }
    assert_int_equal(as, keep);
    assert_int_equal(zeros, n - keep);
    assert_int_equal(ml_in_map(fd, n, &p), 0); /* the cut ends the file */
    ml_in_unmap();
    close(fd);
    unlink(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_from_position), cmocka_unit_test(test_two_windows_held),
        cmocka_unit_test(test_pipe_not_mapped),     cmocka_unit_test(test_growth_followed),
        cmocka_unit_test(test_cut_while_mapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
