/* Encrypt data units through the kernel's crypto API (AF_ALG) for a set time, in C.
 *
 * Why in C: dm-crypt and fscrypt hand the kernel's cipher one data unit (a
 * 4 KiB sector or block) per request. Timing that through AF_ALG costs two
 * system calls per unit (sendmsg with the unit's IV, read of the result);
 * from Python each also carries the interpreter's call overhead, which on a
 * CPU with AES instructions is several times the cipher's own work, so the
 * figure read far below what the kernel's cipher does. Here the loop makes
 * only the system calls, and runs without the GIL, so threads of one process
 * keep a request in flight per core, as dm-crypt's workqueue does.
 *
 * Each request carries its own IV, the unit's number (plain64, little
 * endian, zero-padded to the cipher's IV size: 16 bytes for xts(aes), 32 for
 * adiantum and xchacha), as dm-crypt's -plain64 and fscrypt's per-block IVs do.
 *
 * A keyed hash (hmac(sha256), dm-integrity's tag under LUKS2 --integrity) goes
 * through a "hash" socket instead: one send of the unit, which finishes the
 * digest, and one read of the tag, as dm-crypt tags each sector.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <linux/if_alg.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef SOL_ALG
#define SOL_ALG 279
#endif

#define MAX_IV_BYTES 32
#define MAX_DIGEST_BYTES 64 /* SHA-512's; a read of this much returns the whole tag */
#define CHECK_EVERY 64 /* units between looks at the clock */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One request: encrypt `unit` bytes of `in` into `out` with `sector` as the IV. */
static int request(int op, unsigned char *in, unsigned char *out, size_t unit, uint64_t sector, size_t iv_bytes)
{
    char control[CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct af_alg_iv) + MAX_IV_BYTES)];
    memset(control, 0, sizeof(control));
    struct iovec iov = {.iov_base = in, .iov_len = unit};
    size_t controllen = CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct af_alg_iv) + iv_bytes);
    struct msghdr msg = {.msg_control = control, .msg_controllen = controllen, .msg_iov = &iov, .msg_iovlen = 1};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_OP;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    uint32_t operation = ALG_OP_ENCRYPT;
    memcpy(CMSG_DATA(c), &operation, sizeof(operation));
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_IV;
    c->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + iv_bytes);
    struct af_alg_iv *iv = (struct af_alg_iv *)CMSG_DATA(c);
    iv->ivlen = (uint32_t)iv_bytes;
    memset(iv->iv, 0, iv_bytes);
    for (int i = 0; i < 8; i++)
        iv->iv[i] = (unsigned char)(sector >> (8 * i));
    if (sendmsg(op, &msg, 0) != (ssize_t)unit)
        return 0;
    size_t got = 0;
    while (got < unit) {
        ssize_t n = read(op, out + got, unit - got);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

/* One keyed-hash request: the unit's tag. `sector` goes into the data, as dm-crypt
 * authenticates each sector with its number. */
static int digest_request(int op, unsigned char *in, unsigned char *out, size_t unit, uint64_t sector)
{
    for (int i = 0; i < 8; i++)
        in[i] = (unsigned char)(sector >> (8 * i));
    if (send(op, in, unit, 0) != (ssize_t)unit) /* no MSG_MORE: the digest is final */
        return 0;
    return read(op, out, MAX_DIGEST_BYTES) > 0;
}

PyDoc_STRVAR(encrypt_for_doc,
"encrypt_for(algorithm, key, unit, seconds, first_sector, iv_bytes=16, kind='skcipher') -> (bytes, seconds)\n\n"
"Encrypt `unit`-byte data units through an AF_ALG skcipher socket, one request\n"
"per unit with its sector number as the IV (`iv_bytes` long), until at least `seconds` have\n"
"passed (after CHECK_EVERY unmeasured units), and return the bytes encrypted\n"
"and the seconds taken. With kind 'hash', each unit's keyed digest through a hash\n"
"socket instead (iv_bytes unused). Runs without the GIL. OSError where the kernel refuses.");

static PyObject *encrypt_for(PyObject *self, PyObject *args)
{
    const char *algorithm;
    Py_buffer key;
    Py_ssize_t unit;
    double seconds;
    unsigned long long first;
    Py_ssize_t iv_bytes = 16;
    const char *kind = "skcipher";
    if (!PyArg_ParseTuple(args, "sy*ndK|ns", &algorithm, &key, &unit, &seconds, &first, &iv_bytes, &kind))
        return NULL;
    int hash = strcmp(kind, "hash") == 0;
    if (unit < 16 || unit > (1 << 16) || seconds < 0 || strlen(algorithm) >= 64 || iv_bytes < 8
        || iv_bytes > MAX_IV_BYTES || (!hash && strcmp(kind, "skcipher") != 0)) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_ValueError,
                        "unit must be 16 B to 64 KiB, seconds not negative, a name under 64, an IV of 8 to 32 bytes, "
                        "kind skcipher or hash");
        return NULL;
    }
    size_t out_bytes = (size_t)unit > MAX_DIGEST_BYTES ? (size_t)unit : MAX_DIGEST_BYTES;
    unsigned char *in = PyMem_RawMalloc((size_t)unit), *out = PyMem_RawMalloc(out_bytes);
    int tfm = -1, op = -1, ok = 0, err = 0;
    uint64_t done = 0;
    double took = 0;
    Py_BEGIN_ALLOW_THREADS
    if (in != NULL && out != NULL) {
        memset(in, 0xa5, (size_t)unit);
        struct sockaddr_alg sa = {.salg_family = AF_ALG};
        strcpy((char *)sa.salg_type, hash ? "hash" : "skcipher");
        strcpy((char *)sa.salg_name, algorithm);
        tfm = socket(AF_ALG, SOCK_SEQPACKET, 0);
        if (tfm >= 0 && bind(tfm, (struct sockaddr *)&sa, sizeof(sa)) == 0
            && setsockopt(tfm, SOL_ALG, ALG_SET_KEY, key.buf, (socklen_t)key.len) == 0
            && (op = accept(tfm, NULL, 0)) >= 0) {
            uint64_t sector = first;
            ok = 1;
            for (int i = 0; ok && i < CHECK_EVERY; i++)  /* warm: the cipher instantiated, pages touched */
                ok = hash ? digest_request(op, in, out, (size_t)unit, sector++)
                          : request(op, in, out, (size_t)unit, sector++, (size_t)iv_bytes);
            double start = now();
            while (ok && took < seconds) {
                for (int i = 0; ok && i < CHECK_EVERY; i++) {
                    ok = hash ? digest_request(op, in, out, (size_t)unit, sector++)
                              : request(op, in, out, (size_t)unit, sector++, (size_t)iv_bytes);
                    done += ok ? (uint64_t)unit : 0;
                }
                took = now() - start;
            }
        }
        if (!ok)
            err = errno ? errno : EIO;
        if (op >= 0)
            close(op);
        if (tfm >= 0)
            close(tfm);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&key);
    PyMem_RawFree(in);
    PyMem_RawFree(out);
    if (in == NULL || out == NULL)
        return PyErr_NoMemory();
    if (!ok) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return Py_BuildValue("(Kd)", (unsigned long long)done, took);
}

static PyMethodDef methods[] = {
    {"encrypt_for", encrypt_for, METH_VARARGS, encrypt_for_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_af_alg",
    "Data units encrypted through the kernel's AF_ALG sockets, timed in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__af_alg(void)
{
    return PyModule_Create(&module);
}
