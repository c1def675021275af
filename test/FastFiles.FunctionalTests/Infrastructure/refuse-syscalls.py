#!/usr/bin/env python3
"""Runs a command with some system calls refused, as a container's seccomp profile refuses them.

Usage: refuse-syscalls.py ERRNO NAME[,NAME...] -- COMMAND [ARGS...]
Installs a seccomp filter (no_new_privs, then SECCOMP_MODE_FILTER) that makes the named calls fail with ERRNO (EPERM,
ENOSYS, ...) and lets every other call through, then execs COMMAND, which inherits the filter. x86_64 and aarch64.
"""
import ctypes
import errno
import os
import platform
import struct
import sys

# (audit architecture, {name: number}) per machine; only the calls the tests refuse.
ARCHES = {
    "x86_64": (0xC000003E, {"sendfile": 40, "statx": 332}),
    "aarch64": (0xC00000B7, {"sendfile": 71, "statx": 291}),
}

separator = sys.argv.index("--")
code = getattr(errno, sys.argv[1])
names = [n for n in sys.argv[2].split(",") if n]
command = sys.argv[separator + 1:]
arch, numbers = ARCHES[platform.machine()]

LD_W_ABS, JEQ_K, RET_K = 0x20, 0x15, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000


def insn(op, k, jt=0, jf=0):
    return struct.pack("HBBI", op, jt, jf, k)


# seccomp_data: nr at offset 0, arch at offset 4. Another architecture's calls (a 32-bit ABI) pass untouched.
program = [insn(LD_W_ABS, 4), insn(JEQ_K, arch, 1, 0), insn(RET_K, RET_ALLOW), insn(LD_W_ABS, 0)]
for name in names:
    program += [insn(JEQ_K, numbers[name], 0, 1), insn(RET_K, RET_ERRNO | code)]
program.append(insn(RET_K, RET_ALLOW))

filters = ctypes.create_string_buffer(b"".join(program))


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


fprog = SockFprog(len(program), ctypes.cast(filters, ctypes.c_void_p))
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0 or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execvp(command[0], command)
