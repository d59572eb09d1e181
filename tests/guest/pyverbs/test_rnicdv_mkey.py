# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""rdma-core's tests/test_mlx5_mkey.py ported to rnicdv (librnic's mapped
STags, <infiniband/rnicdv.h>): the same players (RC, an mkey each) and flows
(register a list or an interleaved layout, traffic through the mkeys,
invalidate locally or remotely), with what mlx5's signature and ODP cases
have no counterpart for left out, and more: every byte of every transfer
checked against a model of the layout, RDMA WRITE and READ through mkeys
(rkey of the peer, lkey of a READ whose response is scattered), segment
tables inline and through the provider's table, re-registration with a
fresh key, access through an invalidated mkey, a stale key and a
deregistered member failing, and bad registrations failing with an error
completion (too many entries, a member of another PD, a member that is an
mkey, overlapping segments, registering a valid mkey) or refused by the
provider (no entries, bad rights).

Runs from rdma-core's tests/ (tests/rnicdv.py: the ctypes bindings);
skipped on any device but rnic, and on an rnic without mapped STags.
"""

import errno
import random
import unittest

from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QPInitAttrEx, QPCap, QPEx
from pyverbs.wr import SGE, SendWR, RecvWR
from pyverbs.mr import MR
from pyverbs.pd import PD
import pyverbs.enums as e

from tests.base import RCResources, RDMATestCase
import tests.utils as u
from tests import rnicdv
from tests.rnicdv import RnicMkey, RnicMrInterleaved, RnicQPEx

LOCAL = e.IBV_ACCESS_LOCAL_WRITE
REMOTE = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


class RnicMkeyResources(RCResources):
    """An RC player with an extended QP and an mkey of MAX_ENTRIES
    (rnicdv_create_mkey), its MR open to the peer's RDMA."""

    def __init__(self, dev_name, ib_port, gid_index, max_entries=3,
                 max_inline_data=0, msg_size=1024):
        self.max_entries = max_entries
        self.max_inline_data = max_inline_data
        self.mkeys = []
        self.pd_ptr = None
        self.qp_access_flags = REMOTE
        self.send_ops_flags = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_INV |
                               e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_READ |
                               e.IBV_QP_EX_WITH_LOCAL_INV)
        super().__init__(dev_name, ib_port, gid_index, msg_size=msg_size)
        self.dv_qp = RnicQPEx(self.qp, self.pd_ptr)
        self.mkey = self.create_mkey(max_entries)

    def create_pd(self):
        super().create_pd()
        supported, attr = rnicdv.is_supported(self.ctx, self.pd, self.dev_name)
        if not supported:
            raise unittest.SkipTest('rnicdv: not an rnic device')
        if not attr.flags & rnicdv.RNICDV_CONTEXT_FLAGS_MKEY:
            raise unittest.SkipTest('rnicdv: the device has no mapped STags')
        self.pd_ptr = rnicdv.pd_pointer(self.pd, self.dev_name)

    def create_mkey(self, max_entries, pd=None):
        try:
            mkey = RnicMkey(pd or self.pd, max_entries, self.dev_name)
        except PyverbsRDMAError as ex:
            if ex.error_code in [errno.EOPNOTSUPP, errno.EPROTONOSUPPORT]:
                raise unittest.SkipTest('Create Mkey is not supported')
            raise ex
        self.mkeys.append(mkey)
        return mkey

    def close_mkeys(self):
        """Before the PD and context go (pyverbs does not know of them)."""
        while self.mkeys:
            self.mkeys.pop().close()

    def create_mr(self):
        self.mr = MR(self.pd, self.msg_size, REMOTE)

    def create_qp_cap(self):
        return QPCap(max_send_wr=self.num_msgs, max_recv_wr=self.num_msgs,
                     max_inline_data=self.max_inline_data)

    def create_qp_init_attr(self):
        comp_mask = e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
        return QPInitAttrEx(cap=self.create_qp_cap(), pd=self.pd, scq=self.cq,
                            rcq=self.cq, qp_type=e.IBV_QPT_RC,
                            send_ops_flags=self.send_ops_flags,
                            comp_mask=comp_mask)

    def create_qp_attr(self):
        attr = super().create_qp_attr()
        attr.qp_access_flags = self.qp_access_flags
        return attr

    def create_qps(self):
        try:
            qp = QPEx(self.ctx, self.create_qp_init_attr())
        except PyverbsRDMAError as ex:
            if ex.error_code == errno.EOPNOTSUPP:
                raise unittest.SkipTest('Extended RC QP is not supported')
            raise ex
        self.qps.append(qp)
        self.qps_num.append(qp.qp_num)
        self.psns.append(random.getrandbits(24))


def list_layout(entries):
    """Byte offsets in the member, in mkey order, of a list of (addr offset,
    length) entries."""
    return [off + i for off, length in entries for i in range(length)]


def interleaved_layout(entries, repeat):
    """The same for interleaved (addr offset, count, skip) entries."""
    return [off + r * (count + skip) + i for r in range(repeat)
            for off, count, skip in entries for i in range(count)]


class RnicMkeyTest(RDMATestCase):
    """
    Mapped STags through rnicdv: the flows of test_mlx5_mkey.py and the
    cases of issue 20.
    """
    def setUp(self):
        super().setUp()
        self.iters = 10
        self.server = None
        self.client = None

    def tearDown(self):
        for player in (self.server, self.client):
            if player:
                player.close_mkeys()
        super().tearDown()

    # -- registration ------------------------------------------------------

    def post_reg(self, player, mkey, access, sge_list=None, interleaved=None,
                 repeat=1):
        """One registration of MKEY (rnicdv_wr_mr_list or, with INTERLEAVED,
        rnicdv_wr_mr_interleaved), signaled; returns the keys it had."""
        before = (mkey.lkey, mkey.rkey)
        player.qp.wr_start()
        player.qp.wr_id = 0x6d6b
        player.qp.wr_flags = e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE
        if interleaved is not None:
            player.dv_qp.wr_mr_interleaved(mkey, access, repeat, interleaved)
        else:
            player.dv_qp.wr_mr_list(mkey, access, sge_list)
        player.qp.wr_complete()
        return before

    def check_new_key(self, mkey, before):
        """A registration keeps the STag's index and gives it a new key."""
        self.assertEqual(mkey.lkey, mkey.rkey)
        self.assertEqual(mkey.lkey >> 8, before[0] >> 8,
                         'the registration moved the mkey to another index')
        self.assertNotEqual(mkey.lkey & 0xff, before[0] & 0xff,
                            'the registration did not change the key')

    def reg(self, player, mkey, access, sge_list=None, interleaved=None,
            repeat=1):
        """Register and check the completion and the new key."""
        before = self.post_reg(player, mkey, access, sge_list, interleaved, repeat)
        wc = u.poll_cq(player.cq)[0]
        self.assertEqual(wc.opcode, rnicdv.RNICDV_WC_REG_MKEY)
        self.assertEqual(wc.wr_id, 0x6d6b)
        self.check_new_key(mkey, before)

    def reg_fails(self, player, mkey, access, sge_list=None, interleaved=None,
                  repeat=1):
        """A registration the device refuses: an error completion."""
        self.post_reg(player, mkey, access, sge_list, interleaved, repeat)
        wcs = u._poll_cq(player.cq)  # pylint: disable=protected-access
        self.assertNotEqual(wcs[0].status, e.IBV_WC_SUCCESS,
                            'the device took a bad registration')
        self.assertNotEqual(wcs[0].status, e.IBV_WC_WR_FLUSH_ERR)

    def reg_mr_list(self, access=LOCAL):
        """test_mlx5_mkey's list: 8 bytes at 0 and at 64 of each MR."""
        self.layout = list_layout([(0, 8), (64, 8)])
        for player in [self.server, self.client]:
            self.reg(player, player.mkey, access,
                     sge_list=[SGE(player.mr.buf, 8, player.mr.lkey),
                               SGE(player.mr.buf + 64, 8, player.mr.lkey)])

    def reg_mr_interleaved(self, access=LOCAL):
        """test_mlx5_mkey's interleaved layout: 8 bytes skip 2 at 0 and at 64,
        three times."""
        self.layout = interleaved_layout([(0, 8, 2), (64, 8, 2)], 3)
        for player in [self.server, self.client]:
            lst = [RnicMrInterleaved(addr=player.mr.buf, bytes_count=8,
                                     bytes_skip=2, lkey=player.mr.lkey),
                   RnicMrInterleaved(addr=player.mr.buf + 64, bytes_count=8,
                                     bytes_skip=2, lkey=player.mr.lkey)]
            self.reg(player, player.mkey, access, interleaved=lst, repeat=3)

    def reg_spread_list(self, count, length=4, step=12, access=LOCAL):
        """COUNT entries of LENGTH bytes, STEP apart."""
        entries = [(i * step, length) for i in range(count)]
        self.layout = list_layout(entries)
        for player in [self.server, self.client]:
            self.reg(player, player.mkey, access,
                     sge_list=[SGE(player.mr.buf + off, n, player.mr.lkey)
                               for off, n in entries])

    # -- traffic -----------------------------------------------------------

    @staticmethod
    def pattern(seed, size):
        rnd = random.Random(seed)
        return bytes(rnd.randrange(1, 256) for _ in range(size))

    def fill(self, player, seed):
        data = self.pattern(seed, player.msg_size)
        player.mr.write(data, len(data))
        return data

    def expect_scattered(self, before, stream, layout):
        """BEFORE with the bytes of STREAM put at LAYOUT's offsets."""
        exp = bytearray(before)
        for i, byte in enumerate(stream):
            exp[layout[i]] = byte
        return bytes(exp)

    def check_mr(self, player, exp, what):
        act = player.mr.read(player.msg_size, 0)
        if act != exp:
            bad = [i for i in range(len(exp)) if act[i] != exp[i]]
            raise PyverbsRDMAError(f'{what}: data validation failed at {len(bad)} '
                                   f'bytes, first {bad[:8]}')

    def traffic(self, sge_size):
        """test_mlx5_mkey's SEND/RECV through both mkeys (iova 0, SGE_SIZE
        bytes), every byte of the server's MR checked against the layout; a
        receive is posted for each send (none is left over for the next
        call, whose size or keys may differ)."""
        layout = self.layout
        server_sge = SGE(0, sge_size, self.server.mkey.lkey)
        server_recv_wr = RecvWR(sg=[server_sge], num_sge=1)
        client_sge = SGE(0, sge_size, self.client.mkey.lkey)
        client_send_wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[client_sge])
        for i in range(self.iters):
            before = self.fill(self.server, 2 * i)
            sent = self.fill(self.client, 2 * i + 1)
            self.server.qp.post_recv(server_recv_wr)
            self.client.qp.post_send(client_send_wr)
            u.poll_cq(self.client.cq)
            wc = u.poll_cq(self.server.cq)[0]
            self.assertEqual(wc.byte_len, sge_size)
            stream = bytes(sent[layout[j]] for j in range(sge_size))
            self.check_mr(self.server, self.expect_scattered(before, stream, layout),
                          f'SEND of {sge_size} bytes, iteration {i}')

    def traffic_scattered_data(self, sge_size=16):
        self.traffic(sge_size)

    def invalidate_mkeys(self):
        """LOCAL_INV of each player's mkey."""
        for player in [self.server, self.client]:
            inv_send_wr = SendWR(opcode=e.IBV_WR_LOCAL_INV)
            inv_send_wr.imm_data = player.mkey.lkey
            player.qp.post_send(inv_send_wr)
            wc = u.poll_cq(player.cq)[0]
            self.assertEqual(wc.opcode, e.IBV_WC_LOCAL_INV)

    def invalidate_mkeys_remotely(self):
        """The client's SEND with invalidate of the server's rkey."""
        sge = SGE(0, 0, self.server.mkey.lkey)
        self.server.qp.post_recv(RecvWR(sg=[sge], num_sge=1))
        self.client.qp.wr_start()
        self.client.qp.wr_flags = e.IBV_SEND_SIGNALED
        self.client.qp.wr_send_inv(self.server.mkey.rkey)
        sge = SGE(0, 0, self.client.mkey.lkey)
        self.client.qp.wr_set_sge(sge)
        self.client.qp.wr_complete()
        u.poll_cq(self.client.cq)
        wc = u.poll_cq(self.server.cq)[0]
        self.assertTrue(wc.wc_flags & e.IBV_WC_WITH_INV,
                        'the receive completion does not say it invalidated')

    def rdma(self, opcode, player, peer, rkey, size, local_sge):
        """One RDMA WRITE or READ of SIZE bytes at iova 0 of RKEY."""
        player.qp.wr_start()
        player.qp.wr_id = 0x7264
        player.qp.wr_flags = e.IBV_SEND_SIGNALED
        if opcode == e.IBV_WR_RDMA_WRITE:
            player.qp.wr_rdma_write(rkey, 0)
        else:
            player.qp.wr_rdma_read(rkey, 0)
        player.qp.wr_set_sge(local_sge)
        player.qp.wr_complete()
        u.poll_cq(player.cq)

    # -- the ports of test_mlx5_mkey.py --------------------------------------

    def test_mkey_list(self):
        """
        Create mkeys, register a list layout, SEND/RECV through them, then
        invalidate them: traffic through them fails after that.
        """
        self.create_players(RnicMkeyResources)
        self.reg_mr_list()
        self.traffic_scattered_data()
        self.invalidate_mkeys()
        with self.assertRaises(PyverbsRDMAError):
            self.traffic_scattered_data()

    def test_mkey_interleaved(self):
        """
        Create mkeys, register an interleaved layout and traffic through it,
        the first 16 bytes (test_mlx5_mkey's) and all 48.
        """
        self.create_players(RnicMkeyResources)
        self.reg_mr_interleaved()
        self.traffic_scattered_data()
        self.traffic(48)
        self.invalidate_mkeys()

    def test_mkey_list_bad_flow(self):
        """
        Access past the end of the mkeys' layout (100 of 16 bytes) fails.
        """
        self.create_players(RnicMkeyResources)
        self.reg_mr_list()
        with self.assertRaises(PyverbsRDMAError):
            self.traffic_scattered_data(sge_size=100)

    def test_mkey_remote_invalidate(self):
        """
        Traffic through the mkeys, then the client invalidates the server's
        mkey with SEND with invalidate: traffic through it fails after that.
        """
        self.create_players(RnicMkeyResources)
        self.reg_mr_list()
        self.traffic_scattered_data()
        self.invalidate_mkeys_remotely()
        with self.assertRaises(PyverbsRDMAError):
            self.traffic_scattered_data()

    # -- RDMA through mkeys ----------------------------------------------------

    def test_mkey_rdma_write(self):
        """
        The client WRITEs through the server's mkey (the rkey of a mapped
        STag): the bytes land scattered over the server's buffers.
        """
        self.create_players(RnicMkeyResources)
        self.reg_mr_interleaved(access=REMOTE)
        layout = self.layout
        for i in range(self.iters):
            before = self.fill(self.server, 2 * i)
            sent = self.fill(self.client, 2 * i + 1)
            self.rdma(e.IBV_WR_RDMA_WRITE, self.client, self.server,
                      self.server.mkey.rkey, len(layout),
                      SGE(self.client.mr.buf, len(layout), self.client.mr.lkey))
            self.check_mr(self.server,
                          self.expect_scattered(before, sent[:len(layout)], layout),
                          f'RDMA WRITE, iteration {i}')
        self.invalidate_mkeys()

    def test_mkey_rdma_read(self):
        """
        The client READs the server's buffers through the server's mkey
        (gathered by the responder) into its own mkey (the response scattered
        over the client's buffers: a mapped lkey of a READ).
        """
        self.create_players(RnicMkeyResources)
        self.reg_mr_list(access=REMOTE)
        layout = self.layout
        for i in range(self.iters):
            remote = self.fill(self.server, 2 * i)
            before = self.fill(self.client, 2 * i + 1)
            self.rdma(e.IBV_WR_RDMA_READ, self.client, self.server,
                      self.server.mkey.rkey, len(layout),
                      SGE(0, len(layout), self.client.mkey.lkey))
            stream = bytes(remote[j] for j in layout)
            self.check_mr(self.client, self.expect_scattered(before, stream, layout),
                          f'RDMA READ, iteration {i}')
            self.check_mr(self.server, remote, 'the READ changed the responder')
        self.invalidate_mkeys()

    def test_mkey_rdma_multi_packet(self):
        """
        16 segments of 500 to 3500 bytes with gaps, about 32 KiB, different
        layouts on each side: a WRITE into the server's mkey and a READ from
        it into the client's, many packets each (path MTU 1024), packets
        crossing segment boundaries; every byte of both MRs checked.
        """
        self.create_players(RnicMkeyResources, max_entries=16, msg_size=65536)
        rnd = random.Random(20)
        lengths = [rnd.randrange(500, 3500) for _ in range(16)]
        layouts = {}
        for player in [self.server, self.client]:
            entries, off = [], 0
            for length in lengths:
                off += rnd.randrange(1, 300)
                entries.append((off, length))
                off += length
            layouts[player] = list_layout(entries)
            self.reg(player, player.mkey, REMOTE,
                     sge_list=[SGE(player.mr.buf + o, n, player.mr.lkey)
                               for o, n in entries])
        total = sum(lengths)
        for i in range(3):
            # WRITE: the client's MR from byte 0, plain, into the server's mkey
            before = self.fill(self.server, 2 * i)
            sent = self.fill(self.client, 2 * i + 1)
            self.rdma(e.IBV_WR_RDMA_WRITE, self.client, self.server,
                      self.server.mkey.rkey, total,
                      SGE(self.client.mr.buf, total, self.client.mr.lkey))
            self.check_mr(self.server, self.expect_scattered(
                before, sent[:total], layouts[self.server]), f'WRITE {i}')
            # READ: the server's mkey (gathered) into the client's (scattered)
            remote = self.fill(self.server, 2 * i + 100)
            before = self.fill(self.client, 2 * i + 101)
            self.rdma(e.IBV_WR_RDMA_READ, self.client, self.server,
                      self.server.mkey.rkey, total,
                      SGE(0, total, self.client.mkey.lkey))
            stream = bytes(remote[j] for j in layouts[self.server])
            self.check_mr(self.client, self.expect_scattered(
                before, stream, layouts[self.client]), f'READ {i}')
        self.invalidate_mkeys()

    # -- segment tables: inline and through the provider's table -----------

    def test_mkey_list_inline_table(self):
        """
        16 segments inline in the registration WQE (a QP whose WQE stride
        holds them: max_inline_data 256, the device's default limit, makes it
        512 bytes, room for 18), traffic over all of them.
        """
        self.create_players(RnicMkeyResources, max_entries=16, max_inline_data=256)
        self.reg_spread_list(16)
        self.traffic(len(self.layout))
        self.invalidate_mkeys()

    def test_mkey_list_sge_table(self):
        """
        64 segments: more than a WQE holds, the table goes through the
        provider's registered table (one SGE); traffic over all of them, then
        again after a re-registration.
        """
        self.create_players(RnicMkeyResources, max_entries=64)
        self.reg_spread_list(64)
        self.traffic(len(self.layout))
        self.invalidate_mkeys()
        self.reg_spread_list(50, length=5, step=17)
        self.traffic(len(self.layout))
        self.invalidate_mkeys()

    # -- re-registration, stale keys, members that go ----------------------------

    def test_mkey_reregister(self):
        """
        Register, traffic, invalidate, five times over two layouts: every
        registration gives the mkey a new key at the same index, data goes
        where the layout of the moment says. Then a SEND through the
        client's previous key (same STag index, old key) fails.
        """
        self.create_players(RnicMkeyResources)
        keys = []
        for i in range(5):
            if i % 2:
                self.reg_mr_interleaved()
            else:
                self.reg_mr_list()
            keys.append(self.client.mkey.lkey)
            self.traffic(len(self.layout))
            if i < 4:
                self.invalidate_mkeys()
        self.assertEqual(len({key >> 8 for key in keys}), 1)
        stale = SGE(0, 16, keys[-2])
        self.client.qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[stale]))
        with self.assertRaises(PyverbsRDMAError):
            u.poll_cq(self.client.cq)

    def test_mkey_member_deregistered(self):
        """
        A member MR deregistered under a registered mkey: access through the
        mkey fails (an error completion), nothing of the freed memory used.
        """
        self.create_players(RnicMkeyResources)
        members = {}
        for player in [self.server, self.client]:
            members[player] = MR(player.pd, 4096, REMOTE)
            self.reg(player, player.mkey, LOCAL,
                     sge_list=[SGE(members[player].buf, 8, members[player].lkey),
                               SGE(player.mr.buf, 8, player.mr.lkey)])
        members[self.server].close()
        sge = SGE(0, 16, self.server.mkey.lkey)
        self.server.qp.post_recv(RecvWR(sg=[sge], num_sge=1))
        self.client.qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                                        sg=[SGE(0, 16, self.client.mkey.lkey)]))
        with self.assertRaises(PyverbsRDMAError):
            u.poll_cq(self.server.cq)

    # -- bad registrations: error completions ----------------------------------

    def test_mkey_too_many_entries(self):
        """Four segments for an mkey of three: an error completion."""
        self.create_players(RnicMkeyResources)
        mr = self.client.mr
        self.reg_fails(self.client, self.client.mkey, LOCAL,
                       sge_list=[SGE(mr.buf + 16 * i, 8, mr.lkey) for i in range(4)])

    def test_mkey_member_other_pd(self):
        """A member MR of another PD: an error completion."""
        self.create_players(RnicMkeyResources)
        other_pd = PD(self.client.ctx)
        other = MR(other_pd, 4096, LOCAL)
        self.reg_fails(self.client, self.client.mkey, LOCAL,
                       sge_list=[SGE(self.client.mr.buf, 8, self.client.mr.lkey),
                                 SGE(other.buf, 8, other.lkey)])

    def test_mkey_member_is_mkey(self):
        """A member that is itself a (registered) mkey: an error completion."""
        self.create_players(RnicMkeyResources)
        mr = self.client.mr
        inner = self.client.create_mkey(2)
        self.reg(self.client, inner, LOCAL,
                 sge_list=[SGE(mr.buf, 8, mr.lkey), SGE(mr.buf + 64, 8, mr.lkey)])
        self.reg_fails(self.client, self.client.mkey, LOCAL,
                       sge_list=[SGE(mr.buf + 128, 8, mr.lkey), SGE(0, 8, inner.lkey)])

    def test_mkey_overlapping_segments(self):
        """Two segments sharing member bytes: an error completion."""
        self.create_players(RnicMkeyResources)
        mr = self.client.mr
        self.reg_fails(self.client, self.client.mkey, LOCAL,
                       sge_list=[SGE(mr.buf, 16, mr.lkey), SGE(mr.buf + 8, 16, mr.lkey)])

    def test_mkey_register_valid(self):
        """Registering an mkey that is still valid (not invalidated): an error
        completion."""
        self.create_players(RnicMkeyResources)
        mr = self.client.mr
        sges = [SGE(mr.buf, 8, mr.lkey), SGE(mr.buf + 64, 8, mr.lkey)]
        self.reg(self.client, self.client.mkey, LOCAL, sge_list=sges)
        self.reg_fails(self.client, self.client.mkey, LOCAL, sge_list=sges)

    # -- refused by the provider: nothing posted, the keys kept ----------------

    def test_mkey_provider_refusals(self):
        """
        No entries, rights an mkey cannot have, an interleaved repeat count
        of 0: ibv_wr_complete fails (EINVAL), nothing is posted and the mkey
        keeps its keys; an mkey of 0 entries is refused. The mkey then
        registers fine.
        """
        self.create_players(RnicMkeyResources)
        mr = self.client.mr
        mkey = self.client.mkey
        sges = [SGE(mr.buf, 8, mr.lkey)]
        inter = [RnicMrInterleaved(addr=mr.buf, bytes_count=8, bytes_skip=0, lkey=mr.lkey)]
        for what, kwargs in (
                ('no entries', {'sge_list': []}),
                ('MW_BIND rights', {'sge_list': sges, 'access': LOCAL | e.IBV_ACCESS_MW_BIND}),
                ('repeat 0', {'interleaved': inter, 'repeat': 0})):
            keys = (mkey.lkey, mkey.rkey)
            access = kwargs.pop('access', LOCAL)
            with self.assertRaises(PyverbsRDMAError, msg=what) as ex:
                self.post_reg(self.client, mkey, access, **kwargs)
            self.assertEqual(ex.exception.error_code, errno.EINVAL, what)
            self.assertEqual((mkey.lkey, mkey.rkey), keys, what)
            nc, _ = self.client.cq.poll(1)
            self.assertEqual(nc, 0, f'{what}: something was posted')
        with self.assertRaises(PyverbsRDMAError) as ex:
            RnicMkey(self.client.pd, 0, self.client.dev_name)
        self.assertEqual(ex.exception.error_code, errno.EINVAL)
        self.reg(self.client, mkey, LOCAL, sge_list=sges)
