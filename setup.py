"""The one part pyproject.toml cannot declare: the C loop that times cipher
calls against the system's libcrypto (src/cryptbench/cipher/_units.c).

Optional: without a compiler, Python headers or libssl-dev the install goes
on, and cryptbench times ciphers through the `cryptography` package instead,
saying so wherever it prints those figures.
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
        )
    ]
)
