"""The one part pyproject.toml cannot declare: the C loops that time cipher
calls, against the system's libcrypto (src/cryptbench/cipher/_units.c) and
through the kernel's AF_ALG sockets (src/cryptbench/cipher/_af_alg.c).

Optional: without a compiler, Python headers or libssl-dev the install goes
on, and cryptbench times ciphers from Python instead (OpenSSL through the
`cryptography` package), saying so wherever it prints those figures.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "cryptbench.cipher._units",
            ["src/cryptbench/cipher/_units.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        Extension(
            "cryptbench.cipher._af_alg",
            ["src/cryptbench/cipher/_af_alg.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
    ]
)
