"""The ciphers' own speed on this machine: OpenSSL in userspace, the kernel's drivers
and AF_ALG, and the ceilings a layer is held to."""
