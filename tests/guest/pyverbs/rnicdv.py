# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""Python bindings of librnic's direct verbs (<infiniband/rnicdv.h>) for
rdma-core's pyverbs tests: ctypes over librnic.so.1, next to trixie's
python3-pyverbs (the guest image's; installed as tests/rnicdv.py of
rdma-core's tests by scripts/guest/build-provider.sh --pyverbs).

Why ctypes and not a Cython module like pyverbs.providers.mlx5: the guest
runs trixie's Python 3.13 and python3-pyverbs as Debian ships them, while
the build host is bookworm (Python 3.11, Cython 0.29); a Cython module
would have to be compiled for another Python than the host's, against
pyverbs' .pxd files of the same release, with a Cython that knows 3.13.
ctypes needs nothing compiled but librnic itself.

What ctypes cannot get through pyverbs' Python API is the C pointer of a
pyverbs object (an ibv_pd *, an ibv_qp *). c_pointer() finds it among the
words of the object (a Cython object holds it as a field) and takes a word
only if the memory it points at is that object's verbs struct: for a PD,
its handle and a context whose device has the name the test opened; for a
QP, its QP number, PD and context. The words are read from the object
itself; whatever they point at is read through /proc/self/mem, so a word
that is no pointer gives an error, never a crash.
"""

import ctypes
import ctypes.util
import errno
import os
import struct

from pyverbs.pyverbs_error import PyverbsRDMAError

# struct rnicdv_context.flags
RNICDV_CONTEXT_FLAGS_MKEY = 1 << 0
RNICDV_CONTEXT_MASK_MAX_MKEY_ENTRIES = 1 << 0
# the completion opcode of an mkey registration (IBV_WC_DRIVER1)
RNICDV_WC_REG_MKEY = 135

_lib = None
_verbs = None
_mem_fd = None


class Sge(ctypes.Structure):
    _fields_ = [('addr', ctypes.c_uint64), ('length', ctypes.c_uint32),
                ('lkey', ctypes.c_uint32)]


class MrInterleavedC(ctypes.Structure):
    _fields_ = [('addr', ctypes.c_uint64), ('bytes_count', ctypes.c_uint32),
                ('bytes_skip', ctypes.c_uint32), ('lkey', ctypes.c_uint32)]


class ContextAttrC(ctypes.Structure):
    _fields_ = [('comp_mask', ctypes.c_uint64), ('flags', ctypes.c_uint64),
                ('abi_version', ctypes.c_uint32),
                ('max_mkey_entries', ctypes.c_uint32),
                ('max_inline_mkey_entries', ctypes.c_uint32),
                ('reserved', ctypes.c_uint32)]


class MkeyC(ctypes.Structure):
    _fields_ = [('lkey', ctypes.c_uint32), ('rkey', ctypes.c_uint32)]


def lib():
    """librnic.so.1 (OSError if it is not there)."""
    global _lib, _verbs  # pylint: disable=global-statement
    if _lib is None:
        verbs = ctypes.CDLL('libibverbs.so.1', use_errno=True)
        rnic = ctypes.CDLL('librnic.so.1', use_errno=True)
        verbs.ibv_qp_to_qp_ex.restype = ctypes.c_void_p
        verbs.ibv_qp_to_qp_ex.argtypes = [ctypes.c_void_p]
        rnic.rnicdv_is_supported.restype = ctypes.c_bool
        rnic.rnicdv_is_supported.argtypes = [ctypes.c_void_p]
        rnic.rnicdv_query_device.restype = ctypes.c_int
        rnic.rnicdv_query_device.argtypes = [ctypes.c_void_p,
                                             ctypes.POINTER(ContextAttrC)]
        rnic.rnicdv_create_mkey.restype = ctypes.POINTER(MkeyC)
        rnic.rnicdv_create_mkey.argtypes = [ctypes.c_void_p, ctypes.c_uint16]
        rnic.rnicdv_destroy_mkey.restype = ctypes.c_int
        rnic.rnicdv_destroy_mkey.argtypes = [ctypes.POINTER(MkeyC)]
        rnic.rnicdv_wr_mr_list.restype = None
        rnic.rnicdv_wr_mr_list.argtypes = [ctypes.c_void_p, ctypes.POINTER(MkeyC),
                                           ctypes.c_uint32, ctypes.c_uint16,
                                           ctypes.POINTER(Sge)]
        rnic.rnicdv_wr_mr_interleaved.restype = None
        rnic.rnicdv_wr_mr_interleaved.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(MkeyC), ctypes.c_uint32,
            ctypes.c_uint32, ctypes.c_uint16, ctypes.POINTER(MrInterleavedC)]
        _verbs, _lib = verbs, rnic
    return _lib


# ---------------------------------------------------------------------------
# C pointers of pyverbs objects

def _peek(addr, size):
    """SIZE bytes at ADDR of this process, or None if not readable."""
    global _mem_fd  # pylint: disable=global-statement
    if addr < 4096 or addr + size >= 1 << 47:
        return None
    if _mem_fd is None:
        _mem_fd = os.open('/proc/self/mem', os.O_RDONLY)
    try:
        data = os.pread(_mem_fd, size, addr)
    except OSError:
        return None
    return data if len(data) == size else None


def _u64(addr):
    data = _peek(addr, 8)
    return None if data is None else struct.unpack('<Q', data)[0]


def c_pointer(obj, check):
    """The one word of pyverbs object OBJ that CHECK(word) accepts."""
    size = type(obj).__basicsize__
    raw = ctypes.string_at(id(obj), size)
    # past PyObject_HEAD (refcount, type)
    found = {struct.unpack_from('<Q', raw, off)[0] for off in range(16, size - 7, 8)}
    found = [word for word in found if word and check(word)]
    if len(found) != 1:
        raise PyverbsRDMAError(f'rnicdv: no C pointer of {type(obj).__name__} '
                               f'({len(found)} candidates)', errno.EINVAL)
    return found[0]


def _device_name(ctx_ptr):
    """The name of the ibv_device of ibv_context CTX_PTR (None if unreadable)."""
    dev = _u64(ctx_ptr)            # ibv_context.device
    if dev is None:
        return None
    # struct ibv_device: _ops (16 bytes), node_type, transport_type, name[64]
    name = _peek(dev + 24, 64)
    return None if name is None else name.split(b'\0')[0].decode(errors='replace')


def pd_pointer(pd, dev_name):
    """The ibv_pd * of pyverbs PD PD of device DEV_NAME."""
    def check(word):
        data = _peek(word, 12)     # struct ibv_pd: context, handle
        if data is None:
            return False
        ctx_ptr, handle = struct.unpack('<QI', data)
        return handle == pd.handle and _device_name(ctx_ptr) == dev_name
    return c_pointer(pd, check)


def context_of_pd(pd_ptr):
    return _u64(pd_ptr)


def qp_pointer(qp, pd_ptr):
    """The ibv_qp * of pyverbs QP QP (of the PD at PD_PTR)."""
    ctx_ptr = context_of_pd(pd_ptr)

    def check(word):
        # struct ibv_qp: context, qp_context, pd, send_cq, recv_cq, srq,
        # handle, qp_num
        data = _peek(word, 56)
        if data is None:
            return False
        fields = struct.unpack('<6QII', data)
        return fields[0] == ctx_ptr and fields[2] == pd_ptr and fields[7] == qp.qp_num
    return c_pointer(qp, check)


# ---------------------------------------------------------------------------
# rnicdv_*

def is_supported(ctx, pd, dev_name):
    """rnicdv_is_supported() of the device of pyverbs context CTX (PD one of
    its PDs, which leads to the C context), and its attributes; (False, None)
    without librnic."""
    try:
        rnic = lib()
    except OSError:
        return False, None
    ctx_ptr = context_of_pd(pd_pointer(pd, dev_name))
    if not rnic.rnicdv_is_supported(_u64(ctx_ptr)):
        return False, None
    attr = ContextAttrC()
    ret = rnic.rnicdv_query_device(ctx_ptr, ctypes.byref(attr))
    if ret:
        raise PyverbsRDMAError('rnicdv_query_device failed', ret)
    return True, attr


class RnicMkey:
    """rnicdv_create_mkey(PD, MAX_ENTRIES); close() before the PD goes."""

    def __init__(self, pd, max_entries, dev_name):
        self.pd_ptr = pd_pointer(pd, dev_name)
        ctypes.set_errno(0)
        ptr = lib().rnicdv_create_mkey(self.pd_ptr, max_entries)
        if not ptr:
            err = ctypes.get_errno()
            raise PyverbsRDMAError(f'rnicdv_create_mkey({max_entries}) failed: '
                                   f'{os.strerror(err)}', err)
        self.mkey = ptr
        self.max_entries = max_entries

    @property
    def lkey(self):
        return self.mkey.contents.lkey

    @property
    def rkey(self):
        return self.mkey.contents.rkey

    def close(self):
        if self.mkey:
            ret = lib().rnicdv_destroy_mkey(self.mkey)
            if ret:
                raise PyverbsRDMAError('rnicdv_destroy_mkey failed', ret)
            self.mkey = None


class RnicMrInterleaved:
    """One entry of rnicdv_wr_mr_interleaved (struct rnicdv_mr_interleaved)."""

    def __init__(self, addr, bytes_count, bytes_skip, lkey):
        self.addr = addr
        self.bytes_count = bytes_count
        self.bytes_skip = bytes_skip
        self.lkey = lkey


class RnicQPEx:
    """The rnicdv work requests of a pyverbs QPEx (between its wr_start()
    and wr_complete())."""

    def __init__(self, qp, pd_ptr):
        lib()
        self.qp = qp
        self.qpx = _verbs.ibv_qp_to_qp_ex(qp_pointer(qp, pd_ptr))
        if not self.qpx:
            raise PyverbsRDMAError('ibv_qp_to_qp_ex failed', errno.EINVAL)

    def wr_mr_list(self, mkey, access_flags, sge_list):
        """SGE_LIST: pyverbs SGEs (addr, length, lkey)."""
        sges = (Sge * max(len(sge_list), 1))(
            *[Sge(s.addr, s.length, s.lkey) for s in sge_list])
        lib().rnicdv_wr_mr_list(self.qpx, mkey.mkey, access_flags, len(sge_list), sges)

    def wr_mr_interleaved(self, mkey, access_flags, repeat_count, mr_interleaved_lst):
        data = (MrInterleavedC * max(len(mr_interleaved_lst), 1))(
            *[MrInterleavedC(m.addr, m.bytes_count, m.bytes_skip, m.lkey)
              for m in mr_interleaved_lst])
        lib().rnicdv_wr_mr_interleaved(self.qpx, mkey.mkey, access_flags, repeat_count,
                                       len(mr_interleaved_lst), data)
