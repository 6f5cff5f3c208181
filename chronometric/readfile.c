/* readfile.c: see readfile.h. */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *read_regular(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    int err = fstat(fd, &sb) < 0 ? errno : !S_ISREG(sb.st_mode) ? EINVAL : (size_t)sb.st_size > max ? EFBIG : 0;
    char *buf = err ? NULL : malloc((size_t)sb.st_size + 1);
    size_t n = 0;
    if (!err && !buf)
        err = ENOMEM;
    while (!err) {
        ssize_t got = read(fd, buf + n, (size_t)sb.st_size + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            err = errno;
        else if (got == 0)
            break;
        else if ((n += (size_t)got) > (size_t)sb.st_size)
            err = EFBIG; /* it grew while read: not the file that was sized */
    }
    close(fd);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

const char *read_regular_why(int err)
{
    return err == EINVAL ? "is not a regular file" : err == EFBIG ? "is too large" : strerror(err);
}

char *read_all(int fd, size_t max, size_t *n)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (len == cap) {
            if (cap >= max) {
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            cap *= 2;
            char *b = realloc(buf, cap + 1);
            if (!b)
                break;
            buf = b;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break;
        if (got == 0) {
            buf[len] = '\0';
            *n = len;
            return buf;
        }
        len += (size_t)got;
    }
    free(buf);
    return NULL;
}
