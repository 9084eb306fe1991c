/* Encrypt data units through the system's libcrypto for a set time, in C.
 *
 * Why in C: a storage layer makes one cipher call per data unit (a 512-byte
 * or 4 KiB sector, a 4 KiB block). From Python each such call carries the
 * interpreter's call overhead, which at 512 bytes is as large as the
 * encryption itself; and the `cryptography` wheel bundles its own OpenSSL,
 * not the one the system's tools (and `openssl speed`) use. This loop makes
 * the same calls a layer makes, against the same library `openssl` uses.
 *
 * Per unit, for XTS and CBC: one EVP_EncryptUpdate on a context keyed once,
 * as `openssl speed -evp` times them. A layer also sets a new tweak per unit,
 * which costs it one more AES block (1/32 of the work at 512 bytes); through
 * EVP that would be a re-initialisation whose cost is the API's, not the
 * cipher's, and which no kernel layer (nor qemu, which builds XTS on the
 * block cipher) pays. For an AEAD: a fresh nonce (the unit's number), the
 * update, the final call and its tag, as gocryptfs seals each block.
 * Units are encrypted in place over a buffer larger than L1, as a layer's
 * data arrives from the page cache rather than from one hot line.
 *
 * The loop runs without the GIL, so threads of one process time all cores.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    EVP_CIPHER *cipher;     /* fetched: owned by the job */
    EVP_CIPHER_CTX *ctx;
    unsigned char *data;    /* `buffer` bytes of random data, encrypted in place */
    size_t buffer;          /* bytes per pass */
    size_t unit;            /* bytes per call */
    int aead;
    int iv_len;             /* bytes */
    uint64_t number;        /* the next AEAD unit's number: its nonce */
    char error[256];
} job;

static void job_free(job *j)
{
    EVP_CIPHER_CTX_free(j->ctx);
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    EVP_CIPHER_free(j->cipher);
#endif
    free(j->data);
}

static void openssl_error(job *j, const char *what)
{
    unsigned long e = ERR_get_error();
    char why[200] = "no reason given";
    if (e != 0)
        ERR_error_string_n(e, why, sizeof why);
    snprintf(j->error, sizeof j->error, "%s: %s", what, why);
    ERR_clear_error();
}

/* 0 and j->error set on failure. */
static int job_init(job *j, const char *name, size_t unit, size_t buffer)
{
    memset(j, 0, sizeof *j);
    j->unit = unit;
    j->buffer = buffer - buffer % unit;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    j->cipher = EVP_CIPHER_fetch(NULL, name, NULL);
#else
    j->cipher = (EVP_CIPHER *)EVP_get_cipherbyname(name);
#endif
    if (j->cipher == NULL) {
        openssl_error(j, "this libcrypto has no such cipher");
        return 0;
    }
    j->aead = (EVP_CIPHER_flags(j->cipher) & EVP_CIPH_FLAG_AEAD_CIPHER) != 0;
    j->iv_len = EVP_CIPHER_iv_length(j->cipher);
    if (j->iv_len > 16 || j->iv_len < 8) {
        snprintf(j->error, sizeof j->error, "unexpected IV length %d", j->iv_len);
        return 0;
    }
    int key_len = EVP_CIPHER_key_length(j->cipher);
    unsigned char key[64];
    j->data = malloc(j->buffer);
    j->ctx = EVP_CIPHER_CTX_new();
    if (key_len > (int)sizeof key || j->data == NULL || j->ctx == NULL) {
        snprintf(j->error, sizeof j->error, "out of memory or key too long (%d bytes)", key_len);
        return 0;
    }
    if (RAND_bytes(key, key_len) != 1 || RAND_bytes(j->data, (int)j->buffer) != 1) {
        openssl_error(j, "RAND_bytes");
        return 0;
    }
    unsigned char iv[16] = {0};
    if (EVP_EncryptInit_ex(j->ctx, j->cipher, NULL, key, iv) != 1) {
        openssl_error(j, "EVP_EncryptInit_ex");
        return 0;
    }
    EVP_CIPHER_CTX_set_padding(j->ctx, 0);
    return 1;
}

/* Encrypt one pass over the buffer, one call per unit. 0 on failure. */
static int job_pass(job *j)
{
    unsigned char nonce[16] = {0};
    unsigned char tag[16];
    unsigned char tail[32]; /* an AEAD's final output (none for GCM or Poly1305): not into the next unit */
    int len;
    for (size_t off = 0; off < j->buffer; off += j->unit) {
        unsigned char *unit = j->data + off;
        if (j->aead) {
            memcpy(nonce, &j->number, sizeof j->number);
            j->number++;
            if (EVP_EncryptInit_ex(j->ctx, NULL, NULL, NULL, nonce) != 1) {
                openssl_error(j, "EVP_EncryptInit_ex (nonce)");
                return 0;
            }
        }
        if (EVP_EncryptUpdate(j->ctx, unit, &len, unit, (int)j->unit) != 1) {
            openssl_error(j, "EVP_EncryptUpdate");
            return 0;
        }
        if (j->aead) {
            if (EVP_EncryptFinal_ex(j->ctx, tail, &len) != 1
                || EVP_CIPHER_CTX_ctrl(j->ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1) {
                openssl_error(j, "EVP_EncryptFinal_ex");
                return 0;
            }
        }
    }
    return 1;
}

PyDoc_STRVAR(encrypt_for_doc,
"encrypt_for(cipher, unit, seconds, buffer) -> (bytes, seconds)\n\n"
"Encrypt `buffer` bytes again and again, one call per `unit`-byte data unit,\n"
"until at least `seconds` have passed (after one unmeasured pass), and return\n"
"the bytes encrypted and the seconds taken. Runs without the GIL.");

static PyObject *encrypt_for(PyObject *self, PyObject *args)
{
    const char *name;
    Py_ssize_t unit, buffer;
    double seconds;
    if (!PyArg_ParseTuple(args, "sndn", &name, &unit, &seconds, &buffer))
        return NULL;
    if (unit < 16 || unit > 4096 || unit % 16 != 0) {
        PyErr_Format(PyExc_ValueError, "unit must be a multiple of 16 from 16 to 4096 bytes, not %zd", unit);
        return NULL;
    }
    if (buffer < unit || seconds < 0) {
        PyErr_SetString(PyExc_ValueError, "buffer must hold a unit and seconds must not be negative");
        return NULL;
    }
    job j;
    int ok;
    uint64_t done = 0;
    double took = 0;
    Py_BEGIN_ALLOW_THREADS
    ok = job_init(&j, name, (size_t)unit, (size_t)buffer) && job_pass(&j);  /* warm: page faults, clock ramp */
    if (ok) {
        double start = now();
        do {
            ok = job_pass(&j);
            done += j.buffer;
            took = now() - start;
        } while (ok && took < seconds);
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_Format(PyExc_RuntimeError, "%s (%s)", j.error, name);
        job_free(&j);
        return NULL;
    }
    job_free(&j);
    return Py_BuildValue("(Kd)", (unsigned long long)done, took);
}

PyDoc_STRVAR(version_doc, "version() -> str\n\nThe linked libcrypto's version, as `openssl version` prints it.");

static PyObject *version(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(OpenSSL_version(OPENSSL_VERSION));
}

static PyMethodDef methods[] = {
    {"encrypt_for", encrypt_for, METH_VARARGS, encrypt_for_doc},
    {"version", version, METH_NOARGS, version_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_units",
    "Data units encrypted through the system's libcrypto, timed in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__units(void)
{
    return PyModule_Create(&module);
}
